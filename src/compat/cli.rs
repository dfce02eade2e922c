//! `gpudeck compat [IMAGE...]`: the verdicts for named images, or for every local and catalog image, without a TUI.

use std::process::ExitCode;

use super::board::{assess, Board};
use super::data::CompatData;
use super::profile::{GpuRuntime, HostProfile, ImageProfile, ImageSource};
use super::report::CompatReport;
use crate::docker::{resolve_host, Engine, ImageInfo};
use crate::gpu::report::GpuReport;
use crate::pull::reference::ImageRef;
use crate::pull::{Catalog, CatalogEntry};

/// Exit code when a named image cannot be found anywhere.
const EXIT_UNKNOWN_IMAGE: u8 = 3;

/// Judges `wanted` (every local and catalog image when empty) and prints the report.
pub fn run(
    gpu: &GpuReport,
    wanted: &[String],
    json: bool,
    docker_host: Option<&str>,
    catalog: &Catalog,
    data: &CompatData,
    runtime: &tokio::runtime::Runtime,
) -> ExitCode {
    let (engine_info, local, docker_note) = runtime.block_on(docker_facts(docker_host));
    if let Some(note) = &docker_note {
        eprintln!("gpudeck: {note}");
    }
    let runtime_kind = GpuRuntime::from_engine(engine_info.as_ref());
    let host = HostProfile::from_report(gpu, runtime_kind);
    let board = match board_for(data, host, wanted, &local, catalog.entries()) {
        Ok(board) => board,
        Err(unknown) => {
            for message in unknown {
                eprintln!("gpudeck: {message}");
            }
            return ExitCode::from(EXIT_UNKNOWN_IMAGE);
        }
    };
    let report = CompatReport::new(gpu.host.clone(), board, data.sources.clone());
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("gpudeck: could not encode the report: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        print!("{}", report.render_text(!wanted.is_empty()));
    }
    ExitCode::from(report.exit_code())
}

/// The engine's info and local images, or a note saying why there are none.
async fn docker_facts(
    host: Option<&str>,
) -> (
    Option<crate::docker::EngineInfo>,
    Vec<ImageInfo>,
    Option<String>,
) {
    let engine = match resolve_host(host, |k| std::env::var(k).ok()) {
        Ok(spec) => Engine::connect(&spec).await,
        Err(e) => Err(e),
    };
    let engine = match engine {
        Ok(engine) => engine,
        Err(e) => {
            let note = format!("Docker: {}: {e} (local images not judged)", e.title());
            return (None, Vec::new(), Some(note));
        }
    };
    let info = engine.info().await.ok();
    match engine.images().await {
        Ok(images) => (info, images, None),
        Err(e) => (
            info,
            Vec::new(),
            Some(format!("Docker: listing images failed: {e}")),
        ),
    }
}

/// The board for the named images, or for every local and catalog image when none is named.
/// A named image is looked up locally first, then in the catalog.
pub fn board_for(
    data: &CompatData,
    host: HostProfile,
    wanted: &[String],
    local: &[ImageInfo],
    catalog: &[CatalogEntry],
) -> Result<Board, Vec<String>> {
    if wanted.is_empty() {
        return Ok(assess(data, host, local_profiles(local), catalog));
    }
    let mut profiles = Vec::new();
    let mut unknown = Vec::new();
    for name in wanted {
        match find_image(name, local, catalog) {
            Ok(profile) => profiles.push(profile),
            Err(message) => unknown.push(message),
        }
    }
    if !unknown.is_empty() {
        return Err(unknown);
    }
    let mut board = assess(data, host, profiles, catalog);
    board.images.truncate(wanted.len());
    Ok(board)
}

/// One profile per local image: its first tag names it, else its short id.
pub fn local_profiles(local: &[ImageInfo]) -> Vec<ImageProfile> {
    local
        .iter()
        .map(|image| {
            let name = image
                .tags
                .first()
                .cloned()
                .unwrap_or_else(|| short_id(&image.id));
            ImageProfile::from_facts(&name, &image.facts, ImageSource::Local)
        })
        .collect()
}

fn short_id(id: &str) -> String {
    id.trim_start_matches("sha256:").chars().take(12).collect()
}

fn find_image(
    name: &str,
    local: &[ImageInfo],
    catalog: &[CatalogEntry],
) -> Result<ImageProfile, String> {
    let parsed =
        ImageRef::parse(name).map_err(|e| format!("`{name}` is not an image reference: {e}"))?;
    let local_hit = local.iter().find_map(|image| {
        let by_tag = image
            .tags
            .iter()
            .find(|t| ImageRef::parse(t).is_ok_and(|r| r == parsed));
        let by_id = (name.len() >= 4 && image.id.trim_start_matches("sha256:").starts_with(name))
            .then(|| short_id(&image.id));
        by_tag.cloned().or(by_id).map(|n| (n, image))
    });
    if let Some((shown, image)) = local_hit {
        return Ok(ImageProfile::from_facts(
            &shown,
            &image.facts,
            ImageSource::Local,
        ));
    }
    if let Some(entry) = catalog.iter().find(|e| e.image == parsed) {
        return Ok(ImageProfile::from_catalog(entry));
    }
    Err(format!(
        "`{name}` is not a local image and not in gpudeck's catalog, so nothing is known about its CUDA. Pull it first (`gpudeck pull {name}`), or add it to a catalog file in your config dir (see README: Compatibility)"
    ))
}
