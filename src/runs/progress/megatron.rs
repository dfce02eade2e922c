//! Megatron-LM's and NeMo's `|`-separated reports, and DeepSpeed's pipeline-engine line.
//!
//! - Megatron-LM (`megatron/training/training.py`, `training_log`):
//!   ` [2024-05-01 12:00:00.123456] iteration       10/    1000 | consumed samples: 5120 | ...
//!   | lm loss: 5.432100E+00 | loss scale: 1.0 | grad norm: 1.234 | ...`; `iteration` counts the
//!   iterations done, out of `--train-iters`. Its evaluation (`evaluate_and_print_results`):
//!   ` validation loss at iteration 100 on validation set | lm loss value: 5.1E+00 | lm loss PPL: ... |`.
//! - NeMo 2 (`nemo/lightning/pytorch/callbacks/progress_printer.py`, `ProgressPrinter`):
//!   `Training epoch 0, iteration 9/99 | lr: 1.5e-05 | global_step: 9 | reduced_train_loss: 5.23`,
//!   where the iteration is the index of the last step done and `99` the index of the last step.
//! - DeepSpeed's pipeline engine (`deepspeed/runtime/pipe/engine.py`, `train_batch`):
//!   `steps: 10 loss: 0.6931 iter time (s): 0.123 samples/sec: 260.163`.
//!
//! Keys hold spaces and parentheses here, so they are kept whole (`lm loss`, `grad norm`).

use super::event::ProgressEvent;
use super::pairs::{add_pair, split_fraction};

/// A Megatron-LM or NeMo report line, or None.
pub(super) fn parse_report(text: &str) -> Option<ProgressEvent> {
    let mut fields = text.split('|').map(str::trim).filter(|f| !f.is_empty());
    let head = fields.next()?;
    let mut event = ProgressEvent::default();
    // Evaluation values are named after the set they were computed on: `validation lm loss value`.
    let mut prefix = None;
    if let Some(rest) = head.strip_prefix("iteration ") {
        let (step, total) = spaced_fraction(rest)?;
        event.step = Some(step);
        event.total_steps = Some(total);
    } else if let Some((set, at)) = head.split_once(" loss at iteration ") {
        event.step = Some(at.split(' ').next()?.parse().ok()?);
        prefix = Some(set);
    } else {
        let (_description, rest) = head.split_once(" epoch ")?;
        let (epoch, iteration) = rest.split_once(", iteration ")?;
        let (index, last) = split_fraction(iteration)?;
        event.epoch = Some(epoch.parse().ok()?);
        event.step = index.checked_add(1);
        event.total_steps = last.checked_add(1);
    }
    for field in fields {
        let Some((key, raw)) = field.rsplit_once(':') else {
            continue;
        };
        match prefix {
            Some(set) => add_pair(&mut event, &format!("{set} {}", key.trim()), raw),
            None => add_pair(&mut event, key, raw),
        };
    }
    Some(event)
}

/// `steps: 10 loss: 0.6931 iter time (s): 0.123 samples/sec: 260.163`: each value follows the
/// words of its name, the last one ending in `:`.
pub(super) fn parse_pipeline(text: &str) -> Option<ProgressEvent> {
    let mut event = ProgressEvent::default();
    let mut words = text.split_whitespace();
    let mut key_start: Option<usize> = None;
    while let Some(word) = words.next() {
        let offset = word.as_ptr() as usize - text.as_ptr() as usize;
        let start = *key_start.get_or_insert(offset);
        if let Some(name_end) = word.strip_suffix(':') {
            let key = &text[start..offset + name_end.len()];
            let raw = words.next()?;
            if key == "steps" {
                event.step = Some(raw.parse().ok()?);
            } else {
                add_pair(&mut event, key, raw);
            }
            key_start = None;
        }
    }
    event.step.is_some().then_some(event)
}

/// `10/    1000` (Megatron pads both numbers to eight columns).
fn spaced_fraction(text: &str) -> Option<(u64, u64)> {
    let (n, total) = text.split_once('/')?;
    Some((n.trim().parse().ok()?, total.trim().parse().ok()?))
}
