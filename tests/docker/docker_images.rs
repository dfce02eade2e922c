//! Local images on the real engine: the list with CUDA facts from each image's env, and removal.

use crate::support;

use gpudeck::docker::{render_images_text, DockerError, ImageInfo};
use support::docker::{connect as engine, docker, engine_or_skip, unique};
use support::docker_cleanup::Cleanup;

fn find<'a>(images: &'a [ImageInfo], tag: &str) -> Option<&'a ImageInfo> {
    images.iter().find(|i| i.tags.iter().any(|t| t == tag))
}

#[tokio::test]
async fn the_image_list_reads_cuda_facts_from_the_env() {
    if !engine_or_skip("the_image_list_reads_cuda_facts_from_the_env") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let tag = cleanup.image(&[
        "CUDA_VERSION=12.4.1",
        "NV_CUDNN_VERSION=9.1.0.70",
        "PYTORCH_VERSION=2.5.1",
    ]);
    let engine = engine().await;
    let images = engine.images().await.unwrap();
    let image = find(&images, &tag).expect("the test image is listed");
    assert!(image.id.starts_with("sha256:"), "{image:?}");
    assert!(
        image.size_bytes > 500_000,
        "busybox alone is ~2 MB: {image:?}"
    );
    assert!(image.created > 1_600_000_000);
    assert!(
        image.digests.is_empty(),
        "an imported image has no registry digest"
    );
    let facts = &image.facts;
    assert_eq!(facts.cuda.as_deref(), Some("12.4.1"));
    assert_eq!(facts.cudnn.as_deref(), Some("9.1.0.70"));
    assert_eq!(facts.pytorch.as_deref(), Some("2.5.1"));
    assert_eq!(facts.tensorflow, None);
    assert_eq!(
        facts.sources,
        [
            "env CUDA_VERSION",
            "env NV_CUDNN_VERSION",
            "env PYTORCH_VERSION"
        ]
    );

    let text = render_images_text(&images, 1000);
    let (repo, version) = tag.split_once(':').unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{repo} ")))
        .expect("a row");
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[1], version, "{text}");
    assert_eq!(
        &words[4..],
        ["12.4.1", "9.1.0.70", "pytorch", "2.5.1"],
        "{text}"
    );
}

#[tokio::test]
async fn nvidias_cuda_13_env_survives_the_engine() {
    if !engine_or_skip("nvidias_cuda_13_env_survives_the_engine") {
        return;
    }
    // The env of nvidia/cuda:13.0.2, as captured on a GPU host.
    let fixture = include_str!("../fixtures/h100-host/image_env_cuda13");
    let env: Vec<String> = fixture
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(key, value)| format!("{key}=\"{value}\""))
        .collect();
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let mut cleanup = Cleanup::default();
    let tag = cleanup.image(&env);
    let images = engine().await.images().await.unwrap();
    let facts = &find(&images, &tag).expect("listed").facts;
    assert_eq!(facts.cuda.as_deref(), Some("13.0.2"));
    let require = fixture
        .lines()
        .find_map(|l| l.strip_prefix("NVIDIA_REQUIRE_CUDA="));
    assert_eq!(facts.require_cuda.as_deref(), require);
    assert_eq!(
        facts.sources,
        ["env CUDA_VERSION", "env NVIDIA_REQUIRE_CUDA"]
    );
}

#[tokio::test]
async fn removing_images() {
    if !engine_or_skip("removing_images") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let tag = cleanup.image(&[]);
    let engine = engine().await;

    // A container keeps its image: removing the image then needs force.
    let name = unique("user");
    cleanup.container(&name);
    docker(&["create", "--name", &name, &tag, "true"]);
    let err = engine.remove_image(&tag, false).await.unwrap_err();
    assert!(matches!(err, DockerError::Conflict { .. }), "{err:?}");
    engine.remove(&name, false).await.unwrap();

    engine.remove_image(&tag, false).await.unwrap();
    let images = engine.images().await.unwrap();
    assert!(find(&images, &tag).is_none(), "still listed");
    let err = engine.remove_image(&tag, false).await.unwrap_err();
    assert_eq!(
        err,
        DockerError::NotFound {
            what: format!("image {tag}")
        }
    );
}

/// `gpudeck images --json` and `containers --json` are documents with a schema, like every other
/// JSON twin, and the text table gives sizes in the Images tab's units.
#[test]
fn the_cli_lists_carry_a_schema_and_the_tabs_units() {
    if !engine_or_skip("the_cli_lists_carry_a_schema_and_the_tabs_units") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let tag = format!("gpudeck-test-w7-words-{}:latest", std::process::id());
    cleanup.image_name(&tag);
    // A 3 MiB file is the whole image: no base image needed, the size reads in MiB.
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("weights.bin"), vec![7u8; 3 << 20]).unwrap();
    let imported = std::process::Command::new("sh")
        .args(["-c", "tar -C \"$1\" -c . | docker import - \"$2\"", "sh"])
        .arg(root.path())
        .arg(&tag)
        .output()
        .unwrap();
    assert!(imported.status.success(), "{}", support::stderr(&imported));
    let dirs = support::Dirs::new();
    let run = |args: &[&str]| {
        let out = dirs.gpudeck("").args(args).output().expect("gpudeck runs");
        assert!(out.status.success(), "{args:?}: {}", support::stderr(&out));
        support::stdout(&out)
    };
    let doc: serde_json::Value = serde_json::from_str(&run(&["images", "--json"])).unwrap();
    assert_eq!(doc["schema"], "gpudeck.images/v1");
    let listed = doc["images"].as_array().expect("images[]");
    let mine = listed
        .iter()
        .find(|i| {
            i["tags"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == tag.as_str()))
        })
        .expect("the test image is listed");
    let size = mine["size_bytes"].as_u64().expect("size_bytes");
    let doc: serde_json::Value = serde_json::from_str(&run(&["containers", "--json"])).unwrap();
    assert_eq!(doc["schema"], "gpudeck.containers/v1");
    assert!(doc["containers"].is_array(), "{doc}");

    let text = run(&["images"]);
    let (repo, _) = tag.split_once(':').unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{repo} ")))
        .expect("a row");
    // Piped, the table fits 80 columns and leaves columns out: the size is the word under the
    // SIZE title (right-aligned, so it ends where the title ends).
    let header = text.lines().next().expect("a header");
    let end = header.find("SIZE").expect("a SIZE column") + "SIZE".len();
    let size_word = row[..end].split_whitespace().last().expect("a size");
    assert_eq!(size_word, gpudeck::units::human_bytes(size), "{text}");
    assert!(size_word.ends_with("MiB"), "busybox is a few MiB: {text}");
}
