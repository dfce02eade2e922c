//! A local torchrun run's worker logs. torchrun (`--log-dir=DIR --redirects=3`) writes each
//! worker's stdout and stderr to files of its own, laid out by torch's `DefaultLogsSpecs` as
//! `DIR/<rendezvous id>_<random>/attempt_<restart count>/<local rank>/{stdout,stderr}.log`; the
//! supervisor links them in as `rank-N.stdout.log`/`rank-N.stderr.log`, so `gpudeck logs --rank
//! N`, the Runs tab and the progress reader (rank 0) read a worker as any other rank. The
//! directory's name is only known once torchrun has made it, so the links are made as the files
//! appear, and made again for a newer attempt.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::runs::store::{log_path, LogStream, TORCHRUN_LOG_DIR};

/// How often the linker looks for torchrun's files.
const POLL: Duration = Duration::from_millis(200);

/// Links, on a thread, until [`WorkerLinker::finish`].
pub struct WorkerLinker {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl WorkerLinker {
    pub fn start(dir: PathBuf, workers: usize) -> WorkerLinker {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || loop {
            let last = flag.load(Ordering::Acquire);
            if let Err(e) = link_worker_logs(&dir, workers) {
                errln!("gpudeck supervisor: linking the workers' logs: {e}");
            }
            if last {
                return;
            }
            std::thread::sleep(POLL);
        });
        WorkerLinker { done, thread }
    }

    /// Stops looking, after one last look (workers that started and ended between two looks).
    pub fn finish(self) {
        self.done.store(true, Ordering::Release);
        let _ = self.thread.join();
    }
}

/// One look: links each worker file of torchrun's newest attempt that exists to its rank log.
/// Returns how many links are in place.
pub fn link_worker_logs(dir: &Path, workers: usize) -> std::io::Result<usize> {
    let Some(attempt) = newest_attempt(&dir.join(TORCHRUN_LOG_DIR)) else {
        return Ok(0);
    };
    let mut linked = 0;
    for rank in 0..workers {
        for stream in [LogStream::Stdout, LogStream::Stderr] {
            let relative = attempt
                .join(rank.to_string())
                .join(format!("{}.log", stream.as_str()));
            if !dir.join(&relative).is_file() {
                continue;
            }
            let link = log_path(dir, rank, stream);
            if std::fs::read_link(&link).is_ok_and(|target| target == relative) {
                linked += 1;
                continue;
            }
            // Missing, or ours from an earlier attempt: (re)made atomically. A real file in its
            // place is never replaced.
            if std::fs::symlink_metadata(&link).is_ok_and(|m| !m.is_symlink()) {
                continue;
            }
            let temporary = dir.join(format!(".{}.link", link_name(&link)));
            let _ = std::fs::remove_file(&temporary);
            std::os::unix::fs::symlink(&relative, &temporary)?;
            std::fs::rename(&temporary, &link)?;
            linked += 1;
        }
    }
    Ok(linked)
}

fn link_name(link: &Path) -> String {
    link.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `torchrun/<id>_<random>/attempt_<n>` with the highest n, relative to the run's directory
/// (torchrun makes one `<id>_<random>` directory per agent, and a run has one agent).
fn newest_attempt(root: &Path) -> Option<PathBuf> {
    let mut best: Option<(u64, PathBuf)> = None;
    for group in std::fs::read_dir(root).ok()?.filter_map(Result::ok) {
        let Ok(attempts) = std::fs::read_dir(group.path()) else {
            continue;
        };
        for attempt in attempts.filter_map(Result::ok) {
            let name = attempt.file_name();
            let Some(n) = name
                .to_str()
                .and_then(|n| n.strip_prefix("attempt_"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, _)| n > *b) {
                let relative = Path::new(TORCHRUN_LOG_DIR)
                    .join(group.file_name())
                    .join(&name);
                best = Some((n, relative));
            }
        }
    }
    best.map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a worker file as torchrun lays it out.
    fn worker_file(dir: &Path, attempt: u32, rank: usize, stream: &str, text: &str) {
        let d = dir
            .join("torchrun/f3b2c1d0-1111-2222-3333-444455556666_k2x9qz")
            .join(format!("attempt_{attempt}"))
            .join(rank.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("{stream}.log")), text).unwrap();
    }

    fn read(dir: &Path, rank: usize, stream: LogStream) -> String {
        std::fs::read_to_string(log_path(dir, rank, stream)).unwrap()
    }

    #[test]
    fn each_worker_gets_its_own_rank_logs_as_they_appear() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        assert_eq!(link_worker_logs(dir, 2).unwrap(), 0);
        worker_file(dir, 0, 0, "stdout", "step=1 loss=2.0\n");
        worker_file(dir, 0, 0, "stderr", "");
        assert_eq!(link_worker_logs(dir, 2).unwrap(), 2);
        worker_file(dir, 0, 1, "stdout", "rank one\n");
        worker_file(dir, 0, 1, "stderr", "warning\n");
        assert_eq!(link_worker_logs(dir, 2).unwrap(), 4);
        assert_eq!(read(dir, 0, LogStream::Stdout), "step=1 loss=2.0\n");
        assert_eq!(read(dir, 1, LogStream::Stdout), "rank one\n");
        assert_eq!(read(dir, 1, LogStream::Stderr), "warning\n");
        // Relative, so the run's directory can be moved.
        let target = std::fs::read_link(log_path(dir, 1, LogStream::Stdout)).unwrap();
        assert!(target.starts_with("torchrun/"), "{}", target.display());
    }

    #[test]
    fn a_restarted_worker_group_is_followed_to_its_newest_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        worker_file(dir, 0, 0, "stdout", "first attempt\n");
        link_worker_logs(dir, 1).unwrap();
        worker_file(dir, 1, 0, "stdout", "second attempt\n");
        link_worker_logs(dir, 1).unwrap();
        assert_eq!(read(dir, 0, LogStream::Stdout), "second attempt\n");
    }

    #[test]
    fn a_real_file_in_a_links_place_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        std::fs::write(log_path(dir, 0, LogStream::Stdout), "mine\n").unwrap();
        worker_file(dir, 0, 0, "stdout", "torchrun's\n");
        assert_eq!(link_worker_logs(dir, 1).unwrap(), 0);
        assert_eq!(read(dir, 0, LogStream::Stdout), "mine\n");
    }

    #[test]
    fn the_linker_makes_a_last_look_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let linker = WorkerLinker::start(dir.path().to_path_buf(), 1);
        worker_file(dir.path(), 0, 0, "stdout", "quick\n");
        linker.finish();
        assert_eq!(read(dir.path(), 0, LogStream::Stdout), "quick\n");
    }
}
