//! What one log line says about a run's progress, whichever tool printed it.

use serde::Serialize;

/// What one log line says about a run's progress. Counters are as the tool prints them: Keras
/// counts epochs from 1, Lightning and the Hugging Face Trainer from 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProgressEvent {
    pub step: Option<u64>,
    pub total_steps: Option<u64>,
    pub epoch: Option<u32>,
    pub total_epochs: Option<u32>,
    /// Named values in the order the line gives them; may be NaN or infinite (a diverged loss).
    pub scalars: Vec<(String, f64)>,
    /// What kind of line gave `step`: when a run prints several, the tracker follows one.
    #[serde(skip)]
    pub step_source: StepSource,
}

/// The kinds of line that give a step, lowest precedence first. Once a run has printed a step of
/// one kind, steps of lower kinds are ignored (see [`ProgressTracker`](super::ProgressTracker)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepSource {
    /// An engine's own diagnostic, printed at start-up and every so many steps whatever the
    /// script prints: DeepSpeed's `[Rank 0] step=10, skipped=0, lr=[...]`.
    Engine,
    /// A progress bar's counter (tqdm, Keras, rich): often the batches of one epoch or of one
    /// loop, not the optimizer steps.
    Bar,
    /// A line that names its step: `step=120`, `{"step": 120}`, `Step 1, loss: 0.15`, Megatron's
    /// `iteration 10/1000`, DeepSpeed's pipeline `steps: 10 loss: ...`.
    #[default]
    Named,
}

impl ProgressEvent {
    pub fn is_empty(&self) -> bool {
        self.step.is_none()
            && self.total_steps.is_none()
            && self.epoch.is_none()
            && self.total_epochs.is_none()
            && self.scalars.is_empty()
    }
}
