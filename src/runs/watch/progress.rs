//! Training progress read from log lines: Keras, PyTorch Lightning, Hugging Face Trainer, tqdm,
//! generic `key=value` and JSON lines, folded into bounded series by [`ProgressTracker`].

mod dict;
mod event;
mod keras;
mod line;
mod pairs;
mod tqdm;
mod tracker;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tracker_tests;

pub use event::ProgressEvent;
pub use line::parse_line;
pub use tracker::{ProgressTracker, DEFAULT_POINTS_PER_SCALAR};
