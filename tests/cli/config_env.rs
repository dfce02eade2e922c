//! `Dirs::from_env` reading the real process environment. The test runs in a process of its own
//! (`support::in_own_process`) because it sets environment variables, which the other tests of
//! this binary, on other threads, would see.

use std::path::Path;

use gpudeck::config::{load, Dirs};

use crate::support;

#[test]
fn from_env_honours_the_override_variables() {
    if !support::in_own_process(module_path!(), "from_env_honours_the_override_variables") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("cfg");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[general]\nhistory_secs = 30\n").unwrap();
    std::env::set_var("GPUDECK_CONFIG_DIR", &config);
    std::env::set_var("GPUDECK_DATA_DIR", root.path().join("data"));
    std::env::set_var("GPUDECK_STATE_DIR", root.path().join("state"));

    let dirs = Dirs::from_env().unwrap();
    assert_eq!(dirs.config, config);
    assert_eq!(dirs.data, root.path().join("data"));
    assert_eq!(dirs.state, Path::new(&root.path().join("state")));
    let loaded = load(&dirs, None, None).unwrap();
    assert_eq!(loaded.config.general.history_secs, 30);
}
