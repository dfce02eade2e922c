//! Kept shells: the containers gpudeck labelled as shells, found again for `--list` and `--attach`.

use crate::docker::types::{ContainerInfo, ContainerState};
use crate::units;

use super::spec::{LABEL_GPUS, LABEL_GPU_INDICES, LABEL_SHELL, LABEL_WORKDIR};

/// One shell container still on the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptShell {
    pub id: String,
    pub name: String,
    pub image: String,
    /// GPU indices as given, "2,3" or "none".
    pub gpus: String,
    /// The GPUs' UUIDs, from the container's label; empty without GPUs.
    pub gpu_uuids: Vec<String>,
    pub state: ContainerState,
    /// Unix seconds.
    pub created: i64,
    pub workdir: String,
}

/// The shells among the engine's containers, newest first.
pub fn kept_shells(containers: &[ContainerInfo]) -> Vec<KeptShell> {
    let mut shells: Vec<KeptShell> = containers
        .iter()
        .filter(|c| c.labels.contains_key(LABEL_SHELL))
        .map(|c| KeptShell {
            id: c.id.clone(),
            name: c.name.clone(),
            image: c.image.clone(),
            gpus: label(c, LABEL_GPU_INDICES),
            gpu_uuids: label(c, LABEL_GPUS)
                .split(',')
                .filter(|u| u.starts_with("GPU-"))
                .map(String::from)
                .collect(),
            state: c.state,
            created: c.created,
            workdir: label(c, LABEL_WORKDIR),
        })
        .collect();
    shells.sort_by_key(|s| std::cmp::Reverse(s.created));
    shells
}

/// The shell called `name`, or whose id starts with it (4 digits at least, as short ids go).
pub fn find_shell<'a>(shells: &'a [KeptShell], name: &str) -> Option<&'a KeptShell> {
    shells.iter().find(|s| s.name == name).or_else(|| {
        shells
            .iter()
            .find(|s| name.len() >= 4 && s.id.starts_with(name))
    })
}

/// A table of the kept shells; `now` in Unix seconds for the ages. Names and images are never
/// cut: they are what `--attach` and `docker` take.
pub fn render_shells(shells: &[KeptShell], now: i64) -> String {
    if shells.is_empty() {
        return "No kept shells (`gpudeck shell --keep IMAGE` keeps one).\n".into();
    }
    let rows: Vec<[String; 6]> = shells
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.image.clone(),
                s.gpus.clone(),
                s.state.to_string(),
                format!("{} ago", units::age(now - s.created)),
                s.workdir.clone(),
            ]
        })
        .collect();
    let header = ["NAME", "IMAGE", "GPUS", "STATE", "CREATED", "WORKDIR"];
    let widths = crate::text_table::column_widths(&header, &rows);
    crate::text_table::render(&header, &rows, &widths, &[0, 1, 2, 3, 4, 5], 2)
}

fn label(c: &ContainerInfo, key: &str) -> String {
    c.labels.get(key).cloned().unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn container(name: &str, created: i64, shell: bool) -> ContainerInfo {
        let mut labels = BTreeMap::new();
        if shell {
            labels.insert(LABEL_SHELL.to_string(), "1".to_string());
            labels.insert(LABEL_GPU_INDICES.to_string(), "2,3".to_string());
            labels.insert(LABEL_WORKDIR.to_string(), "/home/a/proj".to_string());
        }
        ContainerInfo {
            id: format!("{name}0123456789"),
            name: name.into(),
            image: "tf:2.17".into(),
            image_id: String::new(),
            command: String::new(),
            state: ContainerState::Exited,
            status: String::new(),
            created,
            started_at: None,
            exit_code: Some(0),
            gpus: Vec::new(),
            labels,
        }
    }

    #[test]
    fn a_shell_knows_its_gpus_by_uuid_from_its_label() {
        let mut with_gpus = container("dev", 100, true);
        with_gpus
            .labels
            .insert(LABEL_GPUS.to_string(), "GPU-a,GPU-b".to_string());
        let mut without = container("cpu", 100, true);
        without
            .labels
            .insert(LABEL_GPUS.to_string(), "none".to_string());
        let shells = kept_shells(&[with_gpus, without]);
        assert_eq!(shells[0].gpu_uuids, ["GPU-a", "GPU-b"]);
        assert!(shells[1].gpu_uuids.is_empty());
    }

    #[test]
    fn only_labelled_containers_are_shells_newest_first() {
        let all = [
            container("old", 100, true),
            container("web", 300, false),
            container("new", 200, true),
        ];
        let shells = kept_shells(&all);
        let names: Vec<&str> = shells.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["new", "old"]);
        assert_eq!(shells[0].gpus, "2,3");
        assert!(shells[0].gpu_uuids.is_empty(), "no GPU label");
        assert_eq!(find_shell(&shells, "old").map(|s| s.created), Some(100));
        assert_eq!(find_shell(&shells, "new0").map(|s| s.created), Some(200));
        assert!(find_shell(&shells, "web").is_none());
        let table = render_shells(&shells, 160);
        assert!(
            table.contains("new") && table.contains("/home/a/proj"),
            "{table}"
        );
    }
}
