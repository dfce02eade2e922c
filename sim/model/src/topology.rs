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
    if matches!(profile, Profile::H100Sxm | Profile::H200) && gpus == 8 {
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

/// What sits at the far end of one active NVLink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvLinkRemote {
    /// Another GPU, by index: an NVLink bridge between PCIe cards, or a board wired GPU to GPU
    /// (HGX H100 4-GPU).
    Gpu(u32),
    /// An NVSwitch chip of an HGX/DGX baseboard, by number (0..NVSWITCHES).
    Switch(u32),
}

/// NVSwitch chips on an HGX/DGX H100 8-GPU baseboard.
pub const NVSWITCHES: u32 = 4;

/// NVLinks one PCIe card's bridge connectors carry (A100/H100 PCIe: three bridges, 12 links).
pub const BRIDGE_LINKS: u32 = 12;

/// PCI bus numbers of the NVSwitches (nvidia-smi lists them as `0000:05:00.0` .. `08:00.0`).
const NVSWITCH_BUSES: [u32; NVSWITCHES as usize] = [0x05, 0x06, 0x07, 0x08];

/// PCI bus number of NVSwitch `switch`.
pub fn nvswitch_bus(switch: u32) -> Option<u32> {
    NVSWITCH_BUSES.get(switch as usize).copied()
}

/// More GPUs than this on an SXM board hang off NVSwitches; up to this many are wired
/// GPU to GPU, all links spread evenly over the peers (HGX H100 4-GPU: 6 links per pair).
const DIRECT_MESH_MAX_GPUS: u32 = 4;

/// The far end of NVLink `link` of GPU `index`, None when the link is inactive.
///
/// With `bridges` (`(gpu, gpu, links)`, PCIe cards) the links of a GPU are numbered bridge by
/// bridge. Otherwise the profile's links go to NVSwitches on boards of more than four GPUs
/// (each GPU spreads its links over the switches) and straight to the peers on smaller ones.
pub(crate) fn nvlink_remote(
    index: u32,
    link: u32,
    gpus: u32,
    facts: &Facts,
    bridges: &[(u32, u32, u32)],
) -> Option<NvLinkRemote> {
    if index >= gpus {
        return None;
    }
    if !bridges.is_empty() {
        return bridge_remote(index, link, bridges);
    }
    if link >= facts.nvlinks {
        return None;
    }
    if gpus > DIRECT_MESH_MAX_GPUS {
        return Some(NvLinkRemote::Switch(link * NVSWITCHES / facts.nvlinks));
    }
    if gpus < 2 {
        return None;
    }
    let peer = link % (gpus - 1);
    Some(NvLinkRemote::Gpu(if peer >= index {
        peer + 1
    } else {
        peer
    }))
}

fn bridge_remote(index: u32, link: u32, bridges: &[(u32, u32, u32)]) -> Option<NvLinkRemote> {
    let mut first = 0;
    for &(a, b, links) in bridges {
        let peer = match index {
            i if i == a => b,
            i if i == b => a,
            _ => continue,
        };
        if link < first + links {
            return Some(NvLinkRemote::Gpu(peer));
        }
        first += links;
    }
    None
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

    fn remotes(gpu: u32, gpus: u32, bridges: &[(u32, u32, u32)]) -> Vec<NvLinkRemote> {
        let f = facts(Profile::H100Sxm);
        (0..18)
            .filter_map(|l| nvlink_remote(gpu, l, gpus, f, bridges))
            .collect()
    }

    #[test]
    fn an_eight_gpu_board_wires_every_link_to_an_nvswitch() {
        for gpu in 0..8 {
            let ends = remotes(gpu, 8, &[]);
            assert_eq!(ends.len(), 18);
            let per_switch: Vec<usize> = (0..NVSWITCHES)
                .map(|s| {
                    ends.iter()
                        .filter(|e| **e == NvLinkRemote::Switch(s))
                        .count()
                })
                .collect();
            assert_eq!(per_switch, [5, 4, 5, 4]);
        }
        assert_eq!(nvswitch_bus(0), Some(0x05));
        assert_eq!(nvswitch_bus(NVSWITCHES), None);
    }

    #[test]
    fn a_four_gpu_board_wires_six_links_to_each_peer() {
        for gpu in 0..4 {
            let ends = remotes(gpu, 4, &[]);
            for peer in (0..4).filter(|p| *p != gpu) {
                let n = ends
                    .iter()
                    .filter(|e| **e == NvLinkRemote::Gpu(peer))
                    .count();
                assert_eq!(n, 6, "{gpu}->{peer}");
            }
        }
    }

    #[test]
    fn bridges_number_links_bridge_by_bridge() {
        let bridges = [(0, 1, 4), (1, 2, 8)];
        assert_eq!(remotes(0, 3, &bridges), vec![NvLinkRemote::Gpu(1); 4]);
        let one = remotes(1, 3, &bridges);
        assert_eq!(one.len(), 12);
        assert_eq!(one[3], NvLinkRemote::Gpu(0));
        assert_eq!(one[4], NvLinkRemote::Gpu(2));
        assert_eq!(remotes(2, 3, &bridges), vec![NvLinkRemote::Gpu(1); 8]);
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
