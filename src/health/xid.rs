//! The Xid catalog as data (`assets/health/xid.toml`, user files layered over it): what each Xid
//! means, its class, severity and the action it calls for.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::layer::{located_toml_error, user_toml_files};

/// The built-in catalog file.
pub const BUILTIN: (&str, &str) = ("xid.toml", include_str!("../../assets/health/xid.toml"));

/// Which part of the machine an Xid is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum XidClass {
    Application,
    Memory,
    Nvlink,
    BusPower,
    FirmwareGsp,
    Driver,
    Thermal,
}

impl XidClass {
    /// The class in a sentence: "a memory error".
    pub fn words(self) -> &'static str {
        match self {
            XidClass::Application => "application",
            XidClass::Memory => "memory and ECC",
            XidClass::Nvlink => "NVLink",
            XidClass::BusPower => "bus and power",
            XidClass::FirmwareGsp => "firmware and GSP",
            XidClass::Driver => "driver",
            XidClass::Thermal => "thermal",
        }
    }

    /// The class in a word or two, for a line of the dashboard.
    pub fn short(self) -> &'static str {
        match self {
            XidClass::Application => "app",
            XidClass::Memory => "memory",
            XidClass::Nvlink => "NVLink",
            XidClass::BusPower => "bus/power",
            XidClass::FirmwareGsp => "firmware",
            XidClass::Driver => "driver",
            XidClass::Thermal => "thermal",
        }
    }

    /// Whether the hardware (or its firmware) is at fault rather than a program.
    pub fn is_hardware(self) -> bool {
        !matches!(self, XidClass::Application)
    }
}

/// How serious an Xid is: info needs nothing, warn a look, fail the GPU needs attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Fail,
}

/// What to do about an Xid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum XidAction {
    None,
    RestartApp,
    ResetGpu,
    Reboot,
    DrainContactVendor,
    CheckCablingPower,
    ContactVendor,
    FollowOtherXid,
}

impl XidAction {
    /// The action in a few words, for a line of the dashboard.
    pub fn short(self) -> &'static str {
        match self {
            XidAction::None => "nothing to do",
            XidAction::RestartApp => "restart the app",
            XidAction::ResetGpu => "reset the GPU",
            XidAction::Reboot => "reboot",
            XidAction::DrainContactVendor => "drain, call vendor",
            XidAction::CheckCablingPower => "check cabling",
            XidAction::ContactVendor => "call the vendor",
            XidAction::FollowOtherXid => "see the other Xid",
        }
    }
}

/// One Xid of the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidInfo {
    pub xid: u32,
    /// The catalog's mnemonic, e.g. `ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS`.
    pub name: String,
    /// In plain words.
    pub meaning: String,
    pub class: XidClass,
    pub severity: Severity,
    pub action: XidAction,
    /// The action as a sentence.
    pub action_text: String,
    /// The catalog's immediate resolution bucket (`RESET_GPU`, `RESTART_BM`...).
    pub catalog_action: String,
    /// The catalog's investigatory resolution bucket.
    pub catalog_investigation: String,
    /// The catalog's trigger conditions and resolution, where it has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
}

/// The Xid that sums up the recovery action of the others (`... from 0x0 (None) to 0x2 (Node
/// Reboot Required)`).
pub const RECOVERY_ACTION_XID: u32 = 154;

/// The fifth-generation NVLink Xids, whose line says whether the error was fatal.
pub const NVLINK5_XIDS: std::ops::RangeInclusive<u32> = 144..=150;

impl XidInfo {
    /// The severity of one occurrence: the catalog's, except where the line itself tells more
    /// (an Xid 154's new recovery action; an NVLink 144-150 line marked non-fatal).
    pub fn severity_for(&self, text: &str) -> Severity {
        if self.xid == RECOVERY_ACTION_XID {
            return match recovery_action(text).as_deref() {
                Some("None") => Severity::Info,
                Some(_) => Severity::Fail,
                None => self.severity,
            };
        }
        if NVLINK5_XIDS.contains(&self.xid) && is_nonfatal(text) {
            return Severity::Warn.min(self.severity);
        }
        self.severity
    }
}

/// The recovery action an Xid 154 line changes to: "Node Reboot Required" from
/// `GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)`.
pub fn recovery_action(text: &str) -> Option<String> {
    let after = &text[text.find(" to ")? + 4..];
    let open = after.find('(')?;
    let close = after[open..].find(')')? + open;
    let action = after[open + 1..close].trim();
    (!action.is_empty()).then(|| action.to_string())
}

fn is_nonfatal(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .any(|w| w.eq_ignore_ascii_case("nonfatal") || w.eq_ignore_ascii_case("non-fatal"))
}

/// Where a catalog file's facts come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CatalogSource {
    pub origin: String,
    pub source: String,
    pub date: String,
}

/// The built-in entries with the user's layered over them, by Xid number.
#[derive(Clone, Debug, Default, Serialize)]
pub struct XidCatalog {
    pub entries: Vec<XidInfo>,
    pub sources: Vec<CatalogSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    source: String,
    date: String,
    #[serde(default)]
    xid: Vec<XidInfo>,
}

impl XidCatalog {
    /// The built-in catalog with every `*.toml` in `user_dir` (normally `<config dir>/health`)
    /// layered over it in name order. A user file that does not parse is skipped with a
    /// `path:line:col: reason` warning; a missing directory is no warning.
    pub fn load(user_dir: Option<&Path>) -> (XidCatalog, Vec<String>) {
        let mut catalog = XidCatalog::default();
        let mut warnings = Vec::new();
        if let Err(reason) = catalog.layer_text(BUILTIN.1, BUILTIN.0) {
            warnings.push(format!("built-in Xid catalog {reason} (a bug in gpudeck)"));
        }
        if let Some(dir) = user_dir {
            for (shown, text) in user_toml_files(dir, &mut warnings) {
                if let Err(warning) = catalog.layer_text(&text, &shown) {
                    warnings.push(format!("{warning}; the file is skipped"));
                }
            }
        }
        catalog.entries.sort_by_key(|e| e.xid);
        (catalog, warnings)
    }

    /// The built-in catalog only.
    pub fn builtin() -> XidCatalog {
        Self::load(None).0
    }

    /// The entry for `xid`; None for an Xid the catalog does not know.
    pub fn get(&self, xid: u32) -> Option<&XidInfo> {
        self.entries.iter().find(|e| e.xid == xid)
    }

    /// Parses a whole file before changing anything, so a bad file leaves no half-layer.
    fn layer_text(&mut self, text: &str, origin: &str) -> Result<(), String> {
        let raw: RawFile =
            toml::from_str(text).map_err(|e| located_toml_error(origin, text, &e))?;
        for entry in raw.xid {
            match self.entries.iter_mut().find(|e| e.xid == entry.xid) {
                Some(existing) => *existing = entry,
                None => self.entries.push(entry),
            }
        }
        self.sources.push(CatalogSource {
            origin: origin.to_string(),
            source: raw.source,
            date: raw.date,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_and_action_fits_the_dashboards_xid_line() {
        // "  79 03:14:07 bus/power: reboot": the detail pane is 44 columns inside at 80.
        let catalog = XidCatalog::builtin();
        for e in &catalog.entries {
            let line = format!(
                "{:>4} 00:00:00 {}: {}",
                e.xid,
                e.class.short(),
                e.action.short()
            );
            assert!(line.chars().count() <= 42, "{line:?}");
        }
    }

    /// The Xids data-centre and workstation GPUs report in practice (issue 18).
    const REQUIRED: [u32; 34] = [
        13, 31, 32, 38, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 119, 120, 121,
        140, 143, 144, 145, 146, 147, 148, 149, 150, 154, 8, 46,
    ];

    #[test]
    fn the_builtin_catalog_loads_with_every_required_xid_and_its_source() {
        let (catalog, warnings) = XidCatalog::load(None);
        assert!(warnings.is_empty(), "{warnings:?}");
        for xid in REQUIRED {
            let e = catalog
                .get(xid)
                .unwrap_or_else(|| panic!("Xid {xid} missing"));
            assert!(!e.name.is_empty() && !e.meaning.is_empty(), "{e:?}");
            assert!(e.action_text.ends_with('.'), "a sentence: {e:?}");
        }
        assert_eq!(catalog.sources.len(), 1);
        assert!(catalog.sources[0]
            .source
            .contains("docs.nvidia.com/deploy/xid-errors"));
        assert_eq!(catalog.sources[0].date, "2026-11-25");
        let numbers: Vec<u32> = catalog.entries.iter().map(|e| e.xid).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(numbers, sorted, "sorted, each Xid once");
        assert_eq!(catalog.get(999), None);
    }

    #[test]
    fn classes_and_severities_follow_the_catalog() {
        let c = XidCatalog::builtin();
        let fell_off = c.get(79).unwrap();
        assert_eq!(
            (fell_off.class, fell_off.severity, fell_off.action),
            (XidClass::BusPower, Severity::Fail, XidAction::Reboot)
        );
        assert_eq!(fell_off.catalog_action, "RESTART_BM");
        for hardware in [48, 64, 74, 79, 94, 95, 119, 120, 140] {
            let e = c.get(hardware).unwrap();
            assert_eq!(e.severity, Severity::Fail, "Xid {hardware}");
            assert!(e.class.is_hardware(), "Xid {hardware}");
        }
        for app in [13, 31, 43] {
            let e = c.get(app).unwrap();
            assert_eq!(
                (e.class, e.severity),
                (XidClass::Application, Severity::Warn)
            );
            assert_eq!(e.action, XidAction::RestartApp);
        }
        assert_eq!(c.get(45).unwrap().severity, Severity::Info);
        assert_eq!(c.get(54).unwrap().action, XidAction::CheckCablingPower);
    }

    #[test]
    fn an_xid_154_takes_the_severity_of_the_action_it_names() {
        let c = XidCatalog::builtin();
        let e = c.get(154).unwrap();
        let reboot = "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)";
        assert_eq!(
            recovery_action(reboot).as_deref(),
            Some("Node Reboot Required")
        );
        assert_eq!(e.severity_for(reboot), Severity::Fail);
        let none = "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)";
        assert_eq!(e.severity_for(none), Severity::Info);
        assert_eq!(e.severity_for("something else"), e.severity);
        assert_eq!(recovery_action("changed to nothing"), None);
    }

    #[test]
    fn a_nonfatal_nvlink5_line_is_a_warning_and_a_fatal_one_a_failure() {
        let c = XidCatalog::builtin();
        // Lines as GB200 machines log them (quoted in leptonai/gpud#1160).
        let fatal = "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 \
                     0x00000000 0x00000000 0x00000000)";
        assert_eq!(c.get(149).unwrap().severity_for(fatal), Severity::Fail);
        let nonfatal = "SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 \
                        0x00000000 0x00000000 0x00000000)";
        assert_eq!(c.get(144).unwrap().severity_for(nonfatal), Severity::Warn);
        // Other Xids ignore the word.
        assert_eq!(c.get(79).unwrap().severity_for("Nonfatal"), Severity::Fail);
    }

    #[test]
    fn user_files_replace_and_add_entries_and_bad_ones_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let entry = |xid: u32, severity: &str| {
            format!(
                "[[xid]]\nxid = {xid}\nname = \"LOCAL\"\nmeaning = \"ours\"\nclass = \"driver\"\n\
                 severity = \"{severity}\"\naction = \"none\"\naction_text = \"Nothing.\"\n\
                 catalog_action = \"IGNORE\"\ncatalog_investigation = \"IGNORE\"\n"
            )
        };
        std::fs::write(
            dir.path().join("a.toml"),
            format!(
                "source = \"our lab\"\ndate = \"2026-11-25\"\n{}{}",
                entry(13, "info"),
                entry(500, "warn")
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.toml"),
            format!("source = \"x\"\ndate = \"y\"\n{}", entry(79, "fatal")),
        )
        .unwrap();
        let (c, warnings) = XidCatalog::load(Some(dir.path()));
        assert_eq!(c.get(13).unwrap().severity, Severity::Info);
        assert_eq!(c.get(500).unwrap().meaning, "ours");
        assert_eq!(
            c.get(79).unwrap().severity,
            Severity::Fail,
            "b.toml changed nothing"
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("b.toml:8:12: unknown variant `fatal`"),
            "{}",
            warnings[0]
        );
        assert!(
            warnings[0].ends_with("the file is skipped"),
            "{}",
            warnings[0]
        );
        assert_eq!(c.sources.len(), 2);
        let (_, none) = XidCatalog::load(Some(Path::new("/nonexistent/gpudeck/health")));
        assert!(none.is_empty());
    }

    /// Property tests: any text as a user catalog file is layered or refused with a mistake at
    /// `file:line:col`, never a panic, and a refused file changes nothing.
    mod fuzz {
        use proptest::prelude::*;

        use super::*;
        use crate::fuzz::{self, assert_located};

        /// A user's file of two entries (the whole built-in file makes each case slow).
        const FILES: [&str; 1] = ["source = \"our lab\"\ndate = \"2026-11-25\"\n\n\
            [[xid]]\nxid = 79\nname = \"FELL_OFF\"\nmeaning = \"gone\"\nclass = \"bus-power\"\n\
            severity = \"fail\"\naction = \"reboot\"\naction_text = \"Reboot.\"\n\
            catalog_action = \"RESTART_BM\"\ncatalog_investigation = \"CONTACT_SUPPORT\"\n\n\
            [[xid]]\nxid = 500\nname = \"OURS\"\nmeaning = \"ours\"\nclass = \"driver\"\n\
            severity = \"info\"\naction = \"none\"\naction_text = \"Nothing.\"\n\
            catalog_action = \"IGNORE\"\ncatalog_investigation = \"IGNORE\"\n\
            resolution = \"none needed\"\n"];

        /// The built-in catalog and its JSON, read once for all cases.
        fn builtin() -> &'static (XidCatalog, String) {
            static BUILTIN: std::sync::OnceLock<(XidCatalog, String)> = std::sync::OnceLock::new();
            BUILTIN.get_or_init(|| {
                let catalog = XidCatalog::builtin();
                let json = serde_json::to_string(&catalog).unwrap();
                (catalog, json)
            })
        }

        fn check(text: &str) {
            let (catalog, before) = builtin();
            let mut catalog = catalog.clone();
            if let Err(message) = catalog.layer_text(text, "mine.toml") {
                assert_located(&message, "mine.toml", text);
                assert_eq!(
                    &serde_json::to_string(&catalog).unwrap(),
                    before,
                    "half a layer"
                );
            }
        }

        #[test]
        fn the_sample_the_mistakes_start_from_is_valid() {
            let mut catalog = XidCatalog::default();
            assert_eq!(catalog.layer_text(FILES[0], "sample.toml"), Ok(()));
            assert_eq!(catalog.entries.len(), 2);
        }

        proptest! {
            #![proptest_config(fuzz::config())]

            #[test]
            fn any_text_as_a_catalog(text in fuzz::any_text()) {
                check(&text);
            }

            #[test]
            fn a_catalog_with_mistakes(text in fuzz::near_miss(&FILES)) {
                check(&text);
            }
        }
    }
}
