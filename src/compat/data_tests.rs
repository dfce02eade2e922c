use super::*;

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

#[test]
fn the_builtin_tables_load_and_answer() {
    let (data, warnings) = CompatData::load(None);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(data.sources.len(), 3);
    assert_eq!(data.min_driver(v("12.4.1")).unwrap().text, "550.54.14");
    assert_eq!(data.min_driver(v("13.0.2")).unwrap().text, "580.65.06");
    // 12.7 was never released: the next release's driver is the answer.
    assert_eq!(data.min_driver(v("12.7")).unwrap().text, "570.26");
    assert_eq!(data.major(12).unwrap().minor_compat_floor.text, "525.60.13");
    assert_eq!(data.arch(v("9.0")).unwrap().family, "Hopper");
    assert_eq!(data.arch(v("7.0")).unwrap().last_cuda, Some(v("12.9")));
    let tf = data.tensorflow(v("2.17.0")).unwrap();
    assert_eq!((tf.cuda, tf.cudnn.as_str()), (v("12.3"), "8.9"));
    assert_eq!(data.pytorch(v("13.0")).unwrap().targets.len(), 6);
    assert_eq!(
        data.releases.first().unwrap().cuda,
        v("13.2"),
        "newest first"
    );
}

#[test]
fn user_files_replace_and_add_entries_and_bad_ones_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a-local.toml"),
        "source = \"my lab\"\ndate = \"2026-11-22\"\n\n[[release]]\ncuda = \"12.4\"\nmin_driver = \"550.99.99\"\n\n[[release]]\ncuda = \"13.3\"\nmin_driver = \"600.1\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b-broken.toml"),
        "source = \"x\"\ndate = \"y\"\n[[release]]\ncuda = \"12.4\"\nmin_driver = 5\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c-bad-arch.toml"),
        "source = \"x\"\ndate = \"y\"\n[[pytorch]]\ncuda = \"12.4\"\narchs = [\"gfx90a\"]\n",
    )
    .unwrap();
    let (data, warnings) = CompatData::load(Some(dir.path()));
    assert_eq!(data.min_driver(v("12.4")).unwrap().text, "550.99.99");
    assert_eq!(data.min_driver(v("13.3")).unwrap().text, "600.1");
    assert_eq!(data.releases.first().unwrap().cuda, v("13.3"));
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("b-broken.toml:5:"), "{}", warnings[0]);
    assert!(
        warnings[1].contains(
            "c-bad-arch.toml:5:10: `gfx90a` is not an architecture (like \"sm_90\" or \
             \"compute_90\")"
        ),
        "{}",
        warnings[1]
    );
    assert_eq!(
        data.pytorch(v("12.4")).unwrap().archs.len(),
        7,
        "the bad file changed nothing"
    );
}

#[test]
fn a_missing_user_dir_is_no_warning() {
    let (_, warnings) = CompatData::load(Some(Path::new("/nonexistent/gpudeck/compat")));
    assert!(warnings.is_empty());
}

/// Property tests: any text as a user table file is layered or refused with a mistake at
/// `file:line:col`, never a panic, and a refused file changes nothing.
mod fuzz {
    use proptest::prelude::*;

    use super::*;
    use crate::fuzz::{self, assert_located};

    const TABLES: [&str; 3] = [BUILTIN_FILES[0].1, BUILTIN_FILES[1].1, BUILTIN_FILES[2].1];

    /// The built-in tables and their JSON, read once for all cases.
    fn builtin() -> &'static (CompatData, String) {
        static BUILTIN: std::sync::OnceLock<(CompatData, String)> = std::sync::OnceLock::new();
        BUILTIN.get_or_init(|| {
            let data = CompatData::builtin();
            let json = serde_json::to_string(&data).unwrap();
            (data, json)
        })
    }

    fn check(text: &str) {
        let (data, before) = builtin();
        let mut data = data.clone();
        if let Err(message) = data.layer_text(text, "mine.toml") {
            assert_located(&message, "mine.toml", text);
            assert_eq!(
                &serde_json::to_string(&data).unwrap(),
                before,
                "half a layer"
            );
        }
    }

    proptest! {
        #![proptest_config(fuzz::config())]

        #[test]
        fn any_text_as_a_table(text in fuzz::any_text()) {
            check(&text);
        }

        #[test]
        fn a_table_with_mistakes(text in fuzz::near_miss(&TABLES)) {
            check(&text);
        }
    }
}
