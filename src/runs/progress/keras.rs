//! Keras `model.fit` output: `Epoch 3/10` headers and the progress bars of Keras 3
//! (`45/100 ━━━━ 2s 30ms/step - loss: 0.2345`) and tf.keras 2 (`45/100 [===>...] - ETA: 2s - loss: 0.2345`).

use super::event::{ProgressEvent, StepSource};
use super::pairs::{add_pair, split_fraction};

/// `Epoch 3/10`, printed by Keras before each epoch's bar.
pub(super) fn parse_epoch_header(text: &str) -> Option<ProgressEvent> {
    let (epoch, total) = split_fraction(text.strip_prefix("Epoch ")?)?;
    Some(ProgressEvent {
        epoch: Some(u32::try_from(epoch).ok()?),
        total_epochs: Some(u32::try_from(total).ok()?),
        ..ProgressEvent::default()
    })
}

/// A progress bar line: the step counter, the bar, timings, then ` - name: value` metrics.
pub(super) fn parse_bar(text: &str) -> Option<ProgressEvent> {
    let (counter, rest) = text.split_once(' ').unwrap_or((text, ""));
    let (step, total) = counter.split_once('/')?;
    let step: u64 = step.parse().ok()?;
    // Keras prints `Unknown` when the dataset has no length (a generator, `tf.data` without cardinality).
    let total_steps = match total {
        "Unknown" => None,
        _ => Some(total.parse::<u64>().ok()?),
    };
    let rest = rest.trim_start();
    if !(looks_like_bar(rest) || total_steps.is_none()) {
        return None;
    }
    let mut event = ProgressEvent {
        step: Some(step),
        total_steps,
        step_source: StepSource::Bar,
        ..ProgressEvent::default()
    };
    for part in rest.split(" - ").skip(1) {
        if let Some((key, value)) = part.split_once(": ") {
            if !key.contains(' ') {
                add_pair(&mut event, key, value);
            }
        }
    }
    Some(event)
}

/// What follows the counter: Keras 3's `━` bar, tf.keras 2's `[==>..]`, or the metrics directly
/// (tf.keras 2 with `verbose=2`-style finishing lines).
fn looks_like_bar(rest: &str) -> bool {
    if rest.is_empty() || rest.starts_with('━') || rest.starts_with("- ") {
        return true;
    }
    let Some(inside) = rest.strip_prefix('[').and_then(|r| r.split_once(']')) else {
        return false;
    };
    !inside.0.is_empty() && inside.0.bytes().all(|b| matches!(b, b'=' | b'>' | b'.'))
}
