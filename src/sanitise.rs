//! Text from outside gpudeck made safe for a terminal: an image's ENV values and labels, a
//! container's command, a run's name, a kernel log's process names, what the user typed. A
//! terminal acts on control characters (ESC starts sequences that retitle the window, clear the
//! screen, set the clipboard or remap keys; C1 controls such as U+009B do the same on terminals
//! that take them) and bidirectional controls reorder what is shown, so that a line reads other
//! than it is. None of them is ever needed to read a value.
//!
//! Every command's output goes through [`text`] where it is printed ([`crate::output`]), and the
//! dashboard's cells drop what [`is_unsafe`] names before they reach the terminal, so a string
//! needs no care where it is formatted. Each unsafe character is shown as a JSON escape
//! (`\u001b`, `\r`): what was there stays visible, nothing of it acts, and inside a JSON string
//! (`--json`) the escape reads back as the character it stands for.

use std::borrow::Cow;

/// Whether a terminal could act on `c`: every C0 control but newline and tab (which
/// [`text`] keeps, [`line`] does not), DEL, the C1 controls (U+0080-U+009F) and the
/// bidirectional controls (embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069,
/// the marks U+200E, U+200F and U+061C).
pub fn is_unsafe(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{8}'
            | '\u{b}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{61c}'
    )
}

/// `text` with every unsafe character shown as its escape; newlines and tabs are kept, and so
/// is a carriage return right before a newline (a line ending that overwrites nothing).
pub fn text(text: &str) -> Cow<'_, str> {
    clean(text, true)
}

/// [`text`] for a value that must stay on one line (a table's cell): newlines and tabs are
/// shown as escapes too.
pub fn line(text: &str) -> Cow<'_, str> {
    clean(text, false)
}

fn clean(text: &str, lines: bool) -> Cow<'_, str> {
    let kept = |c: char, next: Option<char>| {
        !is_unsafe(c) && (lines || !matches!(c, '\n' | '\t'))
            || lines && c == '\r' && next == Some('\n')
    };
    let mut chars = text.chars().peekable();
    let mut at = 0;
    while let Some(c) = chars.next() {
        if !kept(c, chars.peek().copied()) {
            break;
        }
        at += c.len_utf8();
    }
    if at == text.len() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..at]);
    let mut chars = text[at..].chars().peekable();
    while let Some(c) = chars.next() {
        if kept(c, chars.peek().copied()) {
            out.push(c);
        } else {
            push_escape(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// `c` as JSON writes it escaped: `\n`, `\r`, `\t`, `\b`, `\f`, or `\u` and four hex digits.
fn push_escape(out: &mut String, c: char) {
    use std::fmt::Write as _;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        _ => {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an image, a log or a command line can carry: OSC (title, clipboard), CSI (clear,
    /// colour), the C1 CSI, a DCS, a bare BEL and backspace, and the bidi controls.
    const HOSTILE: &[&str] = &[
        "\x1b]0;pwned\x07",
        "\x1b]52;c;cHduZWQ=\x07",
        "\x1b[2J",
        "\x1b[31mred",
        "\u{9b}2J",
        "\u{9d}0;t\u{9c}",
        "\x1bP+q544e\x1b\\",
        "a\x08\x08b\x07",
        "x\ry",
        "\u{202e}txt.exe",
        "\u{2066}i\u{2069}\u{200e}\u{200f}\u{61c}\u{202a}",
    ];

    fn safe(text: &str) -> bool {
        !text.chars().any(is_unsafe)
    }

    #[test]
    fn every_control_is_shown_and_none_is_left() {
        for bad in HOSTILE {
            let shown = text(bad);
            assert!(safe(&shown), "{bad:?} -> {shown:?}");
            assert!(safe(&line(bad)), "{bad:?}");
            assert!(matches!(shown, Cow::Owned(_)), "{bad:?}");
        }
        assert_eq!(text("\x1b]0;pwned\x07"), "\\u001b]0;pwned\\u0007");
        assert_eq!(text("\u{9b}2J"), "\\u009b2J");
        assert_eq!(text("\u{202e}abc"), "\\u202eabc");
        assert_eq!(text("x\ry\x08"), "x\\ry\\b");
    }

    #[test]
    fn plain_text_is_kept_as_it_is_without_a_copy() {
        for good in [
            "",
            "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
            "PATH=/usr/local/bin:/usr/bin\tLANG=C.UTF-8\n",
            "naïve — ünïcode 日本語 ▁▂▃ ⣿ ✓",
            "crlf ending\r\n",
        ] {
            assert!(
                matches!(text(good), Cow::Borrowed(g) if g == good),
                "{good:?}"
            );
        }
    }

    #[test]
    fn a_line_keeps_to_one_line() {
        assert_eq!(line("a\nb\tc\r\n"), "a\\nb\\tc\\r\\n");
        assert_eq!(text("a\nb\tc\r\n"), "a\nb\tc\r\n");
    }

    #[test]
    fn escapes_read_back_inside_json() {
        let value = format!("{}{}", HOSTILE.concat(), "\\ end \"q\"");
        let json = serde_json::to_string(&serde_json::json!({ "name": value })).unwrap();
        let shown = text(&json);
        assert!(safe(&shown), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["name"], value.as_str());
    }
}
