//! How the pull picker and the pulls list react to actions and to the Docker collector's reports.

use super::action::{Action, Command, DockerCommand};
use super::pulls::{PullOutcome, PullPicker, PullView};
use super::state::{AppState, Overlay};
use crate::docker::update::DockerUpdate;

/// Finished pulls kept on screen; older ones drop off.
const FINISHED_PULLS: usize = 8;

impl AppState {
    pub(super) fn open_pull_picker(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: pulling images is disabled", true);
        } else if !self.docker.is_ready() {
            self.set_status("the Docker Engine is not reachable", true);
        } else {
            self.overlay = Overlay::Pull(PullPicker::new());
        }
    }

    pub(super) fn update_picker(&mut self, action: Action) -> Vec<Command> {
        let Overlay::Pull(picker) = &mut self.overlay else {
            return Vec::new();
        };
        let count = picker.matches(&self.docker.catalog).len();
        match action {
            Action::Quit => self.quit = true,
            Action::FilterInput(c) => {
                picker.query.push(c);
                picker.selected = 0;
                picker.error = None;
            }
            Action::FilterBackspace => {
                picker.query.pop();
                picker.selected = 0;
                picker.error = None;
            }
            Action::Up => picker.selected = picker.selected.saturating_sub(1),
            Action::Down => picker.selected = (picker.selected + 1).min(count.saturating_sub(1)),
            Action::Confirm => match picker.choice(&self.docker.catalog) {
                Ok(image) => {
                    let reference = image.to_string();
                    self.overlay = Overlay::None;
                    self.set_status(format!("pulling {}…", image.familiar()), false);
                    return vec![Command::Docker(DockerCommand::Pull(reference))];
                }
                Err(e) => picker.error = Some(e),
            },
            Action::Cancel => self.overlay = Overlay::None,
            _ => {}
        }
        Vec::new()
    }

    /// Cancels the newest running pull.
    pub(super) fn cancel_pull(&mut self) -> Vec<Command> {
        match self.docker.pulls.iter().rev().find(|p| p.running()) {
            Some(p) => vec![Command::Docker(DockerCommand::CancelPull(p.id))],
            None => {
                self.set_status("no pull is running", true);
                Vec::new()
            }
        }
    }

    /// Pulls again the newest pull the engine cut by going away, once the engine is back; its
    /// failed entry makes way for the new pull's.
    pub(super) fn retry_pull(&mut self) -> Vec<Command> {
        if self.read_only {
            self.set_status("read-only mode: pulling images is disabled", true);
            return Vec::new();
        }
        let Some(i) = self.docker.pulls.iter().rposition(|p| p.retryable()) else {
            self.set_status(
                "no pull to retry: r pulls again a pull the Docker Engine cut by going away",
                true,
            );
            return Vec::new();
        };
        if !self.docker.is_ready() {
            self.set_status(
                "the Docker Engine is not back yet; r retries the pull once it is",
                true,
            );
            return Vec::new();
        }
        let pull = self.docker.pulls.remove(i);
        self.set_status(format!("pulling {} again…", pull.reference), false);
        vec![Command::Docker(DockerCommand::Pull(pull.reference))]
    }

    /// Folds a pull report into the list; true if it was one.
    pub(super) fn apply_pull(&mut self, update: &DockerUpdate) -> bool {
        let pulls = &mut self.docker.pulls;
        match update {
            DockerUpdate::PullStarted { id, reference } => pulls.push(PullView {
                id: *id,
                reference: reference.clone(),
                progress: None,
                outcome: None,
            }),
            DockerUpdate::PullProgress { id, progress } => {
                if let Some(p) = pulls.iter_mut().find(|p| p.id == *id) {
                    p.progress = Some((**progress).clone());
                }
            }
            DockerUpdate::PullFinished { id, outcome } => {
                if let Some(p) = pulls.iter_mut().find(|p| p.id == *id) {
                    p.outcome = Some(outcome.clone());
                    let text = match outcome {
                        PullOutcome::Done { digest, .. } => format!(
                            "pulled {} {}",
                            p.reference,
                            digest.as_deref().unwrap_or_default()
                        ),
                        // The Engine's own words and what to do, whole in the messages view.
                        PullOutcome::Failed {
                            title,
                            message,
                            fix,
                            ..
                        } => format!(
                            "pull of {} failed: {title}: {message}. What to do: {fix}",
                            p.reference
                        ),
                    };
                    let failed = matches!(outcome, PullOutcome::Failed { .. });
                    self.set_status(text, failed);
                }
                let finished = self.docker.pulls.iter().filter(|p| !p.running()).count();
                if finished > FINISHED_PULLS {
                    if let Some(i) = self.docker.pulls.iter().position(|p| !p.running()) {
                        self.docker.pulls.remove(i);
                    }
                }
            }
            _ => return false,
        }
        true
    }
}
