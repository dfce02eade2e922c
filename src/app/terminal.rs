//! The terminal's modes: entering the TUI, restoring the terminal on every exit path (including panics).

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

/// Whether the TUI currently owns the terminal, so restoring twice is harmless.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// ratatui's own terminal: it keeps the frame on screen, writes only the cells that changed, and
/// follows the terminal's size (a cleared screen and a full frame after a resize). Frames are
/// written whole into memory and handed to the terminal in one write when ratatui flushes at the
/// end of each draw: straight to `Stdout`, a frame of a moving chart was dozens of writes (its
/// buffer holds 1 KiB), each taking a lock and waking the terminal.
pub type Tui = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Enough for a full 200x60 frame of changed, coloured cells.
const FRAME_BYTES: usize = 256 * 1024;

fn backend(out: Stdout) -> CrosstermBackend<BufWriter<Stdout>> {
    CrosstermBackend::new(BufWriter::with_capacity(FRAME_BYTES, out))
}

/// Raw mode, alternate screen, hidden cursor and (optionally) mouse reporting. A terminal that
/// does not answer the start-up query is given back as it was and the error says why; so is one
/// where any other step fails.
pub fn enter(mouse: bool) -> io::Result<Tui> {
    install_panic_hook();
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    setup(mouse).inspect_err(|_| restore())
}

fn setup(mouse: bool) -> io::Result<Tui> {
    let mut out = io::stdout();
    execute!(out, EnterAlternateScreen, cursor::Hide)?;
    probe()?;
    if mouse {
        execute!(out, EnableMouseCapture)?;
    }
    // A plain clear: ratatui's `Terminal::clear` would ask where the cursor is once more. A new
    // full-screen `Terminal` asks nothing and takes the screen to be blank.
    execute!(out, terminal::Clear(terminal::ClearType::All))?;
    Terminal::new(backend(out))
}

/// Asks the terminal where its cursor is: one that never answers (output captured by `script`,
/// a serial console) would otherwise leave the dashboard drawing to nobody. crossterm gives up
/// after 2 s.
fn probe() -> io::Result<()> {
    cursor::position()
        .map(|_| ())
        .map_err(|e| io::Error::other(NoAnswer(e.to_string())))
}

/// The terminal did not answer the start-up query.
#[derive(Debug)]
pub struct NoAnswer(String);

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the terminal did not answer the start-up query (cursor position)\n\
             within 2 s, so gpudeck cannot draw the dashboard there\n\
             ({}).\n\
             It may not be a full terminal: output captured by `script`, a serial console,\n\
             an editor's pane. Run gpudeck in a terminal emulator, tmux or `ssh -t`;\n\
             for scripts use `gpudeck gpus`.",
            self.0.trim_end_matches('.')
        )
    }
}

impl std::error::Error for NoAnswer {}

/// Gives the terminal back as it was. Safe to call more than once and from a panic hook.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    // Each step is attempted even if an earlier one fails: a half-restored terminal is worse.
    let _ = execute!(out, DisableMouseCapture);
    let _ = execute!(out, LeaveAlternateScreen, cursor::Show);
    let _ = terminal::disable_raw_mode();
    let _ = out.flush();
}

/// Gives the terminal back at the end of the dashboard (see [`restore`]) and lets go of
/// ratatui's `Terminal`. Dropped, a `Terminal` that hid the cursor shows it again and, if it
/// cannot, prints to stderr, which panics where stderr is gone too (after SIGHUP, the terminal
/// closed). So the cursor is shown here first, and a `Terminal` that could not show it is
/// forgotten rather than dropped: the process is about to end.
pub fn leave(mut term: Tui) {
    let shown = term.show_cursor().is_ok();
    restore();
    if shown {
        drop(term);
    } else {
        std::mem::forget(term);
    }
}

/// Hands the terminal to another program (an interactive shell) for a while: the normal screen,
/// cooked mode, a visible cursor, no mouse reporting.
pub fn suspend() {
    restore();
}

/// Ctrl-Z: gives the terminal back as it was, then stops gpudeck's process group as the terminal's
/// own Ctrl-Z would (raw mode turns that off); returns once the shell's `fg` (SIGCONT) resumes
/// it, for [`resume`] to take the terminal again.
#[allow(unsafe_code)]
pub fn stop_until_continued() {
    restore();
    // SAFETY: kill(2) with pid 0 only sends a signal to this process group; SIGTSTP's default
    // action stops it, and the call returns once SIGCONT continues it.
    let sent = unsafe { libc::kill(0, libc::SIGTSTP) };
    if sent != 0 {
        tracing::warn!(error = %io::Error::last_os_error(), "Ctrl-Z: could not stop");
    }
}

/// Takes the terminal back after [`suspend`]: the alternate screen, cleared, at the size the
/// terminal has now, with ratatui's last frame forgotten so that the next draw is complete.
/// (`Terminal::resize` clears the whole screen and resets that frame without asking anything;
/// `Terminal::clear` would ask the terminal where its cursor is, an answer a terminal that was
/// just handed back from another program does not always give in time.)
pub fn resume(term: &mut Tui, mouse: bool) -> io::Result<()> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(out, EnterAlternateScreen, cursor::Hide)?;
    if mouse {
        execute!(out, EnableMouseCapture)?;
    }
    let size = term.size()?;
    term.resize(Rect::new(0, 0, size.width, size.height))
}

fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}
