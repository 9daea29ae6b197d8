//! Reading one MVU argument's text as a value, in MVU's order: JSON, a JavaScript literal, math.js,
//! YAML, and finally the text with its outer quotes trimmed.
//!
//! This module owns that chain and the JSON and JSON5-style literals of it (arrays and objects with
//! single quotes, backticks, unquoted keys, trailing commas, comments and JavaScript escapes; signed,
//! hexadecimal and exponent numbers). A top-level quoted string is read as MVU reads it: double
//! quotes as JSON, then as YAML; single quotes as YAML (`''` is `'`, a backslash is a backslash);
//! backticks with the quotes trimmed. Math goes to `math` and the YAML fallback to `yaml`. Dates
//! (`2024-01-01`), percentages (`50%`), math.js outside the evaluated subset and YAML block structure
//! stay text, with a diagnostic naming what MVU would have done (docs/mvu.md). Macros are substituted in
//! every string this module produces. It must not know about commands or paths.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Number, Value as Json};
use statecraft_engine::{Array, Key, Object, Value};

use super::math::{self, MathOutcome};
use super::yaml;
use crate::diagnostic::{DiagnosticKind, Severity};

/// How deeply arrays and objects may nest in one argument; deeper text is kept as a string.
const MAX_DEPTH: usize = 128;

/// A value read from an argument, and what was noticed on the way.
#[derive(Debug)]
pub(crate) struct Read {
    /// The value, built as the engine value it becomes.
    pub(crate) value: Value,
    /// Whether the text was a complete literal (JSON, JSON5-style, or a quoted string).
    pub(crate) literal: bool,
    pub(crate) note: Option<Note>,
}

/// Something to report about an argument.
#[derive(Debug)]
pub(crate) struct Note {
    pub(crate) kind: DiagnosticKind,
    pub(crate) severity: Severity,
    pub(crate) message: Cow<'static, str>,
}

impl Read {
    fn literal(value: Value) -> Read {
        Read {
            value,
            literal: true,
            note: None,
        }
    }

    fn noted(
        value: Value,
        kind: DiagnosticKind,
        severity: Severity,
        message: impl Into<Cow<'static, str>>,
    ) -> Read {
        Read {
            value,
            literal: false,
            note: Some(Note {
                kind,
                severity,
                message: message.into(),
            }),
        }
    }
}

/// Reads a trimmed argument text.
pub(crate) fn read_value(text: &str, macros: &BTreeMap<String, String>) -> Read {
    // Most arguments and paths are one quoted string with nothing inside to read: its text is its
    // value, whatever reading [`read_general`] would try first.
    if let Some(inner) = plain_quoted(text) {
        return Read::literal(string(&expand(inner, macros)));
    }
    read_general(text, macros)
}

/// The text inside a top-level quoted string when every reading of it is that text: double quotes
/// with no `"`, backslash or control character inside (JSON reads it so), single quotes with no `'`
/// and no line break inside (YAML reads it so). `None` for anything else, which goes through
/// [`read_general`]; where this answers, the two agree (a property test checks it).
pub(crate) fn plain_quoted(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    let (&first, &last) = (bytes.first()?, bytes.last()?);
    if bytes.len() < 2 || first != last {
        return None;
    }
    let inner = &bytes[1..bytes.len() - 1];
    let plain = match first {
        b'"' => inner.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\'),
        b'\'' => memchr::memchr2(b'\'', b'\n', inner).is_none(),
        _ => false,
    };
    plain.then(|| &text[1..text.len() - 1])
}

/// [`read_value`] without its shortcut: MVU's readings in order.
fn read_general(text: &str, macros: &BTreeMap<String, String>) -> Read {
    let expanded = |text: &str| string(&expand(text, macros));
    match text.as_bytes().first() {
        // JSON first; a string JSON refuses goes to YAML's double quotes.
        Some(b'"') => {
            if let Ok(Json::String(value)) = serde_json::from_str::<Json>(text) {
                return Read::literal(expanded(&value));
            }
            if let yaml::Reading::Value(Value::String(value)) = yaml::read(text) {
                return Read::literal(expand_shared(value, macros));
            }
            return trimmed(text, macros);
        }
        // JSON and JavaScript refuse single quotes at the top level, and math.js yields a string that
        // MVU cannot round, so MVU's reading is YAML's.
        Some(b'\'') => {
            if let yaml::Reading::Value(Value::String(value)) = yaml::read(text) {
                return Read::literal(expand_shared(value, macros));
            }
            return trimmed(text, macros);
        }
        // Nothing reads a backtick string; MVU trims the quotes.
        Some(b'`') => return trimmed(text, macros),
        _ => {}
    }
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        macros,
    };
    if let Some(value) = parser.complete() {
        return Read::literal(value);
    }
    if text == "undefined" {
        return Read::noted(
            Value::Null,
            DiagnosticKind::MvuUndefined,
            Severity::Warning,
            "`undefined` has no json form; read as null",
        );
    }
    if let Some(date) = date_like(text) {
        let computed = match math::evaluate(text) {
            MathOutcome::Number(n) => format!(" ({n})"),
            _ => String::new(),
        };
        return Read::noted(
            expanded(date),
            DiagnosticKind::MvuArithmeticDifference,
            Severity::Warning,
            format!(
                "mvu evaluates the unquoted date `{text}` as subtraction{computed}; kept as text"
            ),
        );
    }
    if let Some(number) = text
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<f64>().ok())
    {
        return Read::noted(
            string(text),
            DiagnosticKind::MvuArithmeticDifference,
            Severity::Warning,
            format!(
                "mvu evaluates the unquoted `{text}` as {}; kept as text",
                number / 100.0
            ),
        );
    }
    match math::evaluate(text) {
        MathOutcome::Number(number) => {
            // Notes are fixed texts: every evaluated argument has one, and the span shows the text.
            return Read::noted(
                Value::Number(number.into()),
                DiagnosticKind::MvuArithmetic,
                Severity::Note,
                "evaluated with the math.js subset, as mvu does",
            );
        }
        MathOutcome::Outside(reason) => {
            return Read::noted(
                expanded(text),
                DiagnosticKind::MvuExpressionKeptAsText,
                Severity::Warning,
                format!(
                    "mvu would evaluate `{}` with math.js, but it is outside the evaluated subset ({reason}); kept as text",
                    clip(text)
                ),
            );
        }
        MathOutcome::NotMath => {}
    }
    match yaml::read(text) {
        yaml::Reading::Value(Value::String(value)) => Read::noted(
            expand_shared(value, macros),
            DiagnosticKind::MvuBareText,
            Severity::Note,
            "unquoted text, read as a string",
        ),
        yaml::Reading::Value(value) => Read::noted(
            expand_strings(value, macros),
            DiagnosticKind::MvuYamlValue,
            Severity::Note,
            "read as mvu's yaml fallback reads it (True is true, [x, y] a list of strings)",
        ),
        yaml::Reading::Block(what) => Read::noted(
            expanded(text),
            DiagnosticKind::MvuYamlDifference,
            Severity::Warning,
            format!(
                "mvu's yaml fallback reads `{}` as {what}; kept as text",
                clip(text)
            ),
        ),
        yaml::Reading::Invalid => trimmed(text, macros),
    }
}

/// MVU's last resort: the text with quotes, backslashes and spaces trimmed from both ends.
fn trimmed(text: &str, macros: &BTreeMap<String, String>) -> Read {
    let inner = text.trim_matches(|c| matches!(c, '\\' | '"' | '\'' | '`' | ' '));
    let value = string(&expand(inner, macros));
    let balanced_backticks = text.len() >= 2
        && text.starts_with('`')
        && text.ends_with('`')
        && !text[1..text.len() - 1].contains('`');
    if balanced_backticks {
        return Read::literal(value);
    }
    if inner.len() == text.len() {
        return Read::noted(
            value,
            DiagnosticKind::MvuBareText,
            Severity::Note,
            "unquoted text, read as a string",
        );
    }
    Read::noted(
        value,
        DiagnosticKind::MvuUnbalancedQuotes,
        Severity::Warning,
        format!(
            "`{}` is not one quoted string; read it as mvu does, with the outer quotes trimmed",
            clip(text)
        ),
    )
}

/// A string value: its one allocation is the shared text itself.
fn string(text: &str) -> Value {
    Value::String(Arc::from(text))
}

/// A string value already read, with macros substituted: the same text when none applies.
fn expand_shared(text: Arc<str>, macros: &BTreeMap<String, String>) -> Value {
    match expand(&text, macros) {
        Cow::Borrowed(_) => Value::String(text),
        Cow::Owned(expanded) => string(&expanded),
    }
}

/// Substitutes macros in every string inside `value`.
fn expand_strings(value: Value, macros: &BTreeMap<String, String>) -> Value {
    if macros.is_empty() {
        return value;
    }
    match value {
        Value::String(text) => expand_shared(text, macros),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| expand_strings(item.clone(), macros))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (Key::from(&*expand(&k, macros)), expand_strings(v, macros)))
                .collect(),
        ),
        other => other,
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
    // Most texts that reach here do not start with a digit; they need no splitting.
    if !text.as_bytes().first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let digits = |p: &str| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit());
    let mut parts = text.split('-');
    let three = parts.by_ref().take(3).filter(|p| digits(p)).count() == 3;
    (three && parts.next().is_none()).then_some(text)
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

/// [`expand`] of a string the caller owns: the same buffer back when no macro applies.
fn expand_owned(text: String, macros: &BTreeMap<String, String>) -> String {
    match expand(&text, macros) {
        Cow::Borrowed(_) => text,
        Cow::Owned(expanded) => expanded,
    }
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
    fn complete(&mut self) -> Option<Value> {
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

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'{' if depth < MAX_DEPTH => self.object(depth + 1),
            b'[' if depth < MAX_DEPTH => self.array(depth + 1),
            q @ (b'"' | b'\'' | b'`') => self.string(q).map(|s| string(&s)),
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number().map(|n| Value::Number(n.into())),
            _ => {
                let word = self.identifier()?;
                match word {
                    "true" => Some(Value::Bool(true)),
                    "false" => Some(Value::Bool(false)),
                    "null" => Some(Value::Null),
                    _ => None,
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut map = Object::new();
        loop {
            self.skip_blank();
            if self.peek()? == b'}' {
                self.at += 1;
                return Some(Value::Object(map));
            }
            let key = match self.peek()? {
                q @ (b'"' | b'\'' | b'`') => Key::from(&*self.string(q)?),
                b'0'..=b'9' | b'-' | b'+' | b'.' => Key::from(self.number()?.to_string()),
                _ => {
                    let macros = self.macros;
                    Key::from(&*expand(self.identifier()?, macros))
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

    fn array(&mut self, depth: usize) -> Option<Value> {
        self.at += 1;
        let mut items = Array::new();
        loop {
            self.skip_blank();
            if self.peek()? == b']' {
                self.at += 1;
                return Some(Value::Array(items));
            }
            items.push_back(self.value(depth)?);
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

    /// A quoted string with JavaScript escapes and macros substituted; `None` when it does not close.
    fn string(&mut self, quote: u8) -> Option<Cow<'t, str>> {
        self.at += 1;
        // Most strings hold no escape: their text, borrowed, is the value.
        let text = self.text;
        let rest = &text[self.at..];
        let stop = rest.find([quote as char, '\\'])?;
        if rest.as_bytes()[stop] == quote {
            self.at += stop + 1;
            return Some(expand(&rest[..stop], self.macros));
        }
        let mut out = String::new();
        loop {
            let rest = &self.text[self.at..];
            let stop = rest.find([quote as char, '\\'])?;
            out.push_str(&rest[..stop]);
            self.at += stop;
            if self.bytes[self.at] == quote {
                self.at += 1;
                return Some(Cow::Owned(expand_owned(out, self.macros)));
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
            if let Some(n) = integer(negative, body) {
                return Some(n);
            }
        }
        decimal_float(negative, body)
    }
}

/// A decimal integer exactly, whatever its size (numbers keep their exact value, as everywhere in
/// statecraft: `123456789012345678901234567890` is not rounded to a float). `body` is digits only;
/// `None` when it does not read as an integer (leading zeros beyond 64 bits).
pub(crate) fn integer(negative: bool, body: &str) -> Option<Number> {
    let fits = if negative {
        format!("-{body}").parse::<i64>().ok().map(Number::from)
    } else {
        body.parse::<u64>().ok().map(Number::from)
    };
    fits.or_else(|| exact(negative, body))
}

/// A decimal float (`body` unsigned, with a fraction or an exponent). Beyond a double's range
/// (`1e400`, `1e-400`) it keeps its exact text, as a JSON number does, rather than becoming text,
/// infinity or zero.
pub(crate) fn decimal_float(negative: bool, body: &str) -> Option<Number> {
    let magnitude: f64 = body.parse().ok()?;
    let mantissa = body.split(['e', 'E']).next().unwrap_or(body);
    let underflows = magnitude == 0.0 && mantissa.bytes().any(|b| matches!(b, b'1'..=b'9'));
    if magnitude.is_infinite() || underflows {
        return exact(negative, body);
    }
    Number::from_f64(if negative { -magnitude } else { magnitude })
}

/// The number `body` spells with its sign, exactly, when it follows JSON's number grammar.
fn exact(negative: bool, body: &str) -> Option<Number> {
    let text = if negative {
        format!("-{body}")
    } else {
        body.to_owned()
    };
    text.parse::<Number>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// The shortcut for plain quoted strings gives what the general readings give, value, literal
        /// flag and note alike, with and without macros.
        #[test]
        fn plain_quoted_strings_read_as_the_general_readings_do(
            inner in "[a '\"`\\\\\n\r\t\u{1}\u{7f}:#{}\\[\\],<>好感度\u{3000}-]{0,12}",
            double in proptest::bool::ANY,
            with_macros in proptest::bool::ANY,
        ) {
            let quote = if double { '"' } else { '\'' };
            let text = format!("{quote}{inner}{quote}");
            let macros = if with_macros {
                BTreeMap::from([("a".to_owned(), "Alice".to_owned())])
            } else {
                BTreeMap::new()
            };
            if plain_quoted(&text).is_some() {
                let fast = read_value(&text, &macros);
                let general = read_general(&text, &macros);
                proptest::prop_assert_eq!(&fast.value, &general.value, "{:?}", text);
                proptest::prop_assert_eq!(fast.literal, general.literal);
                proptest::prop_assert!(fast.note.is_none() && general.note.is_none());
            }
        }
    }

    /// JSON values of every kind, nested, with strings that need escapes.
    fn json_values() -> impl proptest::strategy::Strategy<Value = Json> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            any::<u64>().prop_map(Json::from),
            (-1e7f64..1e7).prop_map(Json::from),
            "[a-z '\"`\\\n\u{1}好<>{}:,#-]{0,8}".prop_map(Json::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Json::Array),
                proptest::collection::btree_map("[a-z好 \"]{0,6}", inner, 0..5)
                    .prop_map(|map| Json::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Values are built straight as engine values; for any JSON text that is what converting
        /// serde_json's reading of it gives, exactly (numbers compared by their text).
        #[test]
        fn literals_build_the_values_serde_json_reads(json in json_values()) {
            let text = serde_json::to_string(&json).unwrap();
            let read = read_value(&text, &BTreeMap::new());
            proptest::prop_assert!(read.literal, "{:?}", text);
            proptest::prop_assert_eq!(read.value.to_json(), json.clone(), "{:?}", text);
            proptest::prop_assert_eq!(read.value, Value::from_json(&json), "{:?}", text);
        }
    }

    #[test]
    fn plain_quoted_answers_only_for_plain_strings() {
        assert_eq!(plain_quoted("'悠纪.好感度[0]'"), Some("悠纪.好感度[0]"));
        assert_eq!(plain_quoted("\"空\""), Some("空"));
        assert_eq!(plain_quoted("''"), Some(""));
        assert_eq!(plain_quoted(r"'C:\Users\name'"), Some(r"C:\Users\name"));
        for text in [
            "'",
            "'it''s'",
            "'a\nb'",
            r#""a\"b""#,
            "\"a\tb\"",
            "'a\"",
            "`a`",
            "1",
        ] {
            assert_eq!(plain_quoted(text), None, "{text:?}");
        }
    }

    #[test]
    fn macros_expand_only_known_names() {
        let macros = BTreeMap::from([("user".to_owned(), "Alice".to_owned())]);
        assert_eq!(
            expand("<user>.hp {{user}} <char> {{x", &macros),
            "Alice.hp Alice <char> {{x"
        );
        assert_eq!(
            read_value("{name: '<user>'}", &macros).value.to_json(),
            json!({"name": "Alice"})
        );
    }
}
