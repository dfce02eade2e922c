//! `NVIDIA_REQUIRE_CUDA`: the constraint NVIDIA's images put on the host, evaluated as the NVIDIA Container Toolkit does.
//!
//! The value is a list of alternatives separated by spaces; each alternative is a list of
//! conditions separated by commas, all of which must hold. The first alternative is normally
//! `cuda>=X.Y` (a driver that supports that CUDA); the others (`brand=tesla,driver>=535,driver<536`)
//! are the long-term driver branches on which the image's forward-compatibility libraries
//! (`cuda-compat`) make it run anyway.

use serde::Serialize;

use super::version::Version;

/// A comparison in a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
}

impl Op {
    fn holds(self, left: Version, right: Version) -> bool {
        match self {
            Op::Ge => left >= right,
            Op::Gt => left > right,
            Op::Le => left <= right,
            Op::Lt => left < right,
            Op::Eq => left == right,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Condition {
    Cuda(Op, Version),
    Driver(Op, Version),
    Arch(Op, Version),
    Brand(String),
    /// Something this parser does not know; an alternative holding it never matches.
    Unknown(String),
}

/// A parsed `NVIDIA_REQUIRE_CUDA`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    alternatives: Vec<Vec<Condition>>,
}

/// What the host the requirement is checked against looks like.
#[derive(Clone, Debug)]
pub struct RequireHost<'a> {
    /// The CUDA version the driver supports.
    pub cuda: Version,
    pub driver: Version,
    /// The GPUs' names (for the brand conditions).
    pub gpu_names: &'a [String],
    pub compute_capabilities: &'a [Version],
}

/// How a requirement is met.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// The driver supports the image's CUDA.
    Direct,
    /// Only through the image's forward-compatibility libraries on this driver branch.
    ForwardCompat { branch: String },
    /// Not met; `cuda` is the version the first alternative asks for.
    Unmet { cuda: Option<String> },
}

impl Requirement {
    pub fn parse(text: &str) -> Requirement {
        let alternatives = text
            .split_whitespace()
            .map(|alt| {
                alt.split(',')
                    .filter(|c| !c.is_empty())
                    .map(condition)
                    .collect()
            })
            .collect();
        Requirement { alternatives }
    }

    /// The CUDA version the plain `cuda>=X` alternative asks for.
    pub fn cuda(&self) -> Option<Version> {
        self.alternatives.iter().flatten().find_map(|c| match c {
            Condition::Cuda(Op::Ge | Op::Gt | Op::Eq, v) => Some(*v),
            _ => None,
        })
    }

    /// The driver branches (e.g. `535`, `550`) the forward-compatibility alternatives allow.
    pub fn compat_branches(&self) -> Vec<u32> {
        let mut branches: Vec<u32> = self
            .alternatives
            .iter()
            .filter_map(|alt| {
                alt.iter().find_map(|c| match c {
                    Condition::Driver(Op::Ge, v) => Some(v.major()),
                    _ => None,
                })
            })
            .collect();
        branches.sort_unstable();
        branches.dedup();
        branches
    }

    pub fn evaluate(&self, host: &RequireHost) -> Outcome {
        let holds = |alt: &Vec<Condition>| alt.iter().all(|c| condition_holds(c, host));
        let direct = self.alternatives.iter().filter(|alt| {
            !alt.iter()
                .any(|c| matches!(c, Condition::Driver(..) | Condition::Brand(_)))
        });
        if direct.clone().any(holds) || self.alternatives.is_empty() {
            return Outcome::Direct;
        }
        let compat = self
            .alternatives
            .iter()
            .find(|alt| alt.iter().any(|c| matches!(c, Condition::Driver(..))) && holds(alt));
        match compat {
            Some(_) => Outcome::ForwardCompat {
                branch: host.driver.major().to_string(),
            },
            None => Outcome::Unmet {
                cuda: self.cuda().map(|v| v.to_string()),
            },
        }
    }
}

fn condition(text: &str) -> Condition {
    let text = text.trim();
    let Some(at) = text.find(['>', '<', '=']) else {
        return Condition::Unknown(text.to_string());
    };
    let (name, rest) = text.split_at(at);
    let (op, value) = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ]
    .iter()
    .find_map(|(sym, op)| rest.strip_prefix(sym).map(|v| (*op, v)))
    .unwrap_or((Op::Eq, rest));
    let version = Version::parse(value);
    match (name.trim().to_ascii_lowercase().as_str(), version) {
        ("cuda", Some(v)) => Condition::Cuda(op, v),
        ("driver", Some(v)) => Condition::Driver(op, v),
        ("arch", Some(v)) => Condition::Arch(op, v),
        ("brand", _) if op == Op::Eq => Condition::Brand(value.trim().to_ascii_lowercase()),
        _ => Condition::Unknown(text.to_string()),
    }
}

fn condition_holds(condition: &Condition, host: &RequireHost) -> bool {
    match condition {
        Condition::Cuda(op, v) => op.holds(host.cuda, *v),
        Condition::Driver(op, v) => op.holds(host.driver, *v),
        Condition::Arch(op, v) => {
            !host.compute_capabilities.is_empty()
                && host.compute_capabilities.iter().all(|cc| op.holds(*cc, *v))
        }
        Condition::Brand(brand) => {
            !host.gpu_names.is_empty()
                && host
                    .gpu_names
                    .iter()
                    .all(|name| brand_of(name).contains(&brand.as_str()))
        }
        Condition::Unknown(_) => false,
    }
}

/// The brand words of NVIDIA_REQUIRE_CUDA a GPU answers to, judged from its name as NVML
/// reports it: consumer cards (GeForce, TITAN) get no forward compatibility; professional RTX
/// and Quadro cards have their own brands; data-centre GPUs (`NVIDIA H100 80GB HBM3`,
/// `Tesla V100`) are `tesla`/`nvidia`.
pub fn brand_of(name: &str) -> &'static [&'static str] {
    let lower = name.to_ascii_lowercase();
    if lower.contains("geforce") || lower.contains("titan") {
        &["geforce"]
    } else if lower.contains("quadro rtx") {
        &["quadrortx", "quadro"]
    } else if lower.contains("quadro") {
        &["quadro"]
    } else if lower.contains("rtx") {
        &["nvidiartx"]
    } else {
        &["tesla", "nvidia", "unknown"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUDA13: &str = "cuda>=13.0 brand=unknown,driver>=535,driver<536 brand=tesla,driver>=535,driver<536 brand=nvidiartx,driver>=535,driver<536 brand=tesla,driver>=570,driver<571";

    fn host<'a>(cuda: &str, driver: &str, names: &'a [String]) -> RequireHost<'a> {
        RequireHost {
            cuda: Version::parse(cuda).unwrap(),
            driver: Version::parse(driver).unwrap(),
            gpu_names: names,
            compute_capabilities: &[],
        }
    }

    #[test]
    fn a_new_enough_driver_meets_it_directly() {
        let r = Requirement::parse(CUDA13);
        assert_eq!(r.cuda(), Version::parse("13.0"));
        assert_eq!(r.compat_branches(), vec![535, 570]);
        let h100 = vec!["NVIDIA H100 80GB HBM3".to_string()];
        assert_eq!(
            r.evaluate(&host("13.0", "580.159.04", &h100)),
            Outcome::Direct
        );
    }

    #[test]
    fn a_long_term_branch_on_a_datacentre_gpu_is_forward_compatible() {
        let r = Requirement::parse(CUDA13);
        let h100 = vec!["NVIDIA H100 80GB HBM3".to_string()];
        assert_eq!(
            r.evaluate(&host("12.8", "570.86.15", &h100)),
            Outcome::ForwardCompat {
                branch: "570".into()
            }
        );
        let geforce = vec!["NVIDIA GeForce RTX 4090".to_string()];
        assert_eq!(
            r.evaluate(&host("12.8", "570.86.15", &geforce)),
            Outcome::Unmet {
                cuda: Some("13.0".into())
            }
        );
        assert_eq!(
            r.evaluate(&host("12.4", "550.54.14", &h100)),
            Outcome::Unmet {
                cuda: Some("13.0".into())
            }
        );
    }

    #[test]
    fn odd_values_parse_without_panicking() {
        for text in [
            "",
            "cuda",
            "cuda>=",
            "brand>=x",
            "arch>=9.0",
            "cuda>=12.0,,",
            "???",
        ] {
            let r = Requirement::parse(text);
            let names = vec!["NVIDIA A100".to_string()];
            let _ = r.evaluate(&host("12.0", "525.60.13", &names));
        }
        assert_eq!(
            Requirement::parse("").evaluate(&host("11.0", "450.80.02", &[])),
            Outcome::Direct
        );
        let arch = Requirement::parse("cuda>=11.0,arch>=9.0");
        let mut h = host("12.0", "525.60.13", &[]);
        let ccs = [Version::parse("8.0").unwrap()];
        h.compute_capabilities = &ccs;
        assert_eq!(
            arch.evaluate(&h),
            Outcome::Unmet {
                cuda: Some("11.0".into())
            }
        );
    }

    #[test]
    fn brands_follow_the_gpu_name() {
        assert_eq!(brand_of("NVIDIA GeForce RTX 4090"), &["geforce"]);
        assert_eq!(brand_of("NVIDIA RTX A6000"), &["nvidiartx"]);
        assert_eq!(brand_of("Quadro RTX 8000"), &["quadrortx", "quadro"]);
        assert!(brand_of("Tesla V100-SXM2-32GB").contains(&"tesla"));
    }
}
