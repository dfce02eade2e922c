//! Inputs for the parsers' property tests: arbitrary text, and valid files or lines with a
//! few structured mistakes in them (a value of the wrong type, a line cut short, a key twice).

use proptest::prelude::*;
use proptest::test_runner::Config;

/// Cases per property. Each property takes well under a second at this count in a debug build
/// on one core, so the lot stays a few seconds on a 2-core CI machine.
pub(crate) const CASES: u32 = 1000;

/// The runner settings every property uses: `CASES` cases and no regression files written
/// into the source tree (a failure found is kept as a plain regression test instead).
pub(crate) fn config() -> Config {
    Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Pieces of TOML and of tool output that reach deeper into a parser than random bytes do.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "=",
    " = ",
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "\n",
    "\r\n",
    "#",
    "{",
    "}",
    ",",
    ".",
    ":",
    "|",
    " ",
    "\t",
    "\\",
    "\\u",
    "é",
    "\u{0}",
    "\u{7f}",
    "\u{feff}",
    "━",
    "%|",
    "general",
    "refresh_ms",
    "theme",
    "gpu",
    "shell",
    "key",
    "a",
    "1",
    "-1",
    "0",
    "+",
    "1.5",
    "1e400",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "0x1F",
    "0o7",
    "0b1",
    "99999999999999999999",
    "18446744073709551616",
    "true",
    "false",
    "1979-05-27T07:32:00Z",
    "07:32:00",
    "Epoch",
    "step",
    "loss",
    "it/s",
    "/",
    "(",
    ")",
];

/// Arbitrary text: raw bytes read as UTF-8 (lossily), or a run of `TOKENS`.
pub(crate) fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..400)
            .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        prop::collection::vec(prop::sample::select(TOKENS), 0..120).prop_map(|t| t.concat()),
        ".{0,200}",
    ]
}

/// Values of every TOML type and none, to put where another type belongs.
const VALUES: &[&str] = &[
    "1",
    "-5",
    "0",
    "1.5",
    "-0.0",
    "nan",
    "inf",
    "99999999999999999999",
    "18446744073709551615",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "-9223372036854775808",
    "true",
    "\"\"",
    "\"x\"",
    "\"fast\"",
    "\"#zzzzzz\"",
    "\"99999999999999999999\"",
    "[]",
    "[1, \"a\"]",
    "[\"a\"]",
    "{}",
    "{ a = 1 }",
    "1979-05-27",
    "07:32:00",
    "",
    "yes",
    "\"",
    "[",
    "{",
    "\"\\u0000\"",
    "\"é\"",
    "'''x'''",
];

/// One structured mistake in a valid text.
#[derive(Debug, Clone)]
pub(crate) enum Mistake {
    /// The text cut at this fraction of its length.
    Truncate(f64),
    /// A line written twice (a key set twice, a table opened twice).
    DuplicateLine(usize),
    DeleteLine(usize),
    /// The value of one `key = value` line replaced.
    ReplaceValue(usize, &'static str),
    /// The key of one `key = value` line renamed to something unknown.
    RenameKey(usize, String),
    /// Arbitrary text put in at a fraction of the length.
    Insert(f64, String),
    /// One run of digits replaced by a number at the edge of a range.
    ReplaceNumber(usize, &'static str),
}

/// Numbers at the edges of the integer types a parser may read them into.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "255",
    "256",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
];

fn mistake() -> impl Strategy<Value = Mistake> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Mistake::Truncate),
        any::<usize>().prop_map(Mistake::DuplicateLine),
        any::<usize>().prop_map(Mistake::DeleteLine),
        (any::<usize>(), prop::sample::select(VALUES))
            .prop_map(|(line, value)| Mistake::ReplaceValue(line, value)),
        (any::<usize>(), "[a-z_]{1,12}").prop_map(|(line, key)| Mistake::RenameKey(line, key)),
        (0.0..1.0f64, any_text()).prop_map(|(at, text)| Mistake::Insert(at, text)),
        (any::<usize>(), prop::sample::select(EDGE_NUMBERS))
            .prop_map(|(n, number)| Mistake::ReplaceNumber(n, number)),
    ]
}

/// One of the `valid` texts with one to three structured mistakes.
pub(crate) fn near_miss(valid: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        prop::sample::select(valid),
        prop::collection::vec(mistake(), 1..=3),
    )
        .prop_map(|(text, mistakes)| {
            mistakes
                .into_iter()
                .fold(text.to_owned(), |text, m| apply(&text, &m))
        })
}

/// One of `valid`'s lines with one to three structured mistakes: for line parsers.
pub(crate) fn near_miss_line(valid: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        prop::sample::select(valid),
        prop::collection::vec(line_mistake(), 1..=3),
    )
        .prop_map(|(line, mistakes)| {
            mistakes
                .into_iter()
                .fold(line.to_owned(), |text, m| apply(&text, &m))
        })
}

/// Mistakes within one line: cut, text put in, a number replaced.
fn line_mistake() -> impl Strategy<Value = Mistake> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Mistake::Truncate),
        (0.0..1.0f64, any_text()).prop_map(|(at, text)| Mistake::Insert(at, text)),
        (0.0..1.0f64, prop::sample::select(VALUES))
            .prop_map(|(at, value)| Mistake::Insert(at, value.to_owned())),
        (any::<usize>(), prop::sample::select(EDGE_NUMBERS))
            .prop_map(|(n, number)| Mistake::ReplaceNumber(n, number)),
    ]
}

/// The byte offset nearest `fraction` of `text`'s length that is a character boundary.
fn boundary(text: &str, fraction: f64) -> usize {
    let mut at = (text.len() as f64 * fraction) as usize;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &str, mistake: &Mistake) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let assignments: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].trim_start().starts_with('#') && lines[i].contains('='))
        .collect();
    let pick = |pool: &[usize], n: usize| (!pool.is_empty()).then(|| pool[n % pool.len()]);
    let every: Vec<usize> = (0..lines.len()).collect();
    match mistake {
        Mistake::Truncate(fraction) => return text[..boundary(text, *fraction)].to_owned(),
        Mistake::ReplaceNumber(n, number) => return replace_number(text, *n, number),
        Mistake::Insert(fraction, inserted) => {
            let at = boundary(text, *fraction);
            return format!("{}{inserted}{}", &text[..at], &text[at..]);
        }
        Mistake::DuplicateLine(n) => {
            if let Some(i) = pick(&every, *n) {
                let line = lines[i].clone();
                lines.insert(i + 1, line);
            }
        }
        Mistake::DeleteLine(n) => {
            if let Some(i) = pick(&every, *n) {
                lines.remove(i);
            }
        }
        Mistake::ReplaceValue(n, value) => {
            if let Some(i) = pick(&assignments, *n) {
                let key = lines[i].split('=').next().unwrap_or_default().to_owned();
                lines[i] = format!("{key}= {value}");
            }
        }
        Mistake::RenameKey(n, key) => {
            if let Some(i) = pick(&assignments, *n) {
                let value = lines[i].split_once('=').map_or("", |(_, v)| v).to_owned();
                lines[i] = format!("{key} ={value}");
            }
        }
    }
    lines.join("\n") + "\n"
}

/// `text` with its `n`-th run of ASCII digits (counted modulo their number) replaced.
fn replace_number(text: &str, n: usize, number: &str) -> String {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii_digit() {
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            runs.push(start..at);
        } else {
            at += 1;
        }
    }
    match runs.get(n % runs.len().max(1)) {
        Some(run) => format!("{}{number}{}", &text[..run.start], &text[run.end..]),
        None => text.to_owned(),
    }
}

/// For a `origin:line:col: reason` message: that it names `origin`, that its line and column
/// lie within `text` (the column may be one past a line's end), and that a reason follows.
pub(crate) fn assert_located(message: &str, origin: &str, text: &str) {
    let rest = message
        .strip_prefix(origin)
        .and_then(|rest| rest.strip_prefix(':'))
        .unwrap_or_else(|| panic!("not from {origin}: {message}"));
    let mut parts = rest.splitn(3, ':');
    let line: usize = parse_part(parts.next(), message);
    let column: usize = parse_part(parts.next(), message);
    let reason = parts.next().unwrap_or_default().trim();
    assert!(!reason.is_empty(), "no reason: {message}");
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(
        line >= 1 && line <= lines.len(),
        "line {line} of {}: {message}",
        lines.len()
    );
    let width = lines[line - 1].chars().count();
    assert!(
        column >= 1 && column <= width + 1,
        "column {column} of {width}: {message}"
    );
}

fn parse_part(part: Option<&str>, message: &str) -> usize {
    part.and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no line:col in {message}"))
}
