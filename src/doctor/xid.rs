//! The Xid check: per GPU, the Xid errors its kernel log holds (since boot, or in a saved log),
//! each with when, what it means and what to do; FAIL for the hardware's, WARN for a program's.

use super::facts::HostFacts;
use super::kernel_log::KernelLogFacts;
use super::per_gpu::check;
use super::report::{Check, Status};
use crate::health::xid::{recovery_action, RECOVERY_ACTION_XID};
use crate::health::{summarise, PciAddress, Severity, XidSeen};

pub const XID: &str = "gpus.xid";
const TITLE: &str = "Xid errors";

/// The Xid that marks a memory row for remapping, which a GPU reset activates.
const ROW_REMAP_XID: u32 = 63;

/// Who may read the kernel log, and the way around it.
pub const PERMISSION_FIX: &str = "Add yourself to the `adm` or `systemd-journal` group \
    (`sudo usermod -aG systemd-journal $USER`, then log in again), run `sudo gpudeck doctor`, \
    or save the log and pass it: `sudo dmesg > kernel.log && gpudeck doctor --kernel-log kernel.log`.";

/// One check per GPU (or unknown bus) with Xids; one passing or skipped check otherwise.
pub fn checks(f: &HostFacts) -> Vec<Check> {
    let (source, live, xids, earlier) = match &f.kernel_log {
        KernelLogFacts::NotRead { why } => {
            return vec![check(XID, TITLE, Status::Skip, why.clone())];
        }
        KernelLogFacts::Unreadable { tried } => {
            let detail = format!(
                "the kernel log cannot be read ({}), so Xid errors since boot are unknown",
                tried.join("; ")
            );
            return vec![check(XID, TITLE, Status::Skip, detail).with_fix(PERMISSION_FIX)];
        }
        KernelLogFacts::Read {
            source,
            live,
            xids,
            earlier_xids,
            ..
        } => (source, *live, xids, *earlier_xids),
    };
    let gpus: Vec<(PciAddress, u32)> = f
        .gpu
        .gpus
        .iter()
        .filter_map(|g| Some((PciAddress::parse(&g.info.pci_bus_id)?, g.info.index)))
        .collect();
    let gpu_of = |bus: PciAddress| gpus.iter().find(|(b, _)| *b == bus).map(|(_, i)| *i);
    let seen = summarise(xids, &f.xid_catalog, gpu_of, f.kernel_log.boot_time());
    if seen.is_empty() {
        let detail = if live {
            format!("none in the kernel log since boot (read from {source})")
        } else {
            format!("none in {source}")
        };
        return vec![check(XID, TITLE, Status::Pass, detail)];
    }
    let mut groups: Vec<Vec<XidSeen>> = Vec::new();
    for s in seen {
        match groups.iter_mut().find(|g| g[0].bus_id == s.bus_id) {
            Some(g) => g.push(s),
            None => groups.push(vec![s]),
        }
    }
    groups.sort_by_key(|g| g[0].gpu.map_or(u64::MAX, u64::from));
    let mut checks: Vec<Check> = groups.into_iter().map(|g| gpu_check(f, g)).collect();
    if earlier > 0 {
        for c in &mut checks {
            c.detail.push_str(&format!(
                " (the log holds {earlier} more Xid lines before the last {}, which alone are \
                 judged here)",
                xids.len()
            ));
        }
    }
    checks
}

/// The check for the Xids of one bus id.
fn gpu_check(f: &HostFacts, mut xids: Vec<XidSeen>) -> Check {
    let remap_pending = xids[0].gpu.is_some_and(|i| {
        f.gpu
            .gpus
            .iter()
            .any(|g| g.info.index == i && g.sample.remapped_rows.is_some_and(|r| r.pending))
    });
    for s in &mut xids {
        if s.xid == ROW_REMAP_XID && remap_pending {
            s.severity = Severity::Fail;
        }
    }
    let who = match xids[0].gpu {
        Some(i) => format!("GPU {i} ({})", xids[0].bus_id),
        None => format!("bus {} (no GPU here has this bus id)", xids[0].bus_id),
    };
    let events: Vec<String> = xids.iter().map(|s| event(s, remap_pending)).collect();
    let detail = format!("{who}: {}", events.join("; "));
    let worst = xids
        .iter()
        .map(|s| s.severity)
        .max()
        .unwrap_or(Severity::Info);
    let status = match worst {
        Severity::Fail => Status::Fail,
        Severity::Warn => Status::Warn,
        Severity::Info => Status::Pass,
    };
    let actions: Vec<String> = xids
        .iter()
        .filter(|s| s.severity > Severity::Info)
        .map(|s| match &s.action_text {
            Some(text) => format!("Xid {}: {}", s.xid, for_gpu(text, s.gpu)),
            None => format!(
                "Xid {}: look it up in NVIDIA's Xid catalog, \
                 https://docs.nvidia.com/deploy/xid-errors/.",
                s.xid
            ),
        })
        .collect();
    let mut c = check(XID, TITLE, status, detail);
    if !actions.is_empty() {
        c = c.with_fix(actions.join(" "));
    }
    c.xids = xids;
    c
}

/// The catalog's `nvidia-smi -r -i N` with the GPU's index in it, where it is known.
fn for_gpu(text: &str, gpu: Option<u32>) -> String {
    match gpu {
        Some(i) => text.replace("-i N`", &format!("-i {i}`")),
        None => text.to_string(),
    }
}

/// `Xid 13 (application), 3 times from ... to ..., by python (pid 1234): what it means`.
fn event(s: &XidSeen, remap_pending: bool) -> String {
    let class = s
        .class
        .map_or("not in gpudeck's Xid catalog", |c| c.words());
    let when = if s.count == 1 {
        format!("at {}", s.first.describe(None))
    } else {
        format!(
            "{} times, first at {}, last at {}",
            s.count,
            s.first.describe(None),
            s.last.describe(None)
        )
    };
    let mut out = format!("Xid {} ({class}) {when}", s.xid);
    if !s.processes.is_empty() {
        let names: Vec<String> = s
            .processes
            .iter()
            .map(|p| match (&p.name, p.pid) {
                (Some(n), Some(pid)) => format!("{n} (pid {pid})"),
                (Some(n), None) => n.clone(),
                (None, Some(pid)) => format!("pid {pid}"),
                (None, None) => String::new(),
            })
            .collect();
        out.push_str(&format!(", by {}", names.join(", ")));
    }
    match &s.meaning {
        Some(m) => out.push_str(&format!(": {m}")),
        None => out.push_str(&format!(": the driver said \"{}\"", s.text)),
    }
    if s.xid == RECOVERY_ACTION_XID {
        if let Some(action) = recovery_action(&s.text) {
            out.push_str(&format!(" (now: {action})"));
        }
    }
    if s.xid == ROW_REMAP_XID && remap_pending {
        out.push_str(", and a row remap is pending on this GPU");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::run_checks;
    use crate::doctor::testkit::healthy;
    use crate::health::kernel_log::parse;

    /// The healthy machine (GPUs 0 and 1 on buses 18 and 19) with this kernel log.
    fn with_log(log: &str, live: bool) -> HostFacts {
        let mut f = healthy();
        f.kernel_log = KernelLogFacts::Read {
            source: if live { "/dev/kmsg" } else { "kernel.log" }.into(),
            live,
            boot_time_s: Some(1_764_000_000),
            xids: parse(log, 2026),
            earlier_xids: 0,
        };
        f
    }

    fn xid_checks(f: &HostFacts) -> Vec<Check> {
        run_checks(f)
            .checks
            .into_iter()
            .filter(|c| c.id == XID)
            .collect()
    }

    #[test]
    fn no_xids_pass_and_say_where_they_were_looked_for() {
        let c = xid_checks(&healthy());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, Status::Pass);
        assert_eq!(
            c[0].detail,
            "none in the kernel log since boot (read from /dev/kmsg)"
        );
        let saved = xid_checks(&with_log("[1.0] nothing here\n", false));
        assert_eq!(saved[0].detail, "none in kernel.log");
    }

    #[test]
    fn hardware_xids_fail_and_program_xids_warn_per_gpu() {
        let log = "4,1,100000000,-;NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n\
                   4,2,5000000,-;NVRM: Xid (PCI:0000:18:00): 13, pid=4242, name=python, Graphics SM Warp Exception\n";
        let c = xid_checks(&with_log(log, true));
        assert_eq!(c.len(), 2, "{c:#?}");
        assert_eq!(c[0].status, Status::Warn);
        assert!(
            c[0].detail
                .starts_with("GPU 0 (00000000:18:00.0): Xid 13 (application) at 2025-11-24 "),
            "{}",
            c[0].detail
        );
        assert!(
            c[0].detail
                .contains("by python (pid 4242): graphics engine exception"),
            "{}",
            c[0].detail
        );
        assert!(c[0]
            .fix
            .as_deref()
            .is_some_and(|f| f.starts_with("Xid 13: Fix and restart")));
        assert_eq!(c[1].status, Status::Fail);
        assert!(
            c[1].detail
                .starts_with("GPU 1 (00000000:19:00.0): Xid 79 (bus and power) at "),
            "{}",
            c[1].detail
        );
        assert!(c[1].detail.ends_with("the GPU has fallen off the bus: the driver can no longer reach it over PCI Express"), "{}", c[1].detail);
        assert!(c[1]
            .fix
            .as_deref()
            .is_some_and(|f| f.starts_with("Xid 79: Reboot the machine")));
        assert_eq!(c[1].xids.len(), 1);
        let json = serde_json::to_value(&c[1]).unwrap();
        assert_eq!(json["xids"][0]["xid"], 79);
        assert_eq!(json["xids"][0]["gpu"], 1);
        assert_eq!(json["xids"][0]["severity"], "fail");
        assert_eq!(json["xids"][0]["first"]["utc"], "2025-11-24T16:01:40Z");
        let exit = run_checks(&with_log(log, true)).exit_code();
        assert_eq!(exit, 2);
    }

    #[test]
    fn unknown_xids_and_buses_are_still_reported() {
        let log = "[42.5] NVRM: Xid (PCI:0000:5e:00): 999, pid=0, a new kind of trouble\n";
        let c = xid_checks(&with_log(log, false));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, Status::Warn);
        assert_eq!(
            c[0].detail,
            "bus 00000000:5E:00.0 (no GPU here has this bus id): Xid 999 (not in gpudeck's Xid \
             catalog) at 42.5 s after boot: the driver said \"a new kind of trouble\""
        );
        assert!(c[0]
            .fix
            .as_deref()
            .is_some_and(|f| f.contains("docs.nvidia.com/deploy/xid-errors")));
        assert_eq!(c[0].xids[0].gpu, None);
    }

    #[test]
    fn a_row_remap_fails_only_while_one_is_pending_and_cleanup_alone_passes() {
        let log = "[10.0] NVRM: Xid (PCI:0000:18:00): 63, pid=0, Row Remapper: New row marked for remapping, reset gpu to activate.\n";
        assert_eq!(xid_checks(&with_log(log, false))[0].status, Status::Warn);
        let mut f = with_log(log, false);
        if let Some(r) = f.gpu.gpus[0].sample.remapped_rows.as_mut() {
            r.pending = true;
        }
        let c = xid_checks(&f);
        assert_eq!(c[0].status, Status::Fail);
        assert!(
            c[0].detail
                .ends_with("and a row remap is pending on this GPU"),
            "{}",
            c[0].detail
        );
        let fix = c[0].fix.clone().unwrap_or_default();
        assert!(
            fix.contains("`sudo nvidia-smi -r -i 0`"),
            "the GPU's own index: {fix}"
        );
        let cleanup =
            "[10.0] NVRM: Xid (PCI:0000:18:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008\n";
        let c = xid_checks(&with_log(cleanup, false));
        assert_eq!((c[0].status, c[0].fix.as_deref()), (Status::Pass, None));
    }

    #[test]
    fn an_xid_154_says_the_action_it_names_and_fails_for_a_reboot() {
        let log = "[10.0] NVRM: Xid (PCI:0000:19:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)\n";
        let c = xid_checks(&with_log(log, false));
        assert_eq!(c[0].status, Status::Fail);
        assert!(
            c[0].detail
                .ends_with("summing up what the Xids before it need (now: Node Reboot Required)"),
            "{}",
            c[0].detail
        );
    }

    #[test]
    fn an_unreadable_log_skips_with_the_way_to_read_it() {
        let mut f = healthy();
        f.kernel_log = KernelLogFacts::Unreadable {
            tried: vec![
                "/dev/kmsg: permission denied".into(),
                "journalctl: the journal's system messages are hidden from this user".into(),
            ],
        };
        let c = xid_checks(&f);
        assert_eq!(c[0].status, Status::Skip);
        assert!(
            c[0].detail
                .contains("/dev/kmsg: permission denied; journalctl"),
            "{}",
            c[0].detail
        );
        let fix = c[0].fix.clone().unwrap_or_default();
        for how in [
            "`adm`",
            "`systemd-journal`",
            "sudo gpudeck doctor",
            "--kernel-log",
        ] {
            assert!(fix.contains(how), "{fix}");
        }
    }
}
