//! The health counters check: per GPU, PCIe replays, NVLink CRC/replay/recovery errors,
//! remapped rows pending or failed, and the time spent in power or thermal violation, each with
//! its change since the last look, which is kept per GPU UUID in the state dir (0600).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::per_gpu::check;
use super::report::{Check, DoctorReport, Family, Status};
use crate::gpu::counters::HealthCounters;
use crate::gpu::report::GpuEntry;
use crate::{private_files, units};

/// The check's stable id.
pub const HEALTH_COUNTERS: &str = "gpus.health_counters";
const TITLE: &str = "Health counters";

/// The file in the state dir that keeps the last look.
pub const LOOK_FILE: &str = "health-counters.json";

/// What the counters of each GPU (by UUID) read at a look.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Looks {
    pub gpus: BTreeMap<String, Look>,
}

/// One GPU's counters at one look.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Look {
    pub at_unix_ms: u64,
    pub counters: HealthCounters,
    /// Rows waiting to be remapped at the next reset (0 or 1), and a failed remapping (0 or 1).
    pub rows_pending: Option<u64>,
    pub rows_failed: Option<u64>,
}

impl Looks {
    /// The counters of `gpus` now (lost GPUs and GPUs without a UUID are left out).
    pub fn of(gpus: &[GpuEntry], at_unix_ms: u64) -> Looks {
        let gpus = gpus
            .iter()
            .filter(|g| !g.sample.lost && !g.info.uuid.is_empty())
            .map(|g| {
                let rows = g.sample.remapped_rows;
                let look = Look {
                    at_unix_ms,
                    counters: g.sample.health,
                    rows_pending: rows.map(|r| u64::from(r.pending)),
                    rows_failed: rows.map(|r| u64::from(r.failure)),
                };
                (g.info.uuid.clone(), look)
            })
            .collect();
        Looks { gpus }
    }

    /// The last look kept in `dir`; none when there is no file or it cannot be read.
    pub fn load(dir: &Path) -> Looks {
        let path = dir.join(LOOK_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "last health look unreadable");
                Looks::default()
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Looks::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "last health look unreadable");
                Looks::default()
            }
        }
    }

    /// Keeps this look in `dir` (0600), with the previous look of GPUs not seen now.
    pub fn save(&self, previous: &Looks, dir: &Path) -> io::Result<()> {
        let mut all = previous.clone();
        all.gpus.extend(self.gpus.clone());
        let bytes = serde_json::to_vec_pretty(&all).map_err(io::Error::other)?;
        private_files::create_dir_all(dir)?;
        private_files::replace(&dir.join(LOOK_FILE), &bytes)
    }
}

/// The counters of every GPU with the change since `previous`.
pub fn health_counters(gpus: &[GpuEntry], previous: &Looks, now: &Looks) -> Check {
    let mut lines = Vec::new();
    let (mut rising, mut last_at) = (Vec::new(), None);
    for g in gpus.iter().filter(|g| !g.sample.lost) {
        let Some(look) = now.gpus.get(&g.info.uuid) else {
            continue;
        };
        let before = previous.gpus.get(&g.info.uuid);
        last_at = last_at.max(before.map(|b| b.at_unix_ms));
        let (line, rose) = describe(look, before.unwrap_or(&Look::default()));
        if let Some(line) = line {
            // GPUs that read the same share one line: eight quiet GPUs are one sentence.
            match lines
                .iter_mut()
                .find(|(_, l): &&mut (Vec<u32>, String)| *l == line)
            {
                Some((indices, _)) => indices.push(g.info.index),
                None => lines.push((vec![g.info.index], line)),
            }
        }
        rising.extend(rose.into_iter().map(|what| (g.info.index, what)));
    }
    if lines.is_empty() {
        return check(
            HEALTH_COUNTERS,
            TITLE,
            Status::Skip,
            "no GPU here reports health counters".into(),
        );
    }
    let since = match last_at {
        Some(ms) => format!("(+N: since the last look, {})", units::utc_time(ms)),
        None => "(+N: since the driver loaded; this is the first look)".into(),
    };
    let lines: Vec<String> = lines
        .iter()
        .map(|(gpus, line)| format!("{}: {line}", gpu_list(gpus)))
        .collect();
    let detail = format!("{}. {since}", lines.join("; "));
    if rising.is_empty() {
        return check(HEALTH_COUNTERS, TITLE, Status::Pass, detail);
    }
    check(HEALTH_COUNTERS, TITLE, Status::Warn, detail).with_fix(fix(&rising))
}

/// "GPU 3", "GPUs 0-7", "GPUs 0, 2, 4-5".
fn gpu_list(indices: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &i in indices {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => runs.push((i, i)),
        }
    }
    let words: Vec<String> = runs
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    let noun = if indices.len() == 1 { "GPU" } else { "GPUs" };
    format!("{noun} {}", words.join(", "))
}

/// Adds the health counters check after the other GPU checks of `report`, comparing with the
/// last look kept in `state_dir` and keeping this one there; says why when it could not.
pub fn add_health_counters(
    report: &mut DoctorReport,
    gpus: &[GpuEntry],
    state_dir: &Path,
) -> Option<String> {
    let previous = Looks::load(state_dir);
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let now = Looks::of(gpus, now_ms);
    let c = health_counters(gpus, &previous, &now);
    let at = report
        .checks
        .iter()
        .rposition(|c| c.family == Family::Gpus)
        .map_or(report.checks.len(), |i| i + 1);
    report.checks.insert(at, c);
    if now.gpus.is_empty() {
        return None;
    }
    now.save(&previous, state_dir).err().map(|e| {
        format!(
            "could not keep the health counters in {}: {e}. The next doctor shows their \
             change since the driver loaded instead; check that directory.",
            state_dir.display()
        )
    })
}

/// A GPU's counters in words with their changes, and which of them rose in a way to act on.
fn describe(now: &Look, before: &Look) -> (Option<String>, Vec<&'static str>) {
    let (c, b) = (&now.counters, &before.counters);
    let mut parts = Vec::new();
    let mut rose = Vec::new();
    if let Some(n) = c.pcie_replays {
        let d = delta(n, b.pcie_replays);
        parts.push(format!("PCIe replays {n} (+{d})"));
        if d > 0 {
            rose.push("pcie");
        }
    }
    if let Some(link) = c.nvlink {
        let old = b.nvlink.unwrap_or_default();
        let crc = link.crc_flit + link.crc_data;
        let crc_d = delta(crc, Some(old.crc_flit + old.crc_data));
        let (replay_d, recovery_d) = (
            delta(link.replay, Some(old.replay)),
            delta(link.recovery, Some(old.recovery)),
        );
        parts.push(format!(
            "NVLink CRC {crc} (+{crc_d}), replays {} (+{replay_d}), recoveries {} (+{recovery_d})",
            link.replay, link.recovery
        ));
        if crc_d + replay_d + recovery_d > 0 {
            rose.push("nvlink");
        }
    }
    if let (Some(p), Some(f)) = (now.rows_pending, now.rows_failed) {
        let (pd, fd) = (delta(p, before.rows_pending), delta(f, before.rows_failed));
        parts.push(format!("rows pending {p} (+{pd}), failed {f} (+{fd})"));
    }
    if let Some(ns) = c.power_violation_ns {
        let d = delta(ns, b.power_violation_ns);
        parts.push(format!("power-capped {} (+{})", secs(ns), secs(d)));
    }
    if let Some(ns) = c.thermal_violation_ns {
        let d = delta(ns, b.thermal_violation_ns);
        parts.push(format!("held down by heat {} (+{})", secs(ns), secs(d)));
        if d > 0 {
            rose.push("thermal");
        }
    }
    let line = (!parts.is_empty()).then(|| parts.join(", "));
    (line, rose)
}

/// The rise from `before`; a counter below its last look was reset (the driver reloaded), so
/// all of it is new.
fn delta(now: u64, before: Option<u64>) -> u64 {
    match before {
        Some(b) if b <= now => now - b,
        _ => now,
    }
}

fn secs(ns: u64) -> String {
    units::age((ns / 1_000_000_000) as i64)
}

/// What to do about each kind of rise, once, naming the GPUs.
fn fix(rising: &[(u32, &'static str)]) -> String {
    let gpus = |kind: &str| {
        rising
            .iter()
            .filter(|(_, k)| *k == kind)
            .map(|(i, _)| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    for (kind, what) in [
        (
            "pcie",
            "PCIe replays rising on GPU {}: reseat the card, check its riser, cable and slot, \
             and look for a PCIe link below its maximum above",
        ),
        (
            "nvlink",
            "NVLink errors rising on GPU {}: check the NVLink bridges or the baseboard, and look \
             for Xid 74 in `sudo dmesg`; a link that keeps recovering slows every collective",
        ),
        (
            "thermal",
            "GPU {} held down by heat: check its fans, the airflow through the chassis and the \
             room's temperature",
        ),
    ] {
        let list = gpus(kind);
        if !list.is_empty() {
            out.push(what.replace("{}", &list));
        }
    }
    out.join(". ") + "."
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::testkit::healthy;
    use crate::gpu::counters::NvLinkErrors;
    use crate::gpu::RemappedRows;

    fn gpus_with(counters: HealthCounters) -> Vec<GpuEntry> {
        let mut gpus = healthy().gpu.gpus;
        for g in &mut gpus {
            g.sample.health = counters;
            g.sample.remapped_rows = Some(RemappedRows::default());
        }
        gpus
    }

    fn counters(replays: u64, crc: u64, thermal_s: u64) -> HealthCounters {
        HealthCounters {
            pcie_replays: Some(replays),
            nvlink: Some(NvLinkErrors {
                crc_flit: crc,
                ..NvLinkErrors::default()
            }),
            power_violation_ns: Some(90_000_000_000),
            thermal_violation_ns: Some(thermal_s * 1_000_000_000),
        }
    }

    #[test]
    fn quiet_counters_pass_and_show_every_counter_with_its_change() {
        let gpus = gpus_with(counters(0, 0, 0));
        let now = Looks::of(&gpus, 1_764_000_000_000);
        let c = health_counters(&gpus, &Looks::default(), &now);
        assert_eq!(c.status, Status::Pass, "{c:?}");
        for words in [
            "GPUs 0-1: PCIe replays 0 (+0)",
            "NVLink CRC 0 (+0), replays 0 (+0), recoveries 0 (+0)",
            "rows pending 0 (+0), failed 0 (+0)",
            "power-capped 1m (+1m)",
            "held down by heat 0s (+0s)",
            "first look",
        ] {
            assert!(c.detail.contains(words), "{words}: {}", c.detail);
        }
    }

    #[test]
    fn gpus_that_read_the_same_share_a_line() {
        assert_eq!(gpu_list(&[3]), "GPU 3");
        assert_eq!(gpu_list(&[0, 1, 2, 3, 4, 5, 6, 7]), "GPUs 0-7");
        assert_eq!(gpu_list(&[0, 2, 4, 5]), "GPUs 0, 2, 4-5");
        let mut gpus = gpus_with(counters(0, 0, 0));
        assert_eq!(gpus.len(), 2);
        let mut other = gpus[0].clone();
        other.info.index = 2;
        other.info.uuid = "GPU-third".into();
        other.sample.health.pcie_replays = Some(7);
        gpus.push(other);
        let now = Looks::of(&gpus, 1_764_000_000_000);
        let c = health_counters(&gpus, &Looks::default(), &now);
        assert!(
            c.detail.starts_with("GPUs 0-1: PCIe replays 0 (+0)"),
            "{}",
            c.detail
        );
        assert!(
            c.detail.contains("; GPU 2: PCIe replays 7 (+7)"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn a_rise_since_the_last_look_warns_and_says_what_to_do() {
        let before = Looks::of(&gpus_with(counters(40, 5, 0)), 1_764_000_000_000);
        // The same counts later: nothing new, a pass, with the time of the last look.
        let same = gpus_with(counters(40, 5, 0));
        let c = health_counters(&same, &before, &Looks::of(&same, 1_764_000_600_000));
        assert_eq!(c.status, Status::Pass, "{c:?}");
        assert!(c.detail.contains("PCIe replays 40 (+0)"), "{}", c.detail);
        assert!(c.detail.contains("2025-11-24 16:00:00 UTC"), "{}", c.detail);
        let mut later = gpus_with(counters(40, 5, 0));
        later[1].sample.health = counters(52, 9, 30);
        let c = health_counters(&later, &before, &Looks::of(&later, 1_764_000_600_000));
        assert_eq!(c.status, Status::Warn, "{c:?}");
        assert!(
            c.detail.contains("GPU 1: PCIe replays 52 (+12)"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("NVLink CRC 9 (+4)"), "{}", c.detail);
        let fix = c.fix.unwrap_or_default();
        for words in [
            "PCIe replays rising on GPU 1",
            "NVLink errors rising on GPU 1",
            "GPU 1 held down by heat",
        ] {
            assert!(fix.contains(words), "{words}: {fix}");
        }
    }

    #[test]
    fn a_counter_below_its_last_look_was_reset_and_counts_whole() {
        assert_eq!(delta(3, Some(40)), 3);
        assert_eq!(delta(45, Some(40)), 5);
        assert_eq!(delta(7, None), 7);
    }

    #[test]
    fn gpus_without_counters_skip() {
        let gpus = healthy().gpu.gpus;
        let now = Looks::of(&gpus, 0);
        let c = health_counters(&gpus, &Looks::default(), &now);
        // The test kit's GPUs read rows but no counters: rows alone still show.
        assert!(matches!(c.status, Status::Pass | Status::Skip), "{c:?}");
        let mut bare = gpus;
        for g in &mut bare {
            g.sample.remapped_rows = None;
        }
        let c = health_counters(&bare, &Looks::default(), &Looks::of(&bare, 0));
        assert_eq!(c.status, Status::Skip);
    }

    #[test]
    fn the_last_look_is_kept_private_with_gpus_not_seen_now() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let old = Looks::of(&gpus_with(counters(1, 0, 0)), 5);
        let mut gone = old.clone();
        gone.gpus = BTreeMap::from([("GPU-gone".to_string(), Look::default())]);
        let now = Looks::of(&gpus_with(counters(2, 0, 0)), 9);
        now.save(&gone, &state).unwrap();
        let back = Looks::load(&state);
        assert!(back.gpus.contains_key("GPU-gone"));
        assert_eq!(back.gpus.len(), now.gpus.len() + 1);
        let mode = std::fs::metadata(state.join(LOOK_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            Looks::load(dir.path()),
            Looks::default(),
            "no file, no look"
        );
    }
}
