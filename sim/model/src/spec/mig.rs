//! The MIG and MPS knobs: `mig=` instance lists, `mig-pending=`, `mps=`, and their checks
//! against the board's profiles and placements.

use crate::knobs::{keys, Metric, MigWorkload};
use crate::mig_profiles::{find_mig_profile, mig_profiles, place, MAX_MIG_DEVICES};

use super::{number, SimSpec};

/// One MIG instance asked for in `mig=`: a GPU-instance profile and what runs in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigRequest {
    /// Profile name as `nvidia-smi` spells it (`3g.40gb`).
    pub profile: String,
    pub workload: MigWorkload,
}

impl SimSpec {
    /// The MIG instances asked for on `index`, None when `mig=` leaves it in whole-GPU mode.
    pub fn mig_of(&self, index: u32) -> Option<&[MigRequest]> {
        self.mig
            .iter()
            .rev()
            .find(|(gpu, _)| gpu.is_none_or(|g| g == index))
            .map(|(_, instances)| instances.as_slice())
    }

    /// The pending MIG mode of `index`: as given by `mig-pending=`, else the current mode.
    pub fn mig_pending_of(&self, index: u32) -> bool {
        self.mig_pending
            .iter()
            .rev()
            .find(|(i, _)| *i == index)
            .map_or(self.mig_of(index).is_some(), |(_, on)| *on)
    }

    /// GPU `index` runs an MPS server (`mps=`).
    pub fn runs_mps(&self, index: u32) -> bool {
        self.mps.contains(&index)
    }

    pub(super) fn validate_mig(
        &self,
        check: impl Fn(&str, u32) -> Result<(), String>,
    ) -> Result<(), String> {
        if self.mig.is_empty() && !self.mig_pending.iter().any(|(_, on)| *on) {
            return Ok(());
        }
        if self.unsupported.contains(&Metric::Mig) {
            return Err("mig: GPUs cannot be in MIG mode with unsupported=mig".to_string());
        }
        let names = mig_profiles(self.profile);
        if names.is_empty() {
            return Err(format!(
                "mig: profile={} cannot do MIG (use h100-sxm, h100-pcie, h200 or a100-pcie)",
                self.profile.key()
            ));
        }
        for (gpu, wanted) in &self.mig {
            if let Some(gpu) = gpu {
                check("mig", *gpu)?;
            }
            let mut profiles = Vec::new();
            for w in wanted {
                profiles.push(find_mig_profile(self.profile, &w.profile).ok_or_else(|| {
                    format!(
                        "mig: no profile \"{}\" on {} (allowed: {})",
                        w.profile,
                        self.profile.key(),
                        names.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                    )
                })?);
            }
            if place(&profiles).is_none() {
                let list: Vec<&str> = wanted.iter().map(|w| w.profile.as_str()).collect();
                return Err(format!(
                    "mig: {} do not fit on one GPU: a GPU has 7 compute and 8 memory slices, \
                     at most {MAX_MIG_DEVICES} instances, and each profile has fixed placements \
                     (nvidia-smi mig -lgipp)",
                    list.join(" + ")
                ));
            }
        }
        for &(gpu, _) in &self.pids {
            if self.mig_of(gpu).is_some_and(<[MigRequest]>::is_empty) {
                return Err(format!(
                    "pids: GPU {gpu} is in MIG mode with no instance to run a process in"
                ));
            }
        }
        if let Some(gpu) = self.mps.iter().find(|g| self.mig_of(**g).is_some()) {
            return Err(format!(
                "mps: GPU {gpu} is in MIG mode; the simulator models MPS on whole GPUs only"
            ));
        }
        Ok(())
    }
}

/// `GPU:PROFILE/PROFILE@WORKLOAD/...`, `*:...` for every GPU, `Nx` repeating a profile;
/// an empty list puts the GPU in MIG mode with no instances.
pub(super) fn parse(value: &str) -> Result<(Option<u32>, Vec<MigRequest>), String> {
    let (gpu, instances) = value.split_once(':').ok_or_else(|| {
        format!("mig={value}: expected GPU:PROFILE/PROFILE, e.g. 0:3g.40gb/2g.20gb")
    })?;
    let gpu = match gpu.trim() {
        "*" => None,
        g => Some(number("mig", g)?),
    };
    let mut out = Vec::new();
    for item in instances
        .split('/')
        .map(str::trim)
        .filter(|i| !i.is_empty())
    {
        let (item, workload) = match item.split_once('@') {
            Some((p, w)) => {
                let w = MigWorkload::from_key(w.trim()).ok_or_else(|| {
                    format!(
                        "mig={value}: unknown workload \"{w}\" (allowed: {})",
                        keys(&MigWorkload::ALL, MigWorkload::key)
                    )
                })?;
                (p.trim(), w)
            }
            None => (item, MigWorkload::Idle),
        };
        let (count, profile) = match item.split_once('x') {
            Some((n, p)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                (number::<usize>("mig", n)?, p)
            }
            _ => (1, item),
        };
        if count > MAX_MIG_DEVICES as usize {
            return Err(format!(
                "mig={value}: at most {MAX_MIG_DEVICES} instances per GPU"
            ));
        }
        out.extend((0..count).map(|_| MigRequest {
            profile: profile.to_string(),
            workload,
        }));
    }
    Ok((gpu, out))
}

pub(super) fn parse_pending(value: &str) -> Result<(u32, bool), String> {
    let usage = || format!("mig-pending={value}: expected GPU:on or GPU:off, e.g. 3:on");
    let (gpu, mode) = value.split_once(':').ok_or_else(usage)?;
    let on = match mode.trim() {
        "on" => true,
        "off" => false,
        _ => return Err(usage()),
    };
    Ok((number("mig-pending", gpu.trim())?, on))
}
