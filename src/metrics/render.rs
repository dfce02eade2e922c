//! The Prometheus text format (0.0.4) of one sample: pure, no I/O, every family with HELP and TYPE.

use std::fmt::Write as _;

use super::families::{bool_value, GPU_GAUGES};
use super::health::XidCounts;
use super::runs::RunInfo;
use crate::gpu::{throttle_reason_names, GpuSample, GpuStatic, Inventory};
use crate::services::ServiceRow;

/// The content type Prometheus expects for this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How a family's values behave, as its `# TYPE` line says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gauge,
    Counter,
}

/// Renders every family for the GPUs in `inventory` (samples in inventory order) and the runs.
pub fn render(inventory: &Inventory, samples: &[GpuSample], runs: &[RunInfo]) -> String {
    render_with(inventory, samples, runs, &XidCounts::default())
}

/// [`render`], with the Xids seen while serving.
pub fn render_with(
    inventory: &Inventory,
    samples: &[GpuSample],
    runs: &[RunInfo],
    xids: &XidCounts,
) -> String {
    let mut out = Writer::default();
    let driver = inventory.system.driver_version.as_deref().unwrap_or("");
    let gpus: Vec<(&GpuStatic, &GpuSample)> = inventory.gpus.iter().zip(samples).collect();
    out.family(
        "gpudeck_gpu_info",
        "Facts about each GPU; the value is always 1.",
        Kind::Gauge,
    );
    for (g, _) in &gpus {
        let index = g.index.to_string();
        let labels = [
            ("gpu", index.as_str()),
            ("uuid", &g.uuid),
            ("name", &g.name),
            ("driver", driver),
        ];
        out.sample("gpudeck_gpu_info", &labels, 1.0);
    }
    out.family(
        "gpudeck_gpu_lost",
        "1 when the GPU fell off the bus and answers nothing.",
        Kind::Gauge,
    );
    for (g, s) in &gpus {
        out.gpu_sample("gpudeck_gpu_lost", g, &[], bool_value(s.lost));
    }
    for gauge in GPU_GAUGES {
        let values: Vec<_> = gpus
            .iter()
            .filter_map(|(g, s)| (gauge.value)(g, s).map(|v| (*g, v)))
            .collect();
        out.gpu_family(gauge.name, gauge.help, &values);
    }
    throttle(&mut out, &gpus);
    counters(&mut out, &gpus);
    for family in super::health::families(&gpus, xids) {
        out.family(family.name, family.help, Kind::Counter);
        for (labels, value) in &family.series {
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            out.sample(family.name, &labels, *value);
        }
    }
    processes(&mut out, &gpus, runs);
    runs_families(&mut out, runs, &inventory.gpus);
    out.text
}

/// One 0/1 series per known reason, for each GPU whose reasons could be read.
fn throttle(out: &mut Writer, gpus: &[(&GpuStatic, &GpuSample)]) {
    const NAME: &str = "gpudeck_gpu_throttle_reasons";
    let readable: Vec<_> = gpus
        .iter()
        .filter_map(|(g, s)| s.throttle_reasons.as_ref().map(|r| (*g, r)))
        .collect();
    if readable.is_empty() {
        return;
    }
    out.family(
        NAME,
        "1 when this clock-event (throttle) reason is active on the GPU.",
        Kind::Gauge,
    );
    let all = throttle_reason_names(u64::MAX);
    for (g, active) in readable {
        for reason in &all {
            let label = reason.replace(' ', "_");
            out.gpu_sample(
                NAME,
                g,
                &[("reason", &label)],
                bool_value(active.contains(reason)),
            );
        }
    }
}

/// ECC error counts and the row remapper's and page retirement's counts.
fn counters(out: &mut Writer, gpus: &[(&GpuStatic, &GpuSample)]) {
    let ecc: Vec<_> = gpus
        .iter()
        .flat_map(|(g, s)| {
            [
                ("corrected", s.ecc_corrected),
                ("uncorrected", s.ecc_uncorrected),
            ]
            .into_iter()
            .filter_map(move |(t, v)| v.map(|v| (*g, t, v as f64)))
        })
        .collect();
    if !ecc.is_empty() {
        const NAME: &str = "gpudeck_gpu_ecc_errors_total";
        out.family(
            NAME,
            "Volatile ECC errors since the driver loaded, by type.",
            Kind::Counter,
        );
        for (g, t, v) in ecc {
            out.gpu_sample(NAME, g, &[("type", t)], v);
        }
    }
    let rows: Vec<_> = gpus
        .iter()
        .filter_map(|(g, s)| s.remapped_rows.map(|r| (*g, r)))
        .collect();
    if !rows.is_empty() {
        const NAME: &str = "gpudeck_gpu_remapped_rows";
        out.family(
            NAME,
            "Memory rows remapped to spare rows, by the kind of error that caused it.",
            Kind::Gauge,
        );
        for (g, r) in rows {
            out.gpu_sample(
                NAME,
                g,
                &[("cause", "correctable")],
                f64::from(r.correctable),
            );
            out.gpu_sample(
                NAME,
                g,
                &[("cause", "uncorrectable")],
                f64::from(r.uncorrectable),
            );
        }
    }
}

/// GPU memory per process, labelled with its container and the run and rank it belongs to.
fn processes(out: &mut Writer, gpus: &[(&GpuStatic, &GpuSample)], runs: &[RunInfo]) {
    const NAME: &str = "gpudeck_process_gpu_memory_bytes";
    let rows: Vec<_> = gpus
        .iter()
        .flat_map(|(g, s)| {
            s.processes
                .iter()
                .filter_map(move |p| p.used_memory_bytes.map(|b| (*g, p, b as f64)))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    out.family(NAME, "GPU memory a process holds, in bytes; container, run_id and rank are empty when it has none.", Kind::Gauge);
    for (g, p, bytes) in rows {
        let pid = p.pid.to_string();
        let container = p.container.as_ref().map(|c| c.short_id()).unwrap_or("");
        let (run_id, rank) = super::runs::owner(runs, g.index, p.pid);
        let rank = rank.map(|r| r.to_string()).unwrap_or_default();
        let labels = [
            ("pid", pid.as_str()),
            ("container", container),
            ("run_id", run_id),
            ("rank", &rank),
        ];
        out.gpu_sample(NAME, g, &labels, bytes);
    }
}

/// The live runs and the GPUs each was given.
fn runs_families(out: &mut Writer, runs: &[RunInfo], statics: &[GpuStatic]) {
    if runs.is_empty() {
        return;
    }
    out.family(
        "gpudeck_run_info",
        "A training run gpudeck started that has not ended; the value is always 1.",
        Kind::Gauge,
    );
    for r in runs {
        let job = r.slurm_job.clone().unwrap_or_default();
        let labels = [
            ("run_id", r.id.as_str()),
            ("name", &r.name),
            ("state", &r.state),
            ("backend", &r.backend),
            ("slurm_job_id", &job),
        ];
        out.sample("gpudeck_run_info", &labels, 1.0);
    }
    out.family(
        "gpudeck_run_gpu_info",
        "A GPU a live run was given; the value is always 1.",
        Kind::Gauge,
    );
    for r in runs {
        for (index, uuid) in &r.gpus {
            // A Slurm job's GPU is known by its processes' index; the UUID is this host's.
            let uuid = match uuid.is_empty() {
                true => statics
                    .iter()
                    .find(|g| g.index == *index)
                    .map(|g| g.uuid.as_str()),
                false => Some(uuid.as_str()),
            };
            let index = index.to_string();
            let labels = [
                ("run_id", r.id.as_str()),
                ("gpu", &index),
                ("uuid", uuid.unwrap_or("")),
            ];
            out.sample("gpudeck_run_gpu_info", &labels, 1.0);
        }
    }
}

/// The text being written; writing to a String cannot fail, so results are ignored.
#[derive(Default)]
struct Writer {
    text: String,
}

/// The services' families: whether each live service answers, and how long a notebook's
/// kernels have all been idle (0 while one works or it has none).
pub fn render_services(services: &[ServiceRow]) -> String {
    let mut out = Writer::default();
    if services.is_empty() {
        return out.text;
    }
    let gpus: Vec<String> = services.iter().map(ServiceRow::gpu_indices).collect();
    let labels = |i: usize| {
        let row = &services[i];
        [
            ("service", row.id.as_str()),
            ("kind", row.kind.as_str()),
            ("name", row.name.as_str()),
            ("gpus", gpus[i].as_str()),
        ]
    };
    out.family(
        "gpudeck_service_up",
        "1 when a live service (notebook, TensorBoard, Triton) answers on its port, else 0.",
        Kind::Gauge,
    );
    for (i, row) in services.iter().enumerate() {
        let up = row.health == crate::services::Health::Ready;
        out.sample("gpudeck_service_up", &labels(i), bool_value(up));
    }
    let notebook = |i: &usize| services[*i].kind == crate::runs::ServiceKind::Notebook;
    let notebooks: Vec<usize> = (0..services.len()).filter(notebook).collect();
    if notebooks.is_empty() {
        return out.text;
    }
    out.family(
        "gpudeck_service_idle_seconds",
        "Seconds every kernel of a notebook has been idle; 0 while one works or it has none.",
        Kind::Gauge,
    );
    for i in notebooks {
        let idle = services[i].idle_seconds.unwrap_or(0) as f64;
        out.sample("gpudeck_service_idle_seconds", &labels(i), idle);
    }
    out.text
}

impl Writer {
    fn family(&mut self, name: &str, help: &str, kind: Kind) {
        let kind = match kind {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        };
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// A gauge family whose series are one per GPU, left out entirely when no GPU has a value.
    fn gpu_family(&mut self, name: &str, help: &str, values: &[(&GpuStatic, f64)]) {
        if values.is_empty() {
            return;
        }
        self.family(name, help, Kind::Gauge);
        for (g, v) in values {
            self.gpu_sample(name, g, &[], *v);
        }
    }

    fn gpu_sample(&mut self, name: &str, gpu: &GpuStatic, extra: &[(&str, &str)], value: f64) {
        let index = gpu.index.to_string();
        let mut labels = vec![("gpu", index.as_str()), ("uuid", gpu.uuid.as_str())];
        labels.extend_from_slice(extra);
        self.sample(name, &labels, value);
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        if !value.is_finite() {
            return;
        }
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (key, val)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{key}=\"{}\"", escape_label(val));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }
}

/// A label value as the format wants it: backslash, double quote and newline escaped.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escapes only backslash and newline.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{GpuProcess, ProcessKind, SourceKind, SystemInfo, Topology};
    use crate::host::{ContainerRef, ContainerRuntime};
    use crate::metrics::RunProcess;

    fn gpu(index: u32, name: &str) -> GpuStatic {
        GpuStatic {
            index,
            name: name.into(),
            uuid: format!("GPU-{index}"),
            pci_bus_id: String::new(),
            compute_capability: None,
            architecture: None,
            memory_total_bytes: Some(80 << 30),
            temp_slowdown_c: None,
            temp_shutdown_c: None,
            sm_clock_max_mhz: Some(1980),
            mem_clock_max_mhz: None,
            pcie_gen_max: Some(5),
            pcie_width_max: Some(16),
            fan_count: None,
            ecc_enabled: None,
            mig_enabled: None,
            persistence_mode: None,
        }
    }

    fn inventory(names: &[&str]) -> Inventory {
        Inventory {
            system: SystemInfo {
                source: SourceKind::Demo,
                driver_version: Some("580.65.06".into()),
                nvml_version: None,
                cuda_driver_version: None,
            },
            gpus: (0u32..).zip(names).map(|(i, n)| gpu(i, n)).collect(),
            topology: Topology::default(),
        }
    }

    fn busy() -> GpuSample {
        GpuSample {
            util_gpu_pct: Some(93),
            memory_used_bytes: Some(1 << 30),
            power_w: Some(650.5),
            temp_c: Some(61),
            sm_clock_mhz: Some(1755),
            throttle_reasons: Some(vec!["software power cap".into()]),
            ecc_corrected: Some(5),
            ecc_uncorrected: Some(1),
            ..GpuSample::default()
        }
    }

    /// The value of the one line that starts with `series`.
    fn value(text: &str, series: &str) -> Option<f64> {
        let mut found = text
            .lines()
            .filter(|l| l.starts_with(series) && l[series.len()..].starts_with(' '));
        let line = found.next()?;
        assert!(found.next().is_none(), "{series} appears twice");
        line.rsplit(' ').next()?.parse().ok()
    }

    #[test]
    fn label_values_escape_backslash_quote_and_newline() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        let text = render(&inventory(&["Odd \"GPU\"\\x"]), &[busy()], &[]);
        assert!(
            text.contains(r#"name="Odd \"GPU\"\\x""#),
            "the name is not escaped:\n{text}"
        );
    }

    #[test]
    fn every_sample_belongs_to_a_family_with_help_and_type_declared_once() {
        let text = render(&inventory(&["A", "B"]), &[busy(), busy()], &[]);
        let mut declared: Vec<&str> = Vec::new();
        let mut helped: Vec<&str> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                helped.push(rest.split(' ').next().unwrap());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert!(!declared.contains(&name), "{name} declared twice");
                assert_eq!(helped.last(), Some(&name), "TYPE without HELP: {name}");
                declared.push(name);
            } else {
                let name = line.split(['{', ' ']).next().unwrap();
                assert_eq!(
                    declared.last(),
                    Some(&name),
                    "sample outside its family: {line}"
                );
            }
        }
        assert!(declared.contains(&"gpudeck_gpu_utilization_ratio"));
    }

    #[test]
    fn values_are_in_base_units() {
        let text = render(&inventory(&["A"]), &[busy()], &[]);
        let g = r#"{gpu="0",uuid="GPU-0"}"#;
        let at = |name: &str| value(&text, &format!("{name}{g}"));
        assert_eq!(at("gpudeck_gpu_utilization_ratio"), Some(0.93));
        assert_eq!(at("gpudeck_gpu_sm_clock_hertz"), Some(1_755_000_000.0));
        assert_eq!(at("gpudeck_gpu_memory_used_bytes"), Some(1_073_741_824.0));
        assert_eq!(at("gpudeck_gpu_memory_total_bytes"), Some(85_899_345_920.0));
        assert_eq!(at("gpudeck_gpu_power_watts"), Some(650.5));
        assert_eq!(at("gpudeck_gpu_temperature_celsius"), Some(61.0));
        assert_eq!(at("gpudeck_gpu_pcie_link_width_max"), Some(16.0));
    }

    #[test]
    fn ecc_errors_are_a_counter_by_type_and_reasons_are_zero_or_one() {
        let text = render(&inventory(&["A"]), &[busy()], &[]);
        assert!(text.contains("# TYPE gpudeck_gpu_ecc_errors_total counter\n"));
        let ecc = r#"gpudeck_gpu_ecc_errors_total{gpu="0",uuid="GPU-0",type="#;
        assert_eq!(value(&text, &format!(r#"{ecc}"corrected"}}"#)), Some(5.0));
        assert_eq!(value(&text, &format!(r#"{ecc}"uncorrected"}}"#)), Some(1.0));
        let reason = r#"gpudeck_gpu_throttle_reasons{gpu="0",uuid="GPU-0",reason="#;
        assert_eq!(
            value(&text, &format!(r#"{reason}"software_power_cap"}}"#)),
            Some(1.0)
        );
        assert_eq!(value(&text, &format!(r#"{reason}"idle"}}"#)), Some(0.0));
    }

    #[test]
    fn a_value_nvml_could_not_read_is_left_out_never_zero() {
        let unreadable = GpuSample {
            power_w: None,
            ecc_corrected: None,
            ecc_uncorrected: None,
            throttle_reasons: None,
            ..busy()
        };
        let text = render(&inventory(&["A", "B"]), &[busy(), unreadable.clone()], &[]);
        assert!(value(&text, r#"gpudeck_gpu_power_watts{gpu="0",uuid="GPU-0"}"#).is_some());
        assert!(
            !text.contains(r#"gpudeck_gpu_power_watts{gpu="1""#),
            "{text}"
        );
        assert!(!text.contains(r#"gpudeck_gpu_ecc_errors_total{gpu="1""#));
        assert!(!text.contains(r#"gpudeck_gpu_throttle_reasons{gpu="1""#));
        // No GPU has it: not even the family's header.
        let text = render(&inventory(&["B"]), &[unreadable], &[]);
        assert!(!text.contains("gpudeck_gpu_power_watts"), "{text}");
        assert!(!text.contains("gpudeck_gpu_fan_speed_ratio"));
    }

    #[test]
    fn a_lost_gpu_says_so_and_nothing_else_live() {
        let text = render(&inventory(&["A"]), &[GpuSample::lost()], &[]);
        assert_eq!(
            value(&text, r#"gpudeck_gpu_lost{gpu="0",uuid="GPU-0"}"#),
            Some(1.0)
        );
        assert!(!text.contains("gpudeck_gpu_utilization_ratio{"));
        assert!(text
            .contains(r#"gpudeck_gpu_info{gpu="0",uuid="GPU-0",name="A",driver="580.65.06"} 1"#));
    }

    #[test]
    fn process_memory_carries_container_run_and_rank() {
        let process = |pid, container: Option<&str>| GpuProcess {
            gpu_index: 0,
            pid,
            kind: ProcessKind::Compute,
            used_memory_bytes: Some(2048),
            user: None,
            command: None,
            container: container.map(|id| ContainerRef {
                runtime: ContainerRuntime::Docker,
                id: id.into(),
            }),
            identity: None,
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        };
        let sample = GpuSample {
            processes: vec![process(10, None), process(11, Some(&"ab".repeat(32)))],
            ..busy()
        };
        let runs = [RunInfo {
            id: "20261123-abc".into(),
            name: "train".into(),
            state: "running".into(),
            backend: "local".into(),
            slurm_job: None,
            gpus: vec![(0, "GPU-0".into())],
            processes: vec![RunProcess {
                gpu: 0,
                pid: 10,
                rank: Some(0),
            }],
        }];
        let text = render(&inventory(&["A"]), &[sample], &runs);
        let p = r#"gpudeck_process_gpu_memory_bytes{gpu="0",uuid="GPU-0",pid="#;
        let ran = format!(r#"{p}"10",container="",run_id="20261123-abc",rank="0"}}"#);
        assert_eq!(value(&text, &ran), Some(2048.0), "{text}");
        let boxed = format!(r#"{p}"11",container="abababababab",run_id="",rank=""}}"#);
        assert_eq!(value(&text, &boxed), Some(2048.0), "{text}");
        let info = r#"gpudeck_run_info{run_id="20261123-abc",name="train",state="running",backend="local",slurm_job_id=""}"#;
        assert_eq!(value(&text, info), Some(1.0));
        let given = r#"gpudeck_run_gpu_info{run_id="20261123-abc",gpu="0",uuid="GPU-0"}"#;
        assert_eq!(value(&text, given), Some(1.0));
    }

    #[test]
    fn a_slurm_jobs_run_names_its_job_and_its_gpus_uuid_from_this_host() {
        let runs = [RunInfo {
            id: "r2".into(),
            name: "big".into(),
            state: "running".into(),
            backend: "slurm".into(),
            slurm_job: Some("42".into()),
            gpus: vec![(0, String::new())],
            processes: vec![RunProcess {
                gpu: 0,
                pid: 10,
                rank: Some(1),
            }],
        }];
        let sample = GpuSample {
            processes: vec![GpuProcess {
                gpu_index: 0,
                pid: 10,
                kind: ProcessKind::Compute,
                used_memory_bytes: Some(2048),
                user: None,
                command: None,
                container: None,
                identity: None,
                gpu_util: None,
                cpu_pct: None,
                host_memory_bytes: None,
            }],
            ..busy()
        };
        let text = render(&inventory(&["A"]), &[sample], &runs);
        let info = r#"gpudeck_run_info{run_id="r2",name="big",state="running",backend="slurm",slurm_job_id="42"}"#;
        assert_eq!(value(&text, info), Some(1.0), "{text}");
        let given = r#"gpudeck_run_gpu_info{run_id="r2",gpu="0",uuid="GPU-0"}"#;
        assert_eq!(value(&text, given), Some(1.0), "{text}");
        let rank = r#"gpudeck_process_gpu_memory_bytes{gpu="0",uuid="GPU-0",pid="10",container="",run_id="r2",rank="1"}"#;
        assert_eq!(value(&text, rank), Some(2048.0), "{text}");
    }
}
