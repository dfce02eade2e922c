use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};

use super::*;

fn me() -> u32 {
    crate::private_files::current_uid()
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

fn refusal(temp: &Path) -> String {
    let err = Dirs::fallback_in(temp, me()).expect_err("refused");
    let text = err.to_string();
    for name in DIR_VARIABLES {
        assert!(text.contains(name), "{text}");
    }
    for line in text.lines().filter(|l| !l.contains(temp.to_str().unwrap())) {
        assert!(line.len() + "gpudeck: ".len() <= 80, "{line:?} is too wide");
    }
    text
}

#[test]
fn a_missing_fallback_is_created_private_and_used() {
    let temp = tempfile::tempdir().unwrap();
    let dirs = Dirs::fallback_in(temp.path(), me()).unwrap();
    let root = temp.path().join(format!("gpudeck-{}", me()));
    assert_eq!(mode(&root), 0o700);
    assert_eq!(dirs.config, root.join("config"));
    assert_eq!(dirs.data, root.join("data"));
    assert_eq!(dirs.state, root.join("state"));
    // And again, now that it exists and is ours.
    assert_eq!(Dirs::fallback_in(temp.path(), me()).unwrap(), dirs);
}

#[test]
fn a_fallback_open_to_others_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join(format!("gpudeck-{}", me()));
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
    let text = refusal(temp.path());
    assert!(
        text.contains("others may read or write it (mode 777)"),
        "{text}"
    );
    assert_eq!(mode(&root), 0o777, "left as it was");
}

#[test]
fn a_fallback_that_is_a_symbolic_link_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let elsewhere = temp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&elsewhere, temp.path().join(format!("gpudeck-{}", me()))).unwrap();
    let text = refusal(temp.path());
    assert!(text.contains("it is a symbolic link"), "{text}");
}

#[test]
fn a_fallback_of_another_owner_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join(format!("gpudeck-{}", me()));
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    // Another owner: as root, hand it to another uid; as anyone else, ask for another uid's.
    let (uid, other) = if me() == 0 {
        std::os::unix::fs::chown(&root, Some(4242), None).unwrap();
        (0, 4242)
    } else {
        let other = me() + 1;
        fs::rename(&root, temp.path().join(format!("gpudeck-{other}"))).unwrap();
        (other, me())
    };
    let err = Dirs::fallback_in(temp.path(), uid).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "it belongs to uid {other}, not to you (uid {uid})"
        )),
        "{text}"
    );
}

#[test]
fn no_fallback_is_made_when_every_variable_names_a_directory() {
    let env = |name: &str| -> Option<OsString> {
        DIR_VARIABLES
            .iter()
            .position(|v| *v == name)
            .map(|i| format!("/somewhere/{i}").into())
    };
    let dirs = Dirs::resolve(env).unwrap();
    assert_eq!(dirs.config, Path::new("/somewhere/0"));
    assert_eq!(dirs.data, Path::new("/somewhere/1"));
    assert_eq!(dirs.state, Path::new("/somewhere/2"));
}
