//! Control sequences an image or a container carries never reach the terminal: ENV values in
//! `gpudeck images` and `compat`, a container's command in `gpudeck containers`, shown with
//! their ESC, C1 and bidi controls as escapes (docs/hardening.md).

use crate::support;

use support::docker::{docker, engine_or_skip, unique};
use support::docker_cleanup::Cleanup;

use support::inert::{assert_inert, HOSTILE};

#[test]
fn an_image_s_env_and_a_container_s_command_are_printed_inert() {
    if !engine_or_skip("an_image_s_env_and_a_container_s_command_are_printed_inert") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let cuda = format!("CUDA_VERSION=12.4.1{HOSTILE}");
    let cudnn = format!("NV_CUDNN_VERSION=9{HOSTILE}");
    let torch = format!("PYTORCH_VERSION={HOSTILE}2.5");
    let tag = cleanup.image(&[&cuda, &cudnn, &torch]);
    let name = unique("controls");
    cleanup.container(&name);
    docker(&[
        "create",
        "--name",
        &name,
        &tag,
        "sh",
        "-c",
        &format!("echo {HOSTILE}"),
    ]);

    let dirs = support::Dirs::new();
    let gpudeck = |args: &[&str]| {
        let mut cmd = dirs.gpudeck("");
        cmd.env("COLUMNS", "300").args(args);
        cmd.output().expect("gpudeck runs")
    };
    let images = gpudeck(&["images"]);
    assert!(images.status.success(), "{}", support::stderr(&images));
    let (repo, _) = tag.split_once(':').unwrap();
    let text = support::stdout(&images);
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{repo} ")))
        .unwrap_or_else(|| panic!("a row for {repo}: {text}"));
    assert!(row.contains("12.4.1\\u001b]0;pwned"), "{row}");
    assert_inert("images", &images);

    let containers = gpudeck(&["containers"]);
    assert!(
        containers.status.success(),
        "{}",
        support::stderr(&containers)
    );
    let text = support::stdout(&containers);
    assert!(text.contains("echo \\u001b]0"), "{text}");
    assert_inert("containers", &containers);

    let compat = gpudeck(&["compat", &tag]);
    assert!(
        support::stdout(&compat).contains(repo),
        "{}",
        support::stderr(&compat)
    );
    assert_inert("compat", &compat);

    // JSON stays JSON, and its escapes read back as the values.
    let json = |args: &[&str]| {
        let out = gpudeck(args);
        assert_inert(&args.join(" "), &out);
        let doc: serde_json::Value = serde_json::from_str(&support::stdout(&out))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        doc
    };
    let doc = json(&["images", "--json"]);
    let image = doc["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["tags"][0] == tag.as_str())
        .expect("the image is listed");
    assert_eq!(image["facts"]["cuda"], format!("12.4.1{HOSTILE}").as_str());
    let doc = json(&["containers", "--json"]);
    let container = doc["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name.as_str())
        .expect("the container is listed");
    let command = container["command"].as_str().unwrap();
    assert!(command.contains(HOSTILE), "{command:?}");
}
