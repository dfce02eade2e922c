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
/// Step words recognised before a bare number (`step 5`, `iter 160:`, `Epoch 2`); `batch` and
/// `update` are left out, since prose uses them (`batch 64`).
const LOOSE_STEP_KEYS: &[&str] = &["step", "global_step", "iter", "iteration", "epoch"];
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

/// A generic line: recognised when one of its `key=value` / `key: value` keys is a step, an epoch
/// or looks like a training metric, or when it is a plain report: a step or epoch word before its
/// number and at least one metric value (`step 5 loss 0.55`, `Step 1, loss: 0.15`), or nothing but
/// step and epoch words and their numbers (`epoch 2 step 30/500`). A loose `word number` pair
/// counts only under those names (`using 4 workers` is not a value), and a plain word before a
/// loose metric is part of its name (nanoGPT's `train loss 1.2345, val loss 1.4567`).
pub(super) fn parse_generic(text: &str) -> Option<ProgressEvent> {
    let mut event = ProgressEvent::default();
    let mut known = false;
    let mut loose_progress = false;
    let mut metric = false;
    for Pair { key, raw, loose } in Pairs::loose(text) {
        // nanoGPT and torchtitan print `mfu 12.34%`.
        let raw = raw.strip_suffix('%').unwrap_or(raw);
        let is_number = || parse_number(raw).is_some() || split_fraction(raw).is_some();
        if loose {
            // Names first: most loose pairs are prose (`line 42`), not worth parsing.
            if is_one_of(last_segment(key), LOOSE_STEP_KEYS) {
                if is_number() {
                    loose_progress = true;
                    add_pair(&mut event, key, raw);
                }
            } else if is_metric_key(key) && is_number() {
                metric = true;
                add_pair(&mut event, with_word_before(text, key), raw);
            }
            continue;
        }
        if !is_number() {
            continue;
        }
        // A metric under `key=value` makes the line known, which is all `metric` decides.
        known = known || is_progress_key(key) || is_metric_key(key);
        add_pair(&mut event, key, raw);
    }
    let recognised = known || (loose_progress && (metric || only_step_words(text)));
    (recognised && !event.is_empty()).then_some(event)
}

/// Words that name which loss a plain report gives (nanoGPT's `train loss 1.2345, val loss 1.4567`).
const SPLIT_WORDS: &[&str] = &[
    "train",
    "training",
    "val",
    "valid",
    "validation",
    "eval",
    "test",
    "mean",
    "avg",
    "total",
];

/// `key` with the split word before it (`val loss`), when one precedes it after a space.
fn with_word_before<'a>(text: &'a str, key: &'a str) -> &'a str {
    let start = key.as_ptr() as usize - text.as_ptr() as usize;
    let Some(before) = text[..start].strip_suffix(' ') else {
        return key;
    };
    let word = before
        .rsplit([' ', ',', ':', '|', '('])
        .next()
        .unwrap_or("");
    if !is_one_of(word, SPLIT_WORDS) {
        return key;
    }
    &text[start - 1 - word.len()..start + key.len()]
}

/// The line is nothing but step and epoch words, each before its number (`epoch 2 step 30/500`),
/// so that prose with a step in it (`Epoch 0, global step 500: 'val_loss' reached 0.21`) is not.
fn only_step_words(text: &str) -> bool {
    let mut tokens = text
        .split([' ', ',', ':', '|', '\t'])
        .filter(|t| !t.is_empty());
    let mut pairs = 0;
    while let Some(word) = tokens.next() {
        let Some(value) = tokens.next() else {
            return false;
        };
        let is_count = split_fraction(value).is_some() || value.bytes().all(|b| b.is_ascii_digit());
        if !(is_one_of(word, LOOSE_STEP_KEYS) && is_count) {
            return false;
        }
        pairs += 1;
    }
    pairs > 0
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
    // Lower-cased once into a buffer: this runs for every numeric pair of every line.
    let mut buffer = [0u8; MAX_KEY_BYTES];
    let Some(lower) = buffer.get_mut(..name.len()) else {
        return false;
    };
    for (to, from) in lower.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    let lower = &*lower;
    (0..lower.len()).any(|i| {
        // One pass over the name; only bytes that start a fragment look further.
        matches!(
            lower[i],
            b'a' | b'b' | b'e' | b'f' | b'g' | b'l' | b'm' | b'p' | b'r' | b't'
        ) && METRIC_FRAGMENTS
            .iter()
            .any(|fragment| lower[i..].starts_with(fragment.as_bytes()))
    })
}

/// One `key=value`, `key: value` or (loose) `key value` pair of a line, the value unparsed.
pub(super) struct Pair<'a> {
    pub(super) key: &'a str,
    pub(super) raw: &'a str,
    /// Only a space between key and value (`step 5`, `loss 0.55`).
    pub(super) loose: bool,
}

/// The pairs of a line. Keys start at a word boundary and may hold `_ . / -` (`train/loss`,
/// `lr-Adam`). A value may be a list of numbers (`lr=[0.0001, 0.0002]`): its first one is taken.
pub(super) struct Pairs<'a> {
    text: &'a str,
    at: usize,
    /// Also yield `key value` pairs whose value is a number.
    loose: bool,
}

impl<'a> Pairs<'a> {
    /// `key=value` and `key: value` pairs only.
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            text,
            at: 0,
            loose: false,
        }
    }

    /// Also `key 123` pairs (a space between a word and a number).
    pub(super) fn loose(text: &'a str) -> Self {
        Self {
            text,
            at: 0,
            loose: true,
        }
    }

    fn pair(&mut self, key: (usize, usize), value: (usize, usize), loose: bool) -> Pair<'a> {
        Pair {
            key: &self.text[key.0..key.1],
            raw: &self.text[value.0..value.1],
            loose,
        }
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = Pair<'a>;

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
            if sep >= bytes.len() {
                continue;
            }
            if !(bytes[sep] == b'=' || bytes[sep] == b':') {
                if self.loose && sep > key_end && starts_number(&bytes[sep..]) {
                    let mut value_end = value_end(bytes, sep);
                    // `iter 160: loss 3.45`: the colon closes the pair.
                    if bytes[value_end - 1] == b':' {
                        value_end -= 1;
                    }
                    self.at = value_end;
                    return Some(self.pair((start, key_end), (sep, value_end), true));
                }
                continue;
            }
            let value_start = skip_while(bytes, sep + 1, |b| b == b' ');
            if let Some((first, close)) = first_of_list(bytes, value_start) {
                self.at = close;
                return Some(self.pair((start, key_end), first, false));
            }
            let value_end = value_end(bytes, value_start);
            if value_end > value_start && parse_candidate(&bytes[value_start..value_end]) {
                self.at = value_end;
                return Some(self.pair((start, key_end), (value_start, value_end), false));
            }
        }
        None
    }
}

/// `[0.0001, 0.0002]` at `at`: the span of its first element and the index after the `]`, when
/// that element is a number. DeepSpeed prints one learning rate per parameter group this way.
fn first_of_list(bytes: &[u8], at: usize) -> Option<((usize, usize), usize)> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let start = skip_while(bytes, at + 1, |b| b == b' ');
    if !starts_number(bytes.get(start..)?) {
        return None;
    }
    let end = skip_while(bytes, start, |b| !matches!(b, b',' | b']' | b' '));
    let close = start + bytes[start..].iter().take(256).position(|&b| b == b']')?;
    Some(((start, end), close + 1))
}

/// A digit, or a sign or point before one: what a loose value must start with, so that words
/// (`in`, `nan` in prose) are never taken for values.
fn starts_number(bytes: &[u8]) -> bool {
    match bytes {
        [b, ..] if b.is_ascii_digit() => true,
        [b'+' | b'-' | b'.', d, ..] => d.is_ascii_digit(),
        _ => false,
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
    b.is_ascii_whitespace() || b",;|([{:='\"/".contains(&b)
}

/// Where a value starting at `at` ends: at a space or closing punctuation, or at a `/` before a
/// letter (DeepSpeed's `epoch=0/micro_step=10/global_step=10` holds three pairs).
fn value_end(bytes: &[u8], at: usize) -> usize {
    let mut end = at;
    while end < bytes.len() && !is_value_end(bytes[end]) {
        if bytes[end] == b'/' && bytes.get(end + 1).is_some_and(u8::is_ascii_alphabetic) {
            break;
        }
        end += 1;
    }
    end
}

fn is_value_end(b: u8) -> bool {
    b.is_ascii_whitespace() || b",;|)]}'\"".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `is_metric_key` looks only at bytes that start a fragment: each fragment must be found,
    /// in any case and inside a longer name.
    #[test]
    fn every_metric_fragment_is_found() {
        for fragment in METRIC_FRAGMENTS {
            assert!(is_metric_key(fragment), "{fragment}");
            assert!(is_metric_key(&fragment.to_ascii_uppercase()), "{fragment}");
            assert!(
                is_metric_key(&format!("train/x_{fragment}_1")),
                "{fragment}"
            );
        }
        for name in [
            "step",
            "workers",
            "port",
            "line",
            "x".repeat(MAX_KEY_BYTES + 1).as_str(),
        ] {
            assert!(!is_metric_key(name), "{name}");
        }
    }
}
