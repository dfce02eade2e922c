//! Progress bars drawn by tqdm (the Hugging Face Trainer, PyTorch Lightning's default bar) and by
//! rich (Lightning's `RichProgressBar`), with their `key=value` / `key: value` postfix metrics.

use super::event::{ProgressEvent, StepSource};
use super::pairs::{add_pair, split_fraction, Pairs};

/// Bars of evaluation loops: their steps are not the training step, and they carry no metrics.
/// Also bars of data preparation (`datasets`' `Map:`, `Loading checkpoint shards:`), whose counts
/// would otherwise pass for the training step.
const SIDE_BARS: &[&str] = &[
    "validation",
    "sanity checking",
    "testing",
    "test",
    "predicting",
    "evaluating",
    "eval",
    "map",
    "filter",
    "loading",
    "downloading",
    "generating",
    "tokeniz",
    "preprocess",
    "extracting",
    "saving",
    "uploading",
];

/// Lightning's bar version number, shown in every postfix but not a metric.
const NOT_METRICS: &[&str] = &["v_num"];

/// tqdm's default layout: `DESC: PCT%|BAR| N/TOTAL [ELAPSED<REMAINING, RATE, k=v, ...]`
/// (tqdm 4.x; Lightning 2.x `Epoch 2:` descriptions; the Trainer's bar has none).
pub(super) fn parse(text: &str) -> Option<ProgressEvent> {
    let (head, after) = text.split_once("%|")?;
    let (_bar, tail) = after.split_once('|')?;
    let description = head.trim_end_matches(|c: char| c.is_ascii_digit() || c == ' ' || c == '.');
    let description = description.trim().trim_end_matches(':').trim();
    if is_side_bar(description) {
        return None;
    }
    let mut event = ProgressEvent {
        step_source: StepSource::Bar,
        ..ProgressEvent::default()
    };
    if let Some(epoch) = description.strip_prefix("Epoch ") {
        let epoch = epoch.split([' ', '/']).next().unwrap_or(epoch);
        event.epoch = Some(epoch.parse().ok()?);
    }
    let tail = tail.trim_start();
    let (counter, bracket) = tail.split_once(' ').unwrap_or((tail, ""));
    let (step, total) = counter.split_once('/')?;
    event.step = Some(step.parse().ok()?);
    // tqdm prints `?` when the iterable has no length.
    event.total_steps = total.parse().ok();
    if !counts_iterations(bracket) {
        return None;
    }
    // tqdm joins its postfix as `, key=value`; a key may hold spaces (NeMo's `train_step_timing in s`).
    for part in bracket.split(", ") {
        if let Some((key, raw)) = part.split_once('=') {
            let raw = raw.trim_end().trim_end_matches(']');
            if !NOT_METRICS.contains(&key.trim()) {
                add_pair(&mut event, key, raw);
            }
        }
    }
    Some(event)
}

/// Lightning's `RichProgressBar`: `Epoch 2/9  ━━━━ 45/100 0:00:02 • 0:00:03 15.20it/s v_num: 0 train_loss: 0.234`.
/// Its epoch total is `max_epochs - 1` (the last epoch's index).
pub(super) fn parse_rich(text: &str) -> Option<ProgressEvent> {
    let rest = text.strip_prefix("Epoch ")?;
    let (label, rest) = rest.split_once(' ')?;
    let mut event = ProgressEvent {
        step_source: StepSource::Bar,
        ..ProgressEvent::default()
    };
    match split_fraction(label) {
        Some((epoch, last)) => {
            event.epoch = u32::try_from(epoch).ok();
            event.total_epochs = last.checked_add(1).and_then(|n| u32::try_from(n).ok());
        }
        None => event.epoch = Some(label.parse().ok()?),
    }
    let mut words = rest.split_whitespace();
    let (step, total) = words.find_map(split_fraction)?;
    event.step = Some(step);
    event.total_steps = Some(total);
    add_postfix(&mut event, rest);
    Some(event)
}

fn add_postfix(event: &mut ProgressEvent, text: &str) {
    for pair in Pairs::new(text) {
        if !NOT_METRICS.contains(&pair.key) {
            add_pair(event, pair.key, pair.raw);
        }
    }
}

/// A bar counting bytes or examples (`5123.45 examples/s`, `120MB/s`) is not a training loop,
/// whose rate tqdm shows as `it/s` or `s/it`. NeMo's `MegatronProgressBar` shows no rate: its
/// postfix follows the times directly.
fn counts_iterations(bracket: &str) -> bool {
    match bracket.split(", ").nth(1) {
        Some(postfix) if postfix.contains('=') => true,
        Some(rate) => {
            let rate = rate.trim_end_matches(']').trim();
            rate.ends_with("it/s") || rate.ends_with("s/it")
        }
        None => true,
    }
}

fn is_side_bar(description: &str) -> bool {
    let lower = description.to_ascii_lowercase();
    SIDE_BARS.iter().any(|side| lower.starts_with(side))
}
