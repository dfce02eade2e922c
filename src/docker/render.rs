//! Plain-text tables of containers and images for the CLI, like `docker ps -a` / `docker images`.

use super::types::{ContainerInfo, GpuGrant, GpuSelection, ImageInfo};

/// `docker ps -a` columns plus GPUS: CONTAINER ID, IMAGE, COMMAND, STATUS, GPUS, NAMES.
pub fn render_containers_text(containers: &[ContainerInfo]) -> String {
    let header = [
        "CONTAINER ID",
        "IMAGE",
        "COMMAND",
        "STATUS",
        "GPUS",
        "NAMES",
    ];
    let rows = containers
        .iter()
        .map(|c| {
            vec![
                short_id(&c.id),
                c.image.clone(),
                quoted_command(&c.command),
                c.status.clone(),
                gpus_cell(&c.gpus),
                c.name.clone(),
            ]
        })
        .collect();
    table(&header, rows)
}

/// `docker images` columns plus what the image carries: REPOSITORY, TAG, IMAGE ID, SIZE, CUDA,
/// CUDNN, FRAMEWORK. An image with several tags has a row per tag.
pub fn render_images_text(images: &[ImageInfo]) -> String {
    let header = [
        "REPOSITORY",
        "TAG",
        "IMAGE ID",
        "SIZE",
        "CUDA",
        "CUDNN",
        "FRAMEWORK",
    ];
    let mut rows = Vec::new();
    for image in images {
        let facts = &image.facts;
        let frameworks: Vec<String> = [
            ("pytorch", &facts.pytorch),
            ("tensorflow", &facts.tensorflow),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.as_ref().map(|v| format!("{name} {v}")))
        .collect();
        let names: Vec<(String, String)> = if image.tags.is_empty() {
            vec![("<none>".to_string(), "<none>".to_string())]
        } else {
            image.tags.iter().map(|t| split_repo_tag(t)).collect()
        };
        for (repo, tag) in names {
            rows.push(vec![
                repo,
                tag,
                short_id(&image.id),
                crate::units::human_bytes(image.size_bytes),
                cell(&facts.cuda),
                cell(&facts.cudnn),
                dash_if_empty(frameworks.join(", ")),
            ]);
        }
    }
    table(&header, rows)
}

/// How a container got its GPUs, shortest first: `all`, `2`, `0,1`, `env:all`, a CDI name.
pub fn gpus_cell(grants: &[GpuGrant]) -> String {
    let parts: Vec<String> = grants
        .iter()
        .map(|grant| match grant {
            GpuGrant::DeviceRequest { devices } => selection(devices),
            GpuGrant::Cdi { devices } => devices.join(","),
            GpuGrant::Env { devices } => format!("env:{}", selection(devices)),
        })
        .collect();
    dash_if_empty(parts.join(" "))
}

fn selection(devices: &GpuSelection) -> String {
    match devices {
        GpuSelection::All => "all".to_string(),
        GpuSelection::Count(n) => n.to_string(),
        GpuSelection::Devices(ids) => ids.join(","),
        GpuSelection::None => "none".to_string(),
    }
}

fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, value) in widths.iter_mut().zip(row) {
            *width = (*width).max(value.chars().count());
        }
    }
    let header_row: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header_row).chain(&rows) {
        let mut line = String::new();
        for (i, (value, width)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(value);
            } else {
                let pad = width - value.chars().count() + 3;
                line.push_str(value);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn short_id(id: &str) -> String {
    id.trim_start_matches("sha256:").chars().take(12).collect()
}

/// The command quoted and cut to 20 characters like `docker ps` does.
fn quoted_command(command: &str) -> String {
    if command.chars().count() > 20 {
        let cut: String = command.chars().take(19).collect();
        format!("\"{cut}…\"")
    } else {
        format!("\"{command}\"")
    }
}

fn split_repo_tag(name: &str) -> (String, String) {
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => (repo.to_string(), tag.to_string()),
        _ => (name.to_string(), "<none>".to_string()),
    }
}

fn cell(value: &Option<String>) -> String {
    value.clone().unwrap_or_else(|| "-".to_string())
}

fn dash_if_empty(text: String) -> String {
    if text.is_empty() {
        "-".to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::types::{ContainerState, ImageFacts};

    #[test]
    fn sizes_use_the_binary_units_of_the_images_tab() {
        let image = |size_bytes| ImageInfo {
            id: "sha256:00".into(),
            tags: vec!["cuda:12".into()],
            digests: vec![],
            size_bytes,
            created: 0,
            facts: ImageFacts::default(),
        };
        for (bytes, want) in [(5_600_000_000, "5.2GiB"), (12_345_678, "12MiB")] {
            let text = render_images_text(&[image(bytes)]);
            let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
            assert_eq!(row[3], want, "{text}");
            assert_eq!(row[3], crate::units::human_bytes(bytes));
        }
    }

    #[test]
    fn container_table() {
        let container = ContainerInfo {
            id: "3f2a".repeat(16),
            name: "train".into(),
            image: "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime".into(),
            image_id: "sha256:00".into(),
            command: "python train.py --epochs 10".into(),
            state: ContainerState::Running,
            status: "Up 3 hours".into(),
            created: 0,
            started_at: None,
            exit_code: None,
            gpus: vec![
                GpuGrant::DeviceRequest {
                    devices: GpuSelection::Devices(vec!["0".into(), "1".into()]),
                },
                GpuGrant::Env {
                    devices: GpuSelection::All,
                },
            ],
            labels: Default::default(),
        };
        let text = render_containers_text(&[container]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("CONTAINER ID   IMAGE"), "{text}");
        assert!(
            lines[1].starts_with("3f2a3f2a3f2a   pytorch/pytorch"),
            "{text}"
        );
        assert!(lines[1].contains("\"python train.py --e…\""), "{text}");
        assert!(lines[1].contains("0,1 env:all"), "{text}");
        assert!(lines[1].ends_with("train"), "{text}");
    }

    #[test]
    fn image_table_has_a_row_per_tag() {
        let image = ImageInfo {
            id: format!("sha256:{}", "ab".repeat(32)),
            tags: vec!["localhost:5000/cuda:12.4".into(), "cuda:latest".into()],
            digests: vec![],
            size_bytes: 1_980_000,
            created: 0,
            facts: ImageFacts {
                cuda: Some("12.4.1".into()),
                pytorch: Some("2.5.1".into()),
                ..Default::default()
            },
        };
        let text = render_images_text(&[image]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let words: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            words,
            [
                "localhost:5000/cuda",
                "12.4",
                "abababababab",
                "2MiB",
                "12.4.1",
                "-",
                "pytorch",
                "2.5.1"
            ]
        );
        assert!(lines[2].starts_with("cuda "), "{text}");
    }
}
