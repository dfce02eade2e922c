//! Parsers for what the doctor reads: the kernel module's version line, `nvcc --version`, CDI spec
//! files and `CUDA_VISIBLE_DEVICES`. Pure functions over text.

use serde::Serialize;

/// The kernel module's version as /proc or /sys tells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModuleVersion {
    pub version: String,
    /// The open GPU kernel modules (Turing and later) rather than the proprietary ones.
    pub open: Option<bool>,
}

/// Parses `/proc/driver/nvidia/version`, whose first line reads e.g.
/// `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...` or
/// `NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023`.
pub fn proc_module_version(text: &str) -> Option<ModuleVersion> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    let rest = line.trim_start_matches("NVRM version:");
    // The first dotted all-digit word is the version; `x86_64` and dates never match.
    let version = rest.split_whitespace().find(|w| is_version(w))?;
    Some(ModuleVersion {
        version: version.to_string(),
        open: Some(rest.contains("Open Kernel Module")),
    })
}

/// Parses `/sys/module/nvidia/version` (just the version, e.g. `580.159.04`).
pub fn sys_module_version(text: &str) -> Option<ModuleVersion> {
    let version = text.trim();
    is_version(version).then(|| ModuleVersion {
        version: version.to_string(),
        open: None,
    })
}

fn is_version(word: &str) -> bool {
    word.contains('.')
        && word
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// The CUDA release of `nvcc --version` (`Cuda compilation tools, release 13.0, V13.0.88`).
pub fn nvcc_release(text: &str) -> Option<(u32, u32)> {
    let line = text.lines().find(|l| l.contains("release"))?;
    let after = line.split("release").nth(1)?.trim_start();
    let word: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// The device kinds a CDI spec (YAML or JSON) declares, e.g. `nvidia.com/gpu`.
///
/// A spec has one top-level `kind`; reading the key rather than parsing the whole document keeps
/// a YAML dependency out and tolerates the spec versions nvidia-ctk has written over time.
pub fn cdi_kinds(text: &str) -> Vec<String> {
    let mut kinds = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("kind") {
        let after = &rest[at + 4..];
        rest = after;
        let after = after.trim_start_matches('"').trim_start();
        let Some(value) = after.strip_prefix(':') else {
            continue;
        };
        let value: String = value
            .trim_start()
            .trim_start_matches(['"', '\''])
            .chars()
            .take_while(|c| !matches!(c, '"' | '\'' | ',' | '}' | '\n' | '\r' | ' '))
            .collect();
        if value.contains('/') && !kinds.contains(&value) {
            kinds.push(value);
        }
    }
    kinds
}

/// One entry of `CUDA_VISIBLE_DEVICES`, as CUDA reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VisibleEntry {
    Index(u32),
    /// A GPU UUID or a unique prefix of one (`GPU-8f3a`), as CUDA accepts.
    Uuid(String),
    /// A MIG instance (`MIG-...`), which NVML's GPU list cannot confirm.
    Mig(String),
    /// Anything else: CUDA stops reading the list here.
    Invalid(String),
}

/// Splits `CUDA_VISIBLE_DEVICES` into its entries (an empty value has none).
pub fn visible_devices(value: &str) -> Vec<VisibleEntry> {
    value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if let Ok(i) = e.parse::<u32>() {
                VisibleEntry::Index(i)
            } else if e.starts_with("GPU-") {
                VisibleEntry::Uuid(e.to_string())
            } else if e.starts_with("MIG-") {
                VisibleEntry::Mig(e.to_string())
            } else {
                VisibleEntry::Invalid(e.to_string())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_h100_hosts_proc_line() {
        let v = proc_module_version(include_str!("testdata/proc_driver_nvidia_version"));
        assert_eq!(
            v,
            Some(ModuleVersion {
                version: "580.159.04".into(),
                open: Some(true)
            })
        );
    }

    #[test]
    fn the_proprietary_modules_proc_line() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
        let v = proc_module_version(text).expect("parsed");
        assert_eq!(v.version, "535.54.03");
        assert_eq!(v.open, Some(false));
        assert_eq!(proc_module_version("GCC version: 12.2.0\n"), None);
        assert_eq!(proc_module_version("NVRM version: garbled\n"), None);
    }

    #[test]
    fn the_sys_module_file() {
        let v = sys_module_version(include_str!("testdata/sys_module_nvidia_version"));
        assert_eq!(v.map(|v| v.version), Some("580.159.04".to_string()));
        assert_eq!(sys_module_version("\n"), None);
        assert_eq!(sys_module_version("580.x\n"), None);
    }

    #[test]
    fn nvcc_releases() {
        assert_eq!(
            nvcc_release(include_str!("testdata/nvcc_version")),
            Some((13, 0))
        );
        let old = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.4, V12.4.131\n";
        assert_eq!(nvcc_release(old), Some((12, 4)));
        assert_eq!(nvcc_release("command not found"), None);
        assert_eq!(nvcc_release("release notes"), None);
    }

    #[test]
    fn cdi_spec_kinds() {
        assert_eq!(
            cdi_kinds(include_str!("testdata/cdi_nvidia.yaml")),
            vec!["nvidia.com/gpu"]
        );
        assert_eq!(
            cdi_kinds(include_str!("testdata/cdi_other.json")),
            vec!["vendor.example/fpga"]
        );
        assert_eq!(
            cdi_kinds("kind: 'nvidia.com/gpu'\n"),
            vec!["nvidia.com/gpu"]
        );
        assert!(cdi_kinds("devices: []\n").is_empty());
    }

    #[test]
    fn visible_device_lists() {
        use VisibleEntry::*;
        assert_eq!(
            visible_devices("0, 2,GPU-8f3a,MIG-1234,nope"),
            vec![
                Index(0),
                Index(2),
                Uuid("GPU-8f3a".into()),
                Mig("MIG-1234".into()),
                Invalid("nope".into())
            ]
        );
        assert!(visible_devices("").is_empty());
        assert_eq!(visible_devices("-1"), vec![Invalid("-1".into())]);
    }
}
