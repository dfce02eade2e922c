//! The Docker views' state: engine status, containers, images, pulls, and the logs and inspect views.

use std::collections::HashMap;

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

    pub fn select_container_row(&mut self, row: usize) {
        if let Some(c) = self.containers.get(row) {
            self.selected_container = Some(c.id.clone());
        }
    }

    pub fn select_image_row(&mut self, row: usize) {
        if let Some(i) = self.images.get(row) {
            self.selected_image = Some(i.id.clone());
        }
    }

    /// Keeps selections on rows that still exist (the first row otherwise).
    fn keep_selection(&mut self) {
        if self.selected_container_row().is_none() {
            self.selected_container = self.containers.first().map(|c| c.id.clone());
        }
        if self.selected_image_row().is_none() {
            self.selected_image = self.images.first().map(|i| i.id.clone());
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
