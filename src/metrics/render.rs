//! The Prometheus text format (0.0.4) of one sample: pure, no I/O, every family with HELP and TYPE.

use std::fmt::Write as _;

use super::families::{bool_value, GPU_GAUGES};
use super::runs::RunInfo;
use crate::gpu::{throttle_reason_names, GpuSample, GpuStatic, Inventory};

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
#[path = "render_tests.rs"]
mod tests;
