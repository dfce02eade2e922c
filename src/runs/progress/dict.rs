//! One-line JSON objects and Python dict reprs: `{"step": 120, "loss": 0.345}` and the Hugging Face
//! Trainer's `{'loss': 0.2345, 'grad_norm': 1.23, 'learning_rate': 4.5e-05, 'epoch': 0.5}`
//! (transformers 4.x) or `{'loss': '0.2345', 'grad_norm': '1.23', ...}` (5.x, which formats each
//! float with `f"{v:.4g}"` before printing): a quoted number is read as the number.
//!
//! One tolerant reader covers both, because Python's `json.dumps` writes `NaN` and `Infinity`,
//! which strict JSON parsers refuse, and reprs may hold `tensor(0.5, device='cuda:0')` or
//! `np.float64(0.5)` values. Nested objects flatten into `outer/inner` names.

use super::event::ProgressEvent;
use super::pairs::{add_pair, parse_number};

/// Nesting beyond this is skipped rather than flattened; it also bounds the recursion.
const MAX_DEPTH: usize = 4;

pub(super) fn parse(text: &str) -> Option<ProgressEvent> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    let mut values = Vec::new();
    reader.object("", 0, &mut values)?;
    reader.skip_space();
    if reader.at != reader.bytes.len() {
        return None;
    }
    let mut event = ProgressEvent::default();
    for (key, raw) in &values {
        add_pair(&mut event, key, raw);
    }
    (!event.is_empty()).then_some(event)
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// `{ key: value, ... }`, numeric leaves appended to `out` as (flattened name, raw number).
    fn object(
        &mut self,
        prefix: &str,
        depth: usize,
        out: &mut Vec<(String, &'a str)>,
    ) -> Option<()> {
        self.expect(b'{')?;
        self.skip_space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_space();
            let key = self.key()?;
            self.expect(b':')?;
            let name = if prefix.is_empty() {
                key.to_string()
            } else {
                format!("{prefix}/{key}")
            };
            self.value(&name, depth, out)?;
            self.skip_space();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.skip_space();
                    if self.peek()? == b'}' {
                        self.at += 1;
                        return Some(());
                    }
                }
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn key(&mut self) -> Option<&'a str> {
        match self.peek()? {
            quote @ (b'"' | b'\'') => {
                let start = self.at + 1;
                self.skip_string(quote)?;
                Some(&self.text[start..self.at - 1])
            }
            _ => {
                let token = self.token();
                (!token.is_empty()).then_some(token)
            }
        }
    }

    fn value(&mut self, name: &str, depth: usize, out: &mut Vec<(String, &'a str)>) -> Option<()> {
        self.skip_space();
        match self.peek()? {
            b'{' if depth < MAX_DEPTH => self.object(name, depth + 1, out),
            b'{' | b'[' | b'(' => self.skip_nested(),
            quote @ (b'"' | b'\'') => {
                // transformers 5.x formats its logged floats as strings: `'loss': '0.6933'`.
                let start = self.at + 1;
                self.skip_string(quote)?;
                let inner = &self.text[start..self.at - 1];
                if parse_number(inner).is_some() {
                    out.push((name.to_string(), inner.trim()));
                }
                Some(())
            }
            _ => {
                let token = self.token();
                if token.is_empty() {
                    return None;
                }
                if self.peek() == Some(b'(') {
                    // `tensor(0.5, device='cuda:0')`, `np.float64(0.5)`: the first argument is the value.
                    let inner_start = self.at + 1;
                    self.skip_nested()?;
                    let inner = self.text[inner_start..self.at - 1].split(',').next()?;
                    if parse_number(inner).is_some() {
                        out.push((name.to_string(), inner.trim()));
                    }
                } else if parse_number(token).is_some() {
                    out.push((name.to_string(), token));
                }
                Some(())
            }
        }
    }

    /// A bare word: a number, `True`, `None`, `NaN`, or a call's name such as `np.float64`.
    fn token(&mut self) -> &'a str {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-._".contains(&b))
        {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    /// Skips a quoted string starting at the opening quote, escapes included.
    fn skip_string(&mut self, quote: u8) -> Option<()> {
        self.at += 1;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b if b == quote => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }

    /// Skips a bracketed value (list, tuple, call arguments, too-deep object) and what it holds.
    fn skip_nested(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                quote @ (b'"' | b'\'') => {
                    self.skip_string(quote)?;
                    continue;
                }
                _ => {}
            }
            self.at += 1;
        }
    }
}
