//! Checks of the GPUs NVML sees: count, persistence mode, PCIe links, throttling, ECC errors and
//! memory repair (row remapping, page retirement).

use super::facts::HostFacts;
use super::memory::{ecc, memory_repair};
use super::nvidia::gpu_error_is;
use super::per_gpu::{check, indices};
use super::report::{Check, Status};
use crate::gpu::report::{GpuEntry, PcieDowngrade};
use crate::gpu::{is_slowdown, GpuError};
use crate::units;

pub const VISIBLE: &str = "gpus.visible";
pub const PERSISTENCE: &str = "gpus.persistence";
pub const PCIE_LINK: &str = "gpus.pcie_link";
pub const THROTTLE: &str = "gpus.throttle";
pub use super::memory::{ECC, MEMORY_REPAIR};

/// A check over the GPUs that answer (lost ones excluded).
type PerGpuCheck = fn(&HostFacts, &[&GpuEntry]) -> Check;

pub fn checks(f: &HostFacts) -> Vec<Check> {
    let mut out = vec![visible(f)];
    let gpus: Vec<&GpuEntry> = f.gpu.gpus.iter().filter(|g| !g.sample.lost).collect();
    let rest: [(&str, &str, PerGpuCheck); 5] = [
        (PERSISTENCE, "Persistence mode", persistence),
        (PCIE_LINK, "PCIe links", pcie_link),
        (THROTTLE, "Clocks (throttling)", throttle),
        (ECC, "ECC errors", ecc),
        (MEMORY_REPAIR, "Memory repair", memory_repair),
    ];
    for (id, title, run) in rest {
        out.push(if gpus.is_empty() {
            check(id, title, Status::Skip, "no GPU to look at".into())
        } else {
            run(f, &gpus)
        });
    }
    out
}

fn visible(f: &HostFacts) -> Check {
    let title = "GPUs visible";
    if gpu_error_is(f, &GpuError::NoGpus { system: None }) {
        return check(
            VISIBLE,
            title,
            Status::Fail,
            "the driver is loaded but reports no GPUs".into(),
        )
        .with_fix(GpuError::NoGpus { system: None }.fix());
    }
    if f.gpu.error.is_some() {
        return check(
            VISIBLE,
            title,
            Status::Skip,
            "NVML did not start (see NVML above)".into(),
        );
    }
    let lost: Vec<String> = f
        .gpu
        .gpus
        .iter()
        .filter(|g| g.sample.lost)
        .map(|g| g.info.index.to_string())
        .collect();
    let summary = format!(
        "{} GPU{}: {}",
        f.gpu.gpu_count,
        plural(f.gpu.gpu_count),
        names(&f.gpu.gpus)
    );
    if !lost.is_empty() {
        return check(
            VISIBLE,
            title,
            Status::Fail,
            format!("{summary}; GPU {} has fallen off the bus", lost.join(", ")),
        )
        .with_fix(crate::gpu::lost_gpu_fix("N"));
    }
    check(VISIBLE, title, Status::Pass, summary)
}

/// "2 × NVIDIA H100 80GB HBM3, 1 × NVIDIA A100 80GB PCIe", in index order.
fn names(gpus: &[GpuEntry]) -> String {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for g in gpus {
        match groups.iter_mut().find(|(n, _)| *n == g.info.name) {
            Some((_, count)) => *count += 1,
            None => groups.push((&g.info.name, 1)),
        }
    }
    groups
        .iter()
        .map(|(n, c)| format!("{c} × {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn persistence(f: &HostFacts, gpus: &[&GpuEntry]) -> Check {
    let title = "Persistence mode";
    if f.os != "linux" {
        return check(
            PERSISTENCE,
            title,
            Status::Skip,
            "persistence mode is a Linux setting".into(),
        );
    }
    let off = indices(gpus, |g| g.info.persistence_mode == Some(false));
    if gpus.iter().all(|g| g.info.persistence_mode.is_none()) {
        return check(
            PERSISTENCE,
            title,
            Status::Skip,
            "the GPUs do not report persistence mode".into(),
        );
    }
    if off.is_empty() {
        return check(PERSISTENCE, title, Status::Pass, "on for every GPU".into());
    }
    check(
        PERSISTENCE,
        title,
        Status::Warn,
        format!(
            "off on GPU {off}: the driver tears each GPU down when its last client exits, so the next \
             CUDA start takes seconds and settings such as clocks are lost"
        ),
    )
    .with_fix(
        "Start the daemon: `sudo systemctl enable --now nvidia-persistenced` (or, until the next \
         reboot, `sudo nvidia-smi -pm 1`).",
    )
}

fn pcie_link(_: &HostFacts, gpus: &[&GpuEntry]) -> Check {
    let title = "PCIe links";
    if gpus
        .iter()
        .all(|g| g.sample.pcie_gen.is_none() && g.sample.pcie_width.is_none())
    {
        return check(
            PCIE_LINK,
            title,
            Status::Skip,
            "the GPUs do not report their PCIe link".into(),
        );
    }
    let link = |g: &GpuEntry| {
        format!(
            "{} of its {}",
            units::pcie(g.sample.pcie_gen, g.sample.pcie_width),
            units::pcie(g.info.pcie_gen_max, g.info.pcie_width_max)
        )
    };
    let (mut narrow, mut slow) = (Vec::new(), Vec::new());
    for g in gpus {
        match g.pcie_downgrade {
            Some(PcieDowngrade::Width) => {
                narrow.push(format!("GPU {} runs {}", g.info.index, link(g)))
            }
            Some(PcieDowngrade::Generation) => slow.push(format!(
                "GPU {} runs {} under load ({})",
                g.info.index,
                link(g),
                load(g)
            )),
            None => {}
        }
    }
    if narrow.is_empty() && slow.is_empty() {
        // Idle GPUs at a lower generation are named, so that nobody reseats them.
        let resting: Vec<String> = gpus
            .iter()
            .filter(
                |g| matches!((g.sample.pcie_gen, g.info.pcie_gen_max), (Some(c), Some(m)) if c < m),
            )
            .map(|g| g.info.index.to_string())
            .collect();
        let detail = if resting.is_empty() {
            "every link at its maximum width and generation".to_string()
        } else {
            format!(
                "every link at its maximum width; idle GPU{} {} at a lower generation to save \
                 power (normal: it comes back under load)",
                plural(resting.len()),
                resting.join(", ")
            )
        };
        return check(PCIE_LINK, title, Status::Pass, detail);
    }
    let mut found = Vec::new();
    let mut fixes = Vec::new();
    if !narrow.is_empty() {
        found.push(format!(
            "{}: a narrower link than the slot and card support, at any load",
            narrow.join("; ")
        ));
        fixes.push(
            "A narrower link is physical: put the GPU in a slot wired for its full width \
             (the board manual says which), reseat it and any riser or cable",
        );
    }
    if !slow.is_empty() {
        found.push(format!(
            "{}: a lower generation while working, not a power saving",
            slow.join("; ")
        ));
        fixes.push(
            "A lower generation under load points at the signal path or the firmware: check the \
             BIOS PCIe generation setting (Auto or the card's), then a riser or retimer that \
             cannot hold the speed",
        );
    }
    check(
        PCIE_LINK,
        title,
        Status::Warn,
        format!("{}; host transfers are slower", found.join("; ")),
    )
    .with_fix(format!(
        "{}. Compare `nvidia-smi -q -d PCIE` with `sudo lspci -vv -s BUS_ID | grep -E 'LnkCap|LnkSta'` \
         while the GPU works.",
        fixes.join(". ")
    ))
}

/// "P0, 85%": what makes a GPU count as under load.
fn load(g: &GpuEntry) -> String {
    let util = g.sample.util_gpu_pct.map(|u| format!("{u}%"));
    match (g.sample.pstate, util) {
        (Some(p), Some(u)) => format!("P{p}, {u}"),
        (Some(p), None) => format!("P{p}"),
        (None, Some(u)) => u,
        (None, None) => "busy".into(),
    }
}

fn throttle(_: &HostFacts, gpus: &[&GpuEntry]) -> Check {
    let title = "Clocks (throttling)";
    if gpus.iter().all(|g| g.sample.throttle_reasons.is_none()) {
        return check(
            THROTTLE,
            title,
            Status::Skip,
            "the GPUs do not report throttle reasons".into(),
        );
    }
    let mut slowed = Vec::new();
    let mut capped = Vec::new();
    for g in gpus {
        let (serious, at_power_limit) = slowdowns(g);
        if !serious.is_empty() {
            slowed.push(format!(
                "GPU {} ({}, {})",
                g.info.index,
                serious.join(", "),
                units::celsius(g.sample.temp_c)
            ));
        } else if at_power_limit {
            capped.push(g.info.index.to_string());
        }
    }
    if !slowed.is_empty() {
        return check(
            THROTTLE,
            title,
            Status::Warn,
            format!("clocks held back now: {}", slowed.join("; ")),
        )
        .with_fix(
            "Improve cooling: airflow, fan and chassis settings, inlet temperature, dust; \
                 `nvidia-smi -q -d TEMPERATURE,PERFORMANCE` shows the limits and reasons. A power \
                 brake points at the PSU or the power cables.",
        );
    }
    let detail = if capped.is_empty() {
        "no GPU is slowed down".to_string()
    } else {
        format!(
            "GPU {} at the power limit (normal under full load)",
            capped.join(", ")
        )
    };
    check(THROTTLE, title, Status::Pass, detail)
}

/// The reasons slowing a GPU down that deserve attention, and whether it sits at its power cap.
/// Sitting at the power limit under full load is how boost works, not a fault.
fn slowdowns(g: &GpuEntry) -> (Vec<&str>, bool) {
    let reasons = g
        .sample
        .throttle_reasons
        .iter()
        .flatten()
        .map(String::as_str);
    let slow: Vec<&str> = reasons.filter(|r| is_slowdown(r)).collect();
    let capped = slow.contains(&"software power cap");
    let serious = slow
        .into_iter()
        .filter(|r| *r != "software power cap")
        .collect();
    (serious, capped)
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::run_checks;
    use crate::doctor::testkit::{find, healthy, nvml_failed, status_of};
    use crate::gpu::{RemappedRows, RetiredPages};

    fn detail(f: &HostFacts, id: &str) -> String {
        find(&run_checks(f), id).detail.clone()
    }

    #[test]
    fn visible_gpus_are_counted_and_named() {
        let d = detail(&healthy(), VISIBLE);
        assert_eq!(d, "2 GPUs: 2 × NVIDIA H100 80GB HBM3");
        let (status, fix) = status_of(&nvml_failed(&GpuError::NoGpus { system: None }), VISIBLE);
        assert_eq!(status, Status::Fail);
        assert!(fix.is_some_and(|x| x.contains("lspci")));
        let f = nvml_failed(&GpuError::DriverNotLoaded);
        for id in [
            VISIBLE,
            PERSISTENCE,
            PCIE_LINK,
            THROTTLE,
            ECC,
            MEMORY_REPAIR,
        ] {
            assert_eq!(status_of(&f, id).0, Status::Skip, "{id}");
        }
    }

    #[test]
    fn a_lost_gpu_fails() {
        let mut f = healthy();
        f.gpu.gpus[1].sample = crate::gpu::GpuSample::lost();
        let (status, fix) = status_of(&f, VISIBLE);
        assert_eq!(status, Status::Fail);
        assert!(detail(&f, VISIBLE).contains("GPU 1 has fallen off the bus"));
        assert!(fix.is_some_and(|x| x.contains("Xid 79")));
        // The other GPU is still judged.
        assert_eq!(status_of(&f, ECC).0, Status::Pass);
    }

    #[test]
    fn persistence_off_warns_on_linux_only() {
        let mut f = healthy();
        f.gpu.gpus[1].info.persistence_mode = Some(false);
        let (status, fix) = status_of(&f, PERSISTENCE);
        assert_eq!(status, Status::Warn);
        assert!(detail(&f, PERSISTENCE).starts_with("off on GPU 1:"));
        assert!(fix
            .is_some_and(|x| x.contains("nvidia-persistenced") && x.contains("nvidia-smi -pm 1")));
        f.os = "macos".into();
        assert_eq!(status_of(&f, PERSISTENCE).0, Status::Skip);
        let mut unknown = healthy();
        for g in &mut unknown.gpu.gpus {
            g.info.persistence_mode = None;
        }
        assert_eq!(status_of(&unknown, PERSISTENCE).0, Status::Skip);
    }

    /// GPU 0 of the healthy machine with this link, P-state and utilisation, judged again.
    fn link(f: &mut HostFacts, gen: u32, width: u32, pstate: u32, util: u32) {
        let g = &f.gpu.gpus[0];
        let mut sample = g.sample.clone();
        sample.pcie_gen = Some(gen);
        sample.pcie_width = Some(width);
        sample.pstate = Some(pstate);
        sample.util_gpu_pct = Some(util);
        f.gpu.gpus[0] = GpuEntry::new(g.info.clone(), sample);
    }

    #[test]
    fn an_idle_gpu_at_a_lower_generation_passes_and_is_named() {
        let mut f = healthy();
        // Idle GPUs read a few percent from the driver's housekeeping.
        link(&mut f, 1, 16, 8, 3);
        let (status, fix) = status_of(&f, PCIE_LINK);
        assert_eq!(status, Status::Pass);
        assert!(fix.is_none());
        let d = detail(&f, PCIE_LINK);
        assert!(d.contains("idle GPU 0 at a lower generation"), "{d}");
        link(&mut f, 1, 16, 8, 0);
        let mut second = f.gpu.gpus[0].clone();
        second.info.index = 1;
        f.gpu.gpus[1] = second;
        let d = detail(&f, PCIE_LINK);
        assert!(d.contains("idle GPUs 0, 1 at a lower generation"), "{d}");
        assert_eq!(
            detail(&healthy(), PCIE_LINK),
            "every link at its maximum width and generation"
        );
    }

    #[test]
    fn a_busy_gpu_at_a_lower_generation_warns_about_the_generation() {
        let mut f = healthy();
        link(&mut f, 1, 16, 0, 85);
        let (status, fix) = status_of(&f, PCIE_LINK);
        assert_eq!(status, Status::Warn);
        let d = detail(&f, PCIE_LINK);
        assert!(
            d.contains("GPU 0 runs Gen1 x16 of its Gen5 x16 under load (P0, 85%)")
                && d.contains("a lower generation while working"),
            "{d}"
        );
        assert!(!d.contains("narrower"), "{d}");
        let fix = fix.unwrap();
        assert!(
            fix.contains("BIOS PCIe generation") && fix.contains("LnkSta"),
            "{fix}"
        );
        assert!(!fix.contains("full width"), "{fix}");
    }

    #[test]
    fn a_narrower_link_warns_even_when_idle() {
        let mut f = healthy();
        link(&mut f, 1, 8, 8, 0);
        let (status, fix) = status_of(&f, PCIE_LINK);
        assert_eq!(status, Status::Warn);
        let d = detail(&f, PCIE_LINK);
        assert!(
            d.contains("GPU 0 runs Gen1 x8 of its Gen5 x16") && d.contains("a narrower link"),
            "{d}"
        );
        assert!(!d.contains("under load"), "{d}");
        let fix = fix.unwrap();
        assert!(
            fix.contains("full width") && fix.contains("reseat"),
            "{fix}"
        );
        assert!(!fix.contains("BIOS"), "{fix}");
        // Both kinds at once: both named, both fixes given.
        let g = &f.gpu.gpus[1];
        let mut busy = g.sample.clone();
        busy.pcie_gen = Some(3);
        busy.pstate = Some(0);
        busy.util_gpu_pct = Some(100);
        f.gpu.gpus[1] = GpuEntry::new(g.info.clone(), busy);
        let d = detail(&f, PCIE_LINK);
        assert!(
            d.contains("GPU 0 runs Gen1 x8") && d.contains("GPU 1 runs Gen3 x16"),
            "{d}"
        );
        let fix = status_of(&f, PCIE_LINK).1.unwrap();
        assert!(fix.contains("full width") && fix.contains("BIOS"), "{fix}");
    }

    #[test]
    fn thermal_throttling_warns_but_a_power_cap_passes() {
        let mut f = healthy();
        f.gpu.gpus[1].sample.throttle_reasons = Some(vec!["software power cap".into()]);
        assert_eq!(status_of(&f, THROTTLE).0, Status::Pass);
        assert!(detail(&f, THROTTLE).contains("GPU 1 at the power limit"));
        f.gpu.gpus[0].sample.throttle_reasons = Some(vec![
            "hardware slowdown".into(),
            "hardware thermal slowdown".into(),
        ]);
        f.gpu.gpus[0].sample.temp_c = Some(89);
        let (status, fix) = status_of(&f, THROTTLE);
        assert_eq!(status, Status::Warn);
        assert!(
            detail(&f, THROTTLE)
                .contains("GPU 0 (hardware slowdown, hardware thermal slowdown, 89°C)"),
            "{}",
            detail(&f, THROTTLE)
        );
        assert!(fix.is_some_and(|x| x.contains("cooling")));
    }

    #[test]
    fn uncorrected_ecc_errors_fail_and_corrected_ones_pass_with_the_count() {
        let mut f = healthy();
        f.gpu.gpus[1].sample.ecc_corrected = Some(5);
        assert_eq!(status_of(&f, ECC).0, Status::Pass);
        assert!(detail(&f, ECC).contains("GPU 1: 5"));
        f.gpu.gpus[1].sample.ecc_uncorrected = Some(1);
        let (status, fix) = status_of(&f, ECC);
        assert_eq!(status, Status::Fail);
        assert!(detail(&f, ECC).contains("GPU 1: 1 uncorrected, 5 corrected"));
        assert!(fix.is_some_and(|x| x.contains("ROW_REMAPPER") && x.contains("nvidia-smi -r")));
    }

    #[test]
    fn ecc_off_warns_and_no_ecc_skips() {
        let mut f = healthy();
        f.gpu.gpus[0].info.ecc_enabled = Some(false);
        f.gpu.gpus[0].sample.ecc_corrected = None;
        f.gpu.gpus[0].sample.ecc_uncorrected = None;
        let (status, fix) = status_of(&f, ECC);
        assert_eq!(status, Status::Warn);
        assert!(fix.is_some_and(|x| x.contains("-e 1")));
        for g in &mut f.gpu.gpus {
            g.info.ecc_enabled = None;
            g.sample.ecc_corrected = None;
            g.sample.ecc_uncorrected = None;
        }
        assert_eq!(status_of(&f, ECC).0, Status::Skip);
    }

    #[test]
    fn row_remapping_pending_warns_and_failed_fails() {
        let mut f = healthy();
        f.gpu.gpus[0].sample.remapped_rows = Some(RemappedRows {
            uncorrectable: 1,
            ..RemappedRows::default()
        });
        assert_eq!(status_of(&f, MEMORY_REPAIR).0, Status::Pass);
        assert!(detail(&f, MEMORY_REPAIR).contains("GPU 0: 1 rows remapped"));
        f.gpu.gpus[0].sample.remapped_rows = Some(RemappedRows {
            uncorrectable: 1,
            pending: true,
            ..RemappedRows::default()
        });
        let (status, fix) = status_of(&f, MEMORY_REPAIR);
        assert_eq!(status, Status::Warn);
        assert!(fix.is_some_and(|x| x.contains("nvidia-smi -r -i")));
        f.gpu.gpus[1].sample.remapped_rows = Some(RemappedRows {
            uncorrectable: 4,
            failure: true,
            ..RemappedRows::default()
        });
        let (status, fix) = status_of(&f, MEMORY_REPAIR);
        assert_eq!(status, Status::Fail);
        let d = detail(&f, MEMORY_REPAIR);
        assert!(
            d.contains("GPU 0: a row remap waits") && d.contains("GPU 1: a row remapping failed"),
            "{d}"
        );
        assert!(fix.is_some_and(|x| x.contains("RMA")));
    }

    #[test]
    fn retired_pages_pending_warns_and_nothing_reported_skips() {
        let mut f = healthy();
        f.gpu.gpus[0].sample.remapped_rows = None;
        f.gpu.gpus[1].sample.remapped_rows = None;
        assert_eq!(status_of(&f, MEMORY_REPAIR).0, Status::Skip);
        f.gpu.gpus[1].sample.retired_pages = Some(RetiredPages {
            single_bit_ecc: 2,
            double_bit_ecc: 1,
            pending: true,
        });
        assert_eq!(status_of(&f, MEMORY_REPAIR).0, Status::Warn);
        assert!(detail(&f, MEMORY_REPAIR).contains("1 double-bit, 2 single-bit"));
    }
}
