//! A container's log as whole lines, each with its stream and the engine's timestamp.

use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures::stream::BoxStream;
use futures::StreamExt;

use super::connect::Engine;
use super::error::DockerError;
use super::time::split_timestamp;
use super::types::{LogLine, LogStream};

impl Engine {
    /// The log of a container: the last `tail` lines (all when `None`), then, with `follow`, new
    /// lines as they are written until the container stops. A TTY container has one stream;
    /// its lines come as `Stdout`.
    pub fn logs(
        &self,
        id: &str,
        follow: bool,
        tail: Option<usize>,
    ) -> BoxStream<'static, Result<LogLine, DockerError>> {
        let tail = tail.map_or_else(|| "all".to_string(), |n| n.to_string());
        let options = LogsOptionsBuilder::new()
            .follow(follow)
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .tail(&tail)
            .build();
        let engine = self.clone();
        let what = format!("container {id}");
        // `None` marks the end, so a last line without a newline is still delivered.
        let chunks = self
            .docker
            .logs(id, Some(options))
            .map(Some)
            .chain(futures::stream::once(async { None }));
        chunks
            .scan(LineSplitter::new(), move |splitter, chunk| {
                let lines: Vec<Result<LogLine, DockerError>> = match chunk {
                    Some(Ok(output)) => splitter.push(output).into_iter().map(Ok).collect(),
                    Some(Err(e)) => vec![Err(engine.error(e, &what))],
                    None => splitter.finish().into_iter().map(Ok).collect(),
                };
                futures::future::ready(Some(futures::stream::iter(lines)))
            })
            .flatten()
            .boxed()
    }
}

/// Joins the engine's chunks into lines, per stream: a chunk may end mid-line, and each chunk
/// starts with its own timestamp (the first one of a line is kept).
#[derive(Debug, Default)]
pub(crate) struct LineSplitter {
    pending: [Pending; 2],
}

#[derive(Debug, Default)]
struct Pending {
    bytes: Vec<u8>,
    timestamp: Option<String>,
}

impl LineSplitter {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Takes one chunk and returns the lines it completed.
    pub(crate) fn push(&mut self, output: LogOutput) -> Vec<LogLine> {
        let (stream, bytes) = match &output {
            LogOutput::StdErr { message } => (LogStream::Stderr, message.as_ref()),
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                (LogStream::Stdout, message.as_ref())
            }
            LogOutput::StdIn { .. } => return Vec::new(),
        };
        let pending = &mut self.pending[index(stream)];
        let mut lines = Vec::new();
        let mut rest = bytes;
        loop {
            let (stamp, body) = strip_timestamp(rest);
            if pending.bytes.is_empty() && pending.timestamp.is_none() {
                pending.timestamp = stamp;
            }
            match body.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    pending.bytes.extend_from_slice(&body[..end]);
                    lines.push(take_line(pending, stream));
                    rest = &body[end + 1..];
                    if rest.is_empty() {
                        break;
                    }
                }
                None => {
                    pending.bytes.extend_from_slice(body);
                    break;
                }
            }
        }
        lines
    }

    /// The unfinished lines at the end of the log.
    pub(crate) fn finish(&mut self) -> Vec<LogLine> {
        [LogStream::Stdout, LogStream::Stderr]
            .into_iter()
            .filter_map(|stream| {
                let pending = &mut self.pending[index(stream)];
                (!pending.bytes.is_empty()).then(|| take_line(pending, stream))
            })
            .collect()
    }
}

fn index(stream: LogStream) -> usize {
    match stream {
        LogStream::Stdout => 0,
        LogStream::Stderr => 1,
    }
}

fn take_line(pending: &mut Pending, stream: LogStream) -> LogLine {
    let mut bytes = std::mem::take(&mut pending.bytes);
    // A TTY writes CRLF.
    if bytes.last() == Some(&b'\r') {
        bytes.pop();
    }
    LogLine {
        stream,
        timestamp: pending.timestamp.take(),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The engine's `2026-11-22T17:35:00.123456789Z ` prefix, if the bytes start with one.
fn strip_timestamp(bytes: &[u8]) -> (Option<String>, &[u8]) {
    let head = &bytes[..bytes.len().min(40)];
    let Some(space) = head.iter().position(|&b| b == b' ') else {
        return (None, bytes);
    };
    let Ok(candidate) = std::str::from_utf8(&bytes[..=space]) else {
        return (None, bytes);
    };
    match split_timestamp(candidate) {
        (Some(stamp), "") => (Some(stamp.to_string()), &bytes[space + 1..]),
        _ => (None, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str) -> LogOutput {
        LogOutput::StdOut {
            message: text.as_bytes().to_vec().into(),
        }
    }

    fn err(text: &str) -> LogOutput {
        LogOutput::StdErr {
            message: text.as_bytes().to_vec().into(),
        }
    }

    fn line(stream: LogStream, timestamp: Option<&str>, text: &str) -> LogLine {
        LogLine {
            stream,
            timestamp: timestamp.map(str::to_string),
            text: text.to_string(),
        }
    }

    const T1: &str = "2026-11-22T17:35:00.000000001Z";
    const T2: &str = "2026-11-22T17:35:01.000000002Z";

    #[test]
    fn one_line_per_chunk_with_streams_apart() {
        let mut s = LineSplitter::new();
        assert_eq!(
            s.push(out(&format!("{T1} out\n"))),
            vec![line(LogStream::Stdout, Some(T1), "out")]
        );
        assert_eq!(
            s.push(err(&format!("{T2} err\n"))),
            vec![line(LogStream::Stderr, Some(T2), "err")]
        );
        assert!(s.finish().is_empty());
    }

    #[test]
    fn a_line_split_across_chunks_keeps_its_first_timestamp() {
        let mut s = LineSplitter::new();
        assert!(s.push(out(&format!("{T1} hel"))).is_empty());
        assert!(s.push(err(&format!("{T1} other stream\n"))).len() == 1);
        assert_eq!(
            s.push(out(&format!("{T2} lo\n"))),
            vec![line(LogStream::Stdout, Some(T1), "hello")]
        );
    }

    #[test]
    fn several_lines_in_one_chunk_and_an_unfinished_last_line() {
        let mut s = LineSplitter::new();
        let chunk = format!("{T1} a\r\n{T2} b\nno stamp\npartial");
        assert_eq!(
            s.push(LogOutput::Console {
                message: chunk.into_bytes().into()
            }),
            vec![
                line(LogStream::Stdout, Some(T1), "a"),
                line(LogStream::Stdout, Some(T2), "b"),
                line(LogStream::Stdout, None, "no stamp"),
            ]
        );
        assert_eq!(s.finish(), vec![line(LogStream::Stdout, None, "partial")]);
    }

    #[test]
    fn utf8_split_between_chunks_survives() {
        let mut s = LineSplitter::new();
        let bytes = "é\n".as_bytes();
        assert!(s
            .push(LogOutput::StdOut {
                message: bytes[..1].to_vec().into()
            })
            .is_empty());
        let lines = s.push(LogOutput::StdOut {
            message: bytes[1..].to_vec().into(),
        });
        assert_eq!(lines, vec![line(LogStream::Stdout, None, "é")]);
    }

    #[test]
    fn text_that_only_looks_like_a_time_is_kept() {
        let mut s = LineSplitter::new();
        assert_eq!(
            s.push(out("12:00 lunch\n")),
            vec![line(LogStream::Stdout, None, "12:00 lunch")]
        );
    }
}
