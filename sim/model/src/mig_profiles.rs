//! The MIG GPU-instance profiles of each MIG-capable board, as `nvidia-smi mig -lgip` and
//! `-lgipp` list them, and the placement rules that decide which mixes fit.
//!
//! Sources: `nvidia-smi mig -lgip` / `-lgipp` output of an H100 80GB HBM3 and an H100 PCIe
//! (driver 570), of an H200 (NVIDIA/mig-parted issue #120) and of an A100 80GB; the MIG user
//! guide's "Supported MIG Profiles" tables. Memory is the GiB column in MiB (9.75 GiB = 9984 MiB,
//! as the MIG devices table of `nvidia-smi` shows it).

use crate::knobs::Profile;

/// Compute slices of a whole MIG-capable GPU.
pub const COMPUTE_SLICES: u32 = 7;
/// Memory slices of a whole MIG-capable GPU; placements are counted in these.
pub const MEMORY_SLICES: u32 = 8;
/// The most MIG devices one GPU can hold (`nvmlDeviceGetMaxMigDeviceCount` with MIG on).
pub const MAX_MIG_DEVICES: u32 = 7;

/// One GPU-instance profile, e.g. `3g.40gb` on an H100 80GB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigProfile {
    /// Short name as in `nvidia-smi` and CUDA (`3g.40gb`); the device name appends it after
    /// ` MIG `.
    pub name: &'static str,
    /// The profile ID `nvidia-smi mig -lgip` shows (what `-cgi` takes).
    pub profile_id: u32,
    /// Compute slices (the `g` count): `gpuInstanceSliceCount` of `nvmlDeviceAttributes_t`.
    pub compute_slices: u32,
    /// Memory slices it spans: the size of each placement.
    pub memory_slices: u32,
    /// Placement starts, in memory slices (`nvidia-smi mig -lgipp`).
    pub placements: &'static [u32],
    /// At most this many at once (1 for the `+me` profiles, which own the media engines).
    pub max_instances: u32,
    pub memory_mib: u64,
    pub sm_count: u32,
    pub copy_engines: u32,
    pub decoders: u32,
    pub jpeg: u32,
    pub ofa: u32,
}

const ONE: &[u32] = &[0, 1, 2, 3, 4, 5, 6];
const TWO: &[u32] = &[0, 2, 4, 6];
const TWO_G: &[u32] = &[0, 2, 4];
const HALF: &[u32] = &[0, 4];
const FIRST: &[u32] = &[0];

/// The seven GPU-instance profiles of a Hopper or Ampere board, from its per-size figures:
/// names, SM counts and memory in MiB for 1g, 1g (2 memory slices), 2g, 3g, 4g and 7g.
macro_rules! table {
    ($names:expr, $sm:expr, $mib:expr, $dec:expr, $jpeg:expr, $ce7:expr, $ofa7:expr) => {
        [
            profile(
                $names[0], 19, 1, 1, ONE, 7, $mib[0], $sm[0], 1, $dec[0], $jpeg[0], 0,
            ),
            profile($names[1], 20, 1, 1, ONE, 1, $mib[0], $sm[0], 1, 1, 1, 1),
            profile(
                $names[2], 15, 1, 2, TWO, 4, $mib[1], $sm[1], 1, 1, $jpeg[1], 0,
            ),
            profile(
                $names[3], 14, 2, 2, TWO_G, 3, $mib[1], $sm[2], 2, $dec[2], $jpeg[2], 0,
            ),
            profile(
                $names[4], 9, 3, 4, HALF, 2, $mib[2], $sm[3], 3, $dec[3], $jpeg[3], 0,
            ),
            profile(
                $names[5], 5, 4, 4, FIRST, 1, $mib[2], $sm[4], 4, $dec[4], $jpeg[4], 0,
            ),
            profile(
                $names[6], 0, 7, 8, FIRST, 1, $mib[3], $sm[5], $ce7, $dec[5], $jpeg[5], $ofa7,
            ),
        ]
    };
}

#[allow(clippy::too_many_arguments)]
const fn profile(
    name: &'static str,
    profile_id: u32,
    compute_slices: u32,
    memory_slices: u32,
    placements: &'static [u32],
    max_instances: u32,
    memory_mib: u64,
    sm_count: u32,
    copy_engines: u32,
    decoders: u32,
    jpeg: u32,
    ofa: u32,
) -> MigProfile {
    MigProfile {
        name,
        profile_id,
        compute_slices,
        memory_slices,
        placements,
        max_instances,
        memory_mib,
        sm_count,
        copy_engines,
        decoders,
        jpeg,
        ofa,
    }
}

const H100_NAMES: [&str; 7] = [
    "1g.10gb",
    "1g.10gb+me",
    "1g.20gb",
    "2g.20gb",
    "3g.40gb",
    "4g.40gb",
    "7g.80gb",
];
/// Decoders and JPEG engines of 1g, 1g (2 memory slices), 2g, 3g, 4g, 7g on Hopper.
const HOPPER_MEDIA: [u32; 6] = [1, 1, 2, 3, 4, 7];

/// H100 80GB HBM3 (SXM5): SMs 16/26/32/60/64/132.
const H100_SXM: [MigProfile; 7] = table!(
    H100_NAMES,
    [16, 26, 32, 60, 64, 132],
    [9984, 20096, 40448, 81152],
    HOPPER_MEDIA,
    HOPPER_MEDIA,
    8,
    1
);

/// H100 PCIe: the same slices over its 114 SMs (14/14/30/46/62/114).
const H100_PCIE: [MigProfile; 7] = table!(
    H100_NAMES,
    [14, 14, 30, 46, 62, 114],
    [9984, 20096, 40448, 81152],
    HOPPER_MEDIA,
    HOPPER_MEDIA,
    8,
    1
);

/// H200 141GB: the H100 SXM's SMs with larger memory slices.
const H200: [MigProfile; 7] = table!(
    [
        "1g.18gb",
        "1g.18gb+me",
        "1g.35gb",
        "2g.35gb",
        "3g.71gb",
        "4g.71gb",
        "7g.141gb"
    ],
    [16, 26, 32, 60, 64, 132],
    [16384, 33024, 71168, 143104],
    HOPPER_MEDIA,
    HOPPER_MEDIA,
    8,
    1
);

/// A100 80GB: 98 of its 108 SMs in MIG mode (14/14/28/42/56/98); the small slices have no
/// decoder of their own.
const A100: [MigProfile; 7] = table!(
    H100_NAMES,
    [14, 14, 28, 42, 56, 98],
    [9728, 19968, 40192, 80896],
    [0, 1, 1, 2, 2, 5],
    [0, 0, 0, 0, 0, 1],
    7,
    1
);

/// The GPU-instance profiles of a board; empty where it cannot do MIG.
pub fn mig_profiles(profile: Profile) -> &'static [MigProfile] {
    match profile {
        Profile::H100Sxm => &H100_SXM,
        Profile::H100Pcie => &H100_PCIE,
        Profile::H200 => &H200,
        Profile::A100Pcie => &A100,
        Profile::Rtx4090 => &[],
    }
}

/// The profile called `name` on `profile`'s board.
pub fn find_mig_profile(profile: Profile, name: &str) -> Option<&'static MigProfile> {
    mig_profiles(profile).iter().find(|p| p.name == name)
}

/// The GPU instance ID the driver gives an instance of `memory_slices` placed at `start`
/// (as `nvidia-smi mig -lgi` shows: the full GPU is 0, halves 1-2, quarters 3-6, eighths
/// 7-13).
pub(crate) fn gpu_instance_id(memory_slices: u32, start: u32) -> u32 {
    match memory_slices {
        8 => 0,
        4 => 1 + start / 4,
        2 => 3 + start / 2,
        _ => 7 + start,
    }
}

/// Places `wanted` on an empty GPU: one placement start per instance, in the order given,
/// or None when they do not fit (too many compute slices, overlapping memory, or more of a
/// profile than it allows). The largest instances are placed first, each at the lowest
/// start that still lets the rest fit.
pub(crate) fn place(wanted: &[&MigProfile]) -> Option<Vec<u32>> {
    let compute: u32 = wanted.iter().map(|p| p.compute_slices).sum();
    if compute > COMPUTE_SLICES || wanted.len() as u32 > MAX_MIG_DEVICES {
        return None;
    }
    for p in wanted {
        let same = wanted.iter().filter(|q| q.name == p.name).count() as u32;
        if same > p.max_instances {
            return None;
        }
    }
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(wanted[*i].memory_slices));
    let mut starts = vec![0; wanted.len()];
    fill(wanted, &order, 0, &mut starts).then_some(starts)
}

/// Backtracking over placements; `used` is the memory-slice bitmap of what is placed so far.
fn fill(wanted: &[&MigProfile], order: &[usize], used: u32, starts: &mut [u32]) -> bool {
    let Some((&i, rest)) = order.split_first() else {
        return true;
    };
    let p = wanted[i];
    for &start in p.placements {
        let mask = ((1u32 << p.memory_slices) - 1) << start;
        if used & mask == 0 {
            starts[i] = start;
            if fill(wanted, rest, used | mask, starts) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(profile: Profile, names: &[&str]) -> Vec<&'static MigProfile> {
        names
            .iter()
            .map(|n| find_mig_profile(profile, n).expect(n))
            .collect()
    }

    #[test]
    fn the_balanced_mix_fits_only_with_the_big_slice_at_the_top() {
        let want = names(
            Profile::H100Sxm,
            &["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
        );
        let starts = place(&want).expect("all-balanced fits");
        assert_eq!(starts, vec![4, 0, 2, 3]);
        let ids: Vec<u32> = want
            .iter()
            .zip(&starts)
            .map(|(p, s)| gpu_instance_id(p.memory_slices, *s))
            .collect();
        assert_eq!(ids, vec![2, 3, 9, 10]);
    }

    #[test]
    fn mixes_that_real_boards_refuse() {
        let p = Profile::H100Sxm;
        // 4 + 4 + 1 memory slices: more than the GPU's 8.
        assert_eq!(place(&names(p, &["3g.40gb", "3g.40gb", "1g.10gb"])), None);
        assert_eq!(place(&names(p, &["4g.40gb", "4g.40gb"])), None);
        assert_eq!(place(&names(p, &["1g.10gb+me", "1g.10gb+me"])), None);
        assert_eq!(place(&[names(p, &["1g.10gb"])[0]; 8]), None);
        assert!(place(&[names(p, &["1g.10gb"])[0]; 7]).is_some());
        assert!(place(&names(p, &["4g.40gb", "3g.40gb"])).is_some());
        assert!(place(&names(p, &["7g.80gb"])).is_some());
    }

    #[test]
    fn every_board_lists_seven_profiles_within_its_memory() {
        for (profile, total) in [
            (Profile::H100Sxm, 81559),
            (Profile::H100Pcie, 81559),
            (Profile::H200, 143771),
            (Profile::A100Pcie, 81920),
        ] {
            let all = mig_profiles(profile);
            assert_eq!(all.len(), 7);
            assert!(all.iter().all(|p| p.memory_mib < total));
            assert_eq!(all[6].compute_slices, COMPUTE_SLICES);
        }
        assert!(mig_profiles(Profile::Rtx4090).is_empty());
    }
}
