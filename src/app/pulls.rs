//! Pull state: the image picker (catalog plus any typed reference) and the pulls running or done.

use crate::pull::{CatalogEntry, ImageRef, PullProgress};

/// The tag picker opened from the Images tab.
#[derive(Clone, Debug, PartialEq)]
pub struct PullPicker {
    /// What the user typed: words narrow the catalog; a full reference can be pulled as is.
    pub query: String,
    /// Index into `matches()`.
    pub selected: usize,
    /// Why the typed reference cannot be pulled, after Enter.
    pub error: Option<String>,
}

impl PullPicker {
    pub fn new() -> Self {
        Self {
            query: String::new(),
            selected: 0,
            error: None,
        }
    }

    /// Catalog entries whose reference, framework version or CUDA contains every typed word.
    pub fn matches<'c>(&self, catalog: &'c [CatalogEntry]) -> Vec<&'c CatalogEntry> {
        let words: Vec<String> = self
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        catalog
            .iter()
            .filter(|e| {
                let hay = format!(
                    "{} {} cuda{} {}",
                    e.reference, e.framework_version, e.cuda, e.variant
                )
                .to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .collect()
    }

    /// What Enter pulls: the selected catalog entry, or else the typed text as a reference.
    pub fn choice(&self, catalog: &[CatalogEntry]) -> Result<ImageRef, String> {
        if let Some(entry) = self.matches(catalog).get(self.selected) {
            return Ok(entry.image.clone());
        }
        let typed = self.query.trim();
        if typed.is_empty() {
            return Err("type an image reference, e.g. tensorflow/tensorflow:2.17.0-gpu".into());
        }
        ImageRef::parse(typed).map_err(|e| format!("{typed}: {e}"))
    }
}

impl Default for PullPicker {
    fn default() -> Self {
        Self::new()
    }
}

/// How a pull ended (a pull's own type, named here as the Images tab uses it).
pub use crate::pull::PullOutcome;

/// One pull as the Images tab shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct PullView {
    pub id: u64,
    pub reference: String,
    pub progress: Option<PullProgress>,
    pub outcome: Option<PullOutcome>,
}

impl PullView {
    pub fn running(&self) -> bool {
        self.outcome.is_none()
    }

    /// Whether `r` may pull it again: the engine cut it by going away.
    pub fn retryable(&self) -> bool {
        matches!(self.outcome, Some(PullOutcome::Failed { retry: true, .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull::Catalog;

    #[test]
    fn words_narrow_the_catalog_and_typed_references_are_validated() {
        let (catalog, _) = Catalog::load(None);
        let mut p = PullPicker::new();
        p.query = "tensorflow 2.17 jupyter".into();
        let m = p.matches(catalog.entries());
        assert!(!m.is_empty());
        assert!(m
            .iter()
            .all(|e| e.reference.contains("2.17") && e.reference.contains("jupyter")));
        p.query = "registry.example.com/team/model:v1".into();
        assert_eq!(
            p.choice(catalog.entries())
                .map(|r| r.to_string())
                .ok()
                .as_deref(),
            Some("registry.example.com/team/model:v1")
        );
        p.query = "Bad/Name".into();
        assert!(p
            .choice(catalog.entries())
            .is_err_and(|e| e.contains("uppercase") || e.contains("lowercase")));
    }
}
