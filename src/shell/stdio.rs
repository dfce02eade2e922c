//! The session's hold on the terminal: raw mode, a stdin reader that stops when the session
//! does, and output writes that survive a non-blocking terminal.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Raw mode for the session; the terminal's previous mode comes back on drop, on every path.
pub(crate) struct RawMode {
    /// Whether raw mode was off before (the TUI calls in with raw mode already on).
    enabled_here: bool,
}

impl RawMode {
    pub(crate) fn enable() -> io::Result<RawMode> {
        let was_raw = crossterm::terminal::is_raw_mode_enabled()?;
        if !was_raw {
            crossterm::terminal::enable_raw_mode()?;
        }
        Ok(RawMode {
            enabled_here: !was_raw,
        })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if self.enabled_here {
            let _ = crossterm::terminal::disable_raw_mode();
        }
    }
}

/// Whether fd 0 is a terminal.
#[allow(unsafe_code)]
pub(crate) fn stdin_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(0) == 1 }
}

/// Reads gpudeck's stdin without a thread that outlives the session: a `dup` of fd 0 made
/// non-blocking and polled by the runtime. Dropping it restores the file flags, so nothing is
/// left waiting for the next key the TUI should get.
pub(crate) enum StdinReader {
    /// A terminal, pipe or socket: readiness comes from epoll.
    Polled { fd: AsyncFd<OwnedFd>, flags: i32 },
    /// A regular file or /dev/null, which epoll refuses: reads return at once anyway.
    Plain(File),
    /// There is no stdin.
    Closed,
}

impl StdinReader {
    pub(crate) fn open() -> StdinReader {
        Self::open_fd(0)
    }

    #[allow(unsafe_code)]
    fn open_fd(source: RawFd) -> StdinReader {
        // SAFETY: dup returns a new descriptor we own, or -1.
        let raw = unsafe { libc::dup(source) };
        if raw < 0 {
            return StdinReader::Closed;
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the AsyncFd owns the descriptor and nothing else closes or replaces it.
        let registered = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) };
        let fd = match registered {
            Ok(fd) => fd,
            Err(e) => {
                let (owned, _) = e.into_parts();
                return StdinReader::Plain(File::from(owned));
            }
        };
        // O_NONBLOCK lives on the open file description, shared with fd 0 (and often fds 1
        // and 2 on a terminal): it is set for the session only and restored on drop.
        let flags = get_flags(fd.as_raw_fd());
        if flags < 0 || set_flags(fd.as_raw_fd(), flags | libc::O_NONBLOCK) < 0 {
            return StdinReader::Closed;
        }
        StdinReader::Polled { fd, flags }
    }

    /// The next bytes of input; 0 at end of input.
    pub(crate) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            StdinReader::Polled { fd, .. } => loop {
                let mut ready = fd.readable().await?;
                match ready.try_io(|inner| read_fd(inner.as_raw_fd(), buf)) {
                    Ok(result) => return result,
                    Err(_would_block) => continue,
                }
            },
            StdinReader::Plain(file) => file.read(buf),
            StdinReader::Closed => Ok(0),
        }
    }
}

impl Drop for StdinReader {
    fn drop(&mut self) {
        if let StdinReader::Polled { fd, flags } = self {
            set_flags(fd.as_raw_fd(), *flags);
        }
    }
}

#[allow(unsafe_code)]
fn get_flags(fd: RawFd) -> i32 {
    // SAFETY: F_GETFL on a descriptor we own.
    unsafe { libc::fcntl(fd, libc::F_GETFL) }
}

#[allow(unsafe_code)]
fn set_flags(fd: RawFd, flags: i32) -> i32 {
    // SAFETY: F_SETFL on a descriptor we own.
    unsafe { libc::fcntl(fd, libc::F_SETFL, flags) }
}

#[allow(unsafe_code)]
fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: reads at most buf.len() bytes into buf.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n.unsigned_abs())
    }
}

/// Writes all of `buf` to `fd` (1 or 2), waiting out EAGAIN: while the session's stdin is
/// non-blocking a terminal's stdout is too, since they share one open file description.
#[allow(unsafe_code)]
pub(crate) fn write_all_fd(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: writes from a valid slice.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            buf = &buf[n.unsigned_abs()..];
            continue;
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => wait_writable(fd),
            _ => return Err(err),
        }
    }
    Ok(())
}

/// Blocks until the terminal drains (at most 100 ms at a time): it only happens when output
/// outruns the terminal, and nothing else can happen meanwhile anyway.
#[allow(unsafe_code)]
fn wait_writable(fd: RawFd) {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut poll, 1, 100) };
}

/// Watches typed input for Docker's detach keys (ctrl-p ctrl-q): the engine detaches on them,
/// and the session must know the container keeps running.
#[derive(Debug, Default)]
pub(crate) struct DetachWatch {
    after_ctrl_p: bool,
}

impl DetachWatch {
    const CTRL_P: u8 = 0x10;
    const CTRL_Q: u8 = 0x11;

    /// Feeds typed bytes; true once the detach sequence went by.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if self.after_ctrl_p && b == Self::CTRL_Q {
                return true;
            }
            self.after_ctrl_p = b == Self::CTRL_P;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detach_keys_are_seen_across_reads() {
        let mut watch = DetachWatch::default();
        assert!(!watch.feed(b"ls\r"));
        assert!(!watch.feed(&[0x10]));
        assert!(watch.feed(&[0x11]));
        let mut other = DetachWatch::default();
        assert!(
            !other.feed(&[0x10, b'a', 0x11]),
            "ctrl-p then a key is not a detach"
        );
    }

    #[allow(unsafe_code)]
    #[tokio::test]
    async fn a_pipe_is_read_to_its_end_and_its_flags_come_back() {
        let mut fds = [0; 2];
        // SAFETY: pipe fills two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (read_end, write_end) = (fds[0], fds[1]);
        let before = get_flags(read_end);
        write_all_fd(write_end, b"hello").unwrap();
        // SAFETY: closes our own write end so the reader sees EOF.
        unsafe { libc::close(write_end) };
        {
            let mut reader = StdinReader::open_fd(read_end);
            assert!(matches!(reader, StdinReader::Polled { .. }));
            assert_ne!(get_flags(read_end) & libc::O_NONBLOCK, 0);
            let mut buf = [0u8; 16];
            let n = reader.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"hello");
            assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
        }
        assert_eq!(get_flags(read_end), before, "O_NONBLOCK is cleared again");
        // SAFETY: closes the read end we made.
        unsafe { libc::close(read_end) };
    }

    #[tokio::test]
    async fn a_regular_file_is_read_without_polling() {
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, b"abc").unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        let mut reader = StdinReader::open_fd(file.as_raw_fd());
        assert!(matches!(reader, StdinReader::Plain(_)));
        let mut buf = [0u8; 8];
        assert_eq!(reader.read(&mut buf).await.unwrap(), 3);
        assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
    }
}
