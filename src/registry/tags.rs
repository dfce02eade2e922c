//! A repository's tag list: whether the repository exists at all, and which tags come closest to a wrong one.

use serde::Deserialize;

use super::client::Session;
use super::error::{classify, Refusal, RemoteError};

/// What a registry's tag list said about a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagListing {
    /// The repository exists with these tags (the registry's first page of them).
    Tags(Vec<String>),
    /// The registry does not know the repository.
    NoSuchRepository,
}

#[derive(Deserialize)]
struct TagList {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// GETs `/v2/<repository>/tags/list`.
pub(crate) async fn list_tags(session: &mut Session<'_>) -> Result<TagListing, RemoteError> {
    let answer = session.get("tags/list", "application/json").await?;
    if answer.ok() {
        let list: TagList =
            serde_json::from_slice(&answer.body).map_err(|e| session.malformed("a tag list", e))?;
        return Ok(TagListing::Tags(list.tags.unwrap_or_default()));
    }
    match classify(answer.status, &answer.body) {
        Refusal::UnknownName(_) => Ok(TagListing::NoSuchRepository),
        other => Err(session.refused(&other)),
    }
}

/// Up to `count` tags, those sharing the longest prefix with `wanted` first (`2.17.0-gpu`
/// suggests `2.17.0`, `2.17.1-gpu` before `latest`).
pub(crate) fn closest_tags(tags: &[String], wanted: &str, count: usize) -> Vec<String> {
    let shared = |tag: &str| {
        tag.chars()
            .zip(wanted.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let mut ranked: Vec<&String> = tags.iter().collect();
    // Stable: among equal prefixes the registry's order (usually sorted) stays.
    ranked.sort_by_key(|tag| std::cmp::Reverse(shared(tag)));
    ranked.into_iter().take(count).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_tags_share_the_longest_prefix() {
        let tags: Vec<String> = ["latest", "2.16.1-gpu", "2.17.1-gpu", "2.17.0", "nightly"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            closest_tags(&tags, "2.17.0-gpu", 3),
            ["2.17.0", "2.17.1-gpu", "2.16.1-gpu"]
        );
        assert_eq!(closest_tags(&tags, "x", 10).len(), 5);
        assert!(closest_tags(&[], "x", 10).is_empty());
    }
}
