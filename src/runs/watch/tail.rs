//! Following a file another process appends to: the complete lines added since the last read,
//! at most so many bytes per read (a run printing faster than a screen can show is skipped
//! ahead, never buffered), starting over when the file is replaced or truncated.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What one read found.
#[derive(Debug, Default, PartialEq)]
pub struct Appended {
    /// Complete lines, each ending in `\n`; [`lines`](Self::lines) splits them.
    pub data: Vec<u8>,
    /// Bytes passed over because more was appended than one read takes.
    pub skipped: u64,
    /// The file was truncated or replaced: what was read before no longer describes it.
    pub restarted: bool,
    /// Reading reached the end of the file (what is left is at most an unfinished line).
    pub at_end: bool,
    /// Lines end at `\r` too (a [`Follower::ending_at_cr`]'s reads).
    pub cr_ends: bool,
}

impl Appended {
    /// The lines read, without their `\n` (a trailing `\r` is kept for the parsers, unless
    /// lines end at `\r` too: then each redraw of a progress bar is a line, and none is empty).
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> {
        let cr = self.cr_ends;
        let body = match cr {
            true => self.data.as_slice(),
            false => self.data.strip_suffix(b"\n").unwrap_or(&[]),
        };
        let empty = self.data.is_empty();
        body.split(move |&b| b == b'\n' || (cr && b == b'\r'))
            .filter(move |l| !(empty || cr && l.is_empty()))
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// A position in a file, kept between reads; an incomplete last line waits for its `\n`.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    offset: u64,
    inode: Option<u64>,
    /// Where the first read begins: the last this many bytes (None: the beginning).
    tail_bytes: Option<u64>,
    /// The offset may be mid-line (a tail start or a skip): the next read drops up to a `\n`.
    resync: bool,
    /// A `\r` ends a line as a `\n` does.
    cr_ends: bool,
}

impl Follower {
    /// Follows `path` from its beginning.
    pub fn from_start(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            offset: 0,
            inode: None,
            tail_bytes: None,
            resync: false,
            cr_ends: false,
        }
    }

    /// This follower with `\r` ending a line as `\n` does: a progress bar redrawn in place
    /// for hours (tqdm) is then many short lines, not one that outgrows every read.
    pub fn ending_at_cr(self) -> Self {
        Self {
            cr_ends: true,
            ..self
        }
    }

    /// Follows `path` from its last `tail_bytes` bytes (from the first line that starts there).
    pub fn from_tail(path: &Path, tail_bytes: u64) -> Self {
        Self {
            tail_bytes: Some(tail_bytes),
            ..Self::from_start(path)
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The complete lines appended since the last call, reading at most `max_bytes`; when more
    /// is waiting, the oldest of it is skipped so the newest lines are the ones returned.
    /// A missing file is no lines yet.
    pub fn read_new(&mut self, max_bytes: u64) -> io::Result<Appended> {
        self.read(max_bytes, true)
    }

    /// The next complete lines after the last call, at most `max_bytes` of them: a reader that
    /// must see every line (a parser) catches up over several calls. A single line longer than
    /// `max_bytes` is skipped.
    pub fn read_next(&mut self, max_bytes: u64) -> io::Result<Appended> {
        self.read(max_bytes, false)
    }

    fn read(&mut self, max_bytes: u64, skip_ahead: bool) -> io::Result<Appended> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Appended::default()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        let len = meta.len();
        let mut out = Appended {
            cr_ends: self.cr_ends,
            ..Appended::default()
        };
        let cr = self.cr_ends;
        let ends_line = move |b: &u8| *b == b'\n' || (cr && *b == b'\r');
        match self.inode {
            None => {
                self.offset = self.tail_bytes.map_or(0, |t| len.saturating_sub(t));
                self.resync = self.offset > 0;
            }
            Some(inode) if inode != meta.ino() || len < self.offset => {
                out.restarted = true;
                self.offset = 0;
                self.resync = false;
            }
            Some(_) => {}
        }
        self.inode = Some(meta.ino());
        if skip_ahead && len - self.offset > max_bytes {
            out.skipped = len - max_bytes - self.offset;
            self.offset = len - max_bytes;
            self.resync = true;
        }
        let end = len.min(self.offset.saturating_add(max_bytes));
        out.at_end = end == len;
        // One byte more, before the offset: whether reading begins at a line's start.
        let from = self.offset.saturating_sub(1);
        let mut bytes = Vec::with_capacity((end - from) as usize);
        file.seek(SeekFrom::Start(from))?;
        file.take(end - from).read_to_end(&mut bytes)?;
        let mut body_start = (self.offset - from) as usize;
        let mut body: &[u8] = &bytes[body_start..];
        if self.resync && self.offset > 0 && !bytes.first().is_some_and(ends_line) {
            let Some(nl) = body.iter().position(ends_line) else {
                if body.len() as u64 >= max_bytes {
                    // Still inside a line longer than a read: move on through it.
                    out.skipped += body.len() as u64;
                    self.offset += body.len() as u64;
                }
                return Ok(out);
            };
            out.skipped += nl as u64 + 1;
            self.offset += nl as u64 + 1;
            body_start += nl + 1;
            body = &body[nl + 1..];
        }
        self.resync = false;
        let complete = body.iter().rposition(ends_line).map_or(0, |p| p + 1);
        if complete == 0 && body.len() as u64 >= max_bytes {
            // One line longer than a whole read: pass over it.
            out.skipped += body.len() as u64;
            self.offset += body.len() as u64;
            self.resync = true;
            return Ok(out);
        }
        self.offset += complete as u64;
        // The read buffer becomes the result: no second copy of what may be megabytes.
        bytes.truncate(body_start + complete);
        bytes.drain(..body_start);
        out.data = bytes;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn texts(a: &Appended) -> Vec<String> {
        a.lines()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    #[test]
    fn returns_complete_lines_and_waits_for_the_rest_of_a_partial_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut f = Follower::from_start(&path);
        assert_eq!(f.read_new(1 << 20).unwrap(), Appended::default());
        append(&path, "one\ntwo\nthr");
        assert_eq!(texts(&f.read_new(1 << 20).unwrap()), ["one", "two"]);
        assert!(f.read_new(1 << 20).unwrap().is_empty());
        append(&path, "ee\n\nfour\n");
        assert_eq!(texts(&f.read_new(1 << 20).unwrap()), ["three", "", "four"]);
    }

    #[test]
    fn a_flood_is_skipped_to_its_newest_lines_and_the_skip_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut f = Follower::from_start(&path);
        let text: String = (0..1000).map(|i| format!("line {i:04}\n")).collect();
        append(&path, &text);
        let got = f.read_new(100).unwrap();
        let lines = texts(&got);
        assert_eq!(lines.last().unwrap(), "line 0999");
        assert!(lines.len() <= 10 && lines.len() >= 9, "{lines:?}");
        assert_eq!(
            got.skipped + lines.iter().map(|l| l.len() as u64 + 1).sum::<u64>(),
            text.len() as u64
        );
        assert!(lines.iter().all(|l| l.starts_with("line ")));
    }

    #[test]
    fn the_end_of_the_file_is_told_apart_from_a_full_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        append(&path, &"0123456789\n".repeat(10));
        let mut f = Follower::from_start(&path);
        assert!(!f.read_next(50).unwrap().at_end);
        assert!(f.read_next(1000).unwrap().at_end);
    }

    #[test]
    fn reading_in_chunks_sees_every_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (0..500).map(|i| format!("line {i}\n")).collect();
        append(&path, &text);
        let mut f = Follower::from_start(&path);
        let mut seen = Vec::new();
        for _ in 0..1000 {
            let got = f.read_next(64).unwrap();
            assert_eq!(got.skipped, 0);
            if got.is_empty() {
                break;
            }
            seen.extend(texts(&got));
        }
        let expected: Vec<String> = (0..500).map(|i| format!("line {i}")).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        append(&path, &format!("short\n{}\nafter\n", "x".repeat(350)));
        let mut f = Follower::from_start(&path);
        let mut seen = Vec::new();
        for _ in 0..20 {
            seen.extend(texts(&f.read_next(100).unwrap()));
        }
        assert_eq!(seen, ["short", "after"]);
    }

    #[test]
    fn a_tail_start_begins_at_a_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        append(&path, "aaaaaaaaaa\nbbbbbbbbbb\ncccccccccc\n");
        let mut f = Follower::from_tail(&path, 15);
        assert_eq!(texts(&f.read_new(1 << 20).unwrap()), ["cccccccccc"]);
        append(&path, "dd\n");
        assert_eq!(texts(&f.read_new(1 << 20).unwrap()), ["dd"]);
    }

    #[test]
    fn truncation_and_replacement_start_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        append(&path, "old line one\nold line two\n");
        let mut f = Follower::from_start(&path);
        assert_eq!(f.read_new(1 << 20).unwrap().lines().count(), 2);
        std::fs::write(&path, "new\n").unwrap();
        let got = f.read_new(1 << 20).unwrap();
        assert!(got.restarted);
        assert_eq!(texts(&got), ["new"]);
        let other = dir.path().join("other");
        std::fs::write(&other, "replaced\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let got = f.read_new(1 << 20).unwrap();
        assert!(got.restarted);
        assert_eq!(texts(&got), ["replaced"]);
    }

    #[test]
    fn a_bar_redrawn_with_cr_is_read_as_lines_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut plain = Follower::from_start(&path);
        let mut bars = Follower::from_start(&path).ending_at_cr();
        append(&path, "epoch 1\n 10%|#  | step=1\r 20%|## | step=2\r 30%");
        assert_eq!(texts(&plain.read_next(1 << 20).unwrap()), ["epoch 1"]);
        let read = bars.read_next(1 << 20).unwrap();
        assert_eq!(
            texts(&read),
            ["epoch 1", " 10%|#  | step=1", " 20%|## | step=2"]
        );
        // Hours of redraws without a newline stay within small reads, none skipped (the first
        // `\r` ends " 30%", the last redraw is not ended yet).
        for i in 0..2000 {
            append(&path, &format!("\r{i:>5}%|{}|", "#".repeat(40)));
        }
        let mut lines = 0;
        let mut skipped = 0;
        loop {
            let read = bars.read_next(4096).unwrap();
            lines += read.lines().count();
            skipped += read.skipped;
            if read.at_end {
                break;
            }
        }
        assert_eq!((lines, skipped), (2000, 0));
        // The last redraw waits for its end; `\r\n` endings make no empty lines.
        append(&path, "\r\ndone\r\n");
        let last = format!(" 1999%|{}|", "#".repeat(40));
        assert_eq!(
            texts(&bars.read_next(1 << 20).unwrap()),
            [last.as_str(), "done"]
        );
    }
}
