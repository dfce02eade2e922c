//! `gpudeck compat [IMAGE...]`: the verdicts for named images, or for every local and catalog image, without a TUI.

use std::process::ExitCode;

use bollard::Docker;

use super::board::assess;
use super::data::CompatData;
use super::profile::{
    local_profiles, short_id, GpuRuntime, HostProfile, ImageProfile, ImageSource,
};
use super::report::{CompatReport, EXIT_FAILED, EXIT_UNKNOWN_IMAGE};
use super::tag::read_tag;
use crate::docker::{resolve_host, Engine, EngineInfo, ImageInfo};
use crate::gpu::report::GpuReport;
use crate::image::ImageRef;
use crate::pull::credentials_for;
use crate::pull::{Catalog, CatalogEntry};
use crate::registry::{fetch_config, FetchOptions, RemoteError};

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
    let docker = runtime.block_on(docker_facts(docker_host));
    if let Some(note) = &docker.note {
        errln!("{}", crate::output::wrap(&format!("gpudeck: {note}"), "  "));
    }
    let host = HostProfile::from_report(gpu, GpuRuntime::from_engine(docker.info.as_ref()));
    let found = runtime.block_on(find_images(
        wanted,
        &docker.images,
        catalog.entries(),
        data,
        docker.client.as_ref(),
    ));
    let mut profiles = Vec::new();
    let mut unknown = Vec::new();
    for result in found {
        match result {
            Ok(profile) => profiles.push(profile),
            Err(message) => unknown.push(message),
        }
    }
    if !unknown.is_empty() {
        for message in unknown {
            errln!(
                "{}",
                crate::output::wrap(&format!("gpudeck: {message}"), "  ")
            );
        }
        return ExitCode::from(EXIT_UNKNOWN_IMAGE);
    }
    let board = if wanted.is_empty() {
        assess(
            data,
            host,
            local_profiles(&docker.images),
            catalog.entries(),
        )
    } else {
        let mut board = assess(data, host, profiles, catalog.entries());
        board.images.truncate(wanted.len());
        board
    };
    let report = CompatReport::new(gpu.host.clone(), board, data.sources.clone());
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => {
                errln!("gpudeck: could not encode the report: {e}. This is a bug in gpudeck: please report it with the text report (`gpudeck compat` without --json).");
                return ExitCode::from(EXIT_FAILED);
            }
        }
    } else {
        out!(
            "{}",
            report.render_text(!wanted.is_empty(), crate::output::width())
        );
    }
    ExitCode::from(report.exit_code())
}

/// What the engine could tell.
struct DockerFacts {
    info: Option<EngineInfo>,
    images: Vec<ImageInfo>,
    client: Option<Docker>,
    /// Why some of it is missing.
    note: Option<String>,
}

async fn docker_facts(host: Option<&str>) -> DockerFacts {
    let engine = match resolve_host(host, |k| std::env::var(k).ok()) {
        Ok(spec) => Engine::connect(&spec).await,
        Err(e) => Err(e),
    };
    let engine = match engine {
        Ok(engine) => engine,
        Err(e) => {
            return DockerFacts {
                info: None,
                images: Vec::new(),
                client: None,
                note: Some(format!(
                    "Docker: {}: {e} (local images not judged)",
                    e.title()
                )),
            }
        }
    };
    let info = engine.info().await.ok();
    let client = Some(engine.client().clone());
    let (images, note) = match engine.images().await {
        Ok(images) => (images, None),
        Err(e) => (
            Vec::new(),
            Some(format!("Docker: listing images failed: {e}")),
        ),
    };
    DockerFacts {
        info,
        images,
        client,
        note,
    }
}

/// Each named image: from the local engine, else from its registry's config (nothing is
/// pulled), else, when the registry cannot be reached, from the catalog or from the CUDA
/// version its tag names.
async fn find_images(
    wanted: &[String],
    local: &[ImageInfo],
    catalog: &[CatalogEntry],
    data: &CompatData,
    docker: Option<&Docker>,
) -> Vec<Result<ImageProfile, String>> {
    let mut out = Vec::new();
    for name in wanted {
        let parsed = match ImageRef::parse(name) {
            Ok(parsed) => parsed,
            Err(e) => {
                out.push(Err(format!("`{name}` is not an image reference: {e}")));
                continue;
            }
        };
        if let Some(profile) = find_local(name, &parsed, local) {
            out.push(Ok(profile));
            continue;
        }
        let in_catalog = catalog.iter().find(|e| e.image == parsed);
        let by_tag = read_tag(&parsed, data);
        out.push(match (remote_profile(name, &parsed, docker).await, in_catalog, by_tag) {
            (Ok(profile), _, _) => Ok(profile),
            (Err(e), Some(entry), _) if e.unreachable() => {
                let note = format!("gpudeck: {e}; using gpudeck's catalog for {name}");
                errln!("{}", crate::output::wrap(&note, "  "));
                Ok(ImageProfile::from_catalog(entry))
            }
            (Err(e), None, Some(tag)) if e.unreachable() => {
                let note = format!(
                    "gpudeck: {e}; judging {name} by the CUDA {} its tag names (`{}`), a likely verdict, not a certain one",
                    tag.cuda, tag.written
                );
                errln!("{}", crate::output::wrap(&note, "  "));
                Ok(ImageProfile::from_tag(name, &parsed, tag))
            }
            (Err(e), _, _) if e.unreachable() => Err(format!(
                "{name}: {e}\n  {}\n  gpudeck's catalog does not list it either: pull it (`gpudeck pull {name}`) once the registry is reachable, or describe it in a catalog file in your config dir (docs/compatibility.md)",
                e.fix()
            )),
            (Err(e), _, _) => Err(format!("{name}: {e}\n  {}", e.fix())),
        });
    }
    out
}

fn find_local(name: &str, parsed: &ImageRef, local: &[ImageInfo]) -> Option<ImageProfile> {
    local.iter().find_map(|image| {
        let by_tag = image
            .tags
            .iter()
            .find(|t| ImageRef::parse(t).is_ok_and(|r| &r == parsed))
            .cloned();
        let by_id = (name.len() >= 4 && image.id.trim_start_matches("sha256:").starts_with(name))
            .then(|| short_id(&image.id));
        let shown = by_tag.or(by_id)?;
        Some(ImageProfile::from_facts(
            &shown,
            &image.facts,
            ImageSource::Local,
        ))
    })
}

async fn remote_profile(
    name: &str,
    image: &ImageRef,
    docker: Option<&Docker>,
) -> Result<ImageProfile, RemoteError> {
    let host = image.registry_host().to_string();
    // A broken docker config or credential helper is not a reason to give up: the registry
    // will say whether it wants a login.
    let credentials = tokio::task::spawn_blocking(move || credentials_for(&host, None))
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
    let options = match docker {
        Some(docker) => FetchOptions::like_engine(docker, image).await,
        None => FetchOptions::for_image(image),
    };
    let remote = fetch_config(image, credentials.as_ref(), &options).await?;
    Ok(ImageProfile::from_remote(name, &remote))
}
