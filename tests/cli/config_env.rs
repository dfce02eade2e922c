//! `Dirs::from_env` reading the real process environment. Alone in its own test binary because
//! it sets environment variables, which other threads of one test binary would see.

use std::path::Path;

use gpudeck::config::{load, Dirs};

#[test]
fn from_env_honours_the_override_variables() {
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
