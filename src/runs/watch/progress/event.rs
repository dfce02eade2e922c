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
