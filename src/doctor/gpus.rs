//! Checks of the GPUs NVML sees: count, persistence mode, PCIe links, throttling, ECC errors and
//! memory repair (row remapping, page retirement).

use super::facts::HostFacts;
use super::memory::{ecc, memory_repair};
use super::nvidia::gpu_error_is;
use super::per_gpu::{check, indices};
use super::report::{Check, Status};
use crate::gpu::report::GpuEntry;
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
    if gpu_error_is(f, &GpuError::NoGpus) {
        return check(
            VISIBLE,
            title,
            Status::Fail,
            "the driver is loaded but reports no GPUs".into(),
        )
        .with_fix(GpuError::NoGpus.fix());
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
    let slow: Vec<String> = gpus
        .iter()
        .filter(|g| g.pcie_downgraded)
        .map(|g| {
            format!(
                "GPU {} runs {} of its {}",
                g.info.index,
                units::pcie(g.sample.pcie_gen, g.sample.pcie_width),
                units::pcie(g.info.pcie_gen_max, g.info.pcie_width_max)
            )
        })
        .collect();
    if slow.is_empty() {
        return check(
            PCIE_LINK,
            title,
            Status::Pass,
            "every link at its maximum width (idle GPUs may lower the generation to save power)"
                .into(),
        );
    }
    check(PCIE_LINK, title, Status::Warn, format!("{}: host transfers are slower", slow.join("; ")))
        .with_fix(
            "Put the GPU in a slot wired for its full width and generation, reseat it and any riser; \
             compare `nvidia-smi -q -d PCIE` with `sudo lspci -vv -s BUS_ID | grep -E 'LnkCap|LnkSta'`, \
             and check the BIOS PCIe generation setting.",
        )
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
#[path = "gpus_tests.rs"]
mod tests;
