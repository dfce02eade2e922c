use super::*;
use crate::runs::slurm::Backend;

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
