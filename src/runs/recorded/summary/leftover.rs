//! GPU memory left behind by a run, blamed on the processes that hold it: only the run's own
//! (its group, session or user, started within its life), never another user's job that came
//! later to the same GPUs, with how long it has been since the run ended.

use super::alerts::{memory_held_after_end, Alert};
use crate::gpu::GpuProcess;
use crate::runs::record::RunOwner;
use crate::runs::recorded::samples::MetricsRow;
use crate::units::{human_bytes, run_duration};

/// Processes named in the message; the rest are counted.
const NAMED: usize = 3;
/// A command is cut to this many characters in the message.
const COMMAND_CHARS: usize = 48;

/// The run's own processes still on its GPUs, when those GPUs have held memory for a while since
/// the run ended (as [`memory_held_after_end`] judges it from `rows_after_end`). The message names
/// each (pid, command, owner, memory) and says how long ago the run ended, measured to the newest
/// sample, so it grows with every sample. Memory held only by processes that are not the run's is
/// not the run's doing: no alert.
pub fn leftover_memory(
    rows_after_end: &[MetricsRow],
    gpus: &[u32],
    ended_ms: i64,
    processes: &[GpuProcess],
    owner: &RunOwner,
) -> Option<Alert> {
    let held = memory_held_after_end(rows_after_end, gpus)?;
    let now = rows_after_end.iter().map(|r| r.t_unix_ms).max()?;
    let mut own: Vec<&GpuProcess> = processes
        .iter()
        .filter(|p| held.gpus.contains(&p.gpu_index) && owner.owns(p.identity.as_ref()))
        .collect();
    if own.is_empty() {
        return None;
    }
    own.sort_by_key(|p| (p.gpu_index, p.pid));
    let mut gpus: Vec<u32> = own.iter().map(|p| p.gpu_index).collect();
    gpus.dedup();
    let mut named: Vec<String> = own.iter().take(NAMED).map(|p| describe(p)).collect();
    if own.len() > NAMED {
        named.push(format!("{} more", own.len() - NAMED));
    }
    let after = u64::try_from(now - ended_ms).unwrap_or(0);
    let one = own.len() == 1;
    Some(Alert {
        message: format!(
            "{} {} GPU memory {} after the run ended: {} of the run outlived it (a DataLoader \
             worker, a rank that did not exit).",
            join(&named),
            if one { "still holds" } else { "still hold" },
            run_duration(after),
            if one { "a process" } else { "processes" },
        ),
        fix: "Kill them (gpudeck offers to: K); `nvidia-smi --query-compute-apps=pid,used_memory \
              --format=csv` lists them too."
            .into(),
        gpus,
        ..held
    })
}

/// `pid 4242 (python train.py, alice, 12.0GiB on GPU 2)`.
fn describe(p: &GpuProcess) -> String {
    let command = p.command.as_deref().unwrap_or("?");
    let command: String = if command.chars().count() > COMMAND_CHARS {
        let cut: String = command.chars().take(COMMAND_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        command.to_string()
    };
    let memory = p
        .used_memory_bytes
        .map_or_else(String::new, |m| format!("{} ", human_bytes(m)));
    format!(
        "pid {} ({command}, {}, {memory}on GPU {})",
        p.pid,
        p.user.as_deref().unwrap_or("?"),
        p.gpu_index
    )
}

/// "a", "a and b", "a, b and c".
fn join(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::ProcessKind;
    use crate::host::ProcessIdentity;

    const GIB: u64 = 1 << 30;
    const T0: i64 = 1_767_225_600_000;
    const END: i64 = T0 + 60_000;

    fn row(t: i64, gpu: u32, mem: u64) -> MetricsRow {
        MetricsRow {
            t_unix_ms: t,
            gpu_index: gpu,
            gpu_uuid: format!("GPU-{gpu}"),
            util_pct: Some(0),
            mem_used_bytes: Some(mem),
            mem_total_bytes: Some(80 * GIB),
            power_w: None,
            temp_c: None,
            sm_clock_mhz: None,
        }
    }

    /// Samples of GPUs 0 and 1 every second from `from` to `to` seconds after the end.
    fn rows(from: i64, to: i64) -> Vec<MetricsRow> {
        (from..=to)
            .flat_map(|s| [0, 1].map(|g| row(END + s * 1000, g, 20 * GIB)))
            .collect()
    }

    fn owner() -> RunOwner {
        RunOwner {
            uid: Some(1000),
            process_group: Some(4000),
            session: Some(3990),
            created_ms: T0 as u64,
            ended_ms: Some(END as u64),
        }
    }

    fn process(gpu: u32, pid: u32, user: (&str, u32), started: i64, mem: u64) -> GpuProcess {
        GpuProcess {
            gpu_index: gpu,
            pid,
            kind: ProcessKind::Compute,
            used_memory_bytes: Some(mem),
            user: Some(user.0.into()),
            command: Some("python train.py --epochs 90".into()),
            container: None,
            identity: Some(ProcessIdentity {
                start_ticks: 1,
                started_unix_ms: Some(started as u64),
                uid: Some(user.1),
                pgid: pid,
                session: pid,
            }),
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        }
    }

    #[test]
    fn the_runs_own_leftover_is_named_with_an_age_that_grows() {
        let me = ("me", 1000);
        let alice = ("alice", 1001);
        // The run's DataLoader worker on GPU 1; alice's job, started after the run ended, on
        // GPU 0 and GPU 1.
        let procs = [
            process(1, 4242, me, T0 + 5_000, 12 * GIB),
            process(0, 5555, alice, END + 2_000, 20 * GIB),
            process(1, 5556, alice, END + 2_000, 8 * GIB),
        ];
        let alert = leftover_memory(&rows(0, 20), &[0, 1], END, &procs, &owner()).expect("fires");
        assert_eq!(alert.gpus, vec![1], "only the GPU the run's process is on");
        assert_eq!(alert.since_ms, END);
        assert_eq!(
            alert.message,
            "pid 4242 (python train.py --epochs 90, me, 12.0GiB on GPU 1) still holds GPU memory \
             20s after the run ended: a process of the run outlived it (a DataLoader worker, a \
             rank that did not exit)."
        );
        assert!(!alert.message.contains("5555") && !alert.message.contains("alice"));
        // A minute later the same alert says so.
        let later = leftover_memory(&rows(0, 80), &[0, 1], END, &procs, &owner()).unwrap();
        assert!(
            later.message.contains(" 1m20s after the run ended"),
            "{}",
            later.message
        );
    }

    #[test]
    fn memory_held_by_other_users_only_is_not_the_runs() {
        let alice = ("alice", 1001);
        let me_later = ("me", 1000);
        let procs = [
            process(0, 5555, alice, END + 2_000, 20 * GIB),
            // The run's own user, but a job started two minutes after the run ended.
            process(1, 6000, me_later, END + 120_000, 20 * GIB),
        ];
        assert_eq!(
            leftover_memory(&rows(0, 200), &[0, 1], END, &procs, &owner()),
            None
        );
    }

    #[test]
    fn nothing_until_the_memory_has_been_held_a_while() {
        let procs = [process(1, 4242, ("me", 1000), T0 + 5_000, 12 * GIB)];
        assert_eq!(
            leftover_memory(&rows(0, 5), &[0, 1], END, &procs, &owner()),
            None,
            "5 s is the driver's teardown"
        );
        assert_eq!(leftover_memory(&[], &[0, 1], END, &procs, &owner()), None);
    }

    #[test]
    fn many_leftovers_are_named_then_counted() {
        let procs: Vec<GpuProcess> = (0..5)
            .map(|i| process(i % 2, 4300 + i, ("me", 1000), T0 + 1_000, GIB))
            .collect();
        let alert = leftover_memory(&rows(0, 30), &[0, 1], END, &procs, &owner()).unwrap();
        assert_eq!(alert.gpus, vec![0, 1]);
        assert!(
            alert.message.starts_with(
                "pid 4300 (python train.py --epochs 90, me, 1.0GiB on GPU 0), pid 4302 (python \
                 train.py --epochs 90, me, 1.0GiB on GPU 0), pid 4304 (python train.py --epochs \
                 90, me, 1.0GiB on GPU 0) and 2 more still hold GPU memory 30s after"
            ),
            "{}",
            alert.message
        );
    }
}
