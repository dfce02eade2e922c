//! Generic `key=value` and `key: value` lines, and the naming rules every format shares: which
//! keys are the step, the epoch and their totals, and which look like training metrics.

use super::event::ProgressEvent;

/// Keys longer than this are not metric names; the cap also bounds what a tracker stores.
const MAX_KEY_BYTES: usize = 64;
/// Scalars kept from one line; a line with more is a dump, not a progress report.
const MAX_SCALARS_PER_LINE: usize = 32;
/// Doubles are exact integers up to 2^53; a bigger "step" is not a counter.
const MAX_EXACT_INT: f64 = 9_007_199_254_740_992.0;

const STEP_KEYS: &[&str] = &[
    "step",
    "global_step",
    "iter",
    "iters",
    "iteration",
    "batch",
    "update",
    "updates",
    "num_updates",
];
const EPOCH_KEYS: &[&str] = &["epoch"];
const TOTAL_STEP_KEYS: &[&str] = &[
    "total_steps",
    "max_steps",
    "num_steps",
    "num_training_steps",
];
const TOTAL_EPOCH_KEYS: &[&str] = &[
    "total_epochs",
    "max_epochs",
    "num_epochs",
    "num_train_epochs",
];
/// Fragments that make a generic line's key a training metric; without one a line like
/// `workers=4 port=29500` would pass for progress.
const METRIC_FRAGMENTS: &[&str] = &[
    "loss",
    "acc",
    "lr",
    "learning_rate",
    "ppl",
    "perplexity",
    "grad_norm",
    "reward",
    "f1",
    "bleu",
    "rouge",
    "mse",
    "mae",
    "auc",
    "error",
    "mfu",
    "throughput",
    "per_sec",
    "per_second",
];

/// A generic line: recognised only when one of its numeric keys is a step, an epoch or looks like
/// a training metric.
pub(super) fn parse_generic(text: &str) -> Option<ProgressEvent> {
    if !text.bytes().any(|b| b == b'=' || b == b':') {
        return None;
    }
    let mut event = ProgressEvent::default();
    let mut known = false;
    for (key, raw) in Pairs::new(text) {
        if parse_number(raw).is_none() && split_fraction(raw).is_none() {
            continue;
        }
        known |= is_progress_key(key) || is_metric_key(key);
        add_pair(&mut event, key, raw);
    }
    (known && !event.is_empty()).then_some(event)
}

/// Files a `key`/`raw value` pair into the event: the step, the epoch, a total or a scalar.
/// Returns false when the value is not a number.
pub(super) fn add_pair(event: &mut ProgressEvent, key: &str, raw: &str) -> bool {
    let key = key.trim();
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return false;
    }
    let name = last_segment(key);
    if let Some((n, total)) = split_fraction(raw) {
        if is_one_of(name, STEP_KEYS) {
            event.step = event.step.or(Some(n));
            event.total_steps = event.total_steps.or(Some(total));
            return true;
        }
        if is_one_of(name, EPOCH_KEYS) {
            event.epoch = event.epoch.or(u32::try_from(n).ok());
            event.total_epochs = event.total_epochs.or(u32::try_from(total).ok());
            return true;
        }
        return false;
    }
    let Some(value) = parse_number(raw) else {
        return false;
    };
    let count = as_count(value);
    if is_one_of(name, STEP_KEYS) && count.is_some() && event.step.is_none() {
        event.step = count;
    } else if is_one_of(name, TOTAL_STEP_KEYS) && count.is_some() {
        event.total_steps = count;
    } else if is_one_of(name, TOTAL_EPOCH_KEYS) && count.is_some() {
        event.total_epochs = count.and_then(|c| u32::try_from(c).ok());
    } else if is_one_of(name, EPOCH_KEYS) && value.is_finite() && value >= 0.0 {
        event.epoch = event.epoch.or(u32::try_from(value.floor() as u64).ok());
        // A fractional epoch (the Hugging Face Trainer's 0.5) is progress worth plotting.
        if raw.contains(['.', 'e', 'E']) {
            push_scalar(event, key, value);
        }
    } else {
        push_scalar(event, key, value);
    }
    true
}

fn push_scalar(event: &mut ProgressEvent, key: &str, value: f64) {
    if event.scalars.len() < MAX_SCALARS_PER_LINE {
        event.scalars.push((key.to_string(), value));
    }
}

/// A number as logs print them: decimal, scientific, signed, `nan`, `inf`, `Infinity`.
pub(super) fn parse_number(raw: &str) -> Option<f64> {
    let raw = raw.trim();
    let first = *raw.as_bytes().first()?;
    if raw.len() > 40 || !(first.is_ascii_digit() || b"+-.nNiI".contains(&first)) {
        return None;
    }
    raw.parse().ok()
}

/// `45/100` as (45, 100).
pub(super) fn split_fraction(raw: &str) -> Option<(u64, u64)> {
    let (n, total) = raw.trim().split_once('/')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(n) || !digits(total) {
        return None;
    }
    Some((n.parse().ok()?, total.parse().ok()?))
}

fn as_count(value: f64) -> Option<u64> {
    (value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < MAX_EXACT_INT)
        .then_some(value as u64)
}

/// `train/global_step` and `trainer.global_step` name the step like `global_step` does.
fn last_segment(key: &str) -> &str {
    key.rsplit(['/', '.']).next().unwrap_or(key)
}

fn is_one_of(name: &str, keys: &[&str]) -> bool {
    keys.iter().any(|k| name.eq_ignore_ascii_case(k))
}

fn is_progress_key(key: &str) -> bool {
    let name = last_segment(key);
    [STEP_KEYS, EPOCH_KEYS, TOTAL_STEP_KEYS, TOTAL_EPOCH_KEYS]
        .iter()
        .any(|keys| is_one_of(name, keys))
}

fn is_metric_key(key: &str) -> bool {
    let name = last_segment(key).as_bytes();
    METRIC_FRAGMENTS.iter().any(|fragment| {
        name.windows(fragment.len())
            .any(|w| w.eq_ignore_ascii_case(fragment.as_bytes()))
    })
}

/// The `key=value` / `key: value` pairs of a line, values unparsed. Keys start at a word boundary
/// and may hold `_ . / -` (`train/loss`, `lr-Adam`).
pub(super) struct Pairs<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Pairs<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = self.text.as_bytes();
        while self.at < bytes.len() {
            let start = self.at;
            let at_boundary = start == 0 || is_boundary(bytes[start - 1]);
            if !(at_boundary && (bytes[start].is_ascii_alphabetic() || bytes[start] == b'_')) {
                self.at += 1;
                continue;
            }
            let key_end = skip_while(bytes, start, is_key_byte);
            // Scanning goes on right after the key, so `INFO:root:step=5` still finds `step`.
            self.at = key_end;
            let sep = skip_while(bytes, key_end, |b| b == b' ');
            if sep >= bytes.len() || !(bytes[sep] == b'=' || bytes[sep] == b':') {
                continue;
            }
            let value_start = skip_while(bytes, sep + 1, |b| b == b' ');
            let value_end = skip_while(bytes, value_start, |b| !is_value_end(b));
            if value_end > value_start && parse_candidate(&bytes[value_start..value_end]) {
                self.at = value_end;
                return Some((
                    &self.text[start..key_end],
                    &self.text[value_start..value_end],
                ));
            }
        }
        None
    }
}

fn skip_while(bytes: &[u8], mut at: usize, keep: impl Fn(u8) -> bool) -> usize {
    while at < bytes.len() && keep(bytes[at]) {
        at += 1;
    }
    at
}

fn parse_candidate(value: &[u8]) -> bool {
    value[0].is_ascii_digit() || b"+-.nNiI".contains(&value[0])
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-')
}

fn is_boundary(b: u8) -> bool {
    b.is_ascii_whitespace() || b",;|([{:='\"".contains(&b)
}

fn is_value_end(b: u8) -> bool {
    b.is_ascii_whitespace() || b",;|)]}'\"".contains(&b)
}
