//! Deterministic randomness: splitmix64 hashing of (seed, keys) into integers and unit floats.
//!
//! Every random-looking value in the simulation is a pure function of the seed and a few keys
//! (GPU index, second, stream tag), so the same spec always produces the same numbers.

/// One splitmix64 step: a fast, well-mixed 64-bit bijection.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash a seed and a list of keys into one 64-bit value.
pub(crate) fn hash(seed: u64, keys: &[u64]) -> u64 {
    keys.iter().fold(mix(seed), |h, k| mix(h ^ k))
}

/// A uniform float in [0, 1) from a seed and keys.
pub(crate) fn unit(seed: u64, keys: &[u64]) -> f64 {
    (hash(seed, keys) >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform float in [lo, hi) from a seed and keys.
pub(crate) fn range(seed: u64, keys: &[u64], lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * unit(seed, keys)
}

/// Smooth noise in [0, 1): linear interpolation between random knots `period` seconds apart.
pub(crate) fn smooth(seed: u64, keys: &[u64], s: i64, period: i64) -> f64 {
    let period = period.max(1);
    let knot = s.div_euclid(period);
    let frac = s.rem_euclid(period) as f64 / period as f64;
    let at = |k: i64| {
        let mut all = keys.to_vec();
        all.push(k as u64);
        unit(seed, &all)
    };
    let (a, b) = (at(knot), at(knot + 1));
    a + (b - a) * frac
}

/// Stream tags: distinct keys so that independent quantities never share random draws.
pub(crate) mod tag {
    pub const UUID_HI: u64 = 0x5555_0001;
    pub const UUID_LO: u64 = 0x5555_0002;
    pub const SERIAL: u64 = 0x5555_0003;
    pub const JOB: u64 = 0x5555_0004;
    pub const UTIL: u64 = 0x5555_0005;
    pub const MEM_UTIL: u64 = 0x5555_0006;
    pub const POWER: u64 = 0x5555_0007;
    pub const CLOCK: u64 = 0x5555_0008;
    pub const TEMP: u64 = 0x5555_0009;
    pub const PCIE: u64 = 0x5555_000A;
    pub const MEM: u64 = 0x5555_000B;
    pub const PID: u64 = 0x5555_000C;
    pub const CONTAINER: u64 = 0x5555_000D;
    pub const AMBIENT: u64 = 0x5555_000E;
    pub const NAME: u64 = 0x5555_000F;
    pub const REQUESTS: u64 = 0x5555_0010;
    pub const EXTRA: u64 = 0x5555_0011;
    pub const NVLINK_ERRORS: u64 = 0x5555_0012;
    pub const MIG: u64 = 0x5555_0013;
    pub const GPM: u64 = 0x5555_0014;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_stays_in_range_and_is_deterministic() {
        for k in 0..1000 {
            let u = unit(42, &[k]);
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u, unit(42, &[k]));
        }
        assert_ne!(hash(1, &[2]), hash(2, &[1]));
    }

    #[test]
    fn smooth_is_continuous_between_knots() {
        let a = smooth(7, &[1], 10, 10);
        let b = smooth(7, &[1], 11, 10);
        assert!((a - b).abs() <= 0.1 + 1e-9);
    }
}
