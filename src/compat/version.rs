//! Dotted numeric versions (CUDA `12.4.1`, drivers `580.159.04`, compute capability `9.0`) and their order.

use std::cmp::Ordering;
use std::fmt;

use serde::{Serialize, Serializer};

/// A version of up to four numeric parts; missing parts compare as zero (`12.4` = `12.4.0`).
///
/// Suffixes that are not numbers (`2.4.0a0+07cecf4`, `12.4.1.003`'s fourth part is kept) end the
/// parse: the numeric prefix is what orders releases.
#[derive(Clone, Copy, Debug, Eq)]
pub struct Version {
    parts: [u32; 4],
    len: usize,
}

impl Version {
    /// Parses `12`, `12.4`, `580.159.04`, `2.17.0-gpu` (the tag suffix is ignored). `None` when it
    /// does not start with a number.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim().trim_start_matches(['v', 'V']);
        let mut parts = [0u32; 4];
        let mut len = 0;
        for piece in text.split('.') {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() || len == 4 {
                break;
            }
            parts[len] = digits.parse().ok()?;
            len += 1;
            if digits.len() != piece.len() {
                break;
            }
        }
        (len > 0).then_some(Version { parts, len })
    }

    pub fn new(major: u32, minor: u32) -> Version {
        Version {
            parts: [major, minor, 0, 0],
            len: 2,
        }
    }

    pub fn major(&self) -> u32 {
        self.parts[0]
    }

    pub fn minor(&self) -> u32 {
        self.parts[1]
    }

    /// `major.minor`, the granularity of the compatibility tables.
    pub fn major_minor(&self) -> Version {
        Version::new(self.parts[0], self.parts[1])
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.parts == other.parts
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts.cmp(&other.parts)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parts.hash(state);
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Driver versions keep their zero-padded look in the data files; printing them back is
        // only for messages, where `580.65.6` would read as a different driver.
        let shown = self.len.max(2);
        for (i, part) in self.parts[..shown].iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{part}")?;
        }
        Ok(())
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A GPU architecture target in a build: real code for one compute capability (`sm_90`) or PTX
/// that the driver JIT-compiles for that capability and newer (`compute_90`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchTarget {
    Sass(Version),
    Ptx(Version),
}

impl ArchTarget {
    /// `sm_90`, `sm_100a`, `compute_80`; `None` for anything else.
    pub fn parse(text: &str) -> Option<ArchTarget> {
        let text = text.trim();
        let (ptx, digits) = if let Some(rest) = text.strip_prefix("sm_") {
            (false, rest)
        } else {
            (true, text.strip_prefix("compute_")?)
        };
        let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
        if digits.len() < 2 {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        let cc = Version::new(major.parse().ok()?, minor.parse().ok()?);
        Some(if ptx {
            ArchTarget::Ptx(cc)
        } else {
            ArchTarget::Sass(cc)
        })
    }
}

/// How a build's targets cover a GPU of compute capability `cc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchCoverage {
    /// Real code for this GPU (same major capability, minor at or below the GPU's).
    Native,
    /// Only PTX of an older capability: the driver compiles it at first start.
    PtxJit,
    /// Nothing this GPU can run.
    None,
}

/// SASS runs on GPUs of the same major capability and an equal or higher minor one; PTX runs on
/// any equal or higher capability through the driver's JIT compiler.
pub fn coverage(targets: &[ArchTarget], cc: Version) -> ArchCoverage {
    let native = targets.iter().any(
        |t| matches!(t, ArchTarget::Sass(v) if v.major() == cc.major() && v.minor() <= cc.minor()),
    );
    if native {
        return ArchCoverage::Native;
    }
    if targets
        .iter()
        .any(|t| matches!(t, ArchTarget::Ptx(v) if *v <= cc))
    {
        ArchCoverage::PtxJit
    } else {
        ArchCoverage::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(v("12.4"), v("12.4.0"));
        assert!(v("12.4.1") > v("12.4"));
        assert!(v("580.65.06") > v("580"));
        assert!(v("525.60.13") < v("525.85.12"));
        assert_eq!(v("2.4.0a0+07cecf4"), v("2.4.0"));
        assert_eq!(v("2.17.0-gpu"), v("2.17"));
        assert_eq!(v("v13.0"), v("13.0"));
        assert_eq!(v("12.4.1.003").major_minor(), v("12.4"));
        assert_eq!(Version::parse("latest"), None);
        assert_eq!(Version::parse(""), None);
        assert_eq!(v("12").to_string(), "12.0");
        assert_eq!(v("580.65.06").to_string(), "580.65.6");
    }

    #[test]
    fn arch_targets_cover_gpus_as_the_driver_loads_them() {
        let targets: Vec<ArchTarget> = ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]
            .iter()
            .filter_map(|t| ArchTarget::parse(t))
            .collect();
        assert_eq!(targets.len(), 5);
        assert_eq!(coverage(&targets, v("8.6")), ArchCoverage::Native);
        assert_eq!(coverage(&targets, v("9.0")), ArchCoverage::PtxJit);
        assert_eq!(coverage(&targets, v("12.0")), ArchCoverage::PtxJit);
        assert_eq!(coverage(&targets, v("7.5")), ArchCoverage::Native);
        assert_eq!(coverage(&targets, v("5.2")), ArchCoverage::None);
        let blackwell = [ArchTarget::parse("sm_100").unwrap()];
        assert_eq!(coverage(&blackwell, v("10.0")), ArchCoverage::Native);
        assert_eq!(coverage(&blackwell, v("12.0")), ArchCoverage::None);
        assert_eq!(ArchTarget::parse("sm_x"), None);
        assert_eq!(ArchTarget::parse("gfx90a"), None);
    }
}
