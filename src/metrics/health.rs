//! The health families: Xid errors seen while serving (counted per GPU and Xid, fed by the
//! Xid watcher), PCIe replays, NVLink errors by type, and violation time by reason.

use std::collections::BTreeMap;

use crate::gpu::xid_watch::XidEvent;
use crate::gpu::{GpuSample, GpuStatic};

/// How many Xids each GPU reported while gpudeck served, by GPU, UUID and Xid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XidCounts(BTreeMap<(u32, String, u64), u64>);

impl XidCounts {
    pub fn record(&mut self, event: &XidEvent) {
        *self
            .0
            .entry((event.gpu, event.uuid.clone(), event.xid))
            .or_default() += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A counter family: its name, help, and each series' labels and value.
pub(super) struct CounterFamily {
    pub name: &'static str,
    pub help: &'static str,
    pub series: Vec<(Vec<(&'static str, String)>, f64)>,
}

/// The `gpu` and `uuid` labels of a GPU, then `extra`.
fn labels(gpu: &GpuStatic, extra: Option<(&'static str, &str)>) -> Vec<(&'static str, String)> {
    let mut out = vec![("gpu", gpu.index.to_string()), ("uuid", gpu.uuid.clone())];
    out.extend(extra.map(|(k, v)| (k, v.to_string())));
    out
}

/// Every health family that has a series, in the order they are written.
pub(super) fn families(gpus: &[(&GpuStatic, &GpuSample)], xids: &XidCounts) -> Vec<CounterFamily> {
    let xid_series: Vec<_> = xids
        .0
        .iter()
        .map(|((gpu, uuid, xid), n)| {
            let labels = vec![
                ("gpu", gpu.to_string()),
                ("uuid", uuid.clone()),
                ("xid", xid.to_string()),
            ];
            (labels, *n as f64)
        })
        .collect();
    let replays = gpus
        .iter()
        .filter_map(|(g, s)| s.health.pcie_replays.map(|n| (labels(g, None), n as f64)))
        .collect();
    let nvlink = gpus
        .iter()
        .filter_map(|(g, s)| s.health.nvlink.map(|n| (*g, n)))
        .flat_map(|(g, n)| {
            n.by_type()
                .map(|(kind, v)| (labels(g, Some(("type", kind))), v as f64))
        })
        .collect();
    let violations = gpus
        .iter()
        .flat_map(|(g, s)| {
            [
                ("power", s.health.power_violation_ns),
                ("thermal", s.health.thermal_violation_ns),
            ]
            .into_iter()
            .filter_map(move |(reason, ns)| {
                ns.map(|ns| (labels(g, Some(("reason", reason))), ns as f64 / 1e9))
            })
        })
        .collect();
    [
        CounterFamily {
            name: "gpudeck_gpu_xid_errors_total",
            help: "Xid errors the GPU reported while gpudeck served, by Xid number.",
            series: xid_series,
        },
        CounterFamily {
            name: "gpudeck_gpu_pcie_replay_total",
            help: "PCIe packets the GPU's link replayed since the driver loaded (a flaky slot, \
                   riser or cable when it keeps rising).",
            series: replays,
        },
        CounterFamily {
            name: "gpudeck_gpu_nvlink_errors_total",
            help: "NVLink data-link errors summed over the GPU's links since the driver loaded, \
                   by type (crc_flit, crc_data, replay, recovery).",
            series: nvlink,
        },
        CounterFamily {
            name: "gpudeck_gpu_violation_seconds_total",
            help: "Seconds the GPU's clocks were held down since the driver loaded, by reason \
                   (power limit, temperature).",
            series: violations,
        },
    ]
    .into_iter()
    .filter(|f| !f.series.is_empty())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::counters::{HealthCounters, NvLinkErrors};
    use crate::gpu::{Inventory, SourceKind, SystemInfo, Topology};
    use crate::metrics::render::render_with;

    fn inventory() -> Inventory {
        let gpu = |index: u32| GpuStatic {
            index,
            name: "A".into(),
            uuid: format!("GPU-{index}"),
            pci_bus_id: String::new(),
            ..Default::default()
        };
        Inventory {
            system: SystemInfo {
                source: SourceKind::Demo,
                driver_version: None,
                nvml_version: None,
                cuda_driver_version: None,
            },
            gpus: vec![gpu(0), gpu(1)],
            topology: Topology::default(),
        }
    }

    fn xid(gpu: u32, xid: u64) -> XidEvent {
        XidEvent {
            gpu,
            pci_bus_id: String::new(),
            uuid: format!("GPU-{gpu}"),
            xid,
            at_unix_ms: 0,
        }
    }

    fn line<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines()
            .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
            .map(|l| &l[series.len() + 1..])
    }

    #[test]
    fn xids_are_a_counter_per_gpu_and_xid() {
        let mut xids = XidCounts::default();
        for e in [xid(1, 79), xid(0, 13), xid(0, 13)] {
            xids.record(&e);
        }
        let samples = vec![GpuSample::default(); 2];
        let text = render_with(&inventory(), &samples, &[], &xids);
        assert!(
            text.contains("# TYPE gpudeck_gpu_xid_errors_total counter"),
            "{text}"
        );
        let at = |s: &str| line(&text, s);
        assert_eq!(
            at(r#"gpudeck_gpu_xid_errors_total{gpu="0",uuid="GPU-0",xid="13"}"#),
            Some("2")
        );
        assert_eq!(
            at(r#"gpudeck_gpu_xid_errors_total{gpu="1",uuid="GPU-1",xid="79"}"#),
            Some("1")
        );
        // Nothing seen, no family (and no health counters read: none of theirs either).
        let quiet = render_with(&inventory(), &samples, &[], &XidCounts::default());
        assert!(
            !quiet.contains("xid_errors") && !quiet.contains("pcie_replay"),
            "{quiet}"
        );
    }

    #[test]
    fn health_counters_are_counters_by_type_and_reason() {
        let health = HealthCounters {
            pcie_replays: Some(40),
            nvlink: Some(NvLinkErrors {
                crc_flit: 25,
                crc_data: 4,
                replay: 9,
                recovery: 1,
            }),
            power_violation_ns: Some(12_500_000_000),
            thermal_violation_ns: Some(0),
        };
        let busy = GpuSample {
            health,
            ..GpuSample::default()
        };
        // GPU 1 reads nothing (a GeForce card without these counters).
        let text = render_with(
            &inventory(),
            &[busy, GpuSample::default()],
            &[],
            &XidCounts::default(),
        );
        let at = |s: &str| line(&text, s);
        let g0 = r#"gpu="0",uuid="GPU-0""#;
        assert_eq!(
            at(&format!("gpudeck_gpu_pcie_replay_total{{{g0}}}")),
            Some("40")
        );
        for (kind, n) in [
            ("crc_flit", "25"),
            ("crc_data", "4"),
            ("replay", "9"),
            ("recovery", "1"),
        ] {
            let series = format!(r#"gpudeck_gpu_nvlink_errors_total{{{g0},type="{kind}"}}"#);
            assert_eq!(at(&series), Some(n), "{text}");
        }
        let power = format!(r#"gpudeck_gpu_violation_seconds_total{{{g0},reason="power"}}"#);
        assert_eq!(at(&power), Some("12.5"));
        for name in [
            "gpudeck_gpu_pcie_replay_total",
            "gpudeck_gpu_nvlink_errors_total",
            "gpudeck_gpu_violation_seconds_total",
        ] {
            assert!(text.contains(&format!("# TYPE {name} counter")), "{name}");
            assert!(
                !text.contains(&format!(r#"{name}{{gpu="1""#)),
                "{name} for GPU 1"
            );
        }
    }
}
