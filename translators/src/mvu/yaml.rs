//! MVU's last reading of an argument: YAML, for text that is neither JSON, a JavaScript literal nor
//! math (docs/mvu.md: `True` is `true`, `[x, y]` is `["x", "y"]`, `'it''s'` is `it's`).
//!
//! This module owns the part of YAML 1.2 an argument can hold on its own: single- and double-quoted
//! scalars (with YAML's escapes and line folding), flow sequences and mappings, and plain scalars
//! resolved by the core schema (`null`/`~`, `true`/`True`/`TRUE`, decimal, octal `0o` and hexadecimal
//! `0x` integers, floats). Block structure (a `key: value` line, a `- item` line, a ` #` comment,
//! anchors, tags, block scalars) is not read: MVU would turn such prose into a mapping or cut it at the
//! `#`, which is its accident, so [`Reading::Block`] tells the caller to keep the text and say so. It
//! must not know about commands, macros or the other readings.

use std::borrow::Cow;
use std::sync::Arc;

use super::literal;
use serde_json::Number;
use statecraft_engine::{Array, Key, Object, Value};

/// How deeply flow collections may nest; deeper text is not read as YAML.
const MAX_DEPTH: usize = 128;

/// What YAML makes of a text.
#[derive(Debug, PartialEq)]
pub(crate) enum Reading {
    /// A value with a JSON form, built as the engine value it becomes.
    Value(Value),
    /// YAML reads block structure here (named), or a value with no JSON form; the caller keeps the text.
    Block(&'static str),
    /// Not YAML: MVU falls back to trimming quotes from the text.
    Invalid,
}

/// Reads a whole trimmed argument as one YAML node.
/// Time: O(n) in the length of `text`.
pub(crate) fn read(text: &str) -> Reading {
    let text = text.trim();
    match text.as_bytes().first() {
        None => Reading::Value(Value::Null),
        Some(b'\'' | b'"' | b'[' | b'{') => {
            let mut parser = Flow { text, at: 0 };
            let value = parser.node(0);
            parser.blank();
            match value {
                Some(Node::Value(value)) if parser.at == text.len() => Reading::Value(value),
                Some(Node::NoJson(what)) if parser.at == text.len() => Reading::Block(what),
                _ => Reading::Invalid,
            }
        }
        Some(_) => block_plain(text),
    }
}

/// A plain scalar at the top level, where YAML's block structure applies.
fn block_plain(text: &str) -> Reading {
    if let Some(what) = block_structure(text) {
        return Reading::Block(what);
    }
    if text.starts_with([',', '[', ']', '{', '}', '\'', '"', '`', '@']) {
        return Reading::Invalid;
    }
    match resolve(&fold(text)) {
        Node::Value(value) => Reading::Value(value),
        Node::NoJson(what) => Reading::Block(what),
    }
}

/// What YAML's block syntax makes of `text` when it is more than one plain scalar.
fn block_structure(text: &str) -> Option<&'static str> {
    let first = text.as_bytes()[0];
    let second = text.as_bytes().get(1).copied();
    let spaced = |b: Option<u8>| b.is_none_or(|b| b.is_ascii_whitespace());
    match first {
        b'-' | b'?' | b':' if spaced(second) => return Some("a block sequence or mapping"),
        b'#' => return Some("a comment"),
        b'&' => return Some("an anchor"),
        b'*' => return Some("an alias"),
        b'!' => return Some("a tag"),
        b'|' | b'>' => return Some("a block scalar"),
        b'%' => return Some("a directive"),
        _ => {}
    }
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("---") || line.starts_with("...") {
            return Some("a document marker");
        }
        if line.starts_with("- ") || line == "-" {
            return Some("a block sequence");
        }
    }
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let after = bytes.get(i + 1).copied();
        if b == b':' && spaced(after) {
            return Some("a mapping (`key: value`)");
        }
        if b == b'#' && i > 0 && bytes[i - 1].is_ascii_whitespace() {
            return Some("a comment (` #` ends the value)");
        }
    }
    None
}

/// A node of a flow collection: a value, or a scalar with no JSON form.
enum Node {
    Value(Value),
    NoJson(&'static str),
}

struct Flow<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Flow<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Skips white space, line breaks and ` #` comments.
    fn blank(&mut self) {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            if b.is_ascii_whitespace() {
                self.at += 1;
            } else if b == b'#' && (self.at == 0 || bytes[self.at - 1].is_ascii_whitespace()) {
                self.at += bytes[self.at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap_or(bytes.len() - self.at);
            } else {
                return;
            }
        }
    }

    fn node(&mut self, depth: usize) -> Option<Node> {
        self.blank();
        match self.peek()? {
            b'[' if depth < MAX_DEPTH => self.sequence(depth + 1),
            b'{' if depth < MAX_DEPTH => self.mapping(depth + 1),
            b'[' | b'{' => None,
            b'\'' => self.single_quoted().map(|s| Node::Value(string(&s))),
            b'"' => self.double_quoted().map(|s| Node::Value(string(&s))),
            _ => self.plain().map(|text| resolve(&fold(text))),
        }
    }

    fn sequence(&mut self, depth: usize) -> Option<Node> {
        self.at += 1;
        let mut items = Array::new();
        loop {
            self.blank();
            if self.peek()? == b']' {
                self.at += 1;
                return Some(Node::Value(Value::Array(items)));
            }
            match self.node(depth)? {
                Node::Value(value) => items.push_back(value),
                no_json => return Some(no_json),
            }
            self.blank();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {}
                // `[a: b]` is a one-pair mapping inside the sequence; it is rare enough to leave unread.
                _ => return None,
            }
        }
    }

    fn mapping(&mut self, depth: usize) -> Option<Node> {
        self.at += 1;
        let mut map = Object::new();
        loop {
            self.blank();
            if self.peek()? == b'}' {
                self.at += 1;
                return Some(Node::Value(Value::Object(map)));
            }
            let key = match self.peek()? {
                b'\'' => Key::from(&*self.single_quoted()?),
                b'"' => Key::from(self.double_quoted()?),
                b'[' | b'{' => return None,
                _ => Key::from(&*fold(self.plain()?)),
            };
            self.blank();
            let value = if self.peek()? == b':' {
                self.at += 1;
                self.blank();
                if matches!(self.peek()?, b',' | b'}') {
                    Value::Null
                } else {
                    match self.node(depth)? {
                        Node::Value(value) => value,
                        no_json => return Some(no_json),
                    }
                }
            } else {
                Value::Null
            };
            // YAML refuses a mapping that repeats a key.
            if map.insert(key, value).is_some() {
                return None;
            }
            self.blank();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    /// A plain scalar in a flow collection: it ends at `,`, a bracket or brace, `: ` or ` #`.
    fn plain(&mut self) -> Option<&str> {
        let bytes = self.text.as_bytes();
        let first = *bytes.get(self.at)?;
        let next = bytes.get(self.at + 1).copied();
        let safe_after_indicator =
            next.is_some_and(|b| !b.is_ascii_whitespace() && !b",[]{}".contains(&b));
        if b"#&*!|>'\"%@`,[]{}".contains(&first)
            || (matches!(first, b'-' | b'?' | b':') && !safe_after_indicator)
        {
            return None;
        }
        let start = self.at;
        while let Some(&b) = bytes.get(self.at) {
            let next = bytes.get(self.at + 1).copied();
            let ends = match b {
                b',' | b'[' | b']' | b'{' | b'}' => true,
                b':' => next.is_none_or(|n| n.is_ascii_whitespace() || b",[]{}".contains(&n)),
                b'#' => bytes[self.at - 1].is_ascii_whitespace(),
                _ => false,
            };
            if ends {
                break;
            }
            self.at += 1;
        }
        Some(self.text[start..self.at].trim_end())
    }

    /// `'…'`: `''` is one quote, a backslash is a backslash, line breaks fold.
    fn single_quoted(&mut self) -> Option<Cow<'t, str>> {
        self.at += 1;
        // Most strings hold no doubled quote and no line break: their text is the value.
        let text = self.text;
        let rest = &text[self.at..];
        let close = memchr::memchr(b'\'', rest.as_bytes())?;
        let line_break = memchr::memchr(b'\n', &rest.as_bytes()[..close]).is_some();
        if rest.as_bytes().get(close + 1) != Some(&b'\'') && !line_break {
            self.at += close + 1;
            return Some(Cow::Borrowed(&rest[..close]));
        }
        // The value is at most the rest of the text; sized for it up to a bound, so that a short string
        // is one allocation and a long text of many strings does not reserve its whole length each.
        let mut raw = String::with_capacity(rest.len().min(256));
        loop {
            let rest = &self.text[self.at..];
            let quote = rest.find('\'')?;
            raw.push_str(&rest[..quote]);
            self.at += quote + 1;
            if self.peek() == Some(b'\'') {
                raw.push('\'');
                self.at += 1;
            } else {
                return Some(Cow::Owned(match fold(&raw) {
                    Cow::Borrowed(_) => raw,
                    Cow::Owned(folded) => folded,
                }));
            }
        }
    }

    /// `"…"` with YAML's escapes; unescaped line breaks fold, an escaped one joins the lines.
    fn double_quoted(&mut self) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        // Line folding applies to the raw text between escapes; a run of it is collected here.
        let mut run = String::new();
        loop {
            let rest = &self.text[self.at..];
            let stop = rest.find(['"', '\\'])?;
            run.push_str(&rest[..stop]);
            self.at += stop + 1;
            if rest.as_bytes()[stop] == b'"' {
                out.push_str(&fold(&run));
                return Some(out);
            }
            out.push_str(&fold(&run));
            run.clear();
            let escaped = self.text[self.at..].chars().next()?;
            self.at += escaped.len_utf8();
            let c = match escaped {
                '0' => '\0',
                'a' => '\u{7}',
                'b' => '\u{8}',
                't' | '\t' => '\t',
                'n' => '\n',
                'v' => '\u{b}',
                'f' => '\u{c}',
                'r' => '\r',
                'e' => '\u{1b}',
                ' ' => ' ',
                '"' => '"',
                '/' => '/',
                '\\' => '\\',
                'N' => '\u{85}',
                '_' => '\u{a0}',
                'L' => '\u{2028}',
                'P' => '\u{2029}',
                'x' => self.hex(2)?,
                'u' => self.hex(4)?,
                'U' => self.hex(8)?,
                '\n' | '\r' => {
                    // An escaped line break joins the lines: the next line's indentation goes too.
                    let rest = &self.text[self.at..];
                    self.at += rest.len() - rest.trim_start().len();
                    continue;
                }
                _ => return None,
            };
            out.push(c);
        }
    }

    fn hex(&mut self, digits: usize) -> Option<char> {
        let text = self.text.get(self.at..self.at + digits)?;
        let code = u32::from_str_radix(text, 16).ok()?;
        self.at += digits;
        // A lone surrogate has no UTF-8 form; it reads as the replacement character.
        Some(char::from_u32(code).unwrap_or('\u{FFFD}'))
    }
}

/// YAML's line folding: each line is trimmed, a single line break becomes a space, and each empty line
/// between two lines becomes a line break.
/// Text without a line break is its own folding and is not copied.
fn fold(raw: &str) -> Cow<'_, str> {
    if memchr::memchr(b'\n', raw.as_bytes()).is_none() {
        return Cow::Borrowed(raw);
    }
    let lines: Vec<&str> = raw.split('\n').collect();
    let last = lines.len() - 1;
    let mut out = String::with_capacity(raw.len());
    let mut empty_run = 0;
    for (i, line) in lines.iter().enumerate() {
        let line = match i {
            0 => line.trim_end(),
            i if i == last => line.trim_start(),
            _ => line.trim(),
        };
        if i > 0 && line.is_empty() && i != last {
            empty_run += 1;
            continue;
        }
        if i > 0 {
            if empty_run == 0 {
                out.push(' ');
            } else {
                out.extend(std::iter::repeat_n('\n', empty_run));
            }
        }
        empty_run = 0;
        out.push_str(line);
    }
    Cow::Owned(out)
}

/// A string value: its one allocation is the shared text itself.
fn string(text: &str) -> Value {
    Value::String(Arc::from(text))
}

/// A plain scalar resolved by YAML 1.2's core schema.
fn resolve(text: &str) -> Node {
    let value = match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => match number(text) {
            Some(Ok(number)) => Value::Number(number.into()),
            Some(Err(what)) => return Node::NoJson(what),
            None => string(text),
        },
    };
    Node::Value(value)
}

/// A core-schema number: `Some(Err)` for infinities and NaN, which JSON cannot hold.
fn number(text: &str) -> Option<Result<Number, &'static str>> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if matches!(body, ".inf" | ".Inf" | ".INF") || matches!(text, ".nan" | ".NaN" | ".NAN") {
        return Some(Err("an infinite or NaN number"));
    }
    let radix = |digits: &str, radix: u32| {
        (!negative && text == body && !digits.is_empty())
            .then(|| u64::from_str_radix(digits, radix).ok().map(Number::from))
            .flatten()
    };
    if let Some(digits) = text.strip_prefix("0o") {
        return radix(digits, 8).map(Ok);
    }
    if let Some(digits) = text.strip_prefix("0x") {
        return radix(digits, 16).map(Ok);
    }
    let bytes = body.as_bytes();
    if !bytes.is_empty() && bytes.iter().all(u8::is_ascii_digit) {
        if let Some(integer) = literal::integer(negative, body) {
            return Some(Ok(integer));
        }
    }
    if !is_core_float(body) {
        return None;
    }
    literal::decimal_float(negative, body).map(Ok)
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` without its sign.
fn is_core_float(body: &str) -> bool {
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && fraction.bytes().all(|b| b.is_ascii_digit()),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value as Json, json};

    fn value(text: &str) -> Json {
        match read(text) {
            Reading::Value(value) => value.to_json(),
            other => panic!("{text:?} read as {other:?}"),
        }
    }

    #[test]
    fn core_schema_scalars() {
        assert_eq!(value("True"), json!(true));
        assert_eq!(value("FALSE"), json!(false));
        assert_eq!(value("~"), json!(null));
        assert_eq!(value("0o17"), json!(15));
        assert_eq!(value("0x1f"), json!(31));
        assert_eq!(value("-12"), json!(-12));
        assert_eq!(value(".5"), json!(0.5));
        assert_eq!(value("1e3"), json!(1000.0));
        assert_eq!(value("yes"), json!("yes"));
        assert_eq!(value("1.2.3"), json!("1.2.3"));
        assert_eq!(read(".inf"), Reading::Block("an infinite or NaN number"));
    }

    #[test]
    fn quoted_scalars() {
        assert_eq!(value("'it''s'"), json!("it's"));
        assert_eq!(value(r"'C:\Users\name'"), json!(r"C:\Users\name"));
        assert_eq!(value("'one\n  two\n\n  three'"), json!("one two\nthree"));
        assert_eq!(value(r#""tab\there \x41\u00e9""#), json!("tab\there Aé"));
        assert_eq!(read(r#""bad \q escape""#), Reading::Invalid);
        assert_eq!(value("\"joined \\\n   here\""), json!("joined here"));
    }

    #[test]
    fn flow_collections() {
        assert_eq!(value("[x, y]"), json!(["x", "y"]));
        assert_eq!(
            value("{a: b, 'c': [1, True, ~], d: }"),
            json!({"a": "b", "c": [1, true, null], "d": null})
        );
        assert_eq!(value("[a b, c-d, 'it''s']"), json!(["a b", "c-d", "it's"]));
        assert_eq!(value("[]"), json!([]));
        assert_eq!(read("{a: 1, a: 2}"), Reading::Invalid);
        assert_eq!(read("[1, 2] + [3]"), Reading::Invalid);
        assert_eq!(read(&"[".repeat(10_000)), Reading::Invalid);
    }

    #[test]
    fn block_structure_is_named_not_read() {
        assert_eq!(
            read("状态: 良好"),
            Reading::Block("a mapping (`key: value`)")
        );
        assert_eq!(
            read("- item"),
            Reading::Block("a block sequence or mapping")
        );
        assert_eq!(
            read("第 #1 名"),
            Reading::Block("a comment (` #` ends the value)")
        );
        assert_eq!(value("早餐时间"), json!("早餐时间"));
        assert_eq!(value("10:30"), json!("10:30"));
        assert_eq!(value("a\n   b"), json!("a b"));
    }
}
