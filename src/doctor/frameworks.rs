//! The doctor's compatibility check: does this driver run the current TensorFlow and PyTorch images?

use super::report::{Check, Family, Status};
use crate::compat::board::{assess, Board};
use crate::compat::data::CompatData;
use crate::compat::engine::{Level, Scope};
use crate::compat::profile::{GpuRuntime, HostProfile, ImageProfile};
use crate::compat::version::Version;
use crate::gpu::report::GpuReport;
use crate::pull::{CatalogEntry, Framework};

/// Judged as the Compatibility tab judges, the container runtime included: PASS when the
/// newest catalog release of each framework runs here, WARN when one needs a newer driver
/// (naming it, and the newest image that runs now), FAIL when none runs at all, and FAIL too when
/// Docker can give no container a GPU (every image "will not run"). When Docker could not be
/// asked, a new enough driver is a SKIP: whether the images run is unknown, as Compat says.
pub fn framework_check(
    gpu: &GpuReport,
    runtime: GpuRuntime,
    data: &CompatData,
    catalog: &[CatalogEntry],
) -> Check {
    let check = |status, detail: String| {
        Check::new(
            "compat.frameworks",
            Family::Compat,
            "Framework images",
            status,
            detail,
        )
    };
    let host = HostProfile::from_report(gpu, runtime);
    let (Some(driver), Some(cuda)) = (host.driver.clone(), host.cuda) else {
        return check(
            Status::Skip,
            "the driver could not be read, so no image can be judged".into(),
        );
    };
    let board = assess(data, host, Vec::new(), catalog);
    // What the host as a whole does to every verdict (no NVIDIA runtime in Docker, or Docker
    // not answering): the same reason on every image.
    let host_reason = board
        .images
        .iter()
        .flat_map(|a| &a.verdict.reasons)
        .find(|r| r.scope == Scope::Host)
        .cloned();
    let mut behind = Vec::new();
    let mut fixes = Vec::new();
    let mut running = Vec::new();
    let mut none_runs = true;
    for framework in [Framework::Tensorflow, Framework::Pytorch] {
        let Some((release, best_level)) = newest_release(&board, framework) else {
            continue;
        };
        let label = format!("{} {release}", framework.label());
        // Minor-version compatibility is a reason to warn: newer PTX and APIs fail on it.
        let newest_runs = best_level == Level::Runs;
        let any_runs = board.best.iter().any(|b| b.framework == framework);
        none_runs &= !any_runs;
        if newest_runs {
            running.push(label);
            continue;
        }
        behind.push(label.clone());
        let needed = newest_cuda(&board, framework, release);
        let how = if best_level == Level::Compat {
            " to run directly (today only through compatibility)"
        } else {
            ""
        };
        let driver_fix = needed
            .and_then(|c| {
                data.min_driver(c)
                    .map(|d| format!("driver {} or newer (CUDA {c})", d.text))
            })
            .unwrap_or_else(|| "a newer driver".into());
        let instead = board
            .best
            .iter()
            .find(|b| b.framework == framework)
            .map(|b| format!("; until then {} runs here", b.reference))
            .unwrap_or_default();
        fixes.push(format!("{label} needs {driver_fix}{how}{instead}"));
    }
    let driver_part = if behind.is_empty() {
        format!(
            "driver {driver} (CUDA {cuda}) runs the newest images: {}",
            running.join(", ")
        )
    } else {
        format!(
            "driver {driver} (CUDA {cuda}) is too old for {}",
            behind.join(" and ")
        )
    };
    let driver_status = match (behind.is_empty(), none_runs) {
        (true, _) => Status::Pass,
        (false, true) => Status::Fail,
        (false, false) => Status::Warn,
    };
    let compat_fix = "`gpudeck compat` lists every image's verdict.";
    let Some(reason) = host_reason else {
        if behind.is_empty() {
            return check(Status::Pass, driver_part);
        }
        return check(driver_status, driver_part)
            .with_fix(format!("{}. {compat_fix}", fixes.join("; ")));
    };
    // The driver's part, said as what it would be once containers get GPUs.
    let driver_part = if behind.is_empty() {
        format!(
            "driver {driver} (CUDA {cuda}) is new enough for the newest images ({})",
            running.join(", ")
        )
    } else {
        driver_part
    };
    let mut fix = capitalised(reason.fix.as_deref().unwrap_or_default());
    if !fixes.is_empty() {
        fix.push_str(&format!(". {}", fixes.join("; ")));
    }
    fix.push_str(&format!(". {compat_fix}"));
    if reason.level == Level::WontRun {
        return check(
            Status::Fail,
            format!("no image will run here: {}; {driver_part}", reason.text),
        )
        .with_fix(fix);
    }
    // Not known (Docker not asked): the driver's verdict stands where it is a problem.
    let status = if behind.is_empty() {
        Status::Skip
    } else {
        driver_status
    };
    check(
        status,
        format!(
            "{driver_part}; whether images run in containers is unknown: {}",
            reason.text
        ),
    )
    .with_fix(fix)
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The newest numbered release of a framework in the catalog and the best verdict among its images.
fn newest_release(board: &Board, framework: Framework) -> Option<(Version, Level)> {
    let releases = board
        .images
        .iter()
        .filter(|a| a.image.framework == Some(framework))
        .filter_map(|a| Some((a.image.framework_release()?, a.verdict.image_level)));
    let newest = releases.clone().map(|(r, _)| r).max()?;
    let level = releases
        .filter(|(r, _)| *r == newest)
        .map(|(_, l)| l)
        .min()?;
    Some((newest, level))
}

/// The oldest CUDA among the images of that release: the least a driver must support.
fn newest_cuda(board: &Board, framework: Framework, release: Version) -> Option<Version> {
    board
        .images
        .iter()
        .map(|a| &a.image)
        .filter(|p: &&ImageProfile| {
            p.framework == Some(framework) && p.framework_release() == Some(release)
        })
        .filter_map(|p| p.cuda)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::sim::SimSource;
    use crate::gpu::GpuSource;
    use crate::host::ProcessTable;
    use crate::pull::Catalog;
    use gpudeck_sim_model::SimSpec;
    use std::sync::Arc;

    fn report(spec: &str) -> GpuReport {
        let mut source = SimSource::new(SimSpec::parse(spec).unwrap());
        let table: Arc<dyn ProcessTable> = Arc::new(source.process_table());
        crate::gpu::report::collect(&mut source as &mut dyn GpuSource, &table, "t".into())
    }

    fn judge(spec: &str) -> Check {
        judge_with(spec, GpuRuntime::Nvidia)
    }

    fn judge_with(spec: &str, runtime: GpuRuntime) -> Check {
        let (catalog, _) = Catalog::load(None);
        framework_check(
            &report(spec),
            runtime,
            &CompatData::builtin(),
            catalog.entries(),
        )
    }

    #[test]
    fn without_a_gpu_runtime_in_docker_no_image_runs_as_compat_says() {
        let c = judge_with("gpus=1", GpuRuntime::Missing);
        assert_eq!(c.status, Status::Fail, "{c:?}");
        assert!(
            c.detail
                .starts_with("no image will run here: Docker has no NVIDIA runtime"),
            "{}",
            c.detail
        );
        assert!(!c.detail.contains("runs the newest"), "{}", c.detail);
        assert!(
            c.detail.contains("is new enough for the newest images"),
            "{}",
            c.detail
        );
        let fix = c.fix.unwrap();
        assert!(fix.starts_with("Install nvidia-container-toolkit"), "{fix}");
        // The Compatibility tab's verdicts on the same facts: not one image runs.
        let (catalog, _) = Catalog::load(None);
        let host = HostProfile::from_report(&report("gpus=1"), GpuRuntime::Missing);
        let board = assess(&CompatData::builtin(), host, Vec::new(), catalog.entries());
        assert!(board
            .images
            .iter()
            .all(|a| a.verdict.level == Level::WontRun));
        // A CDI spec this Docker cannot use is the same.
        assert_eq!(
            judge_with("gpus=1", GpuRuntime::CdiTooOld).status,
            Status::Fail
        );
        // An old driver is named too, with its own fix.
        let old = judge_with(
            "gpus=1,profile=a100-pcie,driver=535.183.01,cuda=12020",
            GpuRuntime::Missing,
        );
        assert_eq!(old.status, Status::Fail);
        assert!(old.detail.contains("is too old for"), "{}", old.detail);
        let fix = old.fix.unwrap();
        assert!(
            fix.contains("nvidia-ctk") && fix.contains("needs driver"),
            "{fix}"
        );
    }

    #[test]
    fn with_docker_not_asked_a_new_driver_is_a_skip_and_an_old_one_still_warns() {
        let c = judge_with("gpus=1", GpuRuntime::Unknown);
        assert_eq!(c.status, Status::Skip, "{c:?}");
        assert!(
            c.detail.contains("unknown: Docker could not be asked"),
            "{}",
            c.detail
        );
        let old = judge_with(
            "gpus=1,profile=a100-pcie,driver=535.183.01,cuda=12020",
            GpuRuntime::Unknown,
        );
        assert_eq!(old.status, Status::Warn, "{old:?}");
        // Every way containers get GPUs passes alike.
        for runtime in [GpuRuntime::Nvidia, GpuRuntime::Hook, GpuRuntime::Cdi] {
            assert_eq!(
                judge_with("gpus=1", runtime).status,
                Status::Pass,
                "{runtime:?}"
            );
        }
    }

    #[test]
    fn a_current_driver_passes() {
        let c = judge("gpus=1");
        assert_eq!(c.status, Status::Pass, "{c:?}");
        assert!(
            c.detail.contains("TensorFlow 2.20.0, PyTorch 2.11.0"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn an_older_driver_warns_with_the_driver_to_install_and_what_runs_now() {
        let c = judge("gpus=1,profile=a100-pcie,driver=535.183.01,cuda=12020");
        assert_eq!(c.status, Status::Warn, "{c:?}");
        let fix = c.fix.unwrap();
        assert!(
            fix.contains("TensorFlow 2.20.0 needs driver 555.42.02 or newer (CUDA 12.5)"),
            "{fix}"
        );
        assert!(
            fix.contains("tensorflow/tensorflow:2.15.0-gpu runs here"),
            "{fix}"
        );
    }

    #[test]
    fn no_driver_skips() {
        assert_eq!(judge("init=driver-not-loaded").status, Status::Skip);
    }
}
