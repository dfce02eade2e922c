//! Printing a rank's log, and following it (as `tail -f` does) until the run ends.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::Duration;

use crate::runs::error::RunError;
use crate::runs::launch::procs::group_has_live_members;
use crate::runs::record::RunState;
use crate::runs::recorded::LOG_GONE;
use crate::runs::store::{LogStream, Run};

/// How often a followed log is looked at for new output: a person reading does not notice, and
/// an idle follow costs a few reads a second.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Copies the log to stdout; with `follow`, keeps copying what is appended until the run ends.
pub fn print_log(run: &Run, rank: usize, stream: LogStream, follow: bool) -> Result<(), RunError> {
    if rank >= run.record.log_ranks() {
        return Err(no_log(run, rank, stream));
    }
    let path = run.log_path(rank, stream);
    let mut stdout = io::stdout().lock();
    let mut offset = 0u64;
    loop {
        // Looked at before the copy, so output written just before the end is still copied.
        let live = follow && still_running(run);
        match copy_from(&path, offset, &mut stdout) {
            Ok(copied) => offset += copied,
            // Created as the rank starts: missing after that, it was deleted and no more output
            // will ever come to it (following it would wait forever).
            Err(e) if e.kind() == io::ErrorKind::NotFound && started(run, rank) => {
                return Err(RunError::LogGone {
                    path,
                    why: LOG_GONE.into(),
                })
            }
            // Not written yet: the rank has not started.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            // The reader went away (`gpudeck logs RUN | head`): nothing more to do.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(RunError::store(&path, e)),
        }
        if !live {
            if !follow && offset == 0 && !path.exists() {
                return Err(no_log(run, rank, stream));
            }
            return Ok(());
        }
        // Nobody reads any more (`gpudeck logs RUN -f | grep -m1 loss`): done, even if the run
        // prints nothing more for hours.
        if crate::output::stdout_reader_gone() {
            return Ok(());
        }
        std::thread::sleep(FOLLOW_POLL);
    }
}

/// Whether the rank has been started (its logs created), as the record says now.
fn started(run: &Run, rank: usize) -> bool {
    run.logs_created(rank) || run.reload().is_ok_and(|now| now.logs_created(rank))
}

fn no_log(run: &Run, rank: usize, stream: LogStream) -> RunError {
    RunError::NoSuchLog {
        id: run.id().to_string(),
        rank,
        stream: stream.as_str(),
    }
}

/// Whether output may still come: the supervisor runs the ranks, or it is gone but the ranks
/// it left behind are not.
fn still_running(run: &Run) -> bool {
    let Ok(mut now) = run.reload() else {
        return false;
    };
    // Nobody else records a Slurm job's end while it is followed.
    if crate::runs::backend::refresh(&mut now).is_err() {
        return false;
    }
    match now.state() {
        RunState::Starting | RunState::Running => true,
        RunState::Lost => now
            .record
            .process_group
            .is_some_and(|g| group_has_live_members(g.pid)),
        _ => false,
    }
}

/// Copies the file from `offset` to its current end in fixed-size pieces; bytes copied.
fn copy_from(path: &std::path::Path, offset: u64, out: &mut impl Write) -> io::Result<u64> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = [0u8; 64 * 1024];
    let mut copied = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        copied += n as u64;
    }
    out.flush()?;
    Ok(copied)
}
