//! The new-run form of the Runs tab: the fields of a run spec (command, name, work dir, image,
//! launcher, GPUs with the free ones suggested), checked into a `RunSpec` on Enter.

use std::path::PathBuf;

use super::action::{Action, Command};
use super::shell_dialog::GpuChoice;
use super::state::{AppState, Overlay};
use crate::runs::{GpuSelection, Launcher, RunSpec};

/// The form's fields, in the order Tab visits them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Command,
    Name,
    Workdir,
    Image,
    Launcher,
    Gpus,
}

const FIELDS: [Field; 6] = [
    Field::Command,
    Field::Name,
    Field::Workdir,
    Field::Image,
    Field::Launcher,
    Field::Gpus,
];

/// What the user has typed and chosen so far.
#[derive(Clone, Debug, PartialEq)]
pub struct RunForm {
    pub field: Field,
    /// The command line as typed; split into argv with shell quoting rules, never run by a shell.
    pub command: String,
    pub name: String,
    pub workdir: String,
    pub image: String,
    pub launcher: Launcher,
    pub gpus: Vec<GpuChoice>,
    /// The GPU row under the cursor.
    pub gpu_row: usize,
    /// Why Enter did not start it.
    pub error: Option<String>,
}

impl RunForm {
    pub fn new(gpus: Vec<GpuChoice>, workdir: PathBuf) -> Self {
        Self {
            field: Field::Command,
            command: String::new(),
            name: String::new(),
            workdir: workdir.display().to_string(),
            image: String::new(),
            launcher: Launcher::Single,
            gpus,
            gpu_row: 0,
            error: None,
        }
    }

    /// The spec the form describes, or what is wrong with it.
    pub fn spec(&self) -> Result<RunSpec, String> {
        let command = shlex::split(&self.command)
            .ok_or("the command has an unclosed quote or a trailing backslash")?;
        if command.is_empty() {
            return Err("type the command to run, e.g. python train.py --epochs 10".into());
        }
        let chosen: Vec<u32> = self
            .gpus
            .iter()
            .filter(|g| g.chosen)
            .map(|g| g.index)
            .collect();
        let image = Some(self.image.trim().to_string()).filter(|i| !i.is_empty());
        let gpus = match (chosen.is_empty(), &image) {
            (false, _) => GpuSelection::Indices(chosen),
            (true, Some(_)) => GpuSelection::None,
            (true, None) => return Err("choose at least one GPU (Space on a GPU row)".into()),
        };
        let workdir = self.workdir.trim();
        if workdir.is_empty() {
            return Err("the work dir is empty".into());
        }
        Ok(RunSpec {
            name: Some(self.name.trim().to_string()).filter(|n| !n.is_empty()),
            command,
            image,
            gpus,
            launcher: self.launcher,
            workdir: Some(PathBuf::from(workdir)),
            ..RunSpec::default()
        })
    }

    fn text_mut(&mut self) -> Option<&mut String> {
        match self.field {
            Field::Command => Some(&mut self.command),
            Field::Name => Some(&mut self.name),
            Field::Workdir => Some(&mut self.workdir),
            Field::Image => Some(&mut self.image),
            Field::Launcher | Field::Gpus => None,
        }
    }

    fn move_field(&mut self, forward: bool) {
        let at = FIELDS.iter().position(|f| *f == self.field).unwrap_or(0);
        let n = FIELDS.len();
        self.field = FIELDS[if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        }];
    }

    /// A key typed into the focused field.
    fn input(&mut self, c: char) {
        if let Some(text) = self.text_mut() {
            text.push(c);
            return;
        }
        match (self.field, c) {
            (Field::Launcher, ' ') => {
                self.launcher = match self.launcher {
                    Launcher::Single => Launcher::Torchrun,
                    Launcher::Torchrun => Launcher::PerGpu,
                    Launcher::PerGpu => Launcher::Single,
                }
            }
            (Field::Gpus, ' ') => {
                if let Some(g) = self.gpus.get_mut(self.gpu_row) {
                    g.chosen = !g.chosen;
                }
            }
            (Field::Gpus, 'a') => {
                let all = self.gpus.iter().all(|g| g.chosen);
                self.gpus.iter_mut().for_each(|g| g.chosen = !all);
            }
            _ => {}
        }
    }
}

impl AppState {
    /// `n` on the Runs tab: a form for a new run, its first free GPU chosen.
    pub(super) fn open_run_form(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: starting runs is disabled", true);
            return;
        }
        let workdir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        self.overlay = Overlay::RunForm(RunForm::new(self.gpu_choices(), workdir));
    }

    pub(super) fn update_run_form(&mut self, action: Action) -> Vec<Command> {
        let Overlay::RunForm(form) = &mut self.overlay else {
            return Vec::new();
        };
        let last = form.gpus.len().saturating_sub(1);
        match action {
            Action::NextTab => form.move_field(true),
            Action::PrevTab => form.move_field(false),
            Action::Up if form.field == Field::Gpus => {
                form.gpu_row = form.gpu_row.saturating_sub(1)
            }
            Action::Down if form.field == Field::Gpus => {
                form.gpu_row = (form.gpu_row + 1).min(last)
            }
            Action::Up => form.move_field(false),
            Action::Down => form.move_field(true),
            Action::FilterInput(c) => form.input(c),
            Action::FilterBackspace => {
                if let Some(text) = form.text_mut() {
                    text.pop();
                }
            }
            Action::Confirm => match form.spec() {
                Ok(spec) => {
                    self.overlay = Overlay::None;
                    self.set_status("starting the run…", false);
                    return vec![Command::StartRun(Box::new(spec))];
                }
                Err(e) => form.error = Some(e),
            },
            Action::Cancel => self.overlay = Overlay::None,
            _ => {}
        }
        Vec::new()
    }
}
