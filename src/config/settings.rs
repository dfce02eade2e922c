//! The settings a user can change in `config.toml`, with their built-in values.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::runs::{Backend, SlurmContainer, SlurmSettings};

/// The documented built-in configuration; a user's file is layered over it.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../../config/default.toml");

/// Refreshing faster than this costs CPU (NVML process queries take milliseconds) without
/// showing anything a person could read.
pub const MIN_REFRESH_MS: u64 = 100;

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub general: GeneralConfig,
    pub gpu: GpuConfig,
    pub processes: ProcessConfig,
    pub shell: ShellConfig,
    pub metrics: MetricsConfig,
    pub runs: RunsConfig,
    pub slurm: SlurmConfig,
    pub notebook: NotebookConfig,
}

/// What `gpudeck notebook` services are held to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotebookConfig {
    /// A notebook on GPUs whose kernels have all been idle this long is flagged (the Services
    /// tab, `gpudeck services`, doctor, `gpudeck_service_idle_seconds`).
    pub idle_alert: Limit,
    /// Shut a notebook's kernels down once they have all been idle this long (frees the GPU
    /// memory they hold; the notebook itself keeps running). Off by default.
    pub idle_stop: Limit,
}

impl Default for NotebookConfig {
    fn default() -> Self {
        Self {
            idle_alert: Limit(Some(Duration::from_secs(3600))),
            idle_stop: Limit(None),
        }
    }
}

/// A length of time written as "90s", "30m", "1h", "1h 30m", or "off".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub struct Limit(pub Option<Duration>);

impl TryFrom<String> for Limit {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("off") {
            return Ok(Limit(None));
        }
        let bad = || {
            format!(
                "`{trimmed}` is not a length of time: write it as \"90s\", \"30m\", \"1h\", \
                 \"1h 30m\" or \"off\""
            )
        };
        let span: jiff::SignedDuration = trimmed.parse().map_err(|_| bad())?;
        match Duration::try_from(span) {
            Ok(d) if !d.is_zero() => Ok(Limit(Some(d))),
            _ => Err(bad()),
        }
    }
}

impl From<Limit> for String {
    fn from(limit: Limit) -> String {
        match limit.0 {
            None => "off".into(),
            Some(d) => jiff::SignedDuration::try_from(d)
                .map(|s| format!("{s:#}"))
                .unwrap_or_else(|_| format!("{}s", d.as_secs())),
        }
    }
}

/// The Prometheus endpoint the dashboard serves while it runs (`gpudeck serve` is the same
/// endpoint without a dashboard).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Where to serve /metrics, IP:PORT; off when absent.
    pub listen: Option<std::net::SocketAddr>,
    /// A Prometheus web configuration (TLS, users) for the endpoint; relative to the config
    /// directory.
    pub web_config: Option<std::path::PathBuf>,
}

/// What `gpudeck run` does with a run that does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunsConfig {
    /// Where a run without `backend` (or `--on`) goes.
    pub backend: Backend,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeneralConfig {
    /// A built-in theme name or the stem of a file in `<config dir>/themes/`.
    pub theme: String,
    /// Milliseconds between GPU metric reads; at least `MIN_REFRESH_MS` after loading.
    pub refresh_ms: u64,
    /// Seconds of metric history kept for the graphs.
    pub history_secs: u64,
    pub mouse: bool,
    /// Hide every action that changes the machine (kill, stop, pull, launch).
    pub read_only: bool,
    /// Environment variable names (or `*` patterns) whose values are shown as `<redacted>`,
    /// on top of the built-in `*TOKEN*`, `*KEY*`, `*SECRET*` and `*PASSWORD*`.
    pub secret_names: Vec<String>,
}

impl GeneralConfig {
    pub fn refresh_interval(&self) -> Duration {
        Duration::from_millis(self.refresh_ms)
    }

    pub fn history(&self) -> Duration {
        Duration::from_secs(self.history_secs)
    }
}

// The values here must match config/default.toml; `defaults_match_the_embedded_file` checks it.
impl Default for GeneralConfig {
    fn default() -> Self {
        Self {
            theme: "dark".to_owned(),
            refresh_ms: 1000,
            history_secs: 600,
            mouse: true,
            read_only: false,
            secret_names: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GpuConfig {
    /// What the third graph of each GPU shows at start.
    pub graph: GraphMetric,
    /// With at least this many GPUs, each gets a one-line row instead of a panel.
    pub compact_threshold: usize,
}

impl Default for GpuConfig {
    fn default() -> Self {
        Self {
            graph: GraphMetric::Utilization,
            compact_threshold: 8,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProcessConfig {
    pub sort: ProcessSort,
    pub sort_descending: bool,
}

impl Default for ProcessConfig {
    fn default() -> Self {
        Self {
            sort: ProcessSort::Memory,
            sort_descending: true,
        }
    }
}

/// What every Slurm run gets unless its spec's `[slurm]` table or a flag says otherwise; none
/// is set by default, so sbatch's and the cluster's own defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SlurmConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// A time limit as sbatch takes it ("02:00:00").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// How runs with an image are containerised on the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<SlurmContainer>,
}

impl SlurmConfig {
    /// The config's values as the settings a spec's `[slurm]` table is laid over.
    pub fn settings(&self) -> SlurmSettings {
        SlurmSettings {
            time: self.time.clone(),
            partition: self.partition.clone(),
            account: self.account.clone(),
            container: self.container,
            ..SlurmSettings::default()
        }
    }
}

/// What `gpudeck shell` containers get; sizes stay text here and are read by `shell::ShellDefaults`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    pub shm_size: String,
    /// "unlimited" or a size.
    pub memlock: String,
    pub stack: String,
    pub network: String,
    pub user: UserMode,
    pub keep: bool,
    pub cap_drop: Vec<String>,
    pub mount_point: String,
    /// How many entries of a workspace are looked at for Unix sockets before it is refused as
    /// too big to check.
    pub workspace_scan_entries: u64,
    /// How long that look may take, in seconds.
    pub workspace_scan_seconds: u64,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            shm_size: "8GiB".to_owned(),
            memlock: "unlimited".to_owned(),
            stack: "64MiB".to_owned(),
            network: "bridge".to_owned(),
            user: UserMode::Host,
            keep: false,
            cap_drop: [
                "NET_RAW",
                "MKNOD",
                "AUDIT_WRITE",
                "SETFCAP",
                "SYS_CHROOT",
                "SETPCAP",
            ]
            .map(str::to_owned)
            .to_vec(),
            mount_point: "/workspace".to_owned(),
            workspace_scan_entries: 200_000,
            workspace_scan_seconds: 10,
        }
    }
}

/// Who a shell runs as inside its container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UserMode {
    /// The UID:GID of whoever runs gpudeck, so files written to the mounted project stay theirs.
    Host,
    Root,
    /// Whatever USER the image sets.
    Image,
}

impl UserMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Root => "root",
            Self::Image => "image",
        }
    }
}

impl fmt::Display for UserMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphMetric {
    Utilization,
    Memory,
    Power,
}

impl GraphMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Utilization => "utilization",
            Self::Memory => "memory",
            Self::Power => "power",
        }
    }
}

impl fmt::Display for GraphMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessSort {
    Memory,
    /// The process's share of its GPU (SM utilisation).
    #[serde(rename = "gpu_util")]
    GpuUtil,
    Cpu,
    Pid,
    User,
    Gpu,
    Command,
}

impl ProcessSort {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::GpuUtil => "gpu_util",
            Self::Cpu => "cpu",
            Self::Pid => "pid",
            Self::User => "user",
            Self::Gpu => "gpu",
            Self::Command => "command",
        }
    }
}

impl fmt::Display for ProcessSort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Raises values that would make gpudeck misbehave, saying so in a warning.
pub(crate) fn clamp(config: &mut Config, warnings: &mut Vec<String>) {
    let general = &mut config.general;
    if general.refresh_ms < MIN_REFRESH_MS {
        warnings.push(format!(
            "general.refresh_ms = {} is below the minimum of {MIN_REFRESH_MS} ms; using {MIN_REFRESH_MS} ms",
            general.refresh_ms
        ));
        general.refresh_ms = MIN_REFRESH_MS;
    }
}

#[cfg(test)]
mod tests {
    use super::super::layer::standalone;
    use super::*;

    #[test]
    fn notebook_limits_read_as_people_write_them() {
        let config = Config::default();
        assert_eq!(
            config.notebook.idle_alert,
            Limit(Some(Duration::from_secs(3600)))
        );
        assert_eq!(config.notebook.idle_stop, Limit(None));
        let text = "[notebook]\nidle_alert = \"1h 30m\"\nidle_stop = \"90s\"\n";
        let config = standalone::<Config>(text).expect("valid limits");
        assert_eq!(
            config.notebook.idle_alert.0,
            Some(Duration::from_secs(5400))
        );
        assert_eq!(config.notebook.idle_stop.0, Some(Duration::from_secs(90)));
        assert_eq!(String::from(config.notebook.idle_alert), "1h 30m");
        assert_eq!(String::from(Limit(None)), "off");
        for bad in ["banana", "0s", "-5m", ""] {
            let err = standalone::<Config>(&format!("[notebook]\nidle_alert = \"{bad}\"\n"))
                .expect_err(bad)
                .reason;
            assert!(
                err.contains("is not a length of time") && err.contains("\"off\""),
                "{err}"
            );
        }
    }

    #[test]
    fn defaults_are_the_documented_values() {
        let config = Config::default();
        assert_eq!(config.general.theme, "dark");
        assert_eq!(config.general.refresh_ms, 1000);
        assert_eq!(config.general.history_secs, 600);
        assert!(config.general.mouse);
        assert!(!config.general.read_only);
        assert_eq!(config.gpu.graph, GraphMetric::Utilization);
        assert_eq!(config.gpu.compact_threshold, 8);
        assert_eq!(config.processes.sort, ProcessSort::Memory);
        assert!(config.processes.sort_descending);
        assert_eq!(config.shell.shm_size, "8GiB");
        assert_eq!(config.shell.user, UserMode::Host);
        assert_eq!(config.shell.mount_point, "/workspace");
        assert!(!config.shell.keep);
        assert_eq!(config.general.refresh_interval(), Duration::from_secs(1));
        assert_eq!(config.general.history(), Duration::from_secs(600));
    }

    #[test]
    fn defaults_match_the_embedded_file() {
        let from_file: Config = standalone(DEFAULT_CONFIG_TOML).unwrap();
        assert_eq!(from_file, Config::default());
        assert_eq!(super::super::builtin_config().unwrap(), Config::default());
    }

    #[test]
    fn a_slurm_section_gives_the_settings_a_spec_overrides() {
        let text = "[slurm]\npartition = \"gpu\"\naccount = \"ml\"\ntime = \"01:00:00\"\n\
                    container = \"apptainer\"\n";
        let config: Config = standalone(text).unwrap();
        let spec = SlurmSettings {
            partition: Some("debug".into()),
            ..SlurmSettings::default()
        };
        let merged = config.slurm.settings().overlaid(spec);
        assert_eq!(merged.partition.as_deref(), Some("debug"));
        assert_eq!(merged.account.as_deref(), Some("ml"));
        assert_eq!(merged.time.as_deref(), Some("01:00:00"));
        assert_eq!(merged.container, Some(SlurmContainer::Apptainer));
        assert!(standalone::<Config>("[slurm]\nnodes = 2\n").is_err());
    }

    #[test]
    fn embedded_file_sets_every_key() {
        let in_file: toml::Table = toml::from_str(DEFAULT_CONFIG_TOML).unwrap();
        let all_keys = toml::Table::try_from(Config::default()).unwrap();
        assert_eq!(in_file, all_keys);
    }

    #[test]
    fn every_key_in_the_embedded_file_is_documented() {
        let lines: Vec<&str> = DEFAULT_CONFIG_TOML.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.contains(" = ") && !line.starts_with('#') {
                let comment = lines[..i].last().copied().unwrap_or_default();
                assert!(
                    comment.starts_with("# Default: "),
                    "`{line}` needs a comment ending in `# Default: ...`"
                );
            }
        }
    }

    #[test]
    fn enum_names_match_their_toml_spelling() {
        for metric in [
            GraphMetric::Utilization,
            GraphMetric::Memory,
            GraphMetric::Power,
        ] {
            let parsed: GpuConfig = toml::from_str(&format!("graph = \"{metric}\"")).unwrap();
            assert_eq!(parsed.graph, metric);
        }
        let sorts = [
            ProcessSort::Memory,
            ProcessSort::GpuUtil,
            ProcessSort::Cpu,
            ProcessSort::Pid,
            ProcessSort::User,
            ProcessSort::Gpu,
            ProcessSort::Command,
        ];
        for sort in sorts {
            let parsed: ProcessConfig = toml::from_str(&format!("sort = \"{sort}\"")).unwrap();
            assert_eq!(parsed.sort, sort);
        }
    }

    #[test]
    fn slow_refresh_is_kept_and_fast_refresh_is_clamped() {
        let mut warnings = Vec::new();
        let mut config = Config::default();
        config.general.refresh_ms = 100;
        clamp(&mut config, &mut warnings);
        assert_eq!((config.general.refresh_ms, warnings.len()), (100, 0));

        config.general.refresh_ms = 0;
        clamp(&mut config, &mut warnings);
        assert_eq!(config.general.refresh_ms, 100);
        assert_eq!(
            warnings,
            ["general.refresh_ms = 0 is below the minimum of 100 ms; using 100 ms"]
        );
    }
}
