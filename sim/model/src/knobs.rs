//! The small enums a simulation spec is made of: GPU profile, init failure, throttle, metric.

/// Which GPU model every simulated device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// NVIDIA H100 80GB HBM3 (SXM5, 700 W, 18 NVLinks through NVSwitch, no fans).
    H100Sxm,
    /// NVIDIA H100 PCIe (80 GB HBM2e, 350 W, passive cooling, NVLink only through `bridge=`).
    H100Pcie,
    /// NVIDIA A100 80GB PCIe (300 W, passive cooling, NVLink only through `bridge=`).
    A100Pcie,
    /// NVIDIA H200 (SXM5, 141 GB HBM3e, 700 W, 18 NVLinks through NVSwitch, no fans).
    H200,
    /// NVIDIA GeForce RTX 4090 (24 GB GDDR6X, 450 W, fans, no ECC, no MIG).
    Rtx4090,
}

impl Profile {
    /// Every profile, in the order the help text lists them.
    pub const ALL: [Profile; 5] = [
        Profile::H100Sxm,
        Profile::H100Pcie,
        Profile::A100Pcie,
        Profile::H200,
        Profile::Rtx4090,
    ];

    /// The spelling used in `GPUDECK_SIM` (`profile=h100-sxm`).
    pub fn key(self) -> &'static str {
        match self {
            Profile::H100Sxm => "h100-sxm",
            Profile::H100Pcie => "h100-pcie",
            Profile::A100Pcie => "a100-pcie",
            Profile::H200 => "h200",
            Profile::Rtx4090 => "rtx4090",
        }
    }

    /// Parse the `GPUDECK_SIM` spelling.
    pub fn from_key(s: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.key() == s)
    }
}

/// A failure injected into NVML initialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InitFailure {
    /// The kernel module is not loaded (NVML_ERROR_DRIVER_NOT_LOADED, 9).
    DriverNotLoaded,
    /// User-space library and kernel module differ (NVML_ERROR_LIB_RM_VERSION_MISMATCH, 18).
    LibRmVersionMismatch,
    /// The device nodes are not accessible (NVML_ERROR_NO_PERMISSION, 4).
    NoPermission,
}

impl InitFailure {
    /// Every failure, in help-text order.
    pub const ALL: [InitFailure; 3] = [
        InitFailure::DriverNotLoaded,
        InitFailure::LibRmVersionMismatch,
        InitFailure::NoPermission,
    ];

    /// The spelling used in `GPUDECK_SIM` (`init=driver-not-loaded`).
    pub fn key(self) -> &'static str {
        match self {
            InitFailure::DriverNotLoaded => "driver-not-loaded",
            InitFailure::LibRmVersionMismatch => "rm-mismatch",
            InitFailure::NoPermission => "no-permission",
        }
    }

    /// Parse the `GPUDECK_SIM` spelling.
    pub fn from_key(s: &str) -> Option<InitFailure> {
        InitFailure::ALL.into_iter().find(|f| f.key() == s)
    }
}

/// NVML clocks-event (throttle) reason bits, as in nvml.h.
pub mod reason {
    /// Nothing is running; clocks are at idle.
    pub const GPU_IDLE: u64 = 0x1;
    /// Software power capping: the board is at its power limit.
    pub const SW_POWER_CAP: u64 = 0x4;
    /// Hardware slowdown (thermal or power brake).
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Software thermal slowdown: the driver lowers clocks to stay under the target temperature.
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    /// Hardware thermal slowdown: the GPU is above its slowdown temperature.
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    /// The reasons a datacenter or GeForce GPU of this era reports as supported.
    pub const SUPPORTED: u64 = 0x1FF;
}

/// A throttle forced onto one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Throttle {
    /// Hot GPU: temperature at the slowdown threshold, clocks halved, HW thermal + HW slowdown bits.
    Thermal,
    /// Power capped: power pinned at the limit, SW power cap bit.
    Power,
    /// Driver slowdown: SW thermal slowdown bit, clocks reduced.
    SwSlowdown,
}

impl Throttle {
    /// Every throttle kind, in help-text order.
    pub const ALL: [Throttle; 3] = [Throttle::Thermal, Throttle::Power, Throttle::SwSlowdown];

    /// The spelling used in `GPUDECK_SIM` (`throttle=0:thermal`).
    pub fn key(self) -> &'static str {
        match self {
            Throttle::Thermal => "thermal",
            Throttle::Power => "power",
            Throttle::SwSlowdown => "sw-slowdown",
        }
    }

    /// Parse the `GPUDECK_SIM` spelling.
    pub fn from_key(s: &str) -> Option<Throttle> {
        Throttle::ALL.into_iter().find(|t| t.key() == s)
    }

    /// The NVML clocks-event reason bits this throttle sets.
    pub fn reason_bits(self) -> u64 {
        match self {
            Throttle::Thermal => reason::HW_THERMAL_SLOWDOWN | reason::HW_SLOWDOWN,
            Throttle::Power => reason::SW_POWER_CAP,
            Throttle::SwSlowdown => reason::SW_THERMAL_SLOWDOWN,
        }
    }
}

/// A row-remapper state forced onto one GPU (Ampere and later repair failing memory rows by
/// remapping them to spare rows; NVML reports it through `nvmlDeviceGetRemappedRows`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Remap {
    /// One row was remapped after an uncorrectable error and is in use: repaired, nothing to do.
    Remapped,
    /// One row is waiting to be remapped at the next GPU reset.
    Pending,
    /// A remapping failed: the bank has no spare row left.
    Failed,
}

impl Remap {
    /// Every state, in help-text order.
    pub const ALL: [Remap; 3] = [Remap::Remapped, Remap::Pending, Remap::Failed];

    /// The spelling used in `GPUDECK_SIM` (`remap=0:pending`).
    pub fn key(self) -> &'static str {
        match self {
            Remap::Remapped => "remapped",
            Remap::Pending => "pending",
            Remap::Failed => "failed",
        }
    }

    /// Parse the `GPUDECK_SIM` spelling.
    pub fn from_key(s: &str) -> Option<Remap> {
        Remap::ALL.into_iter().find(|r| r.key() == s)
    }
}

/// A family of NVML queries that can be marked unsupported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Power,
    Fan,
    Ecc,
    Mig,
    NvLink,
    Clocks,
    Pcie,
    Temperature,
    Utilization,
    Processes,
    Pstate,
    Throttle,
    Persistence,
    /// The event API (`nvmlDeviceGetSupportedEventTypes`, `nvmlDeviceRegisterEvents`), as in
    /// some virtual machines and containers.
    Events,
    /// GPU Performance Monitoring (`nvmlGpmQueryDeviceSupport` reports no support).
    Gpm,
}

impl Metric {
    /// Every metric, in help-text order.
    pub const ALL: [Metric; 15] = [
        Metric::Power,
        Metric::Fan,
        Metric::Ecc,
        Metric::Mig,
        Metric::NvLink,
        Metric::Clocks,
        Metric::Pcie,
        Metric::Temperature,
        Metric::Utilization,
        Metric::Processes,
        Metric::Pstate,
        Metric::Throttle,
        Metric::Persistence,
        Metric::Events,
        Metric::Gpm,
    ];

    /// The spelling used in `GPUDECK_SIM` (`unsupported=fan;power`).
    pub fn key(self) -> &'static str {
        match self {
            Metric::Power => "power",
            Metric::Fan => "fan",
            Metric::Ecc => "ecc",
            Metric::Mig => "mig",
            Metric::NvLink => "nvlink",
            Metric::Clocks => "clocks",
            Metric::Pcie => "pcie",
            Metric::Temperature => "temperature",
            Metric::Utilization => "utilization",
            Metric::Processes => "processes",
            Metric::Pstate => "pstate",
            Metric::Throttle => "throttle",
            Metric::Persistence => "persistence",
            Metric::Events => "events",
            Metric::Gpm => "gpm",
        }
    }

    /// Parse the `GPUDECK_SIM` spelling.
    pub fn from_key(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.key() == s)
    }
}

/// What a MIG instance runs (`mig=0:3g.40gb@train`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MigWorkload {
    /// No processes.
    #[default]
    Idle,
    /// A single-GPU training job (one `python train.py` process).
    Train,
    /// A fine-tune and a notebook kernel sharing the slice.
    Shared,
    /// An inference server in a container.
    Serve,
}

impl MigWorkload {
    /// Every workload, in help-text order.
    pub const ALL: [MigWorkload; 4] = [
        MigWorkload::Idle,
        MigWorkload::Train,
        MigWorkload::Shared,
        MigWorkload::Serve,
    ];

    /// The spelling used in `GPUDECK_SIM` (`@train`).
    pub fn key(self) -> &'static str {
        match self {
            MigWorkload::Idle => "idle",
            MigWorkload::Train => "train",
            MigWorkload::Shared => "shared",
            MigWorkload::Serve => "serve",
        }
    }

    /// Parse the `GPUDECK_SIM` spelling.
    pub fn from_key(s: &str) -> Option<MigWorkload> {
        MigWorkload::ALL.into_iter().find(|w| w.key() == s)
    }
}

/// A comma-separated list of the keys of `items`, for error messages.
pub(crate) fn keys<T: Copy>(items: &[T], key: fn(T) -> &'static str) -> String {
    items.iter().map(|i| key(*i)).collect::<Vec<_>>().join(", ")
}
