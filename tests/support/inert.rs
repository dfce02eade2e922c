//! Control sequences from outside, and the check that none of them reaches the terminal:
//! shared by the CLI's and the Docker views' tests.

use std::process::Output;

/// OSC (retitle, clipboard), CSI (clear, colour), the C1 CSI and bidi controls.
pub const HOSTILE: &str =
    "\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[31m\u{9b}2J\u{202e}\u{2066}\u{200f}\u{61c}";

/// Whether a terminal would act on `c`: ESC and the other C0 controls but newline and tab,
/// DEL, C1, bidi controls.
pub fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Nothing in the command's output (stdout and stderr) a terminal would act on.
pub fn assert_inert(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8(bytes.clone())
            .unwrap_or_else(|e| panic!("{what}: {stream} is not UTF-8: {e}"));
        let found: Vec<char> = text.chars().filter(|&c| acts(c)).collect();
        assert!(
            found.is_empty(),
            "{what}: {stream} holds {found:?}: {text:?}"
        );
    }
}
