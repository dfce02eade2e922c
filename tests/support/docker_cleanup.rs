//! A guard that removes the Docker containers and images a test made, however the test ends.

use std::process::Command;

use super::docker::{busybox_image, unique};

/// Containers are removed (`docker rm -f`) before images (`docker rmi -f`) when it drops.
#[derive(Default)]
pub struct Cleanup {
    containers: Vec<String>,
    images: Vec<String>,
}

impl Cleanup {
    /// A fresh busybox image with these ENV lines for this test alone, removed with the guard.
    pub fn image(&mut self, env: &[&str]) -> String {
        let tag = busybox_image(&format!("{}:latest", unique("image")), env);
        self.images.push(tag.clone());
        tag
    }

    /// Removes this image name (a tag the test added) when the guard drops.
    pub fn image_name(&mut self, name: &str) {
        self.images.push(name.to_string());
    }

    /// Removes this container (name or id) when the guard drops.
    pub fn container(&mut self, name: &str) {
        self.containers.push(name.to_string());
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for name in &self.containers {
            let _ = Command::new("docker").args(["rm", "-f", name]).output();
        }
        for image in &self.images {
            let _ = Command::new("docker").args(["rmi", "-f", image]).output();
        }
    }
}
