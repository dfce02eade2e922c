//! The `[shell]` config section read into the values every shell container starts from.

use std::time::Duration;

use super::error::ShellError;
use super::size::{parse_limit, parse_size};
use crate::config::{ShellConfig, UserMode};
use crate::launch_check::ScanLimits;

/// The `[shell]` config section, read into values a container body takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellDefaults {
    pub shm_bytes: u64,
    /// ulimit -l in bytes, -1 for unlimited; `None`: Docker's own.
    pub memlock: Option<i64>,
    /// ulimit -s in bytes, -1 for unlimited; `None`: Docker's own.
    pub stack: Option<i64>,
    pub network: String,
    pub user: UserMode,
    pub keep: bool,
    pub cap_drop: Vec<String>,
    pub mount_point: String,
    /// How far the workspace's socket check may look.
    pub scan: ScanLimits,
}

impl ShellDefaults {
    /// Reads and checks the config section; a bad value names its key.
    pub fn from_config(config: &ShellConfig) -> Result<ShellDefaults, ShellError> {
        let setting = |key: &'static str, value: &str| {
            let value = value.to_string();
            move |e: ShellError| ShellError::BadSetting {
                key,
                value,
                why: e.to_string(),
            }
        };
        let network = config.network.clone();
        check_network(&network)?;
        if !config.mount_point.starts_with('/') || config.mount_point == "/" {
            return Err(ShellError::BadSetting {
                key: "mount_point",
                value: config.mount_point.clone(),
                why: "it must be an absolute path other than /".into(),
            });
        }
        Ok(ShellDefaults {
            shm_bytes: parse_size(&config.shm_size)
                .map_err(setting("shm_size", &config.shm_size))?,
            memlock: parse_limit(&config.memlock).map_err(setting("memlock", &config.memlock))?,
            stack: parse_limit(&config.stack).map_err(setting("stack", &config.stack))?,
            network,
            user: config.user,
            keep: config.keep,
            cap_drop: config.cap_drop.clone(),
            mount_point: config.mount_point.clone(),
            scan: ScanLimits {
                entries: config.workspace_scan_entries,
                depth: ScanLimits::default().depth,
                time: Duration::from_secs(config.workspace_scan_seconds),
            },
        })
    }
}

impl Default for ShellDefaults {
    /// The built-in `[shell]` values of config/default.toml.
    fn default() -> Self {
        ShellDefaults {
            shm_bytes: 8 << 30,
            memlock: Some(-1),
            stack: Some(64 << 20),
            network: "bridge".into(),
            user: UserMode::Host,
            keep: false,
            cap_drop: ShellConfig::default().cap_drop,
            mount_point: "/workspace".into(),
            scan: ScanLimits::default(),
        }
    }
}

/// Only Docker's default bridge or no network: a shell never shares the host's network namespace.
pub fn check_network(network: &str) -> Result<(), ShellError> {
    match network {
        "bridge" | "none" => Ok(()),
        other => Err(ShellError::BadSetting {
            key: "network",
            value: other.to_string(),
            why: "a shell's network is \"bridge\" or \"none\"".into(),
        }),
    }
}
