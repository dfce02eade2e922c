//! The GPU-to-GPU matrix from each GPU's active NVLinks, read as `nvidia-smi topo -m` and
//! PyTorch's c10d NVLink detector read them: symmetric, with NVSwitch links counted.

use super::types::{GpuLink, TopoPath, Topology};

/// The far end of one active NVLink, as NVML reports it (`nvmlDeviceGetNvLinkRemoteDeviceType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEnd {
    /// Another GPU of this host, by its position in the inventory.
    Gpu(usize),
    /// An NVSwitch (HGX/DGX baseboards): every switch-attached GPU is reachable through it.
    Switch,
}

/// The matrix of `n` GPUs from `ends[a]`, the far end of each active NVLink of GPU `a`.
///
/// Direct links count once per pair, from whichever end saw more of them (a link seen from one
/// side only still joins the pair). Switch links join every pair of switch-attached GPUs with
/// the smaller of their two switch-link counts: that is the bandwidth the pair can use.
pub fn topology(
    n: usize,
    ends: &[Vec<LinkEnd>],
    path: impl Fn(usize, usize) -> TopoPath,
) -> Topology {
    let count = |a: usize, what: LinkEnd| {
        ends.get(a)
            .map_or(0, |e| e.iter().filter(|x| **x == what).count() as u32)
    };
    // Each pair is worked out once, with the lower index first, so both halves are equal.
    let pair = |a: usize, b: usize| {
        let direct = count(a, LinkEnd::Gpu(b)).max(count(b, LinkEnd::Gpu(a)));
        let switched = count(a, LinkEnd::Switch).min(count(b, LinkEnd::Switch));
        GpuLink {
            nvlinks: direct + switched,
            nvswitch: switched > 0,
            path: path(a, b),
        }
    };
    let upper: Vec<Vec<GpuLink>> = (0..n)
        .map(|a| ((a + 1)..n).map(|b| pair(a, b)).collect())
        .collect();
    let links = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| match a.cmp(&b) {
                    std::cmp::Ordering::Less => Some(upper[a][b - a - 1]),
                    std::cmp::Ordering::Greater => Some(upper[b][a - b - 1]),
                    std::cmp::Ordering::Equal => None,
                })
                .collect()
        })
        .collect();
    Topology { links }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nv(t: &Topology, a: usize, b: usize) -> (u32, bool) {
        let l = t.link(a, b).expect("pair");
        (l.nvlinks, l.nvswitch)
    }

    #[test]
    fn switch_links_join_every_switch_attached_pair_with_the_smaller_count() {
        let ends = vec![
            vec![LinkEnd::Switch; 18],
            vec![LinkEnd::Switch; 18],
            vec![LinkEnd::Switch; 12],
            vec![],
        ];
        let t = topology(4, &ends, |_, _| TopoPath::NumaNode);
        assert_eq!(nv(&t, 0, 1), (18, true));
        assert_eq!(nv(&t, 1, 0), (18, true));
        assert_eq!(nv(&t, 0, 2), (12, true));
        assert_eq!(nv(&t, 2, 1), (12, true));
        assert_eq!(nv(&t, 3, 0), (0, false));
    }

    #[test]
    fn direct_links_are_the_same_both_ways_even_when_one_side_saw_fewer() {
        let ends = vec![
            vec![LinkEnd::Gpu(1), LinkEnd::Gpu(1), LinkEnd::Gpu(2)],
            vec![LinkEnd::Gpu(0)],
            vec![LinkEnd::Gpu(0)],
        ];
        let t = topology(3, &ends, |_, _| TopoPath::HostBridge);
        assert_eq!(nv(&t, 0, 1), (2, false));
        assert_eq!(nv(&t, 1, 0), (2, false));
        assert_eq!(nv(&t, 2, 0), (1, false));
        assert_eq!(nv(&t, 1, 2), (0, false));
        assert_eq!(t.link(1, 2).map(|l| l.path), Some(TopoPath::HostBridge));
        assert_eq!(t.link(1, 1), None);
    }
}
