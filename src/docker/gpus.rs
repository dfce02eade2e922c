//! How a container was given GPUs, read from its device requests, devices and environment.

use bollard::models::{DeviceMapping, DeviceRequest};

use super::types::{GpuGrant, GpuSelection};

/// Every way the container's configuration grants GPUs, in the order: device requests, CDI
/// devices, `NVIDIA_VISIBLE_DEVICES`. A grant selecting `None` is reported as written (the
/// container asked for no GPUs that way).
///
/// `env` is the container's whole environment, image defaults included; the nvidia runtime reads
/// it, so a CUDA image's `NVIDIA_VISIBLE_DEVICES=all` shows up here even without `--gpus`.
pub fn gpu_grants(
    device_requests: &[DeviceRequest],
    devices: &[DeviceMapping],
    env: &[String],
) -> Vec<GpuGrant> {
    let mut grants: Vec<GpuGrant> = device_requests.iter().filter_map(request_grant).collect();
    let cdi: Vec<String> = devices
        .iter()
        .filter_map(|d| d.path_on_host.as_deref())
        .filter(|path| is_cdi_name(path))
        .map(str::to_string)
        .collect();
    if !cdi.is_empty() {
        grants.push(GpuGrant::Cdi { devices: cdi });
    }
    let visible = env
        .iter()
        .filter_map(|e| e.strip_prefix("NVIDIA_VISIBLE_DEVICES="))
        .next_back();
    if let Some(value) = visible {
        grants.push(GpuGrant::Env {
            devices: env_selection(value),
        });
    }
    grants
}

fn request_grant(request: &DeviceRequest) -> Option<GpuGrant> {
    let driver = request.driver.as_deref().unwrap_or("");
    let ids: Vec<String> = request.device_ids.clone().unwrap_or_default();
    if driver == "cdi" {
        return (!ids.is_empty()).then_some(GpuGrant::Cdi { devices: ids });
    }
    let wants_gpu = request
        .capabilities
        .iter()
        .flatten()
        .any(|set| set.iter().any(|c| c == "gpu"));
    if !wants_gpu && driver != "nvidia" {
        return None;
    }
    let devices = if !ids.is_empty() {
        GpuSelection::Devices(ids)
    } else {
        match request.count.unwrap_or(0) {
            n if n < 0 => GpuSelection::All,
            0 => GpuSelection::None,
            n => GpuSelection::Count(u32::try_from(n).unwrap_or(u32::MAX)),
        }
    };
    Some(GpuGrant::DeviceRequest { devices })
}

/// `all`, `none`, `void` (the runtime's "leave GPUs alone") or a comma list of indices / UUIDs.
fn env_selection(value: &str) -> GpuSelection {
    let value = value.trim();
    match value.to_ascii_lowercase().as_str() {
        "all" => GpuSelection::All,
        "" | "none" | "void" => GpuSelection::None,
        _ => GpuSelection::Devices(
            value
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_string)
                .collect(),
        ),
    }
}

/// A fully qualified CDI device name: `vendor.com/class=device` (the vendor is a domain).
pub(crate) fn is_cdi_name(text: &str) -> bool {
    let Some((kind, device)) = text.split_once('=') else {
        return false;
    };
    let Some((vendor, class)) = kind.split_once('/') else {
        return false;
    };
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    !vendor.is_empty()
        && vendor.contains('.')
        && vendor.chars().all(name_char)
        && !class.is_empty()
        && class.chars().all(name_char)
        && !device.is_empty()
        && device.chars().all(|c| name_char(c) || c == ':')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu_request(driver: &str, count: i64, ids: &[&str]) -> DeviceRequest {
        DeviceRequest {
            driver: Some(driver.to_string()),
            count: Some(count),
            device_ids: (!ids.is_empty()).then(|| ids.iter().map(|s| s.to_string()).collect()),
            capabilities: Some(vec![vec!["gpu".to_string()]]),
            options: None,
        }
    }

    fn device(path: &str) -> DeviceMapping {
        DeviceMapping {
            path_on_host: Some(path.to_string()),
            path_in_container: Some(path.to_string()),
            cgroup_permissions: Some("rwm".to_string()),
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn device_requests() {
        use GpuSelection::*;
        let cases: Vec<(DeviceRequest, Option<GpuSelection>)> = vec![
            (gpu_request("", -1, &[]), Some(All)),
            (gpu_request("nvidia", 2, &[]), Some(Count(2))),
            (
                gpu_request("", 0, &["0", "GPU-abc"]),
                Some(Devices(strings(&["0", "GPU-abc"]))),
            ),
            (gpu_request("", 0, &[]), Some(None)),
            (
                DeviceRequest {
                    driver: Some("nvidia".into()),
                    count: Some(-1),
                    ..Default::default()
                },
                Some(All),
            ),
            (
                DeviceRequest {
                    capabilities: Some(vec![vec!["compute".into()]]),
                    count: Some(-1),
                    ..Default::default()
                },
                Option::None,
            ),
        ];
        for (request, want) in cases {
            let got = gpu_grants(std::slice::from_ref(&request), &[], &[]);
            let want: Vec<GpuGrant> = want
                .into_iter()
                .map(|devices| GpuGrant::DeviceRequest { devices })
                .collect();
            assert_eq!(got, want, "{request:?}");
        }
    }

    #[test]
    fn cdi_requests_and_devices() {
        let request = DeviceRequest {
            driver: Some("cdi".into()),
            device_ids: Some(strings(&["nvidia.com/gpu=0"])),
            ..Default::default()
        };
        let devices = [
            device("/dev/fuse"),
            device("nvidia.com/gpu=all"),
            device("amd.com/gpu=GPU-1:2"),
        ];
        assert_eq!(
            gpu_grants(&[request], &devices, &[]),
            vec![
                GpuGrant::Cdi {
                    devices: strings(&["nvidia.com/gpu=0"])
                },
                GpuGrant::Cdi {
                    devices: strings(&["nvidia.com/gpu=all", "amd.com/gpu=GPU-1:2"])
                },
            ]
        );
    }

    #[test]
    fn visible_devices_env() {
        use GpuSelection::*;
        let cases = [
            ("NVIDIA_VISIBLE_DEVICES=all", Some(All)),
            ("NVIDIA_VISIBLE_DEVICES=none", Some(None)),
            ("NVIDIA_VISIBLE_DEVICES=void", Some(None)),
            ("NVIDIA_VISIBLE_DEVICES=", Some(None)),
            (
                "NVIDIA_VISIBLE_DEVICES=0, 1",
                Some(Devices(strings(&["0", "1"]))),
            ),
            (
                "NVIDIA_VISIBLE_DEVICES=GPU-9f2c",
                Some(Devices(strings(&["GPU-9f2c"]))),
            ),
            ("CUDA_VISIBLE_DEVICES=0", Option::None),
        ];
        for (env, want) in cases {
            let env = strings(&["PATH=/bin", env]);
            let want: Vec<GpuGrant> = want
                .into_iter()
                .map(|devices| GpuGrant::Env { devices })
                .collect();
            assert_eq!(gpu_grants(&[], &[], &env), want, "{env:?}");
        }
    }

    #[test]
    fn the_last_env_entry_wins_and_all_ways_are_listed() {
        let env = strings(&["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=2"]);
        let got = gpu_grants(&[gpu_request("", -1, &[])], &[], &env);
        assert_eq!(
            got,
            vec![
                GpuGrant::DeviceRequest {
                    devices: GpuSelection::All
                },
                GpuGrant::Env {
                    devices: GpuSelection::Devices(strings(&["2"]))
                },
            ]
        );
    }

    #[test]
    fn cdi_names() {
        for good in [
            "nvidia.com/gpu=0",
            "nvidia.com/gpu=all",
            "vendor.example.org/a-b=x_y",
        ] {
            assert!(is_cdi_name(good), "{good}");
        }
        for bad in [
            "/dev/nvidia0",
            "nvidia/gpu=0",
            "nvidia.com/gpu=",
            "nvidia.com=0",
            "a=b",
        ] {
            assert!(!is_cdi_name(bad), "{bad}");
        }
    }
}
