//! One log line to the progress it reports: the last redraw of a bar, control characters, rank
//! prefixes and bracketed log prefixes dropped, then each tool's format tried in turn.

use super::event::{ProgressEvent, StepSource};
use super::{dict, keras, megatron, pairs, tqdm};

/// Longer segments are not progress output (a dumped config or a tensor); skipping them keeps the
/// cost per line bounded whatever a run prints.
pub(super) const MAX_SEGMENT_BYTES: usize = 16 * 1024;

/// The progress a log line reports, or None for the ordinary lines that report none.
///
/// A line may hold several carriage-return-separated redraws of a progress bar (tqdm and Keras
/// write `\r` and backspaces even into files): only the last one counts.
pub fn parse_line(line: &str) -> Option<ProgressEvent> {
    let segment = last_segment(line)?;
    if segment.len() > MAX_SEGMENT_BYTES {
        return None;
    }
    let cleaned;
    let text = if segment.bytes().any(|b| b < 0x20 && b != b'\t') {
        cleaned = strip_controls(segment);
        cleaned.as_str()
    } else {
        segment
    };
    let text = strip_prefixes(text.trim());
    if text.is_empty() {
        return None;
    }
    parse_clean(text).filter(|event| !event.is_empty())
}

fn parse_clean(text: &str) -> Option<ProgressEvent> {
    if text.starts_with('{') {
        return dict::parse(text);
    }
    if text.starts_with("Epoch ") {
        if let Some(event) = keras::parse_epoch_header(text) {
            return Some(event);
        }
        if !text.contains("%|") && text.contains('━') {
            return tqdm::parse_rich(text);
        }
    }
    if text.contains("%|") {
        return tqdm::parse(text);
    }
    if text.as_bytes()[0].is_ascii_digit() {
        if let Some(event) = keras::parse_bar(text) {
            return Some(event);
        }
    }
    if text.contains('|') && text.contains("iteration ") {
        if let Some(event) = megatron::parse_report(text) {
            return Some(event);
        }
    }
    if text.starts_with("steps: ") {
        return megatron::parse_pipeline(text);
    }
    let mut event = pairs::parse_generic(text)?;
    if (text.starts_with("step=") && text.contains(", skipped="))
        || (text.starts_with("epoch=") && text.contains("/micro_step="))
    {
        // DeepSpeed's engine (`_report_progress`, `ThroughputTimer`), printed at start-up and
        // every `steps_per_print` steps whatever else the script prints.
        event.step_source = StepSource::Engine;
    }
    Some(event)
}

/// The last non-blank carriage-return-separated part of a line, without its line ending.
fn last_segment(line: &str) -> Option<&str> {
    line.trim_end_matches(['\n', '\r'])
        .rsplit('\r')
        .find(|part| !part.trim().is_empty())
}

/// Removes ANSI escape sequences (Keras 3 colours its bar) and other control characters.
fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // A CSI sequence ends with its first byte in '@'..='~'.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else if c == '\t' || !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// Drops what launchers and loggers put before a line's message, in any order: rank tags and
/// bracketed fields (Megatron's ` [2024-05-01 12:00:00.123456] `, DeepSpeed's
/// `[2024-05-01 12:00:00,123] [INFO] [logging.py:128:log_dist] [Rank 0] `).
fn strip_prefixes(mut text: &str) -> &str {
    loop {
        let stripped = strip_bracketed(strip_rank_prefix(text));
        if stripped.len() == text.len() {
            return text;
        }
        text = stripped;
    }
}

/// Drops one leading `[...]` field followed by a space (or ending the line), unless it holds
/// progress itself: PyTorch-GAN's `[Epoch 3/10] [Batch 40/100] [D loss: 0.512] [G loss: 0.734]`.
fn strip_bracketed(text: &str) -> &str {
    let Some(rest) = text.strip_prefix('[') else {
        return text;
    };
    let Some(close) = rest.find(']').filter(|&i| i <= 64) else {
        return text;
    };
    let field = &rest[..close];
    let first_word = field.split(' ').next().unwrap_or("").to_ascii_lowercase();
    if field.contains(": ")
        || field.contains('=')
        || ["epoch", "step", "iter", "iteration", "batch"].contains(&first_word.as_str())
    {
        return text;
    }
    let after = &rest[close + 1..];
    if after.is_empty() || after.starts_with([' ', '\t']) {
        after.trim_start()
    } else {
        text
    }
}

/// Drops the rank tag launchers put before each line: torchrun's `[rank0]:` or `[default0]:`,
/// Open MPI's `[1,0]<stdout>:`.
fn strip_rank_prefix(text: &str) -> &str {
    let Some(rest) = text.strip_prefix('[') else {
        return text;
    };
    let Some(close) = rest.find(']').filter(|&i| i <= 24) else {
        return text;
    };
    if rest[..close].contains(' ') {
        return text;
    }
    let after = &rest[close + 1..];
    let after = after
        .strip_prefix("<stdout>")
        .or_else(|| after.strip_prefix("<stderr>"))
        .unwrap_or(after);
    match after.strip_prefix(':') {
        Some(body) => body.trim(),
        None => text,
    }
}
