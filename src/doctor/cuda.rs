//! Checks of the CUDA setup programs started from this shell inherit: the host toolkit against the
//! driver, and `CUDA_VISIBLE_DEVICES`.

use super::facts::HostFacts;
use super::gpus::plural;
use super::parse::{visible_devices, VisibleEntry};
use super::report::{Check, Family, Status};
use crate::gpu::CudaVersion;

pub const NVCC: &str = "cuda.nvcc";
pub const VISIBLE_DEVICES: &str = "cuda.visible_devices";

const NVCC_TITLE: &str = "Host CUDA toolkit";

/// The oldest Linux driver of each CUDA release (CUDA toolkit release notes, table 3).
const MIN_DRIVER: [((u32, u32), &str); 21] = [
    ((13, 2), "595.45.04"),
    ((13, 1), "590.44.01"),
    ((13, 0), "580.65.06"),
    ((12, 9), "575.51.03"),
    ((12, 8), "570.26"),
    ((12, 6), "560.28.03"),
    ((12, 5), "555.42.02"),
    ((12, 4), "550.54.14"),
    ((12, 3), "545.23.06"),
    ((12, 2), "535.54.03"),
    ((12, 1), "530.30.02"),
    ((12, 0), "525.60.13"),
    ((11, 8), "520.61.05"),
    ((11, 7), "515.43.04"),
    ((11, 6), "510.39.01"),
    ((11, 5), "495.29.05"),
    ((11, 4), "470.42.01"),
    ((11, 3), "465.19.01"),
    ((11, 2), "460.27.03"),
    ((11, 1), "455.23"),
    ((11, 0), "450.51.05"),
];

fn check(id: &'static str, title: &'static str, status: Status, detail: String) -> Check {
    Check::new(id, Family::Cuda, title, status, detail)
}

pub fn checks(f: &HostFacts) -> Vec<Check> {
    vec![nvcc(f), visible(f)]
}

fn nvcc(f: &HostFacts) -> Check {
    let title = NVCC_TITLE;
    let Some(nvcc) = &f.nvcc else {
        return check(
            NVCC,
            title,
            Status::Skip,
            "no nvcc on PATH or in /usr/local/cuda/bin: containers bring their own CUDA".into(),
        );
    };
    let Some((major, minor)) = nvcc.release else {
        let why = nvcc.note.clone().unwrap_or_default();
        return check(
            NVCC,
            title,
            Status::Warn,
            format!("{} --version gave no release: {why}", nvcc.path),
        )
        .with_fix(format!(
            "Run `{} --version` by hand; reinstall the toolkit if it fails.",
            nvcc.path
        ));
    };
    let Some(driver) = f.gpu.system.as_ref().and_then(|s| s.cuda_driver_version) else {
        return check(
            NVCC,
            title,
            Status::Skip,
            format!("nvcc {major}.{minor} at {}; the driver's CUDA version is unknown (NVML did not start)", nvcc.path),
        );
    };
    if (major, minor) <= (driver.major, driver.minor) {
        return check(
            NVCC,
            title,
            Status::Pass,
            format!(
                "nvcc {major}.{minor} at {}, the driver supports CUDA {driver}",
                nvcc.path
            ),
        );
    }
    newer_toolkit(f, &nvcc.path, (major, minor), driver)
}

/// A toolkit newer than the driver: builds work, running them may not.
fn newer_toolkit(
    f: &HostFacts,
    path: &str,
    (major, minor): (u32, u32),
    driver: CudaVersion,
) -> Check {
    let driver_version = f
        .gpu
        .system
        .as_ref()
        .and_then(|s| s.driver_version.clone())
        .unwrap_or_else(|| "this driver".into());
    let consequence = if major == driver.major {
        // CUDA minor-version compatibility: same-major binaries run, PTX JIT and new APIs do not.
        "same major version, so most programs run (minor-version compatibility), but PTX JIT and newer APIs fail"
    } else {
        "programs it builds fail with \"CUDA driver version is insufficient for CUDA runtime version\""
    };
    let needed = MIN_DRIVER
        .iter()
        .find(|(v, _)| *v <= (major, minor) && v.0 == major)
        .map_or(String::new(), |(_, d)| format!(" ({d} or newer)"));
    check(
        NVCC,
        NVCC_TITLE,
        Status::Warn,
        format!("nvcc {major}.{minor} at {path} is newer than CUDA {driver}, the newest driver {driver_version} supports: {consequence}"),
    )
    .with_fix(format!(
        "Install a driver for CUDA {major}.{minor}{needed}, or a toolkit no newer than CUDA {driver}; on datacenter GPUs \
         the CUDA forward compatibility package (`sudo apt-get install cuda-compat-{major}-{minor}`, then \
         LD_LIBRARY_PATH=/usr/local/cuda-{major}.{minor}/compat) runs newer CUDA on this driver."
    ))
}

const VISIBLE_TITLE: &str = "CUDA_VISIBLE_DEVICES";
const UNSET: &str = "`unset CUDA_VISIBLE_DEVICES` (check ~/.bashrc, ~/.profile and /etc/environment for where it is set)";

fn visible(f: &HostFacts) -> Check {
    let Some(value) = &f.cuda_visible_devices else {
        return check(
            VISIBLE_DEVICES,
            VISIBLE_TITLE,
            Status::Pass,
            "not set: CUDA programs see every GPU".into(),
        );
    };
    let entries = visible_devices(value);
    // Empty and -1 are the usual ways to hide every GPU on purpose (CPU-only runs).
    let unchecked = if entries.is_empty() || value.trim() == "-1" {
        Some("CUDA programs from this shell see no GPU")
    } else if f.gpu.error.is_some() {
        Some("the GPUs are unknown, so it cannot be checked")
    } else {
        None
    };
    if let Some(why) = unchecked {
        return check(
            VISIBLE_DEVICES,
            VISIBLE_TITLE,
            Status::Warn,
            format!("set to {value:?}: {why}"),
        )
        .with_fix(format!("If that is not what you want: {UNSET}."));
    }
    match resolve(f, &entries) {
        (shown, Some(bad)) => names_a_missing_gpu(f, value, shown, &bad),
        (shown, None) => hides_gpus(f, value, shown),
    }
}

/// CUDA stops at the first entry naming no GPU: nothing left is a failure, something left a warning.
fn names_a_missing_gpu(f: &HostFacts, value: &str, shown: usize, bad: &str) -> Check {
    let n = f.gpu.gpu_count;
    let status = if shown == 0 {
        Status::Fail
    } else {
        Status::Warn
    };
    check(
        VISIBLE_DEVICES,
        VISIBLE_TITLE,
        status,
        format!(
            "set to {value:?}, but {bad} is not one of the {n} GPU{} (indices 0-{}, or a UUID from \
             `nvidia-smi -L`): CUDA stops at it, so programs from this shell see {shown} GPU{}",
            plural(n),
            n.saturating_sub(1),
            plural(shown)
        ),
    )
    .with_fix(format!(
        "{UNSET}, or name GPUs that exist: `export CUDA_VISIBLE_DEVICES={}`.",
        all_indices(n)
    ))
}

/// Valid, but it still hides GPUs and renumbers the rest: worth knowing when a job lands oddly.
fn hides_gpus(f: &HostFacts, value: &str, shown: usize) -> Check {
    let n = f.gpu.gpu_count;
    let order = if f.cuda_device_order.as_deref() == Some("PCI_BUS_ID") {
        ""
    } else {
        "; CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, so its index N \
         may not be nvidia-smi's N"
    };
    check(
        VISIBLE_DEVICES,
        VISIBLE_TITLE,
        Status::Warn,
        format!(
            "set to {value:?}: CUDA programs from this shell see {shown} of {n} GPU{}, renumbered \
             from 0{order}",
            plural(n)
        ),
    )
    .with_fix(format!(
        "Intended? Then nothing to do. Otherwise {UNSET}; pin GPUs by UUID (`nvidia-smi -L`) and \
         `export CUDA_DEVICE_ORDER=PCI_BUS_ID`."
    ))
}

/// How many entries CUDA accepts before the first one naming no GPU, and that entry.
fn resolve(f: &HostFacts, entries: &[VisibleEntry]) -> (usize, Option<String>) {
    let n = f.gpu.gpu_count;
    let uuids: Vec<&str> = f.gpu.gpus.iter().map(|g| g.info.uuid.as_str()).collect();
    for (shown, e) in entries.iter().enumerate() {
        let ok = match e {
            VisibleEntry::Index(i) => (*i as usize) < n,
            // CUDA accepts a unique prefix of a UUID.
            VisibleEntry::Uuid(u) => {
                uuids.iter().filter(|id| id.starts_with(u.as_str())).count() == 1
            }
            VisibleEntry::Mig(_) => true,
            VisibleEntry::Invalid(_) => false,
        };
        if !ok {
            let word = match e {
                VisibleEntry::Index(i) => i.to_string(),
                VisibleEntry::Uuid(s) | VisibleEntry::Mig(s) | VisibleEntry::Invalid(s) => {
                    format!("{s:?}")
                }
            };
            return (shown, Some(word));
        }
    }
    (entries.len(), None)
}

fn all_indices(n: usize) -> String {
    (0..n.max(1))
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::run_checks;
    use crate::doctor::testkit::{find, healthy, nvml_failed, status_of};
    use crate::gpu::GpuError;

    fn with_nvcc(release: Option<(u32, u32)>) -> HostFacts {
        let mut f = healthy();
        if let Some(n) = f.nvcc.as_mut() {
            n.release = release;
            n.note = release.is_none().then(|| "garbage".to_string());
        }
        f
    }

    fn with_driver_cuda(mut f: HostFacts, driver: &str, cuda: i32) -> HostFacts {
        if let Some(s) = f.gpu.system.as_mut() {
            s.driver_version = Some(driver.into());
            s.cuda_driver_version = CudaVersion::from_nvml(cuda);
        }
        f
    }

    fn with_visible(value: &str) -> HostFacts {
        let mut f = healthy();
        f.cuda_visible_devices = Some(value.into());
        f
    }

    #[test]
    fn nvcc_no_newer_than_the_driver_passes() {
        assert_eq!(status_of(&with_nvcc(Some((13, 0))), NVCC).0, Status::Pass);
        assert_eq!(status_of(&with_nvcc(Some((12, 8))), NVCC).0, Status::Pass);
        let mut f = healthy();
        f.nvcc = None;
        assert_eq!(status_of(&f, NVCC).0, Status::Skip);
    }

    #[test]
    fn nvcc_newer_than_the_driver_warns_with_the_driver_it_needs() {
        let f = with_driver_cuda(with_nvcc(Some((12, 4))), "470.57.02", 11040);
        let r = run_checks(&f);
        let c = find(&r, NVCC);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail.contains("nvcc 12.4")
                && c.detail.contains("CUDA 11.4")
                && c.detail.contains("470.57.02"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("insufficient"), "{}", c.detail);
        let fix = c.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("550.54.14 or newer") && fix.contains("cuda-compat-12-4"),
            "{fix}"
        );
        // Same major version: minor-version compatibility softens it.
        let f = with_driver_cuda(with_nvcc(Some((12, 8))), "535.54.03", 12020);
        let c = find(&run_checks(&f), NVCC).clone();
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail.contains("minor-version compatibility"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn unreadable_nvcc_warns_and_unknown_driver_skips() {
        assert_eq!(status_of(&with_nvcc(None), NVCC).0, Status::Warn);
        let mut f = nvml_failed(&GpuError::DriverNotLoaded);
        f.nvcc = with_nvcc(Some((12, 4))).nvcc;
        assert_eq!(status_of(&f, NVCC).0, Status::Skip);
    }

    #[test]
    fn unset_visible_devices_passes() {
        assert_eq!(status_of(&healthy(), VISIBLE_DEVICES).0, Status::Pass);
    }

    #[test]
    fn valid_visible_devices_warn_about_hiding_and_numbering() {
        let r = run_checks(&with_visible("1"));
        let c = find(&r, VISIBLE_DEVICES);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail.contains("see 1 of 2 GPUs") && c.detail.contains("CUDA_DEVICE_ORDER"),
            "{}",
            c.detail
        );
        let mut f = with_visible("GPU-1a2b");
        f.cuda_device_order = Some("PCI_BUS_ID".into());
        let c = find(&run_checks(&f), VISIBLE_DEVICES).clone();
        assert_eq!(c.status, Status::Warn);
        assert!(!c.detail.contains("CUDA_DEVICE_ORDER"), "{}", c.detail);
    }

    #[test]
    fn a_visible_device_that_does_not_exist_fails_when_nothing_is_left() {
        let r = run_checks(&with_visible("7"));
        let c = find(&r, VISIBLE_DEVICES);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.detail.contains("7 is not one of the 2 GPUs") && c.detail.contains("see 0 GPUs"),
            "{}",
            c.detail
        );
        let fix = c.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("unset CUDA_VISIBLE_DEVICES") && fix.contains("=0,1"),
            "{fix}"
        );
        // CUDA keeps what precedes the bad entry.
        let c = find(&run_checks(&with_visible("1,7,0")), VISIBLE_DEVICES).clone();
        assert_eq!(c.status, Status::Warn);
        assert!(c.detail.contains("see 1 GPU"), "{}", c.detail);
        // A UUID prefix must name exactly one GPU.
        assert_eq!(
            status_of(&with_visible("GPU-"), VISIBLE_DEVICES).0,
            Status::Fail
        );
        assert_eq!(
            status_of(&with_visible("GPU-ffff"), VISIBLE_DEVICES).0,
            Status::Fail
        );
    }

    #[test]
    fn hiding_every_gpu_or_unknown_gpus_warn() {
        assert_eq!(
            status_of(&with_visible(""), VISIBLE_DEVICES).0,
            Status::Warn
        );
        assert_eq!(
            status_of(&with_visible("-1"), VISIBLE_DEVICES).0,
            Status::Warn
        );
        assert_eq!(
            status_of(&with_visible("x"), VISIBLE_DEVICES).0,
            Status::Fail
        );
        let mut f = nvml_failed(&GpuError::DriverNotLoaded);
        f.cuda_visible_devices = Some("0".into());
        assert_eq!(status_of(&f, VISIBLE_DEVICES).0, Status::Warn);
    }
}
