//! The new-run form of the Runs tab: the fields of a run spec (command, name, work dir, image,
//! launcher, backend, on Slurm the partition, time limit and nodes, GPUs with the free ones
//! suggested or a count per node), checked into a `RunSpec` on Enter.

use std::path::PathBuf;

use super::shell_dialog::GpuChoice;
use crate::runs::slurm::SlurmSettings;
use crate::runs::{Backend, SlurmDefaults};
use crate::runs::{GpuSelection, Launcher, RunSpec};

/// The form's fields, in the order Tab visits them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Command,
    Name,
    Workdir,
    Image,
    Launcher,
    Backend,
    Partition,
    Time,
    Nodes,
    Gpus,
}

const LOCAL_FIELDS: &[Field] = &[
    Field::Command,
    Field::Name,
    Field::Workdir,
    Field::Image,
    Field::Launcher,
    Field::Backend,
    Field::Gpus,
];

const SLURM_FIELDS: &[Field] = &[
    Field::Command,
    Field::Name,
    Field::Workdir,
    Field::Image,
    Field::Launcher,
    Field::Backend,
    Field::Partition,
    Field::Time,
    Field::Nodes,
    Field::Gpus,
];

/// Which GPUs of this machine a local run asks for; `m` on the GPUs field cycles them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMode {
    /// The GPUs ticked in the rows.
    Chosen,
    /// `count:N`: any N free GPUs, picked when it starts.
    Count,
    /// No GPU: a CPU run, the only kind a machine without GPUs can start.
    None,
}

impl GpuMode {
    fn next(self) -> Self {
        match self {
            GpuMode::Chosen => GpuMode::Count,
            GpuMode::Count => GpuMode::None,
            GpuMode::None => GpuMode::Chosen,
        }
    }
}

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
    pub backend: Backend,
    /// The Slurm fields as typed; empty leaves the config's `[slurm]` value.
    pub partition: String,
    pub time: String,
    pub nodes: String,
    /// On Slurm the GPUs field is a count per node: the scheduler picks the GPUs.
    pub gpus_per_node: String,
    pub gpus: Vec<GpuChoice>,
    /// On a local run: the rows, a count, or none (the start when this machine shows no GPU).
    pub gpu_mode: GpuMode,
    /// The N of `count:N` as typed.
    pub gpu_count: String,
    /// The GPU row under the cursor.
    pub gpu_row: usize,
    /// Why Enter did not start it.
    pub error: Option<String>,
}

impl RunForm {
    /// A blank form on `gpus`, its backend and Slurm fields those of the config.
    pub fn new(gpus: Vec<GpuChoice>, workdir: PathBuf, defaults: &SlurmDefaults) -> Self {
        let settings = &defaults.settings;
        let number = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
        Self {
            field: Field::Command,
            command: String::new(),
            name: String::new(),
            workdir: workdir.display().to_string(),
            image: String::new(),
            launcher: Launcher::Single,
            backend: defaults.backend,
            partition: settings.partition.clone().unwrap_or_default(),
            time: settings.time.clone().unwrap_or_default(),
            nodes: number(settings.nodes),
            gpus_per_node: number(settings.gpus_per_node),
            gpu_mode: if gpus.is_empty() {
                GpuMode::None
            } else {
                GpuMode::Chosen
            },
            gpu_count: "1".into(),
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
        let workdir = self.workdir.trim();
        if workdir.is_empty() {
            return Err("the work dir is empty".into());
        }
        let image = Some(self.image.trim().to_string()).filter(|i| !i.is_empty());
        let (gpus, backend, slurm) = if self.backend.takes_slurm_settings() {
            let (gpus, slurm) = self.slurm_settings()?;
            (gpus, Some(self.backend), slurm)
        } else {
            (
                self.local_gpus(image.is_some())?,
                None,
                SlurmSettings::default(),
            )
        };
        Ok(RunSpec {
            name: Some(self.name.trim().to_string()).filter(|n| !n.is_empty()),
            command,
            image,
            gpus,
            launcher: self.launcher,
            workdir: Some(PathBuf::from(workdir)),
            backend,
            slurm,
            ..RunSpec::default()
        })
    }

    /// The GPUs of this machine the form asks for: none, a count, or the rows ticked (none ticked
    /// only for a container run).
    fn local_gpus(&self, has_image: bool) -> Result<GpuSelection, String> {
        match self.gpu_mode {
            GpuMode::None => return Ok(GpuSelection::None),
            GpuMode::Count => {
                return match self.gpu_count.trim().parse::<usize>() {
                    Ok(n) if n > 0 => Ok(GpuSelection::Count(n)),
                    _ => Err(format!(
                        "the GPU count must be a whole number of at least 1, not `{}` (m: none)",
                        self.gpu_count.trim()
                    )),
                }
            }
            GpuMode::Chosen => {}
        }
        let chosen: Vec<u32> = self
            .gpus
            .iter()
            .filter(|g| g.chosen)
            .map(|g| g.index)
            .collect();
        match (chosen.is_empty(), has_image) {
            (false, _) => Ok(GpuSelection::Indices(chosen)),
            (true, true) => Ok(GpuSelection::None),
            (true, false) => Err(
                "choose at least one GPU (Space on a GPU row), or m on GPUs for count:N or none"
                    .into(),
            ),
        }
    }

    /// The GPUs as a count per node (the scheduler refuses named GPUs) and the Slurm fields laid
    /// over the config's; an empty field leaves the config's value.
    fn slurm_settings(&self) -> Result<(GpuSelection, SlurmSettings), String> {
        let text = |t: &str| Some(t.trim().to_string()).filter(|t| !t.is_empty());
        let nodes = match text(&self.nodes) {
            None => None,
            Some(n) => match n.parse::<u32>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(format!(
                        "Nodes must be a whole number of at least 1, not `{n}`"
                    ))
                }
            },
        };
        let gpus_per_node = match text(&self.gpus_per_node) {
            None => None,
            Some(n) => Some(n.parse::<u32>().map_err(|_| {
                format!("GPUs/node must be a whole number (0 for none), not `{n}`")
            })?),
        };
        let gpus = match gpus_per_node {
            Some(n) => GpuSelection::Count(n as usize),
            None => GpuSelection::None,
        };
        let slurm = SlurmSettings {
            partition: text(&self.partition),
            time: text(&self.time),
            nodes,
            gpus_per_node,
            ..SlurmSettings::default()
        };
        Ok((gpus, slurm))
    }

    /// The fields Tab visits: the Slurm ones only when the run goes to Slurm.
    pub fn fields(&self) -> &'static [Field] {
        if self.backend.takes_slurm_settings() {
            SLURM_FIELDS
        } else {
            LOCAL_FIELDS
        }
    }

    pub(super) fn text_mut(&mut self) -> Option<&mut String> {
        match self.field {
            Field::Command => Some(&mut self.command),
            Field::Name => Some(&mut self.name),
            Field::Workdir => Some(&mut self.workdir),
            Field::Image => Some(&mut self.image),
            Field::Partition => Some(&mut self.partition),
            Field::Time => Some(&mut self.time),
            Field::Nodes => Some(&mut self.nodes),
            Field::Gpus if self.backend.takes_slurm_settings() => Some(&mut self.gpus_per_node),
            Field::Gpus if self.gpu_mode == GpuMode::Count => Some(&mut self.gpu_count),
            Field::Launcher | Field::Backend | Field::Gpus => None,
        }
    }

    pub(super) fn move_field(&mut self, forward: bool) {
        let fields = self.fields();
        let at = fields.iter().position(|f| *f == self.field).unwrap_or(0);
        let n = fields.len();
        self.field = fields[if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        }];
    }

    /// A key typed into the focused field.
    pub(super) fn input(&mut self, c: char) {
        if self.field == Field::Gpus && self.backend.uses_this_machines_gpus() && c == 'm' {
            self.gpu_mode = self.gpu_mode.next();
            return;
        }
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
            (Field::Backend, ' ') => self.backend = self.backend.next(),
            (Field::Gpus, ' ') if self.gpu_mode == GpuMode::Chosen => {
                if let Some(g) = self.gpus.get_mut(self.gpu_row) {
                    g.chosen = !g.chosen;
                }
            }
            (Field::Gpus, 'a') if self.gpu_mode == GpuMode::Chosen => {
                let all = self.gpus.iter().all(|g| g.chosen);
                self.gpus.iter_mut().for_each(|g| g.chosen = !all);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::Backend;

    fn gpu(index: u32) -> GpuChoice {
        GpuChoice {
            index,
            name: "H100".into(),
            busy: None,
            chosen: index == 0,
        }
    }

    fn defaults(backend: Backend) -> SlurmDefaults {
        SlurmDefaults {
            backend,
            settings: SlurmSettings {
                partition: Some("gpu".into()),
                time: Some("04:00:00".into()),
                ..SlurmSettings::default()
            },
        }
    }

    fn typed(form: &mut RunForm, field: Field, text: &str) {
        form.field = field;
        if let Some(t) = form.text_mut() {
            t.clear();
        }
        for c in text.chars() {
            form.input(c);
        }
    }

    #[test]
    fn the_backend_starts_as_the_config_says_and_space_toggles_it_and_its_fields() {
        let mut form = RunForm::new(
            vec![gpu(0), gpu(1)],
            "/work".into(),
            &defaults(Backend::Local),
        );
        assert_eq!(form.backend, Backend::Local);
        assert!(!form.fields().contains(&Field::Partition));
        form.field = Field::Backend;
        form.input(' ');
        assert_eq!(form.backend, Backend::Slurm);
        assert!(form.fields().contains(&Field::Partition));
        assert!(form.fields().contains(&Field::Nodes));
        // The Slurm fields start from the config's [slurm].
        assert_eq!(
            (form.partition.as_str(), form.time.as_str()),
            ("gpu", "04:00:00")
        );
        let slurm = RunForm::new(vec![gpu(0)], "/work".into(), &defaults(Backend::Slurm));
        assert_eq!(slurm.backend, Backend::Slurm);
    }

    #[test]
    fn a_slurm_form_builds_a_batch_job_spec_with_a_gpu_count_per_node() {
        let mut form = RunForm::new(
            vec![gpu(0), gpu(1)],
            "/work".into(),
            &defaults(Backend::Slurm),
        );
        typed(&mut form, Field::Command, "python train.py");
        typed(&mut form, Field::Partition, "a100");
        typed(&mut form, Field::Time, "");
        typed(&mut form, Field::Nodes, "2");
        typed(&mut form, Field::Gpus, "4");
        form.launcher = Launcher::Torchrun;
        let spec = form.spec().expect("a spec");
        assert_eq!(spec.backend, Some(Backend::Slurm));
        assert_eq!(spec.gpus, GpuSelection::Count(4));
        assert_eq!(spec.slurm.partition.as_deref(), Some("a100"));
        // Left empty: the config's value applies when it is submitted.
        assert_eq!(spec.slurm.time, None);
        assert_eq!(spec.slurm.nodes, Some(2));
        assert_eq!(spec.slurm.gpus_per_node, Some(4));
        assert_eq!(spec.launcher, Launcher::Torchrun);
    }

    #[test]
    fn bad_numbers_on_a_slurm_form_are_refused_with_what_is_wrong() {
        let mut form = RunForm::new(vec![gpu(0)], "/work".into(), &defaults(Backend::Slurm));
        typed(&mut form, Field::Command, "python train.py");
        typed(&mut form, Field::Nodes, "0");
        assert!(form
            .spec()
            .unwrap_err()
            .contains("Nodes must be a whole number"));
        typed(&mut form, Field::Nodes, "two");
        assert!(form.spec().unwrap_err().contains("`two`"));
        typed(&mut form, Field::Nodes, "1");
        typed(&mut form, Field::Gpus, "x");
        assert!(form.spec().unwrap_err().contains("GPUs/node"));
    }

    #[test]
    fn a_local_form_still_names_this_machines_gpus() {
        let form = RunForm::new(
            vec![gpu(0), gpu(1)],
            "/work".into(),
            &defaults(Backend::Local),
        );
        let mut form = form;
        typed(&mut form, Field::Command, "python train.py");
        let spec = form.spec().expect("a spec");
        assert_eq!(spec.backend, None);
        assert_eq!(spec.gpus, GpuSelection::Indices(vec![0]));
        assert_eq!(spec.slurm, SlurmSettings::default());
    }

    #[test]
    fn m_on_the_gpus_field_cycles_to_a_count_and_to_none() {
        let mut form = RunForm::new(
            vec![gpu(0), gpu(1)],
            "/work".into(),
            &defaults(Backend::Local),
        );
        assert_eq!(form.gpu_mode, GpuMode::Chosen);
        typed(&mut form, Field::Command, "python train.py");
        form.field = Field::Gpus;
        form.input('m');
        assert_eq!(form.gpu_mode, GpuMode::Count);
        assert_eq!(form.spec().unwrap().gpus, GpuSelection::Count(1));
        typed(&mut form, Field::Gpus, "2");
        assert_eq!(form.gpu_count, "2");
        assert_eq!(form.spec().unwrap().gpus, GpuSelection::Count(2));
        typed(&mut form, Field::Gpus, "0");
        assert!(form.spec().unwrap_err().contains("at least 1, not `0`"));
        form.input('m');
        assert_eq!(form.gpu_mode, GpuMode::None);
        assert_eq!(form.spec().unwrap().gpus, GpuSelection::None);
        form.input('m');
        assert_eq!(form.gpu_mode, GpuMode::Chosen);
        assert_eq!(form.spec().unwrap().gpus, GpuSelection::Indices(vec![0]));
    }

    #[test]
    fn a_machine_without_gpus_starts_the_form_on_none() {
        let mut form = RunForm::new(Vec::new(), "/work".into(), &defaults(Backend::Local));
        assert_eq!(form.gpu_mode, GpuMode::None);
        typed(&mut form, Field::Command, "python train.py");
        assert_eq!(form.spec().unwrap().gpus, GpuSelection::None);
    }
}
