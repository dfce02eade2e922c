//! The Docker views' state: engine status, containers, images, pulls, and the logs and inspect views.

use std::collections::HashMap;

use super::filter::ListFilter;
use super::pulls::PullView;
use crate::docker::{
    ContainerDetails, ContainerInfo, ContainerState, ContainerStats, EngineInfo, ImageInfo,
};
use crate::pull::CatalogEntry;

pub use super::logs_view::{LogsView, LOG_LINES};

/// Where the connection to the engine stands.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineStatus {
    Connecting,
    Unavailable {
        title: String,
        message: String,
        fix: String,
    },
    Ready(Box<EngineInfo>),
}

/// Everything the Containers and Images tabs show.
#[derive(Clone, Debug, PartialEq)]
pub struct DockerView {
    pub host: String,
    pub status: EngineStatus,
    /// Running containers first, then by name.
    pub containers: Vec<ContainerInfo>,
    pub stats: HashMap<String, ContainerStats>,
    pub images: Vec<ImageInfo>,
    pub selected_container: Option<String>,
    pub selected_image: Option<String>,
    pub logs: Option<LogsView>,
    /// The container whose inspect view is open, and its details once they arrive.
    pub inspecting: Option<String>,
    pub details: Option<ContainerDetails>,
    /// Containers whose stats are being streamed now.
    pub watched: Vec<String>,
    /// Whether the first listing since connecting has arrived (until then "none" would be a lie).
    pub containers_listed: bool,
    pub images_listed: bool,
    /// Pulls of this session, newest last.
    pub pulls: Vec<PullView>,
    /// The images the pull picker offers.
    pub catalog: Vec<CatalogEntry>,
    /// `/` on each tab.
    pub container_filter: ListFilter,
    pub image_filter: ListFilter,
}

impl DockerView {
    pub fn new(host: String) -> Self {
        Self {
            host,
            status: EngineStatus::Connecting,
            containers: Vec::new(),
            stats: HashMap::new(),
            images: Vec::new(),
            selected_container: None,
            selected_image: None,
            logs: None,
            inspecting: None,
            details: None,
            watched: Vec::new(),
            containers_listed: false,
            images_listed: false,
            pulls: Vec::new(),
            catalog: Vec::new(),
            container_filter: ListFilter::default(),
            image_filter: ListFilter::default(),
        }
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.status, EngineStatus::Ready(_))
    }

    pub fn set_containers(&mut self, mut containers: Vec<ContainerInfo>) {
        containers.sort_by(container_order);
        self.containers = containers;
        self.containers_listed = true;
        self.stats
            .retain(|id, _| self.containers.iter().any(|c| &c.id == id));
        self.keep_selection();
    }

    pub fn upsert_container(&mut self, info: ContainerInfo) {
        if info.state != ContainerState::Running {
            self.stats.remove(&info.id);
        }
        match self.containers.iter_mut().find(|c| c.id == info.id) {
            Some(c) => *c = info,
            None => self.containers.push(info),
        }
        self.containers.sort_by(container_order);
        self.keep_selection();
    }

    pub fn remove_container(&mut self, id: &str) {
        self.containers.retain(|c| c.id != id);
        self.stats.remove(id);
        self.keep_selection();
    }

    pub fn set_images(&mut self, mut images: Vec<ImageInfo>) {
        images.sort_by(|a, b| b.created.cmp(&a.created).then(a.id.cmp(&b.id)));
        self.images = images;
        self.images_listed = true;
        self.keep_selection();
    }

    pub fn selected_container_row(&self) -> Option<usize> {
        let id = self.selected_container.as_ref()?;
        self.containers.iter().position(|c| &c.id == id)
    }

    pub fn selected_image_row(&self) -> Option<usize> {
        let id = self.selected_image.as_ref()?;
        self.images.iter().position(|i| &i.id == id)
    }

    pub fn selected_container_info(&self) -> Option<&ContainerInfo> {
        self.selected_container_row().map(|r| &self.containers[r])
    }

    pub fn selected_image_info(&self) -> Option<&ImageInfo> {
        self.selected_image_row().map(|r| &self.images[r])
    }

    /// The containers the filter keeps, as indices into `containers`.
    pub fn shown_containers(&self) -> Vec<usize> {
        self.container_filter.keep(&self.containers, container_text)
    }

    /// The images the filter keeps, as indices into `images`.
    pub fn shown_images(&self) -> Vec<usize> {
        self.image_filter.keep(&self.images, image_text)
    }

    /// The selected container's place among the shown rows.
    pub fn selected_container_shown(&self) -> Option<usize> {
        let row = self.selected_container_row()?;
        self.shown_containers().iter().position(|&i| i == row)
    }

    /// The selected image's place among the shown rows.
    pub fn selected_image_shown(&self) -> Option<usize> {
        let row = self.selected_image_row()?;
        self.shown_images().iter().position(|&i| i == row)
    }

    /// Selects the `row`th shown container.
    pub fn select_container_row(&mut self, row: usize) {
        if let Some(&i) = self.shown_containers().get(row) {
            self.selected_container = Some(self.containers[i].id.clone());
        }
    }

    /// Selects the `row`th shown image.
    pub fn select_image_row(&mut self, row: usize) {
        if let Some(&i) = self.shown_images().get(row) {
            self.selected_image = Some(self.images[i].id.clone());
        }
    }

    /// Keeps selections on rows that still exist and are shown (the first shown row otherwise,
    /// none when the filter hides every row).
    pub fn keep_selection(&mut self) {
        if self.selected_container_shown().is_none() {
            let first = self.shown_containers().first().copied();
            self.selected_container = first.map(|i| self.containers[i].id.clone());
        }
        if self.selected_image_shown().is_none() {
            let first = self.shown_images().first().copied();
            self.selected_image = first.map(|i| self.images[i].id.clone());
        }
    }

    /// Running containers whose stats are worth streaming: the ones around the selection.
    pub fn stats_targets(&self, window: usize) -> Vec<String> {
        let selected = self.selected_container_row().unwrap_or(0);
        let start = selected.saturating_sub(window / 2);
        self.containers
            .iter()
            .skip(start)
            .take(window)
            .filter(|c| c.state == ContainerState::Running)
            .map(|c| c.id.clone())
            .collect()
    }
}

fn container_order(a: &ContainerInfo, b: &ContainerInfo) -> std::cmp::Ordering {
    let running = |c: &ContainerInfo| c.state != ContainerState::Running;
    running(a)
        .cmp(&running(b))
        .then_with(|| a.name.cmp(&b.name))
        .then_with(|| a.id.cmp(&b.id))
}

/// A container's text as its row shows it, for the filter.
pub fn container_text(c: &ContainerInfo) -> String {
    format!("{} {} {}", c.name, c.image, c.state)
}

/// An image's text as its row shows it, for the filter.
pub fn image_text(img: &ImageInfo) -> String {
    let f = &img.facts;
    format!(
        "{} {} {} {} {}",
        img.tags.join(" "),
        short_image_id(&img.id),
        f.cuda.as_deref().unwrap_or(""),
        f.cudnn.as_deref().unwrap_or(""),
        image_framework(img).unwrap_or_default()
    )
}

/// The image id as the Images tab shows it: 12 hex digits.
pub fn short_image_id(id: &str) -> String {
    id.trim_start_matches("sha256:").chars().take(12).collect()
}

/// The framework an image carries, as the Images tab names it.
pub fn image_framework(img: &ImageInfo) -> Option<String> {
    match (&img.facts.tensorflow, &img.facts.pytorch) {
        (Some(tf), _) => Some(format!("TensorFlow {tf}")),
        (None, Some(pt)) => Some(format!("PyTorch {pt}")),
        _ => None,
    }
}
