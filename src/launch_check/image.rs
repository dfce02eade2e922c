//! The image a launch names: found among the local ones, and judged for this host's driver.

use super::error::{LaunchError, Workload};
use crate::compat::{
    judge, CompatData, GpuRuntime, HostProfile, ImageProfile, ImageSource, Level, Verdict,
};
use crate::docker::types::{EngineInfo, ImageInfo};
use crate::gpu::report::GpuReport;
use crate::image::ImageRef;

/// What pre-flight needs to know about the machine, gathered by the caller.
#[derive(Debug, Clone)]
pub struct PreflightContext {
    pub gpu: GpuReport,
    pub engine: EngineInfo,
    pub local_images: Vec<ImageInfo>,
    pub compat: CompatData,
}

/// The compatibility verdict for a local image on this host: "will not run" is refused with
/// every reason and its fix (a warning when forced), "runs via compat" is a warning.
pub fn judge_image(
    name: &str,
    image: &ImageInfo,
    ctx: &PreflightContext,
    force: bool,
    workload: Workload,
) -> Result<(Verdict, Option<String>), LaunchError> {
    let runtime = GpuRuntime::from_engine(Some(&ctx.engine));
    let host = HostProfile::from_report(&ctx.gpu, runtime);
    let profile = ImageProfile::from_facts(name, &image.facts, ImageSource::Local);
    let verdict = judge(&ctx.compat, &host, &profile);
    let warning = match verdict.level {
        Level::WontRun if !force => {
            return Err(LaunchError::WontRun {
                workload,
                image: name.to_string(),
                reasons: reasons_text(&verdict, Level::WontRun),
            })
        }
        Level::WontRun => Some(format!(
            "{name} will not run on this machine; starting it anyway (--force):\n{}",
            reasons_text(&verdict, Level::WontRun)
        )),
        Level::Compat => Some(format!(
            "{name} runs here only through a compatibility layer:\n{}",
            reasons_text(&verdict, Level::Compat)
        )),
        Level::Runs | Level::Unknown => None,
    };
    Ok((verdict, warning))
}

/// The local image a name means: a tag equal to it once both are read as references (so
/// `busybox` finds `docker.io/library/busybox:latest`), or an id prefix of at least 4 digits.
pub fn find_local<'a>(name: &str, local: &'a [ImageInfo]) -> Option<&'a ImageInfo> {
    let wanted = ImageRef::parse(name).ok();
    let hex = name.trim_start_matches("sha256:");
    local.iter().find(|image| {
        let by_tag = wanted.as_ref().is_some_and(|wanted| {
            image
                .tags
                .iter()
                .any(|t| ImageRef::parse(t).is_ok_and(|r| same_name(&r, wanted)))
        });
        by_tag || (hex.len() >= 4 && image.id.trim_start_matches("sha256:").starts_with(hex))
    })
}

/// Equal once a missing tag reads as `latest`, as `docker run busybox` means `busybox:latest`.
fn same_name(a: &ImageRef, b: &ImageRef) -> bool {
    a.registry_host() == b.registry_host()
        && a.repository() == b.repository()
        && a.effective_tag() == b.effective_tag()
}

/// Every reason at `level`, each with its fix, one per line.
fn reasons_text(verdict: &Verdict, level: Level) -> String {
    verdict
        .reasons
        .iter()
        .filter(|r| r.level == level)
        .map(|r| match &r.fix {
            Some(fix) => format!("  - {}\n    fix: {fix}", r.text),
            None => format!("  - {}", r.text),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::types::ImageFacts;

    fn image(tag: &str) -> ImageInfo {
        ImageInfo {
            id: "sha256:0123456789abcdef".into(),
            tags: vec![tag.into()],
            digests: Vec::new(),
            size_bytes: 1,
            created: 0,
            facts: ImageFacts::default(),
        }
    }

    #[test]
    fn local_images_are_found_by_normalised_tag() {
        let local = vec![image("docker.io/library/busybox:latest")];
        assert!(find_local("busybox", &local).is_some());
        assert!(find_local("busybox:1.36", &local).is_none());
        assert!(
            find_local("012", &local).is_none(),
            "id prefixes need 4 digits"
        );
    }
}
