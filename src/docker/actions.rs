//! Changing containers and images: start, stop, restart, remove.

use bollard::query_parameters::{
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, RestartContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};

use super::connect::Engine;
use super::error::DockerError;

impl Engine {
    /// Starts a created or stopped container; starting a running one is not an error.
    pub async fn start(&self, id: &str) -> Result<(), DockerError> {
        self.docker
            .start_container(id, None)
            .await
            .map_err(|e| self.error(e, &format!("container {id}")))
    }

    /// Sends the stop signal, then SIGKILL after `timeout_secs`; returns once it has stopped.
    pub async fn stop(&self, id: &str, timeout_secs: u32) -> Result<(), DockerError> {
        let t = i32::try_from(timeout_secs).unwrap_or(i32::MAX);
        let options = StopContainerOptionsBuilder::new().t(t).build();
        self.docker
            .stop_container(id, Some(options))
            .await
            .map_err(|e| self.error(e, &format!("container {id}")))
    }

    /// Stops (with the container's own timeout) and starts it again.
    pub async fn restart(&self, id: &str) -> Result<(), DockerError> {
        let options = RestartContainerOptionsBuilder::new().build();
        self.docker
            .restart_container(id, Some(options))
            .await
            .map_err(|e| self.error(e, &format!("container {id}")))
    }

    /// Removes a container; a running one only with `force` (else [`DockerError::Conflict`]).
    /// Anonymous volumes stay, as with `docker rm`.
    pub async fn remove(&self, id: &str, force: bool) -> Result<(), DockerError> {
        let options = RemoveContainerOptionsBuilder::new().force(force).build();
        self.docker
            .remove_container(id, Some(options))
            .await
            .map_err(|e| self.error(e, &format!("container {id}")))
    }

    /// Removes an image by id or `repo:tag` (a tag only untags when others remain); an image a
    /// container uses only with `force` (else [`DockerError::Conflict`]).
    pub async fn remove_image(&self, id: &str, force: bool) -> Result<(), DockerError> {
        let options = RemoveImageOptionsBuilder::new().force(force).build();
        self.docker
            .remove_image(id, Some(options), None)
            .await
            .map(drop)
            .map_err(|e| self.error(e, &format!("image {id}")))
    }
}
