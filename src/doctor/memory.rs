//! Checks of GPU memory health: volatile ECC error counts and the repairs the GPU made or wants
//! (row remapping on Ampere and later, page retirement before).

use super::facts::HostFacts;
use super::per_gpu::{check, indices};
use super::report::{Check, Status};
use crate::gpu::report::GpuEntry;

pub const ECC: &str = "gpus.ecc";
pub const MEMORY_REPAIR: &str = "gpus.memory_repair";

const ECC_FIX: &str = "An uncorrectable error may have corrupted what ran on the GPU: rerun it. See \
     `nvidia-smi -q -d ECC,ROW_REMAPPER` (PAGE_RETIREMENT on older GPUs) and `sudo dmesg | grep -i xid` \
     (Xid 48, 63, 64, 94, 95); reset the GPU when idle (`sudo nvidia-smi -r -i N`) so the repair takes \
     effect; if errors recur, drain the GPU and contact the vendor.";

const RESET_FIX: &str =
    "Reset the GPU when nothing runs on it: `sudo nvidia-smi -r -i N` (stop its \
     processes first), or reboot; until then the faulty memory stays in use.";

const RMA_FIX: &str =
    "The GPU cannot repair this memory any more: drain it and contact the vendor \
     (RMA); `nvidia-smi -q -d ROW_REMAPPER` shows the remap histogram for the ticket.";

/// Uncorrected errors fail; corrected ones pass with their count. The hardware fixed every
/// corrected error and a steady trickle is normal for HBM; a failing row shows up as a remap or a
/// retired page, which `memory_repair` judges, so warning on the count would only cry wolf.
pub(crate) fn ecc(_: &HostFacts, gpus: &[&GpuEntry]) -> Check {
    let title = "ECC errors";
    if gpus.iter().all(|g| !reports_ecc(g)) {
        return check(
            ECC,
            title,
            Status::Skip,
            "the GPUs have no ECC (GeForce boards) or do not report it".into(),
        );
    }
    let bad = per_gpu(gpus, |g| {
        let (c, u) = (g.sample.ecc_corrected, g.sample.ecc_uncorrected);
        (u.unwrap_or(0) > 0).then(|| {
            format!(
                "{} uncorrected, {} corrected",
                u.unwrap_or(0),
                c.unwrap_or(0)
            )
        })
    });
    if !bad.is_empty() {
        return check(
            ECC,
            title,
            Status::Fail,
            format!("{bad} (volatile, since the driver loaded)"),
        )
        .with_fix(ECC_FIX);
    }
    let off = indices(gpus, |g| g.info.ecc_enabled == Some(false));
    if !off.is_empty() {
        return check(ECC, title, Status::Warn, format!("ECC is off on GPU {off}: memory errors there go unnoticed"))
            .with_fix("Turn it on (it takes effect after a reboot or GPU reset): `sudo nvidia-smi -i N -e 1`.");
    }
    let corrected = per_gpu(gpus, |g| {
        let c = g.sample.ecc_corrected.unwrap_or(0);
        (c > 0).then(|| c.to_string())
    });
    let detail = if corrected.is_empty() {
        "no ECC errors since the driver loaded".to_string()
    } else {
        format!(
            "no uncorrected errors; corrected by the hardware: {corrected} (see Memory repair for \
             failing rows)"
        )
    };
    check(ECC, title, Status::Pass, detail)
}

fn reports_ecc(g: &GpuEntry) -> bool {
    g.info.ecc_enabled.is_some()
        || g.sample.ecc_corrected.is_some()
        || g.sample.ecc_uncorrected.is_some()
}

/// "GPU 1: x; GPU 3: y" for the GPUs `say` has something to say about.
fn per_gpu(gpus: &[&GpuEntry], say: impl Fn(&GpuEntry) -> Option<String>) -> String {
    gpus.iter()
        .filter_map(|g| say(g).map(|s| format!("GPU {}: {s}", g.info.index)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What one GPU's memory repair needs: nothing, a reset, or a replacement.
fn repair_state(g: &GpuEntry) -> Option<(Status, String)> {
    let i = g.info.index;
    if let Some(r) = g.sample.remapped_rows {
        if r.failure {
            return Some((
                Status::Fail,
                format!("GPU {i}: a row remapping failed (no spare row left)"),
            ));
        }
        if r.pending {
            return Some((
                Status::Warn,
                format!("GPU {i}: a row remap waits for a GPU reset ({} uncorrectable, {} correctable rows)", r.uncorrectable, r.correctable),
            ));
        }
    }
    if let Some(p) = g.sample.retired_pages.filter(|p| p.pending) {
        return Some((
            Status::Warn,
            format!(
                "GPU {i}: page retirement waits for a reboot ({} double-bit, {} single-bit pages)",
                p.double_bit_ecc, p.single_bit_ecc
            ),
        ));
    }
    None
}

/// A failed remap asks for a replacement; a pending remap or retirement asks for a reset.
pub(crate) fn memory_repair(_: &HostFacts, gpus: &[&GpuEntry]) -> Check {
    let title = "Memory repair";
    if gpus
        .iter()
        .all(|g| g.sample.remapped_rows.is_none() && g.sample.retired_pages.is_none())
    {
        return check(
            MEMORY_REPAIR,
            title,
            Status::Skip,
            "the GPUs report neither row remapping nor page retirement (no ECC, or not supported)"
                .into(),
        );
    }
    let states: Vec<(Status, String)> = gpus.iter().filter_map(|g| repair_state(g)).collect();
    let worst = if states.iter().any(|(s, _)| *s == Status::Fail) {
        Status::Fail
    } else if states.is_empty() {
        Status::Pass
    } else {
        Status::Warn
    };
    if worst != Status::Pass {
        let detail = states
            .into_iter()
            .map(|(_, d)| d)
            .collect::<Vec<_>>()
            .join("; ");
        let fix = if worst == Status::Fail {
            RMA_FIX
        } else {
            RESET_FIX
        };
        return check(MEMORY_REPAIR, title, worst, detail).with_fix(fix);
    }
    check(MEMORY_REPAIR, title, Status::Pass, repaired_summary(gpus))
}

fn repaired_summary(gpus: &[&GpuEntry]) -> String {
    let done: Vec<String> = gpus
        .iter()
        .filter_map(|g| {
            let rows = g
                .sample
                .remapped_rows
                .map_or(0, |r| r.correctable + r.uncorrectable);
            let pages = g
                .sample
                .retired_pages
                .map_or(0, |p| p.single_bit_ecc + p.double_bit_ecc);
            (rows + pages > 0).then(|| {
                format!(
                    "GPU {}: {rows} rows remapped, {pages} pages retired",
                    g.info.index
                )
            })
        })
        .collect();
    if done.is_empty() {
        "no rows remapped, no pages retired, nothing pending".to_string()
    } else {
        format!("repairs in effect, nothing pending: {}", done.join("; "))
    }
}
