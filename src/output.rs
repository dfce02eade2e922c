//! What the commands print: a reader of stdout that goes away (`gpudeck runs | head -1`) ends
//! the command quietly with exit code 0, and a message that cannot reach stderr is dropped
//! instead of panicking. Rust ignores SIGPIPE, so without this every `println!` after the reader
//! left would panic with "failed printing to stdout: Broken pipe".
//!
//! Only the printing commands use [`outln!`](crate::outln)/[`out!`](crate::out); the TUI draws
//! through its own backend, and `serve` prints its banner with [`try_print`], which never ends it.
//!
//! Everything printed here goes through [`sanitise::text`](crate::sanitise::text) first: a
//! value from outside (an image's ENV, a run's name, what the user typed) shows its control
//! characters as escapes instead of driving the terminal. gpudeck's own text has none, but for
//! the doctor's coloured status words, printed with [`print_styled`] after its values were
//! cleaned. A run's own log ([`print_bytes`]) is passed as it is, as `docker logs` does.

use std::fmt;
use std::io::{self, Write};

/// The exit code when stdout's reader went away: success, as for `head`, which asked for less.
pub const EXIT_READER_GONE: i32 = 0;

/// The exit code when stdout cannot be written for any other reason (a full disk, `>&-`).
pub const EXIT_STDOUT_FAILED: i32 = 1;

/// How writing to stdout failed.
#[derive(Debug)]
pub enum StdoutError {
    /// The reader closed its end of the pipe: nobody wants more output.
    ReaderGone,
    /// Anything else: worth telling the user.
    Failed(io::Error),
}

impl From<io::Error> for StdoutError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            StdoutError::ReaderGone
        } else {
            StdoutError::Failed(e)
        }
    }
}

impl fmt::Display for StdoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StdoutError::ReaderGone => write!(f, "the reader of stdout went away"),
            StdoutError::Failed(e) => write!(
                f,
                "could not write to stdout: {e}.\n\
                 Check where the output goes (a full disk, a closed file), then try again."
            ),
        }
    }
}

/// An error and its sources on one line, each cause said once: "client error (Connect): tcp
/// connect error: Connection refused" says what failed underneath.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Writes `text` whole to `out` and flushes it, so a failure shows here and not at exit.
/// Control characters are shown as escapes ([`sanitise::text`](crate::sanitise::text)).
pub fn write_to(out: &mut impl Write, text: fmt::Arguments<'_>) -> Result<(), StdoutError> {
    write_str(out, &crate::sanitise::text(&formatted(text)))
}

/// Writes `text` as it is and flushes it.
fn write_str(out: &mut impl Write, text: &str) -> Result<(), StdoutError> {
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The text of `args`, without a copy when it is a plain string.
fn formatted(args: fmt::Arguments<'_>) -> std::borrow::Cow<'static, str> {
    match args.as_str() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(args.to_string()),
    }
}

/// Prints to stdout; when that fails the command ends here: quietly when the reader went away,
/// with a message on stderr otherwise.
pub fn print(text: fmt::Arguments<'_>) {
    let written = write_to(&mut io::stdout().lock(), text);
    if let Err(e) = written {
        end(&e);
    }
}

/// Prints text that carries gpudeck's own escape sequences (the doctor's colours) as it is,
/// ending the command as [`print`] does. Every value from outside in it must have been cleaned
/// with [`sanitise::text`](crate::sanitise::text) or [`sanitise::line`](crate::sanitise::line).
pub fn print_styled(text: &str) {
    if let Err(e) = write_str(&mut io::stdout().lock(), text) {
        end(&e);
    }
}

/// Writes bytes to stdout as they are (a run's log, the program's own output, colours and
/// progress bars included, as `docker logs` passes them; generated scripts), ending the
/// command as [`print`] does.
pub fn print_bytes(bytes: &[u8]) {
    let mut out = io::stdout().lock();
    let written = out.write_all(bytes).and_then(|()| out.flush());
    drop(out);
    if let Err(e) = written {
        end(&StdoutError::from(e));
    }
}

/// Prints an export (a run's JSON or CSV): as it is to a pipe or a file, where it is data; with
/// its control characters shown as escapes on a terminal, which would act on them (a run's name
/// holds what its user typed). JSON reads the same either way.
pub fn print_data(bytes: &[u8]) {
    use std::io::IsTerminal;
    print_bytes(&data_for(bytes, io::stdout().is_terminal()));
}

/// [`print_data`]'s bytes for a terminal or not.
fn data_for(bytes: &[u8], terminal: bool) -> std::borrow::Cow<'_, [u8]> {
    if !terminal {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let text = String::from_utf8_lossy(bytes);
    std::borrow::Cow::Owned(crate::sanitise::text(&text).into_owned().into_bytes())
}

/// Prints to stdout for a command that goes on whether or not anyone reads it (`serve`'s
/// banner); the failure is returned for the log.
pub fn try_print(text: fmt::Arguments<'_>) -> Result<(), StdoutError> {
    write_to(&mut io::stdout().lock(), text)
}

/// Whether stdout is a pipe whose reader went away, asked without writing: a command that
/// waits for output to come (`logs -f`) ends then, not only at its next write.
#[allow(unsafe_code)]
pub fn stdout_reader_gone() -> bool {
    let mut poll = libc::pollfd {
        fd: 1,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0 && poll.revents & libc::POLLERR != 0
}

/// Prints a message to stderr; a stderr nobody reads any more loses it, and nothing else happens.
/// Control characters are shown as escapes, as on stdout.
pub fn eprint(text: fmt::Arguments<'_>) {
    let _ = write_str(
        &mut io::stderr().lock(),
        &crate::sanitise::text(&formatted(text)),
    );
}

/// Ends the process after stdout failed.
pub fn end(e: &StdoutError) -> ! {
    match e {
        StdoutError::ReaderGone => std::process::exit(EXIT_READER_GONE),
        StdoutError::Failed(_) => {
            eprint(format_args!("gpudeck: {e}\n"));
            std::process::exit(EXIT_STDOUT_FAILED)
        }
    }
}

/// `print!` for the commands: see [`print`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print(format_args!($($arg)*))
    };
}

/// `println!` for the commands: see [`print`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::print(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics: see [`eprint`].
#[macro_export]
macro_rules! errout {
    ($($arg:tt)*) => {
        $crate::output::eprint(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics: see [`eprint`].
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::eprint(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::eprint(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// The width text is wrapped to when the terminal's cannot be known (output to a file from cron):
/// it reads whole in an 80-column terminal.
pub const MESSAGE_WIDTH: usize = 80;

/// Narrower than this, wrapped text would be a column of single words; `COLUMNS=20` still gets
/// 40-column lines.
pub const MIN_WIDTH: usize = 40;

/// Wider than this `COLUMNS` is taken for a mistake (`COLUMNS=99999`) and ignored.
const MAX_WIDTH: usize = 1000;

/// The width the commands wrap their text to: `COLUMNS` when it is set to a sane number, else
/// the size of the terminal stdout or stderr is on (`gpudeck doctor | less` still fits the
/// screen), else [`MESSAGE_WIDTH`]; never under [`MIN_WIDTH`].
pub fn width() -> usize {
    let columns = std::env::var("COLUMNS").ok();
    width_from(columns.as_deref(), || {
        tty_columns(1).or_else(|| tty_columns(2))
    })
}

/// [`width`] from the value of `COLUMNS` and a way to ask the terminal, asked only when needed.
pub fn width_from(columns: Option<&str>, tty: impl FnOnce() -> Option<usize>) -> usize {
    let from_env = columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| (1..=MAX_WIDTH).contains(c));
    from_env
        .or_else(tty)
        .unwrap_or(MESSAGE_WIDTH)
        .max(MIN_WIDTH)
}

/// The columns of the terminal `fd` is on; None when it is not a terminal.
#[allow(unsafe_code)]
fn tty_columns(fd: libc::c_int) -> Option<usize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into `size`, which lives through the call.
    let asked = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) };
    (asked == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// `text` wrapped to the terminal's [`width`], each of its lines on its own, continuation
/// lines starting with `indent`; a word (a path, a `file:line:col`, `read-only`) is never split.
pub fn wrap(text: &str, indent: &str) -> String {
    wrap_to(text, indent, width())
}

/// [`wrap`] to a given width: the pure part, for renderers that are handed their width.
/// A word longer than the width (a long URL) keeps its own line whole, and so does a command in
/// backticks that fits on a line, so that it can be copied in one go.
pub fn wrap_to(text: &str, indent: &str, width: usize) -> String {
    let options = textwrap::Options::new(width)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .subsequent_indent(indent);
    let room = width.saturating_sub(indent.chars().count());
    text.lines()
        .map(|line| textwrap::fill(&glue_code(line, room), &options).replace(GLUE, " "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Stands for a space inside a `code span` while wrapping: textwrap breaks only at ASCII spaces.
const GLUE: char = '\u{E000}';

/// `line` with the spaces inside each backticked span no longer than `room` glued.
fn glue_code(line: &str, room: usize) -> String {
    let mut out = String::with_capacity(line.len());
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts are inside backticks (when the backtick that opens them is closed too).
        let closed = i % 2 == 1 && line.matches('`').count() > i;
        if closed && part.chars().count() + 2 <= room {
            out.extend(part.chars().map(|c| if c == ' ' { GLUE } else { c }));
        } else {
            out.push_str(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe whose reader is gone, as the kernel reports it.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A full disk.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_gone_reader_is_told_apart_from_a_failed_write() {
        let gone = write_to(&mut ClosedPipe, format_args!("x\n"));
        assert!(matches!(gone, Err(StdoutError::ReaderGone)), "{gone:?}");
        let full = write_to(&mut Full, format_args!("x\n")).unwrap_err();
        let said = full.to_string();
        assert!(matches!(full, StdoutError::Failed(_)));
        assert!(said.contains("No space left") && said.contains("Check where"));
        let said = format!("gpudeck: {said}");
        assert!(said.lines().all(|l| l.chars().count() <= 80), "{said}");
        let mut buf = Vec::new();
        write_to(&mut buf, format_args!("{}-{}", 1, 2)).unwrap();
        assert_eq!(buf, b"1-2");
    }

    #[test]
    fn an_export_is_cleaned_for_a_terminal_only() {
        let export = "name,loss\n\u{1b}]0;x\u{7}\u{202e},1\n".as_bytes();
        assert_eq!(data_for(export, false), export);
        assert_eq!(
            data_for(export, true),
            "name,loss\n\\u001b]0;x\\u0007\\u202e,1\n".as_bytes()
        );
    }

    #[test]
    fn what_is_printed_shows_control_characters_as_escapes() {
        let mut buf = Vec::new();
        let name = "\x1b]0;pwned\x07\u{9b}2J\u{202e}";
        write_to(&mut buf, format_args!("run {name} not found\n")).unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "run \\u001b]0;pwned\\u0007\\u009b2J\\u202e not found\n"
        );
    }

    #[test]
    fn the_width_follows_columns_then_the_terminal_then_80() {
        let no_tty = || None;
        assert_eq!(width_from(Some("120"), no_tty), 120);
        assert_eq!(width_from(Some(" 90 "), || Some(200)), 90);
        assert_eq!(width_from(None, || Some(132)), 132);
        assert_eq!(width_from(None, no_tty), 80);
        // Not a sane number: the terminal decides, or 80.
        for bad in ["", "wide", "-5", "0", "99999"] {
            assert_eq!(width_from(Some(bad), || Some(100)), 100, "{bad:?}");
            assert_eq!(width_from(Some(bad), no_tty), 80, "{bad:?}");
        }
        // Too narrow to read: 40.
        assert_eq!(width_from(Some("20"), no_tty), MIN_WIDTH);
        assert_eq!(width_from(None, || Some(12)), MIN_WIDTH);
    }

    #[test]
    fn a_command_in_backticks_stays_on_one_line_where_it_fits() {
        let text = "pull it (`gpudeck pull example.invalid/nobody/nothing:1.0`) once it is back";
        let wrapped = wrap_to(text, "  ", 60);
        assert!(
            wrapped.contains("`gpudeck pull example.invalid/nobody/nothing:1.0`"),
            "{wrapped}"
        );
        assert!(!wrapped.contains(GLUE));
        // Too long for any line: it wraps between its words like the rest.
        let long = format!("run `{}` now", "word ".repeat(12).trim_end());
        let wrapped = wrap_to(&long, "", 40);
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 40),
            "{wrapped}"
        );
        // An unclosed backtick glues nothing.
        assert_eq!(wrap_to("a `b c d e", "", 5), "a `b\nc d e");
    }

    #[test]
    fn wrapping_fills_the_width_it_is_given() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let narrow = wrap_to(text, "  ", 40);
        assert!(narrow.lines().count() > 1, "{narrow}");
        assert!(narrow.lines().all(|l| l.chars().count() <= 40), "{narrow}");
        assert!(
            narrow.lines().skip(1).all(|l| l.starts_with("  ")),
            "{narrow}"
        );
        assert_eq!(wrap_to(text, "  ", 120), text);
        let url =
            "see https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install";
        assert_eq!(
            wrap_to(url, "", 40),
            "see\nhttps://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install"
        );
    }
}
