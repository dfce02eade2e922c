//! What wakes an idle runs collector: the kernel's notice (inotify) that the store's directories
//! changed. With no live run, no live claim and nothing followed, the collector has nothing to
//! look at until a run is created or removed or a claim is made, so it sleeps until then instead
//! of looking twice a second.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::runs::watch::RunsCommand;

/// The directories whose entries change when runs or claims come and go, watched one level deep.
pub struct StoreWake {
    watcher: RecommendedWatcher,
    dirs: Vec<PathBuf>,
}

impl StoreWake {
    /// Watches `dirs`, or where they are not made yet the directories they will be made in; each
    /// change sends [`RunsCommand::Look`] on `to`. None where the kernel gives
    /// no watch: the collector then keeps looking on its clock.
    pub fn new(dirs: Vec<PathBuf>, to: Sender<RunsCommand>) -> Option<Self> {
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let wake = match event {
                // A read or an open changes nothing; anything else, or a lost event, may.
                Ok(e) => !matches!(e.kind, EventKind::Access(_)),
                Err(_) => true,
            };
            if wake {
                // The collector is gone when this fails, and the watch with it.
                let _ = to.send(RunsCommand::Look);
            }
        });
        match watcher {
            Ok(watcher) => Some(Self { watcher, dirs }),
            Err(e) => {
                tracing::debug!(
                    "the run store cannot be watched ({e}): it is looked at on a clock"
                );
                None
            }
        }
    }

    /// Watches every directory that exists now (again, for one removed and made anew since:
    /// its old watch went with it), and for one that does not exist yet its nearest existing
    /// ancestor, whose next part being made wakes the collector. True when every change would
    /// wake it; only then may it sleep.
    pub fn watch_all(&mut self) -> bool {
        // A directory made between choosing the nearest existing one and watching it would go
        // unseen (its own parts made next land in a directory not watched): the choice is made
        // again after the watches are set, until it holds.
        for _ in 0..8 {
            let chosen = self.nearest_existing();
            let mut covered = chosen.len() == self.dirs.len();
            for dir in &chosen {
                if let Err(e) = self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                    tracing::debug!("{} cannot be watched: {e}", dir.display());
                    covered = false;
                }
            }
            if self.nearest_existing() == chosen {
                return covered;
            }
        }
        false
    }

    /// For each directory, itself or its nearest ancestor that exists now.
    fn nearest_existing(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter_map(|dir| dir.ancestors().find(|d| d.is_dir()).map(Path::to_path_buf))
            .collect()
    }

    /// The directories to watch for a store at `root` with its claims in `claims_dir`.
    pub fn dirs_of(root: &Path, claims_dir: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![root.to_path_buf()];
        if claims_dir != root {
            dirs.push(claims_dir.to_path_buf());
        }
        dirs
    }
}
