//! Where each simulated GPU sits: CPU socket, PCI bus, PCIe ancestry between pairs, NVLink peers.

use crate::knobs::Profile;
use crate::profile::Facts;

/// The closest common PCIe ancestor of two GPUs, with NVML's `nvmlGpuTopologyLevel_t` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopoLevel {
    /// Same board (or the same GPU).
    Internal,
    /// Behind one PCIe switch (nvidia-smi `PIX`).
    Single,
    /// Behind several PCIe switches, no host bridge (`PXB`).
    Multiple,
    /// Through one CPU host bridge (`PHB`).
    HostBridge,
    /// Through host bridges of one NUMA node (`NODE`).
    Node,
    /// Across CPU sockets (`SYS`).
    System,
}

impl TopoLevel {
    /// The NVML enum value: 0, 10, 20, 30, 40 or 50.
    pub fn nvml_value(self) -> u32 {
        match self {
            TopoLevel::Internal => 0,
            TopoLevel::Single => 10,
            TopoLevel::Multiple => 20,
            TopoLevel::HostBridge => 30,
            TopoLevel::Node => 40,
            TopoLevel::System => 50,
        }
    }

    /// The `nvidia-smi topo -m` abbreviation.
    pub fn smi_label(self) -> &'static str {
        match self {
            TopoLevel::Internal => "X",
            TopoLevel::Single => "PIX",
            TopoLevel::Multiple => "PXB",
            TopoLevel::HostBridge => "PHB",
            TopoLevel::Node => "NODE",
            TopoLevel::System => "SYS",
        }
    }
}

/// PCI bus numbers of the eight GPUs of a DGX/HGX H100.
const DGX_H100_BUSES: [u32; 8] = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB];

/// Number of CPU sockets a host with `gpus` GPUs has.
pub(crate) fn sockets(gpus: u32, facts: &Facts) -> u32 {
    if facts.datacenter && gpus > 4 {
        2
    } else {
        1
    }
}

/// GPUs per socket (the last socket may hold fewer).
fn per_socket(gpus: u32, facts: &Facts) -> u32 {
    gpus.div_ceil(sockets(gpus, facts)).max(1)
}

/// The CPU socket (NUMA node) GPU `index` hangs off.
pub(crate) fn socket_of(index: u32, gpus: u32, facts: &Facts) -> u32 {
    index / per_socket(gpus, facts)
}

/// PCI bus number of GPU `index`.
pub(crate) fn bus_of(index: u32, gpus: u32, profile: Profile, facts: &Facts) -> u32 {
    if profile == Profile::H100Sxm && gpus == 8 {
        return DGX_H100_BUSES[index as usize];
    }
    let per = per_socket(gpus, facts);
    let socket = index / per;
    let slot = index % per;
    let step = (0x60 / per).clamp(2, 0x20);
    let base = facts.bus_base[socket.min(1) as usize];
    (base + slot * step).min(0xFF)
}

/// The common ancestor of two GPUs.
pub(crate) fn common_ancestor(a: u32, b: u32, gpus: u32, facts: &Facts) -> TopoLevel {
    if a == b {
        return TopoLevel::Internal;
    }
    if socket_of(a, gpus, facts) != socket_of(b, gpus, facts) {
        return TopoLevel::System;
    }
    if !facts.datacenter {
        return TopoLevel::HostBridge;
    }
    if a / 2 == b / 2 {
        TopoLevel::Single
    } else {
        TopoLevel::Node
    }
}

/// The GPU at the far end of NVLink `link` of GPU `index`: links are spread round-robin over
/// the peers, as an NVSwitch fabric lets every GPU reach every other one.
pub(crate) fn nvlink_remote(index: u32, link: u32, gpus: u32, facts: &Facts) -> Option<u32> {
    if link >= facts.nvlinks || gpus < 2 || index >= gpus {
        return None;
    }
    let peer = link % (gpus - 1);
    Some(if peer >= index { peer + 1 } else { peer })
}

/// Host CPUs close to GPU `index`: the socket's cores and their SMT siblings.
pub(crate) fn cpu_affinity(index: u32, gpus: u32, facts: &Facts) -> Vec<u32> {
    let sockets = sockets(gpus, facts);
    let cores = facts.cores_per_socket;
    let socket = socket_of(index, gpus, facts);
    let first = socket * cores;
    let siblings = sockets * cores;
    (first..first + cores)
        .chain(first + siblings..first + siblings + cores)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::facts;

    #[test]
    fn dgx_layout_matches_the_brief() {
        let f = facts(Profile::H100Sxm);
        assert_eq!(common_ancestor(0, 1, 8, f), TopoLevel::Single);
        assert_eq!(common_ancestor(6, 7, 8, f), TopoLevel::Single);
        assert_eq!(common_ancestor(0, 2, 8, f), TopoLevel::Node);
        assert_eq!(common_ancestor(3, 4, 8, f), TopoLevel::System);
        assert_eq!(socket_of(3, 8, f), 0);
        assert_eq!(socket_of(4, 8, f), 1);
        assert_eq!(bus_of(4, 8, Profile::H100Sxm, f), 0x9A);
    }

    #[test]
    fn every_peer_gets_a_link() {
        let f = facts(Profile::H100Sxm);
        for gpu in 0..8 {
            let mut peers: Vec<u32> = (0..18)
                .filter_map(|l| nvlink_remote(gpu, l, 8, f))
                .collect();
            assert_eq!(peers.len(), 18);
            assert!(!peers.contains(&gpu));
            peers.sort_unstable();
            peers.dedup();
            assert_eq!(peers.len(), 7);
        }
    }

    #[test]
    fn buses_are_distinct_for_many_gpus() {
        for profile in Profile::ALL {
            let f = facts(profile);
            let mut buses: Vec<u32> = (0..64).map(|i| bus_of(i, 64, profile, f)).collect();
            buses.sort_unstable();
            buses.dedup();
            assert_eq!(buses.len(), 64, "{profile:?}");
        }
    }
}
