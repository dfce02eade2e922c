//! Facts about the engine itself: version, runtimes, cgroups, CDI.

use super::connect::Engine;
use super::error::DockerError;
use super::types::EngineInfo;

impl Engine {
    /// Version, runtimes (is `nvidia` there?), the default runtime, CDI spec dirs (empty before
    /// Docker 25), cgroup version and the data root.
    pub async fn info(&self) -> Result<EngineInfo, DockerError> {
        let (info, version) = tokio::try_join!(
            async {
                self.docker
                    .info()
                    .await
                    .map_err(|e| self.error(e, "engine info"))
            },
            async {
                self.docker
                    .version()
                    .await
                    .map_err(|e| self.error(e, "engine version"))
            },
        )?;
        let mut runtimes: Vec<String> = info.runtimes.unwrap_or_default().into_keys().collect();
        runtimes.sort();
        Ok(EngineInfo {
            server_version: version.version.or(info.server_version).unwrap_or_default(),
            api_version: version.api_version.unwrap_or_default(),
            os: info.operating_system.unwrap_or_default(),
            docker_root_dir: info.docker_root_dir.unwrap_or_default(),
            runtimes,
            default_runtime: info.default_runtime.unwrap_or_default(),
            nvidia_cdi: nvidia_cdi_spec(info.cdi_spec_dirs.as_deref().unwrap_or_default()),
            cdi_spec_dirs: info.cdi_spec_dirs.unwrap_or_default(),
            nvidia_hook: crate::host::find_program("nvidia-container-runtime-hook").is_some(),
            cgroup_version: info
                .cgroup_version
                .map(|v| v.to_string())
                .unwrap_or_default(),
        })
    }
}

/// Whether any CDI spec in `dirs` declares NVIDIA GPUs (`kind: nvidia.com/gpu`), as
/// `nvidia-ctk cdi generate` writes them to /etc/cdi or /var/run/cdi.
pub fn nvidia_cdi_spec(dirs: &[String]) -> bool {
    dirs.iter().any(|dir| {
        std::fs::read_dir(dir).is_ok_and(|listing| {
            listing.filter_map(Result::ok).any(|entry| {
                let path = entry.path();
                let spec = path
                    .extension()
                    .is_some_and(|e| e == "json" || e == "yaml" || e == "yml");
                spec && std::fs::read_to_string(&path).is_ok_and(|t| t.contains("nvidia.com/gpu"))
            })
        })
    })
}
