//! Plain-text tables of containers and images for the CLI, like `docker ps -a` / `docker images`,
//! fitted to the terminal's width (or 80 columns when piped) by leaving out the less telling
//! columns, never by cutting a value.

use serde::Serialize;

use super::types::{ContainerInfo, GpuGrant, GpuSelection, ImageInfo};
use crate::gpu::container_use::ContainerGpuUse;
use crate::text_table;

/// A container as `gpudeck containers` lists it: what the engine says, and what its processes
/// hold on the GPUs (the same reading as the Containers tab's GPUS and GPU MEM).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContainerListing {
    #[serde(flatten)]
    pub info: ContainerInfo,
    /// The GPUs its processes hold, ascending; null when the GPUs could not be read.
    pub gpus_used: Option<Vec<u32>>,
    /// The GPU memory its processes hold, in bytes; null when the GPUs could not be read.
    pub gpu_memory_bytes: Option<u64>,
}

impl ContainerListing {
    /// `info` with its GPU use; `use_read` is false when the GPUs could not be read at all.
    pub fn new(info: ContainerInfo, gpu_use: Option<ContainerGpuUse>, use_read: bool) -> Self {
        let gpu_use = gpu_use.unwrap_or_default();
        ContainerListing {
            info,
            gpus_used: use_read.then_some(gpu_use.gpus),
            gpu_memory_bytes: use_read.then_some(gpu_use.memory_bytes),
        }
    }
}

/// `docker ps -a` columns plus the GPUs: CONTAINER ID, IMAGE, COMMAND, STATUS, GPUS, GPU MEM,
/// NAMES, within `width` columns (COMMAND, CONTAINER ID, STATUS, then GPU MEM left out while
/// wider).
pub fn render_containers_text(containers: &[ContainerListing], width: usize) -> String {
    let header = [
        "CONTAINER ID",
        "IMAGE",
        "COMMAND",
        "STATUS",
        "GPUS",
        "GPU MEM",
        "NAMES",
    ];
    let rows = containers
        .iter()
        .map(|c| {
            let used = c.gpus_used.as_deref().unwrap_or_default();
            vec![
                short_id(&c.info.id),
                c.info.image.clone(),
                quoted_command(&c.info.command),
                c.info.status.clone(),
                gpus_summary(&c.info.gpus, used),
                match c.gpu_memory_bytes {
                    Some(bytes) if !used.is_empty() => crate::units::human_bytes(bytes),
                    _ => "-".to_string(),
                },
                c.info.name.clone(),
            ]
        })
        .collect();
    let fit = Fit {
        width,
        fold: &[2, 0, 3, 5],
        json: "gpudeck containers --json",
    };
    table(&header, rows, &fit)
}

/// `docker images` columns plus what the image carries: REPOSITORY, TAG, IMAGE ID, SIZE, CUDA,
/// CUDNN, FRAMEWORK, within `width` columns (CUDNN, then IMAGE ID, then SIZE left out while
/// wider). An image with several tags has a row per tag.
pub fn render_images_text(images: &[ImageInfo], width: usize) -> String {
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
    let fit = Fit {
        width,
        fold: &[5, 2, 3],
        json: "gpudeck images --json",
    };
    table(&header, rows, &fit)
}

/// What GPUs a container was given, shortly (`all`, `2 any`, `0,1`, `env:all`, `cdi:1`), or
/// when nothing was granted, the GPUs its processes are on (`uses 0,2`); `-` for neither. The
/// Containers tab and `gpudeck containers` both say it this way.
pub fn gpus_summary(grants: &[GpuGrant], in_use: &[u32]) -> String {
    let parts: Vec<String> = grants
        .iter()
        .map(|grant| match grant {
            GpuGrant::DeviceRequest { devices } => selection(devices),
            GpuGrant::Cdi { devices } => format!("cdi:{}", devices.len()),
            GpuGrant::Env { devices } => format!("env:{}", selection(devices)),
        })
        .collect();
    if parts.is_empty() && !in_use.is_empty() {
        let list: Vec<String> = in_use.iter().map(u32::to_string).collect();
        return format!("uses {}", list.join(","));
    }
    dash_if_empty(parts.join(" "))
}

fn selection(devices: &GpuSelection) -> String {
    match devices {
        GpuSelection::All => "all".to_string(),
        GpuSelection::Count(n) => format!("{n} any"),
        GpuSelection::Devices(ids) => ids.join(","),
        GpuSelection::None => "none".to_string(),
    }
}

/// How a table meets the width: the columns left out first to last, and the command that has
/// everything.
struct Fit {
    width: usize,
    fold: &'static [usize],
    json: &'static str,
}

/// Gap between columns, as `docker ps` leaves.
const GAP: usize = 3;

/// The rows under the header, each column as wide as its widest cell, the columns of `fit.fold`
/// left out in turn while a line is wider than `fit.width`, and a line saying which were.
fn table(header: &[&str], rows: Vec<Vec<String>>, fit: &Fit) -> String {
    let widths = text_table::column_widths(header, &rows);
    let mut shown: Vec<usize> = (0..header.len()).collect();
    let line_width = |shown: &[usize]| {
        shown.iter().map(|&c| widths[c]).sum::<usize>() + GAP * shown.len().saturating_sub(1)
    };
    for column in fit.fold {
        if line_width(&shown) <= fit.width {
            break;
        }
        shown.retain(|c| c != column);
    }
    let mut out = text_table::render(header, &rows, &widths, &shown, GAP);
    let left_out: Vec<&str> = (0..header.len())
        .filter(|c| !shown.contains(c))
        .map(|c| header[c])
        .collect();
    if !left_out.is_empty() {
        let note = format!(
            "({} left out to fit {} columns; a wider terminal or COLUMNS shows them, and `{}` \
             has everything.)",
            left_out.join(", "),
            fit.width,
            fit.json
        );
        out.push_str(&crate::output::wrap_to(&note, " ", fit.width));
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
            let text = render_images_text(&[image(bytes)], 200);
            let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
            assert_eq!(row[3], want, "{text}");
            assert_eq!(row[3], crate::units::human_bytes(bytes));
        }
    }

    fn container(gpus: Vec<GpuGrant>) -> ContainerInfo {
        ContainerInfo {
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
            gpus,
            labels: Default::default(),
        }
    }

    #[test]
    fn container_table() {
        let granted = container(vec![
            GpuGrant::DeviceRequest {
                devices: GpuSelection::Devices(vec!["0".into(), "1".into()]),
            },
            GpuGrant::Env {
                devices: GpuSelection::All,
            },
        ]);
        let text = render_containers_text(&[ContainerListing::new(granted, None, true)], 200);
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
    fn a_container_given_no_gpus_shows_those_its_processes_hold_as_the_tab_does() {
        let gib = 1u64 << 30;
        let held = ContainerGpuUse {
            gpus: vec![0, 2],
            memory_bytes: 51 * gib,
            processes: 2,
        };
        let listing = ContainerListing::new(container(vec![]), Some(held), true);
        let text = render_containers_text(std::slice::from_ref(&listing), 200);
        let row = text.lines().nth(1).unwrap();
        assert!(row.contains("   uses 0,2   51.0GiB   train"), "{text}");
        assert_eq!(gpus_summary(&listing.info.gpus, &[0, 2]), "uses 0,2");
        let doc = serde_json::to_value(&listing).unwrap();
        assert_eq!(doc["gpus"], serde_json::json!([]), "the grants, as before");
        assert_eq!(doc["gpus_used"], serde_json::json!([0, 2]));
        assert_eq!(doc["gpu_memory_bytes"], serde_json::json!(51 * gib));
        assert_eq!(doc["name"], "train", "the engine's fields stay at the top");

        let idle = ContainerListing::new(container(vec![]), None, true);
        assert_eq!(
            serde_json::to_value(&idle).unwrap()["gpus_used"],
            serde_json::json!([])
        );
        let unread = ContainerListing::new(container(vec![]), None, false);
        let doc = serde_json::to_value(&unread).unwrap();
        assert!(
            doc["gpus_used"].is_null() && doc["gpu_memory_bytes"].is_null(),
            "{doc}"
        );
        let text = render_containers_text(&[unread], 200);
        let words: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(words[words.len() - 3..], ["-", "-", "train"], "{text}");
    }

    #[test]
    fn piped_tables_fit_the_width_by_leaving_out_columns_never_by_cutting_values() {
        let listing = ContainerListing::new(container(vec![]), None, true);
        let wide = render_containers_text(std::slice::from_ref(&listing), 200);
        assert!(wide.lines().next().unwrap().chars().count() > 80, "{wide}");
        let text = render_containers_text(&[listing], 80);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{text}");
        assert_eq!(
            lines[0]
                .split("   ")
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>(),
            ["IMAGE", "GPUS", "GPU MEM", "NAMES"],
            "{text}"
        );
        assert!(lines[1].contains("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"));
        let note = lines[2..].join(" ");
        assert!(
            note.contains("(CONTAINER ID, COMMAND, STATUS left out to fit 80 columns")
                && note.contains("`gpudeck containers --json` has everything"),
            "{text}"
        );

        let image = ImageInfo {
            id: format!("sha256:{}", "ab".repeat(32)),
            tags: vec!["nvcr.io/nvidia/pytorch:24.05-py3".into()],
            digests: vec![],
            size_bytes: 9_980_000_000,
            created: 0,
            facts: ImageFacts {
                cuda: Some("12.4.1".into()),
                cudnn: Some("9.1.0.70".into()),
                pytorch: Some("2.4.0".into()),
                ..Default::default()
            },
        };
        let text = render_images_text(std::slice::from_ref(&image), 80);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["REPOSITORY", "TAG", "SIZE", "CUDA", "FRAMEWORK"],
            "{text}"
        );
        assert!(
            text.contains("(IMAGE ID, CUDNN left out to fit 80 columns"),
            "{text}"
        );
        let wide = render_images_text(&[image], 120);
        assert!(!wide.contains("left out"), "{wide}");
        assert!(wide.contains("9.1.0.70"), "{wide}");
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
        let text = render_images_text(&[image], 200);
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
