//! The doctor's compatibility check: does this driver run the current TensorFlow and PyTorch images?

use super::report::{Check, Family, Status};
use crate::compat::board::{assess, Board};
use crate::compat::data::CompatData;
use crate::compat::engine::Level;
use crate::compat::profile::{GpuRuntime, HostProfile, ImageProfile};
use crate::compat::version::Version;
use crate::gpu::report::GpuReport;
use crate::pull::{CatalogEntry, Framework};

/// PASS when the newest catalog release of each framework runs here, WARN when one needs a newer
/// driver (naming it, and the newest image that runs now), FAIL when none runs at all.
pub fn framework_check(gpu: &GpuReport, data: &CompatData, catalog: &[CatalogEntry]) -> Check {
    let check = |status, detail: String| {
        Check::new(
            "compat.frameworks",
            Family::Compat,
            "Framework images",
            status,
            detail,
        )
    };
    // Images are judged against the driver and GPUs only: the container runtime has its own check.
    let host = HostProfile::from_report(gpu, GpuRuntime::Nvidia);
    let (Some(driver), Some(cuda)) = (host.driver.clone(), host.cuda) else {
        return check(
            Status::Skip,
            "the driver could not be read, so no image can be judged".into(),
        );
    };
    let board = assess(data, host, Vec::new(), catalog);
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
    if behind.is_empty() {
        return check(
            Status::Pass,
            format!(
                "driver {driver} (CUDA {cuda}) runs the newest images: {}",
                running.join(", ")
            ),
        );
    }
    let status = if none_runs {
        Status::Fail
    } else {
        Status::Warn
    };
    check(
        status,
        format!(
            "driver {driver} (CUDA {cuda}) is too old for {}",
            behind.join(" and ")
        ),
    )
    .with_fix(format!(
        "{}. `gpudeck compat` lists every image's verdict.",
        fixes.join("; ")
    ))
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
        let (catalog, _) = Catalog::load(None);
        framework_check(&report(spec), &CompatData::builtin(), catalog.entries())
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
