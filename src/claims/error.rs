//! What went wrong with the claims file or its lock, and what to do about it.

use std::path::{Path, PathBuf};

/// What went wrong with the claims file or its lock.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the GPU claims in {path} could not be {doing}: {why}")]
pub struct ClaimError {
    pub path: PathBuf,
    pub doing: &'static str,
    pub why: String,
}

impl ClaimError {
    /// The claims directory the failed path is in.
    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    /// What to do about it.
    pub fn fix(&self) -> String {
        format!(
            "Check that {} is a directory you can write (GPUDECK_DATA_DIR moves the data dir); \
             `fuser` on its lock file names a gpudeck that holds the lock.",
            self.dir().display()
        )
    }
}
