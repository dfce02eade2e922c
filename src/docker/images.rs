//! Listing local images with what each says it carries.

use std::collections::BTreeMap;

use bollard::models::{ImageInspect, ImageSummary};
use bollard::query_parameters::ListImagesOptionsBuilder;
use futures::{StreamExt, TryStreamExt};

use super::connect::Engine;
use super::error::DockerError;
use super::types::ImageInfo;
use crate::image::image_facts;

/// How many image inspects run at once.
const INSPECT_CONCURRENCY: usize = 16;

impl Engine {
    /// The local images (as `docker images`), each inspected once for its env and labels.
    /// An image deleted between the list and its inspect is left out.
    pub async fn images(&self) -> Result<Vec<ImageInfo>, DockerError> {
        let options = ListImagesOptionsBuilder::new().build();
        let summaries = self
            .docker
            .list_images(Some(options))
            .await
            .map_err(|e| self.error(e, "the image list"))?;
        let images: Vec<Option<ImageInfo>> = futures::stream::iter(summaries)
            .map(|summary| async move {
                match self.docker.inspect_image(&summary.id).await {
                    Ok(inspect) => Ok(Some(image_info(summary, &inspect))),
                    Err(e) => match self.error(e, &format!("image {}", summary.id)) {
                        DockerError::NotFound { .. } => Ok(None),
                        other => Err(other),
                    },
                }
            })
            .buffered(INSPECT_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(images.into_iter().flatten().collect())
    }
}

fn image_info(summary: ImageSummary, inspect: &ImageInspect) -> ImageInfo {
    // Old engines write "<none>:<none>" for an untagged image; newer ones leave the list empty.
    let tags: Vec<String> = summary
        .repo_tags
        .into_iter()
        .filter(|t| t != "<none>:<none>")
        .collect();
    let digests: Vec<String> = summary
        .repo_digests
        .into_iter()
        .filter(|d| d != "<none>@<none>")
        .collect();
    let config = inspect.config.as_ref();
    let env = config.and_then(|c| c.env.clone()).unwrap_or_default();
    let labels: BTreeMap<String, String> = config
        .and_then(|c| c.labels.clone())
        .unwrap_or(summary.labels)
        .into_iter()
        .collect();
    let facts = image_facts(&env, &labels, &tags);
    ImageInfo {
        id: summary.id,
        tags,
        digests,
        size_bytes: u64::try_from(summary.size).unwrap_or(0),
        created: summary.created,
        facts,
    }
}
