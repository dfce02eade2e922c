//! The simulation spec: defaults, and parsing of the `GPUDECK_SIM` knob string.

use crate::health::SimXid;
use crate::knobs::{keys, InitFailure, Metric, Profile, Remap, Throttle};

mod mig;

use crate::topology::BRIDGE_LINKS;
pub use mig::MigRequest;

/// The environment variable the spec is read from.
pub const ENV_VAR: &str = "GPUDECK_SIM";

/// The largest number of simulated GPUs.
pub const MAX_GPUS: u32 = 64;

/// The knob names `SimSpec::parse` accepts, in help-text order.
pub const KNOBS: [&str; 22] = [
    "gpus",
    "seed",
    "profile",
    "driver",
    "cuda",
    "nvml",
    "init",
    "unsupported",
    "lost",
    "downgrade",
    "throttle",
    "ecc",
    "remap",
    "frozen",
    "pids",
    "bridge",
    "xid",
    "replay",
    "mig",
    "mig-pending",
    "mps",
    "cost",
];

/// Everything that shapes a simulation. Equal specs give equal numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSpec {
    /// Number of GPUs (0..=64).
    pub gpus: u32,
    /// Seed of every random-looking value.
    pub seed: u64,
    /// GPU model of every device.
    pub profile: Profile,
    /// Driver version string, e.g. "580.65.06".
    pub driver: String,
    /// CUDA driver version in NVML encoding: 13000 = 13.0, 12020 = 12.2.
    pub cuda: i32,
    /// NVML library version string, e.g. "13.580.65.06".
    pub nvml_version: String,
    /// Make NVML initialisation fail this way.
    pub init_failure: Option<InitFailure>,
    /// Metrics that return NOT_SUPPORTED on every GPU.
    pub unsupported: Vec<Metric>,
    /// GPU indices that return GPU_IS_LOST for every dynamic query.
    pub lost: Vec<u32>,
    /// GPU indices whose current PCIe link is gen 3 x8 instead of the maximum.
    pub pcie_downgrade: Vec<u32>,
    /// Throttles forced onto GPUs: (GPU index, throttle).
    pub throttle: Vec<(u32, Throttle)>,
    /// Volatile ECC error counts: (GPU index, corrected, uncorrected).
    pub ecc_errors: Vec<(u32, u64, u64)>,
    /// Row-remapper states forced onto GPUs: (GPU index, state).
    pub remap: Vec<(u32, Remap)>,
    /// When set, time stands still at this many seconds.
    pub frozen: Option<f64>,
    /// Real host processes to report: (GPU index, pid).
    pub pids: Vec<(u32, u32)>,
    /// NVLink bridges between PCIe cards: (GPU, GPU, links).
    pub bridges: Vec<(u32, u32, u32)>,
    /// Xid errors to raise, in the order given (the simulation orders them by time).
    pub xids: Vec<SimXid>,
    /// PCIe replay counts: (GPU index, replays).
    pub pcie_replays: Vec<(u32, u64)>,
    /// GPUs in MIG mode and the instances on them: (GPU index, or None for every GPU,
    /// instances). The last entry naming a GPU wins.
    pub mig: Vec<(Option<u32>, Vec<MigRequest>)>,
    /// MIG modes pending until the next GPU reset: (GPU index, enabled).
    pub mig_pending: Vec<(u32, bool)>,
    /// GPUs that run an MPS server; their processes become its clients.
    pub mps: Vec<u32>,
    /// Whether each NVML call spends the CPU time it takes on a real H100's driver
    /// (`cost=h100`; the NVML library only, the in-process simulation costs nothing).
    pub call_costs: bool,
}

impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            gpus: 8,
            seed: 42,
            profile: Profile::H100Sxm,
            driver: "580.65.06".to_string(),
            cuda: 13000,
            nvml_version: "13.580.65.06".to_string(),
            init_failure: None,
            unsupported: Vec::new(),
            lost: Vec::new(),
            pcie_downgrade: Vec::new(),
            throttle: Vec::new(),
            ecc_errors: Vec::new(),
            remap: Vec::new(),
            frozen: None,
            pids: Vec::new(),
            bridges: Vec::new(),
            xids: Vec::new(),
            pcie_replays: Vec::new(),
            mig: Vec::new(),
            mig_pending: Vec::new(),
            mps: Vec::new(),
            call_costs: false,
        }
    }
}

impl SimSpec {
    /// Parse a knob string such as
    /// `gpus=4,seed=7,profile=h100-pcie,unsupported=fan;power,lost=3,throttle=0:thermal`.
    ///
    /// Knobs are `key=value` pairs separated by commas; list values are separated by `;`.
    /// An empty string gives the defaults. Unless `nvml=` is given, the NVML version follows
    /// the driver and CUDA versions (`<cuda major>.<driver>`), as real NVML does.
    pub fn parse(s: &str) -> Result<SimSpec, String> {
        let mut spec = SimSpec::default();
        let mut nvml_given = false;
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!(
                    "knob \"{item}\" has no value: write key=value (keys: {})",
                    KNOBS.join(", ")
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            nvml_given |= key == "nvml";
            apply(&mut spec, key, value)?;
        }
        if !nvml_given {
            spec.nvml_version = format!("{}.{}", spec.cuda / 1000, spec.driver);
        }
        spec.validate()?;
        Ok(spec)
    }

    /// Read the spec from `GPUDECK_SIM`; an absent variable gives the defaults.
    pub fn from_env() -> Result<SimSpec, String> {
        match std::env::var(ENV_VAR) {
            Ok(s) => SimSpec::parse(&s).map_err(|e| format!("{ENV_VAR}: {e}")),
            Err(std::env::VarError::NotPresent) => Ok(SimSpec::default()),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{ENV_VAR} is not valid UTF-8")),
        }
    }

    /// The current PCIe link of `index` is forced below its maximum.
    pub fn is_downgraded(&self, index: u32) -> bool {
        self.pcie_downgrade.contains(&index)
    }

    /// The throttle forced onto `index`, if any (the last one given wins).
    pub fn throttle_of(&self, index: u32) -> Option<Throttle> {
        self.throttle
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, t)| *t)
    }

    /// The (corrected, uncorrected) volatile ECC counts injected into `index`.
    pub fn ecc_of(&self, index: u32) -> (u64, u64) {
        self.ecc_errors
            .iter()
            .rev()
            .find(|(i, _, _)| *i == index)
            .map_or((0, 0), |(_, c, u)| (*c, *u))
    }

    /// The row-remapper state forced onto `index`, if any (the last one given wins).
    pub fn remap_of(&self, index: u32) -> Option<Remap> {
        self.remap
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, r)| *r)
    }

    /// The PCIe replay count injected into `index` (the last one given wins).
    pub fn replays_of(&self, index: u32) -> u64 {
        self.pcie_replays
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map_or(0, |(_, n)| *n)
    }

    fn validate(&self) -> Result<(), String> {
        let check = |knob: &str, index: u32| {
            if index < self.gpus {
                Ok(())
            } else {
                Err(format!(
                    "{knob}: GPU index {index} is out of range for gpus={} (valid: 0..{})",
                    self.gpus, self.gpus
                ))
            }
        };
        self.lost.iter().try_for_each(|i| check("lost", *i))?;
        self.pcie_downgrade
            .iter()
            .try_for_each(|i| check("downgrade", *i))?;
        self.throttle
            .iter()
            .try_for_each(|(i, _)| check("throttle", *i))?;
        self.ecc_errors
            .iter()
            .try_for_each(|(i, _, _)| check("ecc", *i))?;
        self.remap
            .iter()
            .try_for_each(|(i, _)| check("remap", *i))?;
        self.pids.iter().try_for_each(|(i, _)| check("pids", *i))?;
        self.xids.iter().try_for_each(|x| check("xid", x.gpu))?;
        self.pcie_replays
            .iter()
            .try_for_each(|(i, _)| check("replay", *i))?;
        self.mps.iter().try_for_each(|i| check("mps", *i))?;
        self.mig_pending
            .iter()
            .try_for_each(|(i, _)| check("mig-pending", *i))?;
        self.validate_mig(check)?;
        self.validate_bridges(check)
    }

    fn validate_bridges(
        &self,
        check: impl Fn(&str, u32) -> Result<(), String>,
    ) -> Result<(), String> {
        if self.bridges.is_empty() {
            return Ok(());
        }
        if !matches!(self.profile, Profile::H100Pcie | Profile::A100Pcie) {
            return Err(format!(
                "bridge: NVLink bridges join PCIe cards; use profile=h100-pcie or a100-pcie \
                 (profile={} has {})",
                self.profile.key(),
                if matches!(self.profile, Profile::H100Sxm | Profile::H200) {
                    "its NVLinks wired on the board"
                } else {
                    "no NVLink connector"
                }
            ));
        }
        for &(a, b, _) in &self.bridges {
            check("bridge", a)?;
            check("bridge", b)?;
        }
        for gpu in 0..self.gpus {
            let links: u32 = self
                .bridges
                .iter()
                .filter(|(a, b, _)| *a == gpu || *b == gpu)
                .map(|(_, _, n)| n)
                .sum();
            if links > BRIDGE_LINKS {
                return Err(format!(
                    "bridge: GPU {gpu} is given {links} NVLinks, but a card has {BRIDGE_LINKS}"
                ));
            }
        }
        Ok(())
    }
}

fn apply(spec: &mut SimSpec, key: &str, value: &str) -> Result<(), String> {
    match key {
        "gpus" => {
            spec.gpus = number(key, value)?;
            if spec.gpus > MAX_GPUS {
                return Err(format!("gpus={value}: at most {MAX_GPUS} GPUs"));
            }
        }
        "seed" => spec.seed = number(key, value)?,
        "profile" => {
            spec.profile = Profile::from_key(value).ok_or_else(|| {
                format!(
                    "profile={value}: unknown profile (allowed: {})",
                    keys(&Profile::ALL, Profile::key)
                )
            })?;
        }
        "driver" => spec.driver = version(key, value)?,
        "nvml" => spec.nvml_version = version(key, value)?,
        "cuda" => {
            spec.cuda = number(key, value)?;
            if spec.cuda <= 0 {
                return Err(format!(
                    "cuda={value}: expected NVML encoding, e.g. 13000 or 12020"
                ));
            }
        }
        "init" => spec.init_failure = Some(init_failure(value)?),
        "unsupported" => spec.unsupported = list(value, metric)?,
        "lost" => spec.lost = list(value, |v| number("lost", v))?,
        "downgrade" => spec.pcie_downgrade = list(value, |v| number("downgrade", v))?,
        "throttle" => spec.throttle = list(value, throttle)?,
        "ecc" => spec.ecc_errors = list(value, ecc)?,
        "remap" => spec.remap = list(value, remap)?,
        "frozen" => spec.frozen = Some(frozen(value)?),
        "pids" => spec.pids = list(value, pid)?,
        "bridge" => spec.bridges = list(value, bridge)?,
        "xid" => spec.xids = list(value, xid)?,
        "replay" => spec.pcie_replays = list(value, replay)?,
        "mig" => spec.mig = list(value, mig::parse)?,
        "mig-pending" => spec.mig_pending = list(value, mig::parse_pending)?,
        "mps" => spec.mps = list(value, |v| number("mps", v))?,
        "cost" => {
            spec.call_costs = match value {
                "h100" => true,
                "none" => false,
                _ => return Err(format!("cost={value}: expected h100 or none")),
            }
        }
        _ => {
            return Err(format!(
                "unknown knob \"{key}\" (allowed: {})",
                KNOBS.join(", ")
            ))
        }
    }
    Ok(())
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{key}={value}: expected a non-negative integer"))
}

fn version(key: &str, value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.chars().all(|c| c.is_ascii_digit() || c == '.')
        && value.len() < 64;
    if ok {
        Ok(value.to_string())
    } else {
        Err(format!(
            "{key}={value}: expected a version such as 580.65.06"
        ))
    }
}

fn list<T>(value: &str, item: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(item)
        .collect()
}

fn init_failure(value: &str) -> Result<InitFailure, String> {
    InitFailure::from_key(value).ok_or_else(|| {
        format!(
            "init={value}: unknown failure (allowed: {})",
            keys(&InitFailure::ALL, InitFailure::key)
        )
    })
}

fn metric(value: &str) -> Result<Metric, String> {
    Metric::from_key(value).ok_or_else(|| {
        format!(
            "unsupported={value}: unknown metric (allowed: {})",
            keys(&Metric::ALL, Metric::key)
        )
    })
}

fn throttle(value: &str) -> Result<(u32, Throttle), String> {
    let (gpu, kind) = value
        .split_once(':')
        .ok_or_else(|| format!("throttle={value}: expected GPU:KIND, e.g. 0:thermal"))?;
    let kind = Throttle::from_key(kind.trim()).ok_or_else(|| {
        format!(
            "throttle={value}: unknown kind (allowed: {})",
            keys(&Throttle::ALL, Throttle::key)
        )
    })?;
    Ok((number("throttle", gpu.trim())?, kind))
}

fn ecc(value: &str) -> Result<(u32, u64, u64), String> {
    let parts: Vec<&str> = value.split(':').map(str::trim).collect();
    match parts.as_slice() {
        [gpu, corrected, uncorrected] => Ok((
            number("ecc", gpu)?,
            number("ecc", corrected)?,
            number("ecc", uncorrected)?,
        )),
        _ => Err(format!(
            "ecc={value}: expected GPU:CORRECTED:UNCORRECTED, e.g. 2:5:1"
        )),
    }
}

fn remap(value: &str) -> Result<(u32, Remap), String> {
    let (gpu, state) = value
        .split_once(':')
        .ok_or_else(|| format!("remap={value}: expected GPU:STATE, e.g. 0:pending"))?;
    let state = Remap::from_key(state.trim()).ok_or_else(|| {
        format!(
            "remap={value}: unknown state (allowed: {})",
            keys(&Remap::ALL, Remap::key)
        )
    })?;
    Ok((number("remap", gpu.trim())?, state))
}

fn bridge(value: &str) -> Result<(u32, u32, u32), String> {
    let usage = || format!("bridge={value}: expected GPU-GPU:LINKS, e.g. 0-1:12");
    let (pair, links) = value.split_once(':').ok_or_else(usage)?;
    let (a, b) = pair.split_once('-').ok_or_else(usage)?;
    let (a, b): (u32, u32) = (number("bridge", a.trim())?, number("bridge", b.trim())?);
    let links: u32 = number("bridge", links.trim())?;
    if a == b || links == 0 {
        return Err(format!(
            "bridge={value}: a bridge joins two different GPUs with at least one link"
        ));
    }
    Ok((a, b, links))
}

fn xid(value: &str) -> Result<SimXid, String> {
    let usage = || format!("xid={value}: expected GPU:XID@SECONDS, e.g. 1:79@30");
    let (gpu, rest) = value.split_once(':').ok_or_else(usage)?;
    let (xid, at) = rest.split_once('@').ok_or_else(usage)?;
    let xid: u64 = number("xid", xid.trim())?;
    if xid == 0 {
        return Err(format!("xid={value}: Xid numbers start at 1"));
    }
    let at = match at.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => t,
        _ => {
            return Err(format!(
                "xid={value}: expected seconds >= 0 after @, e.g. 1:79@30"
            ))
        }
    };
    Ok(SimXid {
        gpu: number("xid", gpu.trim())?,
        xid,
        at,
    })
}

fn replay(value: &str) -> Result<(u32, u64), String> {
    let (gpu, count) = value
        .split_once(':')
        .ok_or_else(|| format!("replay={value}: expected GPU:COUNT, e.g. 2:40"))?;
    Ok((
        number("replay", gpu.trim())?,
        number("replay", count.trim())?,
    ))
}

fn frozen(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err(format!("frozen={value}: expected seconds >= 0, e.g. 12.5")),
    }
}

fn pid(value: &str) -> Result<(u32, u32), String> {
    let (gpu, pid) = value
        .split_once(':')
        .ok_or_else(|| format!("pids={value}: expected GPU:PID, e.g. 0:1234"))?;
    let pid: u32 = number("pids", pid.trim())?;
    if pid == 0 {
        return Err(format!("pids={value}: a pid must be > 0"));
    }
    Ok((number("pids", gpu.trim())?, pid))
}
