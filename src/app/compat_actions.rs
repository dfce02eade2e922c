//! What the Compatibility tab's keys do (pull the selected image, jump between images that will
//! not run here), and the verdicts judged again when what they depend on changes.

use super::action::{Action, Command, DockerCommand};
use super::cursor::moved;
use super::docker::EngineStatus;
use super::state::{AppState, Confirmation, GpuStatus, Overlay};
use crate::compat::{assess, Assessment, Board, GpuRuntime, HostProfile, ImageSource, Level};
use crate::gpu::GpuStatic;

impl AppState {
    /// The verdict of a local image as a run or shell names it, found the way pre-flight finds
    /// it (`busybox` is `busybox:latest`; an id prefix), under the name the board lists it by.
    pub fn local_assessment(&self, name: &str) -> Option<&Assessment> {
        let image = crate::launch_check::find_local(name.trim(), &self.docker.images)?;
        let listed = image
            .tags
            .first()
            .cloned()
            .unwrap_or_else(|| crate::compat::profile::short_id(&image.id));
        self.compat
            .board
            .as_ref()?
            .images
            .iter()
            .find(|a| a.image.source == ImageSource::Local && a.image.reference == listed)
    }

    /// Judges every local and catalog image again; cheap (microseconds per image), so it runs on
    /// every change of what the verdicts depend on rather than on a timer.
    pub fn refresh_compat(&mut self) {
        let runtime = match &self.docker.status {
            EngineStatus::Ready(info) => GpuRuntime::from_engine(Some(info)),
            EngineStatus::Unavailable { .. } => GpuRuntime::from_engine(None),
            EngineStatus::Connecting => GpuRuntime::Unknown,
        };
        let host = match &self.gpu {
            GpuStatus::Ready(data) => {
                let gpus: Vec<&GpuStatic> = data.inventory.gpus.iter().collect();
                HostProfile::new(Some(&data.inventory.system), &gpus, None, runtime)
            }
            GpuStatus::Failed(e) => HostProfile::new(None, &[], Some(e.title().into()), runtime),
            GpuStatus::Loading => {
                HostProfile::new(None, &[], Some("reading the driver…".into()), runtime)
            }
        };
        let local = crate::compat::profile::local_profiles(&self.docker.images);
        let board = assess(&self.compat.data, host, local, &self.docker.catalog);
        self.compat.selected = self
            .compat
            .selected
            .min(board.images.len().saturating_sub(1));
        self.compat.board = Some(board);
        self.compat.keep_selection();
    }

    pub(super) fn update_compat(&mut self, action: Action) -> Vec<Command> {
        let shown = self.compat.shown();
        let current = self.compat.selected_shown().unwrap_or(0);
        if let Some(row) = moved(current, &action, shown.len(), self.page_size) {
            if let Some(&index) = shown.get(row) {
                self.compat.selected = index;
            }
        } else if action == Action::PullSelected {
            self.ask_to_pull_selected();
        } else if action == Action::NextWontRun || action == Action::PrevWontRun {
            self.select_next_wont_run(action == Action::NextWontRun);
        }
        Vec::new()
    }

    /// Moves the selection to the next (or previous) image that will not run here, wrapping
    /// around the list; says so when none will not run.
    fn select_next_wont_run(&mut self, forward: bool) {
        let Some(board) = &self.compat.board else {
            return;
        };
        let len = board.images.len();
        let from = self.compat.selected;
        let found = (1..=len)
            .map(|step| {
                if forward {
                    (from + step) % len
                } else {
                    (from + len - step % len) % len
                }
            })
            .find(|&i| board.images[i].verdict.level == Level::WontRun);
        match found {
            Some(row) => {
                let wrapped = if forward { row <= from } else { row >= from };
                self.compat.selected = row;
                if wrapped && row != from {
                    let text = if forward {
                        "none further down: back to the first image that will not run"
                    } else {
                        "none further up: back to the last image that will not run"
                    };
                    self.set_status(text, false);
                }
            }
            None => self.set_status(
                "no image here is \"will not run\": every one runs, runs via compat or is unknown",
                false,
            ),
        }
    }

    /// Asks before pulling, with the verdict in the question: the point is to know before the
    /// download, not after.
    fn ask_to_pull_selected(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: pulling images is disabled", true);
            return;
        }
        if !self.docker.is_ready() {
            self.set_status("the Docker Engine is not reachable", true);
            return;
        }
        let Some(a) = self.compat.selected_assessment() else {
            return;
        };
        if a.image.source == ImageSource::Local {
            self.set_status(format!("{} is already pulled", a.image.reference), false);
            return;
        }
        let reference = a.image.reference.clone();
        let runs_where = self
            .compat
            .board
            .as_ref()
            .map_or("runs here", Board::runs_where);
        let mut details = vec![format!("Verdict here: {}", a.verdict.level.word())];
        details.extend(
            a.verdict
                .reasons
                .iter()
                .filter(|r| r.level > Level::Runs)
                .map(|r| r.text.clone()),
        );
        if let Some(alt) = &a.alternative {
            details.push(format!("{alt} {runs_where}"));
        }
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Pull image".into(),
            question: format!("Pull {reference}?"),
            details,
            command: Command::Docker(DockerCommand::Pull(reference)),
        });
    }
}
