//! Reading one MVU argument's text as a value: JSON, JavaScript-style literals, arithmetic, bare text.
//!
//! MVU reads an argument with `JSON.parse`, then as a JavaScript literal, then with math.js, then as
//! YAML, and finally keeps the text with its outer quotes trimmed. This module owns the part of that
//! chain this engine agrees with: JSON and JSON5-style literals (single quotes, backticks, unquoted
//! keys, trailing commas, comments, signed, hexadecimal and exponent numbers), plain arithmetic on
//! number literals, and MVU's quote trimming. Dates (`2024-01-01`), percentages (`50%`) and math.js
//! expressions stay text, with a diagnostic naming what MVU would have done (SPEC §6). Macros are
//! substituted in every string this module produces. It must not know about commands or paths.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Number, Value as Json};

use crate::diagnostic::Severity;

/// How deeply arrays and objects may nest in one argument; deeper text is kept as a string.
const MAX_DEPTH: usize = 128;

/// A value read from an argument, and what was noticed on the way.
#[derive(Debug)]
pub(crate) struct Read {
    pub(crate) value: Json,
    /// Whether the text was a complete literal (JSON, JSON5-style, or a quoted string).
    pub(crate) literal: bool,
    pub(crate) note: Option<Note>,
}

/// Something to report about an argument.
#[derive(Debug)]
pub(crate) struct Note {
    pub(crate) kind: &'static str,
    pub(crate) severity: Severity,
    pub(crate) message: String,
}

fn note(kind: &'static str, severity: Severity, message: String) -> Option<Note> {
    Some(Note {
        kind,
        severity,
        message,
    })
}

/// Reads a trimmed argument text.
pub(crate) fn read_value(text: &str, macros: &BTreeMap<String, String>) -> Read {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        macros,
    };
    if let Some(value) = parser.complete() {
        return Read {
            value,
            literal: true,
            note: None,
        };
    }
    if text == "undefined" {
        return Read {
            value: Json::Null,
            literal: false,
            note: note(
                "mvu_undefined",
                Severity::Warning,
                "`undefined` has no json form; read as null".to_owned(),
            ),
        };
    }
    if let Some(date) = date_like(text) {
        let computed = evaluate(text).map_or_else(String::new, |n| format!(" ({n})"));
        return Read {
            value: Json::String(expand(date, macros).into_owned()),
            literal: false,
            note: note(
                "mvu_arithmetic_difference",
                Severity::Warning,
                format!(
                    "mvu evaluates the unquoted date `{text}` as subtraction{computed}; kept as text"
                ),
            ),
        };
    }
    if let Some(number) = text
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<f64>().ok())
    {
        return Read {
            value: Json::String(text.to_owned()),
            literal: false,
            note: note(
                "mvu_arithmetic_difference",
                Severity::Warning,
                format!(
                    "mvu evaluates the unquoted `{text}` as {}; kept as text",
                    number / 100.0
                ),
            ),
        };
    }
    if let Some(number) = evaluate(text) {
        return Read {
            value: Json::Number(number.clone()),
            literal: false,
            note: note(
                "mvu_arithmetic",
                Severity::Note,
                format!("evaluated `{text}` to {number}, as mvu does"),
            ),
        };
    }
    if text.starts_with(['\'', '"', '`']) {
        // MVU's last resort trims quotes and backslashes from both ends of text it could not read.
        let trimmed = text.trim_matches(|c| matches!(c, '\\' | '"' | '\'' | '`' | ' '));
        return Read {
            value: Json::String(expand(trimmed, macros).into_owned()),
            literal: false,
            note: note(
                "mvu_unbalanced_quotes",
                Severity::Warning,
                format!(
                    "`{}` is not one quoted string; read it as mvu does, with the outer quotes trimmed",
                    clip(text)
                ),
            ),
        };
    }
    let looks_like_expression =
        text.contains(['(', ')', '+', '*', '/', '^']) || text.contains(" - ");
    let message = if looks_like_expression {
        (
            "mvu_expression_kept_as_text",
            Severity::Warning,
            format!(
                "mvu would evaluate `{}` with math.js; kept as text",
                clip(text)
            ),
        )
    } else {
        (
            "mvu_bare_text",
            Severity::Note,
            format!("unquoted `{}` read as a string", clip(text)),
        )
    };
    Read {
        value: Json::String(expand(text, macros).into_owned()),
        literal: false,
        note: note(message.0, message.1, message.2),
    }
}

/// At most 60 characters of `text`, for messages.
fn clip(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(60) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
        None => Cow::Borrowed(text),
    }
}

/// `2024-01-01` or `2026-6-1`: digits joined by exactly two `-`, which MVU computes as a subtraction.
fn date_like(text: &str) -> Option<&str> {
    let parts: Vec<&str> = text.split('-').collect();
    let digits = |p: &&str| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit());
    (parts.len() == 3 && parts.iter().all(digits)).then_some(text)
}

/// Substitutes `<name>` and `{{name}}` for the names in `macros`; other text is left alone.
/// Time: O(n) in the length of `text`.
pub(crate) fn expand<'t>(text: &'t str, macros: &BTreeMap<String, String>) -> Cow<'t, str> {
    if macros.is_empty() || !text.contains(['<', '{']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['<', '{']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let (open, close) = if tail.starts_with("{{") {
            ("{{", "}}")
        } else if tail.starts_with('<') {
            ("<", ">")
        } else {
            ("", "")
        };
        let replaced = (!open.is_empty())
            .then(|| {
                let inner = &tail[open.len()..];
                // Macro names are short; bounding the search keeps the substitution linear.
                let window = &inner[..floor_boundary(inner, 64)];
                let end = window.find(close)?;
                let value = macros.get(&inner[..end])?;
                Some((value, open.len() + end + close.len()))
            })
            .flatten();
        match replaced {
            Some((value, used)) => {
                out.push_str(value);
                rest = &tail[used..];
            }
            None => {
                let width = tail.chars().next().map_or(1, char::len_utf8);
                out.push_str(&tail[..width]);
                rest = &tail[width..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

struct Parser<'t, 'm> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    macros: &'m BTreeMap<String, String>,
}

impl<'t> Parser<'t, '_> {
    /// The whole text as one literal, or `None`.
    fn complete(&mut self) -> Option<Json> {
        self.skip_blank();
        let value = self.value(0)?;
        self.skip_blank();
        (self.at == self.bytes.len()).then_some(value)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Skips whitespace and JavaScript comments.
    fn skip_blank(&mut self) {
        loop {
            while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
                self.at += 1;
            }
            let rest = &self.bytes[self.at..];
            if rest.starts_with(b"//") {
                self.at += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            } else if rest.starts_with(b"/*") {
                match self.text[self.at + 2..].find("*/") {
                    Some(end) => self.at += end + 4,
                    None => return,
                }
            } else {
                // Non-ASCII whitespace (full-width spaces in Chinese text) also separates tokens.
                match self.text[self.at..].chars().next() {
                    Some(c) if c.is_whitespace() => self.at += c.len_utf8(),
                    _ => return,
                }
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        match self.peek()? {
            b'{' if depth < MAX_DEPTH => self.object(depth + 1),
            b'[' if depth < MAX_DEPTH => self.array(depth + 1),
            q @ (b'"' | b'\'' | b'`') => self.string(q).map(Json::String),
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number().map(Json::Number),
            _ => {
                let word = self.identifier()?;
                match word {
                    "true" => Some(Json::Bool(true)),
                    "false" => Some(Json::Bool(false)),
                    "null" => Some(Json::Null),
                    _ => None,
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<Json> {
        self.at += 1;
        let mut map = Map::new();
        loop {
            self.skip_blank();
            if self.peek()? == b'}' {
                self.at += 1;
                return Some(Json::Object(map));
            }
            let key = match self.peek()? {
                q @ (b'"' | b'\'' | b'`') => self.string(q)?,
                b'0'..=b'9' | b'-' | b'+' | b'.' => self.number()?.to_string(),
                _ => {
                    let macros = self.macros;
                    expand(self.identifier()?, macros).into_owned()
                }
            };
            self.skip_blank();
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            self.skip_blank();
            let value = self.value(depth)?;
            map.insert(key, value);
            self.skip_blank();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Json> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            if self.peek()? == b']' {
                self.at += 1;
                return Some(Json::Array(items));
            }
            items.push(self.value(depth)?);
            self.skip_blank();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {}
                _ => return None,
            }
        }
    }

    /// A run of identifier characters: ASCII letters, digits, `_`, `$`, and any non-ASCII letter.
    fn identifier(&mut self) -> Option<&'t str> {
        let start = self.at;
        for c in self.text[start..].chars() {
            if c.is_alphanumeric() || c == '_' || c == '$' {
                self.at += c.len_utf8();
            } else {
                break;
            }
        }
        (self.at > start).then(|| &self.text[start..self.at])
    }

    /// A quoted string with JavaScript escapes; `None` when it does not close.
    fn string(&mut self, quote: u8) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let stop = rest.find([quote as char, '\\'])?;
            out.push_str(&rest[..stop]);
            self.at += stop;
            if self.bytes[self.at] == quote {
                self.at += 1;
                return Some(match expand(&out, self.macros) {
                    Cow::Borrowed(_) => out,
                    Cow::Owned(expanded) => expanded,
                });
            }
            self.at += 1;
            let escaped = self.text[self.at..].chars().next()?;
            self.at += escaped.len_utf8();
            match escaped {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                '0' => out.push('\0'),
                // A backslash before a line break continues the string on the next line.
                '\n' => {}
                'x' => out.push(self.hex_char(2)?),
                'u' => out.push(self.unicode_escape()?),
                other => out.push(other),
            }
        }
    }

    fn hex_digits(&mut self, count: usize) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + count)?;
        let value = u32::from_str_radix(digits, 16).ok()?;
        self.at += count;
        Some(value)
    }

    fn hex_char(&mut self, count: usize) -> Option<char> {
        char::from_u32(self.hex_digits(count)?)
    }

    /// `\uXXXX` (with surrogate pairs) or `\u{X…}`.
    fn unicode_escape(&mut self) -> Option<char> {
        if self.peek()? == b'{' {
            let close = self.text[self.at..].find('}')?;
            let digits = &self.text[self.at + 1..self.at + close];
            let c = char::from_u32(u32::from_str_radix(digits, 16).ok()?)?;
            self.at += close + 1;
            return Some(c);
        }
        let high = self.hex_digits(4)?;
        if (0xD800..0xDC00).contains(&high) && self.text[self.at..].starts_with("\\u") {
            self.at += 2;
            let low = self.hex_digits(4)?;
            return char::from_u32(
                0x10000 + ((high - 0xD800) << 10) + (low.checked_sub(0xDC00)? & 0x3FF),
            );
        }
        // A lone surrogate has no UTF-8 form; it reads as the replacement character.
        Some(char::from_u32(high).unwrap_or('\u{FFFD}'))
    }

    /// A number: optional sign, then hexadecimal, or decimal with optional fraction and exponent.
    /// Integers stay integers; a fraction or exponent makes a float.
    fn number(&mut self) -> Option<Number> {
        let start = self.at;
        let negative = match self.peek()? {
            b'-' => {
                self.at += 1;
                true
            }
            b'+' => {
                self.at += 1;
                false
            }
            _ => false,
        };
        let rest = &self.bytes[self.at..];
        if rest.len() > 2 && rest[0] == b'0' && matches!(rest[1], b'x' | b'X') {
            self.at += 2;
            let digits_start = self.at;
            while self.peek().is_some_and(|b| b.is_ascii_hexdigit()) {
                self.at += 1;
            }
            let magnitude = u64::from_str_radix(&self.text[digits_start..self.at], 16).ok()?;
            return if negative {
                Some(Number::from(0i64.checked_sub_unsigned(magnitude)?))
            } else {
                Some(Number::from(magnitude))
            };
        }
        let digits_start = self.at;
        let mut float = false;
        let mut digits = 0;
        while let Some(b) = self.peek() {
            match b {
                b'0'..=b'9' => digits += 1,
                b'.' if !float => float = true,
                b'e' | b'E' if digits > 0 => {
                    float = true;
                    if matches!(self.bytes.get(self.at + 1), Some(b'+' | b'-')) {
                        self.at += 1;
                    }
                }
                _ => break,
            }
            self.at += 1;
        }
        if digits == 0 {
            self.at = start;
            return None;
        }
        let body = &self.text[digits_start..self.at];
        if !float {
            let parsed = if negative {
                format!("-{body}").parse::<i64>().ok().map(Number::from)
            } else {
                body.parse::<u64>().ok().map(Number::from)
            };
            if let Some(n) = parsed {
                return Some(n);
            }
        }
        let magnitude: f64 = body.parse().ok()?;
        Number::from_f64(if negative { -magnitude } else { magnitude })
    }
}

/// Evaluates `+ - * /` and parentheses over number literals, as math.js would, rounding to 12
/// significant digits as MVU does. `None` for anything else.
fn evaluate(text: &str) -> Option<Number> {
    if !text
        .bytes()
        .all(|b| b.is_ascii_digit() || b" .+-*/()\t".contains(&b))
        || !text.bytes().any(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut arithmetic = Arithmetic {
        bytes: text.as_bytes(),
        at: 0,
    };
    let result = arithmetic.sum(0)?;
    arithmetic.blank();
    if arithmetic.at != arithmetic.bytes.len() || !result.is_finite() {
        return None;
    }
    let rounded: f64 = format!("{result:.11e}").parse().ok()?;
    if rounded.fract() == 0.0 && rounded.abs() < 9.0e15 {
        // The value is integral and far below 2^63, so the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        return Some(Number::from(rounded as i64));
    }
    Number::from_f64(rounded)
}

struct Arithmetic<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Arithmetic<'_> {
    fn blank(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn operator(&mut self, options: &[u8]) -> Option<u8> {
        self.blank();
        let b = *self.bytes.get(self.at)?;
        options.contains(&b).then(|| {
            self.at += 1;
            b
        })
    }

    fn sum(&mut self, depth: usize) -> Option<f64> {
        let mut total = self.product(depth)?;
        while let Some(op) = self.operator(b"+-") {
            let next = self.product(depth)?;
            total = if op == b'+' {
                total + next
            } else {
                total - next
            };
        }
        Some(total)
    }

    fn product(&mut self, depth: usize) -> Option<f64> {
        let mut total = self.unary(depth)?;
        while let Some(op) = self.operator(b"*/") {
            let next = self.unary(depth)?;
            total = if op == b'*' {
                total * next
            } else {
                total / next
            };
        }
        Some(total)
    }

    fn unary(&mut self, depth: usize) -> Option<f64> {
        // The depth bound keeps hostile nesting such as a megabyte of `(` off the stack.
        if depth > 64 {
            return None;
        }
        if let Some(op) = self.operator(b"+-(") {
            return match op {
                b'-' => self.unary(depth + 1).map(|v| -v),
                b'+' => self.unary(depth + 1),
                _ => {
                    let inner = self.sum(depth + 1)?;
                    self.operator(b")")?;
                    Some(inner)
                }
            };
        }
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_digit() || *b == b'.')
        {
            self.at += 1;
        }
        std::str::from_utf8(&self.bytes[start..self.at])
            .ok()?
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arithmetic_rounds_like_mvu() {
        assert_eq!(evaluate("10 + 2"), Some(Number::from(12)));
        assert_eq!(evaluate("100 * 2 + 50"), Some(Number::from(250)));
        assert_eq!(evaluate("0.1 + 0.2"), Number::from_f64(0.3));
        assert_eq!(evaluate("1 / 0"), None);
        assert_eq!(evaluate("(".repeat(100_000).as_str()), None);
    }

    #[test]
    fn macros_expand_only_known_names() {
        let macros = BTreeMap::from([("user".to_owned(), "Alice".to_owned())]);
        assert_eq!(
            expand("<user>.hp {{user}} <char> {{x", &macros),
            "Alice.hp Alice <char> {{x"
        );
        assert_eq!(
            read_value("{name: '<user>'}", &macros).value,
            json!({"name": "Alice"})
        );
    }
}
