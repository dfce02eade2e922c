//! How `gpudeck pull` shows a pull: progress bars on a terminal, plain lines otherwise, or JSON lines.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use serde_json::json;

use super::error::PullError;
use super::progress::{LayerStatus, PullProgress};
use crate::image::{ImageRef, RefError};
use crate::units::{age, human_bytes};

// `{done}` and `{size}` are bytes in the dashboard's binary units (see `style`).
const LAYER_TEMPLATE: &str = "{prefix} {msg:<16} [{bar:30}] {done:>10}/{size:<10}";
/// Before the Engine has said a layer's size there is nothing to draw a bar of.
const UNSIZED_TEMPLATE: &str = "{prefix} {msg:<16}";
const TOTAL_TEMPLATE: &str = "{prefix:<29} [{bar:30}] {done:>10}/{size:<10} {msg}";
const UNSIZED_TOTAL_TEMPLATE: &str = "{prefix:<29} {msg}";

/// One of three faces, picked once at the start.
pub(crate) enum CliView {
    Bars(Bars),
    Plain(Plain),
    Json,
}

impl CliView {
    pub(crate) fn new(json: bool) -> Self {
        if json {
            CliView::Json
        } else if std::io::stderr().is_terminal() {
            CliView::Bars(Bars::new())
        } else {
            CliView::Plain(Plain::default())
        }
    }

    pub(crate) fn bad_reference(&mut self, reference: &str, error: &RefError) {
        match self {
            CliView::Json => print_json(json!({
                "event": "failed", "kind": "invalid_reference", "reference": reference,
                "message": error.to_string(),
            })),
            _ => errln!(
                "{}",
                crate::output::wrap(
                    &format!("gpudeck: `{reference}` is not a valid image reference: {error}"),
                    "  "
                )
            ),
        }
    }

    pub(crate) fn warning(&mut self, message: &str) {
        match self {
            CliView::Json => print_json(json!({ "event": "warning", "message": message })),
            CliView::Bars(bars) => bars.println(&format!("warning: {message}")),
            CliView::Plain(_) => errln!("warning: {message}"),
        }
    }

    pub(crate) fn started(&mut self, image: &ImageRef) {
        match self {
            CliView::Json => print_json(json!({ "event": "started", "image": image.to_string() })),
            CliView::Bars(bars) => bars.println(&format!("Pulling {}", image.familiar())),
            CliView::Plain(_) => errln!("Pulling {}", image.familiar()),
        }
    }

    pub(crate) fn progress(&mut self, progress: &PullProgress) {
        match self {
            CliView::Json => {
                let mut value = json!(progress);
                value["event"] = json!("progress");
                print_json(value);
            }
            CliView::Bars(bars) => bars.update(progress),
            CliView::Plain(plain) => plain.update(progress),
        }
    }

    pub(crate) fn done(&mut self, image: &ImageRef, digest: Option<&str>, elapsed: Duration) {
        if let CliView::Bars(bars) = self {
            bars.finish();
        }
        match self {
            CliView::Json => print_json(json!({
                "event": "done", "image": image.to_string(), "digest": digest,
                "elapsed_s": elapsed.as_secs_f64(),
            })),
            _ => {
                errln!(
                    "Pulled {} in {:.1} s",
                    image.familiar(),
                    elapsed.as_secs_f64()
                );
                outln!("Digest: {}", digest.unwrap_or("unknown"));
            }
        }
    }

    pub(crate) fn failed(&mut self, image: &ImageRef, error: &PullError) {
        if let CliView::Bars(bars) = self {
            bars.abandon();
        }
        match self {
            CliView::Json => print_json(json!({
                "event": "failed", "kind": error.kind(), "image": image.to_string(),
                "title": error.title(), "message": error.to_string(), "fix": error.fix(),
            })),
            _ => errln!(
                "{}",
                crate::output::wrap(
                    &format!(
                        "gpudeck: pulling {} failed: {}\n  {error}\n  What to do: {}",
                        image.familiar(),
                        error.title(),
                        error.fix()
                    ),
                    "  "
                )
            ),
        }
    }
}

fn print_json(value: serde_json::Value) {
    outln!("{value}");
}

fn status_word(status: LayerStatus) -> &'static str {
    match status {
        LayerStatus::Waiting => "Waiting",
        LayerStatus::Downloading => "Downloading",
        LayerStatus::Verifying => "Verifying",
        LayerStatus::Downloaded => "Downloaded",
        LayerStatus::Extracting => "Extracting",
        LayerStatus::Complete => "Pull complete",
        LayerStatus::AlreadyExists => "Already exists",
    }
}

fn rate_and_eta(progress: &PullProgress) -> String {
    let rate = format!("{}/s", human_bytes(progress.rate_bytes_per_sec as u64));
    match progress.eta {
        Some(eta) => format!("{rate}, ETA {}", age(eta.as_secs() as i64)),
        None => rate,
    }
}

/// indicatif bars on stderr: one per layer and a total with bytes, rate and ETA.
pub(crate) struct Bars {
    multi: MultiProgress,
    total: ProgressBar,
    layers: HashMap<String, ProgressBar>,
}

impl Bars {
    fn new() -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let total = multi.add(ProgressBar::new(0).with_style(style(UNSIZED_TOTAL_TEMPLATE)));
        total.set_prefix("total");
        Bars {
            multi,
            total,
            layers: HashMap::new(),
        }
    }

    fn update(&mut self, progress: &PullProgress) {
        for layer in &progress.layers {
            let bar = self.layers.entry(layer.id.clone()).or_insert_with(|| {
                let bar = ProgressBar::new(0).with_style(style(UNSIZED_TEMPLATE));
                let bar = self.multi.insert_before(&self.total, bar);
                bar.set_prefix(layer.id.clone());
                bar
            });
            resize(
                bar,
                layer.total.unwrap_or(0),
                LAYER_TEMPLATE,
                UNSIZED_TEMPLATE,
            );
            bar.set_position(layer.current);
            bar.set_message(status_word(layer.status));
        }
        resize(
            &self.total,
            progress.bytes_total,
            TOTAL_TEMPLATE,
            UNSIZED_TOTAL_TEMPLATE,
        );
        self.total.set_position(progress.bytes_done);
        self.total.set_message(if progress.bytes_total == 0 {
            progress.status_line.clone()
        } else {
            format!("{}  ({})", rate_and_eta(progress), progress.status_line)
        });
    }

    fn println(&self, line: &str) {
        let _ = self.multi.println(line);
    }

    fn finish(&self) {
        self.layers.values().for_each(ProgressBar::finish);
        self.total.finish();
    }

    fn abandon(&self) {
        self.layers.values().for_each(ProgressBar::abandon);
        self.total.abandon();
    }
}

/// Switches a bar between its sized and unsized look when its length becomes known.
fn resize(bar: &ProgressBar, length: u64, sized: &str, unsized_: &str) {
    let was_sized = bar.length().is_some_and(|l| l > 0);
    bar.set_length(length);
    if was_sized != (length > 0) {
        bar.set_style(style(if length > 0 { sized } else { unsized_ }));
    }
}

/// A bar's look; its byte counts read as in the dashboard's pulls panel (`1.2GiB`, `12MiB`),
/// not in indicatif's decimal units.
fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key("done", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&human_bytes(s.pos()));
        })
        .with_key("size", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&human_bytes(s.len().unwrap_or(0)));
        })
        .progress_chars("=> ")
}

/// Plain lines on stderr for logs and pipes: each layer's changes of phase, and the total now
/// and then.
#[derive(Default)]
pub(crate) struct Plain {
    shown: HashMap<String, LayerStatus>,
    last_total: Option<u64>,
}

impl Plain {
    fn update(&mut self, progress: &PullProgress) {
        for layer in &progress.layers {
            if self.shown.get(&layer.id) == Some(&layer.status) {
                continue;
            }
            self.shown.insert(layer.id.clone(), layer.status);
            let size = layer
                .total
                .map(|t| format!(" ({})", human_bytes(t)))
                .unwrap_or_default();
            errln!("{}: {}{size}", layer.id, status_word(layer.status));
        }
        // Every 10 % of the known total, so a log shows movement without a line per event.
        let tenth = progress.bytes_total / 10;
        let step = progress.bytes_done.checked_div(tenth.max(1)).unwrap_or(0);
        if progress.bytes_total > 0 && self.last_total != Some(step) {
            self.last_total = Some(step);
            errln!(
                "total: {}/{} {}",
                human_bytes(progress.bytes_done),
                human_bytes(progress.bytes_total),
                rate_and_eta(progress)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_and_times_read_as_in_the_dashboard() {
        let mut progress = PullProgress {
            layers: Vec::new(),
            bytes_done: 1_288_490_189,
            bytes_total: 4_831_838_208,
            rate_bytes_per_sec: 12.3 * 1024.0 * 1024.0,
            eta: None,
            status_line: String::new(),
        };
        assert_eq!(rate_and_eta(&progress), "12MiB/s");
        progress.eta = Some(Duration::from_secs(3 * 60 + 20));
        assert_eq!(rate_and_eta(&progress), "12MiB/s, ETA 3m");
        assert_eq!(human_bytes(progress.bytes_done), "1.2GiB");
        assert_eq!(human_bytes(progress.bytes_total), "4.5GiB");
    }
}
