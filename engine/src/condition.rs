//! Conditions on a state: one small grammar that every front end evaluates the same way
//! (docs/state-view.md), read by fixed rules and evaluated on a [`Value`].
//!
//! ```text
//! condition := or
//! or        := and ("or" and)*
//! and       := unary ("and" unary)*
//! unary     := "not" unary | "(" condition ")" | test
//! test      := PATH ("==" | "!=" | "<" | "<=" | ">" | ">=") VALUE
//!            | PATH "exists"
//!            | PATH "in" "[" [VALUE ("," VALUE)*] "]"
//! ```
//!
//! A PATH is a path spelling as [`parse_path`] reads it: dots and brackets (`player.hp`,
//! `items[0]`, `npc["Mira"].mood`) or a JSON Pointer (`/player/hp`). It ends at a space or at one of
//! `= ! < > ( ) ,` outside brackets; a key with spaces is written in brackets (`npc["old mill"]`) or
//! as a pointer. A VALUE is a JSON literal (a number, a "string", `true`, `false`, `null`) or a
//! 'single-quoted string' (`\'` and `\\` escape). The words `and`, `or`, `not`, `exists` and `in` are
//! keywords where the grammar expects them.
//!
//! Comparisons follow the engine's values: numbers compare numerically (`100 == 100.0`), strings by
//! their characters' code points, and `==` compares containers deeply. Values of different types are
//! unequal (`==` false, `!=` true) and unordered (`< <= > >=` false); a missing path makes every
//! comparison false but `!=` (true), `exists` false and `in` false. No condition errs on a state: only
//! its text can be wrong, and [`ConditionError`] says what, with the byte span.
//!
//! This module must not read model text leniently: a condition is written by a card's author or a
//! front end, and a mistake in it is an error, never a guess.

use std::cmp::Ordering;

use crate::path::Path;
use crate::pathtext::parse_path;
use crate::value::Value;

/// The deepest nesting of `not` and parentheses a condition may have.
pub const MAX_CONDITION_DEPTH: usize = 64;

/// The most tests (`PATH OP VALUE`, `exists`, `in`) one condition may join: it bounds the depth of
/// the tree `and` and `or` build, which evaluation walks recursively.
pub const MAX_CONDITION_TESTS: usize = 256;

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Comparison {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A parsed condition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Condition {
    /// `PATH OP VALUE`.
    Compare(Path, Comparison, Value),
    /// `PATH exists`.
    Exists(Path),
    /// `PATH in [V, ...]`.
    In(Path, Vec<Value>),
    /// `not C`.
    Not(Box<Condition>),
    /// `C and C`.
    And(Box<Condition>, Box<Condition>),
    /// `C or C`.
    Or(Box<Condition>, Box<Condition>),
}

/// Why a condition's text could not be read: a stable code, a message, and the byte span of the
/// text at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} (bytes {start}..{end})")]
pub struct ConditionError {
    /// A stable code: `empty`, `expected_path`, `bad_path`, `expected_operator`, `expected_value`,
    /// `bad_value`, `unclosed_string`, `expected_close`, `unexpected`, `too_deep`, `too_long`.
    pub code: &'static str,
    /// What is wrong, for people.
    pub message: String,
    /// The first byte of the text at fault.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

impl Condition {
    /// Reads a condition's text.
    ///
    /// Time: O(text).
    pub fn parse(text: &str) -> Result<Condition, ConditionError> {
        let mut parser = Parser {
            text,
            bytes: text.as_bytes(),
            at: 0,
            depth: 0,
            tests: 0,
        };
        parser.space();
        if parser.at == text.len() {
            return Err(error("empty", "the condition is empty", 0, text.len()));
        }
        let condition = parser.or()?;
        parser.space();
        if parser.at < text.len() {
            let end = parser.token_end();
            return Err(error(
                "unexpected",
                format!(
                    "expected \"and\", \"or\" or the end, found \"{}\"",
                    &text[parser.at..end]
                ),
                parser.at,
                end,
            ));
        }
        Ok(condition)
    }

    /// Whether the condition holds on `state`.
    ///
    /// Time: O(the condition's size × the depth of its paths), plus deep equality of containers.
    pub fn holds(&self, state: &Value) -> bool {
        match self {
            Condition::Compare(path, op, expected) => match state.lookup(path.segments()) {
                None => *op == Comparison::Ne,
                Some(actual) => compare(actual, *op, expected),
            },
            Condition::Exists(path) => state.lookup(path.segments()).is_some(),
            Condition::In(path, options) => state
                .lookup(path.segments())
                .is_some_and(|actual| options.iter().any(|option| actual == option)),
            Condition::Not(inner) => !inner.holds(state),
            Condition::And(a, b) => a.holds(state) && b.holds(state),
            Condition::Or(a, b) => a.holds(state) || b.holds(state),
        }
    }
}

fn compare(actual: &Value, op: Comparison, expected: &Value) -> bool {
    let order = match (actual, expected) {
        (Value::Number(a), Value::Number(b)) => number_order(a, b),
        (Value::String(a), Value::String(b)) => Some(str::cmp(a, b)),
        _ => None,
    };
    match op {
        Comparison::Eq => actual == expected,
        Comparison::Ne => actual != expected,
        Comparison::Lt => order == Some(Ordering::Less),
        Comparison::Le => matches!(order, Some(Ordering::Less | Ordering::Equal)),
        Comparison::Gt => order == Some(Ordering::Greater),
        Comparison::Ge => matches!(order, Some(Ordering::Greater | Ordering::Equal)),
    }
}

fn number_order(a: &crate::number::Number, b: &crate::number::Number) -> Option<Ordering> {
    match (a.as_i128(), b.as_i128()) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn error(
    code: &'static str,
    message: impl Into<String>,
    start: usize,
    end: usize,
) -> ConditionError {
    ConditionError {
        code,
        message: message.into(),
        start,
        end,
    }
}

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    depth: usize,
    tests: usize,
}

/// Bytes that end a path or a word outside brackets.
fn stops(byte: u8) -> bool {
    byte.is_ascii_whitespace() || matches!(byte, b'=' | b'!' | b'<' | b'>' | b'(' | b')' | b',')
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    /// The end of the word or symbol at the cursor, for messages.
    fn token_end(&self) -> usize {
        let mut end = self.at;
        while end < self.bytes.len() && !stops(self.bytes[end]) {
            end += 1;
        }
        if end == self.at {
            end = (self.at + 1).min(self.bytes.len());
            while !self.text.is_char_boundary(end) {
                end += 1;
            }
        }
        end
    }

    /// Whether the keyword `word` is at the cursor as a whole word; moves past it when it is.
    fn keyword(&mut self, word: &str) -> bool {
        let end = self.at + word.len();
        let whole = self.bytes.get(self.at..end) == Some(word.as_bytes())
            && self.bytes.get(end).is_none_or(|b| stops(*b) || *b == b'[');
        if whole {
            self.at = end;
        }
        whole
    }

    fn or(&mut self) -> Result<Condition, ConditionError> {
        let mut left = self.and()?;
        loop {
            self.space();
            if !self.keyword("or") {
                return Ok(left);
            }
            let right = self.and()?;
            left = Condition::Or(Box::new(left), Box::new(right));
        }
    }

    fn and(&mut self) -> Result<Condition, ConditionError> {
        let mut left = self.unary()?;
        loop {
            self.space();
            if !self.keyword("and") {
                return Ok(left);
            }
            let right = self.unary()?;
            left = Condition::And(Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Condition, ConditionError> {
        self.space();
        if self.depth >= MAX_CONDITION_DEPTH {
            return Err(error(
                "too_deep",
                format!("the condition nests deeper than {MAX_CONDITION_DEPTH} levels"),
                self.at,
                self.token_end(),
            ));
        }
        if self.keyword("not") {
            self.depth += 1;
            let inner = self.unary();
            self.depth -= 1;
            return Ok(Condition::Not(Box::new(inner?)));
        }
        if self.bytes.get(self.at) == Some(&b'(') {
            let open = self.at;
            self.at += 1;
            self.depth += 1;
            let inner = self.or();
            self.depth -= 1;
            let inner = inner?;
            self.space();
            if self.bytes.get(self.at) != Some(&b')') {
                return Err(error(
                    "expected_close",
                    "this \"(\" is never closed",
                    open,
                    open + 1,
                ));
            }
            self.at += 1;
            return Ok(inner);
        }
        self.test()
    }

    fn test(&mut self) -> Result<Condition, ConditionError> {
        self.tests += 1;
        if self.tests > MAX_CONDITION_TESTS {
            return Err(error(
                "too_long",
                format!("the condition joins more than {MAX_CONDITION_TESTS} tests"),
                self.at,
                self.token_end(),
            ));
        }
        let path = self.path()?;
        self.space();
        if self.keyword("exists") {
            return Ok(Condition::Exists(path));
        }
        if self.keyword("in") {
            self.space();
            if self.bytes.get(self.at) != Some(&b'[') {
                let end = self.token_end();
                return Err(error(
                    "expected_value",
                    "expected a list of values in brackets after \"in\": [1, 2]",
                    self.at,
                    end,
                ));
            }
            let open = self.at;
            self.at += 1;
            let mut options = Vec::new();
            self.space();
            if self.bytes.get(self.at) == Some(&b']') {
                self.at += 1;
                return Ok(Condition::In(path, options));
            }
            loop {
                options.push(self.value()?);
                self.space();
                match self.bytes.get(self.at) {
                    Some(b',') => {
                        self.at += 1;
                    }
                    Some(b']') => {
                        self.at += 1;
                        return Ok(Condition::In(path, options));
                    }
                    Some(_) => {
                        let end = self.token_end();
                        return Err(error(
                            "unexpected",
                            "expected \",\" or \"]\" in the list",
                            self.at,
                            end,
                        ));
                    }
                    None => {
                        return Err(error(
                            "expected_close",
                            "this \"[\" is never closed",
                            open,
                            open + 1,
                        ));
                    }
                }
            }
        }
        let start = self.at;
        let rest = &self.bytes[self.at..];
        // Other languages' spellings (SQL's `<>` and `=`, `=<`, `=>`), refused with the one to write.
        if let Some((spelled, write)) = [("<>", "!="), ("=<", "<="), ("=>", ">="), ("=", "==")]
            .into_iter()
            .find(|(spelled, _)| rest.starts_with(spelled.as_bytes()) && !rest.starts_with(b"=="))
        {
            return Err(error(
                "expected_operator",
                format!("\"{spelled}\" is not an operator here: write {write}"),
                start,
                start + spelled.len(),
            ));
        }
        let op = [
            ("==", Comparison::Eq),
            ("!=", Comparison::Ne),
            ("<=", Comparison::Le),
            (">=", Comparison::Ge),
            ("<", Comparison::Lt),
            (">", Comparison::Gt),
        ]
        .into_iter()
        .find(|(symbol, _)| self.bytes[self.at..].starts_with(symbol.as_bytes()));
        let Some((symbol, op)) = op else {
            let end = self.token_end();
            let found = if start == self.bytes.len() {
                "the end".to_owned()
            } else {
                format!("\"{}\"", &self.text[start..end])
            };
            return Err(error(
                "expected_operator",
                format!(
                    "expected == != < <= > >=, \"exists\" or \"in\" after the path, found {found}"
                ),
                start,
                end.max(start),
            ));
        };
        self.at += symbol.len();
        let value = self.value()?;
        Ok(Condition::Compare(path, op, value))
    }

    fn path(&mut self) -> Result<Path, ConditionError> {
        self.space();
        let start = self.at;
        let mut quote: Option<u8> = None;
        let mut brackets = 0usize;
        while self.at < self.bytes.len() {
            let byte = self.bytes[self.at];
            match quote {
                Some(q) => {
                    if byte == b'\\' {
                        self.at += 1;
                    } else if byte == q {
                        quote = None;
                    }
                }
                None if brackets > 0 && (byte == b'"' || byte == b'\'') => quote = Some(byte),
                None if byte == b'[' => brackets += 1,
                None if byte == b']' && brackets > 0 => brackets -= 1,
                None if brackets == 0 && stops(byte) => break,
                None => {}
            }
            self.at += 1;
        }
        self.at = self.at.min(self.bytes.len());
        let text = &self.text[start..self.at];
        if text.is_empty() {
            let end = self.token_end();
            return Err(error(
                "expected_path",
                "expected a path (player.hp or /player/hp)",
                start,
                end,
            ));
        }
        parse_path(text).map(|(path, _)| path).map_err(|problem| {
            error(
                "bad_path",
                format!("cannot read the path: {problem}"),
                start,
                self.at,
            )
        })
    }

    fn value(&mut self) -> Result<Value, ConditionError> {
        self.space();
        let start = self.at;
        match self.bytes.get(self.at) {
            None => Err(error(
                "expected_value",
                "expected a value (a number, \"text\", 'text', true, false or null)",
                start,
                start,
            )),
            Some(b'"') => {
                let end = self.string_end(b'"')?;
                self.at = end;
                serde_json::from_str::<serde_json::Value>(&self.text[start..end])
                    .map(|json| Value::from_json(&json))
                    .map_err(|problem| {
                        error(
                            "bad_value",
                            format!("not a JSON string: {problem}"),
                            start,
                            end,
                        )
                    })
            }
            Some(b'\'') => {
                let end = self.string_end(b'\'')?;
                self.at = end;
                let mut out = String::new();
                let mut chars = self.text[start + 1..end - 1].chars();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some(escaped @ ('\'' | '\\')) => out.push(escaped),
                            other => {
                                return Err(error(
                                    "bad_value",
                                    format!(
                                        "in a 'single-quoted string' only \\' and \\\\ escape, not \\{}",
                                        other.map(String::from).unwrap_or_default()
                                    ),
                                    start,
                                    end,
                                ));
                            }
                        },
                        c => out.push(c),
                    }
                }
                Ok(Value::String(out.into()))
            }
            Some(_) => {
                let mut end = self.at;
                while end < self.bytes.len() && !stops(self.bytes[end]) && self.bytes[end] != b']' {
                    end += 1;
                }
                if end == start {
                    end = self.token_end();
                }
                self.at = end;
                let word = &self.text[start..end];
                let literal = word.starts_with(|c: char| c == '-' || c.is_ascii_digit())
                    || matches!(word, "true" | "false" | "null");
                match serde_json::from_str::<serde_json::Value>(word) {
                    Ok(json) if literal && !json.is_string() => Ok(Value::from_json(&json)),
                    _ => Err(error(
                        "bad_value",
                        format!(
                            "\"{word}\" is not a value: write a number, \"text\", 'text', true, false or null"
                        ),
                        start,
                        end,
                    )),
                }
            }
        }
    }

    /// One past the closing quote of the string opening at the cursor.
    fn string_end(&self, quote: u8) -> Result<usize, ConditionError> {
        let mut at = self.at + 1;
        while at < self.bytes.len() {
            match self.bytes[at] {
                b'\\' => at += 2,
                byte if byte == quote => return Ok(at + 1),
                _ => at += 1,
            }
        }
        Err(error(
            "unclosed_string",
            "this string is never closed",
            self.at,
            self.bytes.len(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> Value {
        Value::from_json(&json!({
            "player": {"hp": 30, "name": "Ann", "tags": ["brave"], "rate": 0.5},
            "npc": {"Mira": {"mood": "calm"}, "old mill": 1},
            "好感度": 80,
            "flag": true,
            "none": null
        }))
    }

    fn holds(text: &str) -> bool {
        Condition::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .holds(&state())
    }

    #[test]
    fn comparisons_and_paths() {
        assert!(holds("player.hp == 30"));
        assert!(holds("/player/hp == 30.0"));
        assert!(holds("player.hp >= 30 and player.hp < 31"));
        assert!(holds("player.hp>29"));
        assert!(holds("player.name == \"Ann\""));
        assert!(holds("player.name == 'Ann'"));
        assert!(holds("player.name < 'Bo'"));
        assert!(holds("player.tags[0] == 'brave'"));
        assert!(holds("npc[\"Mira\"].mood == 'calm'"));
        assert!(holds("npc['old mill'] == 1"));
        assert!(holds("好感度 > 50"));
        assert!(holds("flag == true and none == null"));
        assert!(holds("player.rate <= 0.5"));
    }

    #[test]
    fn types_and_missing_paths() {
        assert!(!holds("player.hp == '30'"));
        assert!(holds("player.hp != '30'"));
        assert!(!holds("player.hp < 'z'"));
        assert!(!holds("player.mana == 1"));
        assert!(holds("player.mana != 1"));
        assert!(!holds("player.mana < 1"));
        assert!(!holds("player.mana exists"));
        assert!(holds("player.hp exists"));
        assert!(holds("none exists"));
        assert!(!holds("player.mana in [1, 2]"));
    }

    #[test]
    fn logic_and_precedence() {
        assert!(holds("player.hp == 1 or player.hp == 30 and flag == true"));
        assert!(!holds(
            "(player.hp == 1 or player.hp == 30) and flag == false"
        ));
        assert!(holds("not player.hp == 1"));
        assert!(holds("not (player.hp == 30 and flag == false)"));
        assert!(holds("player.name in ['Bo', 'Ann']"));
        assert!(!holds("player.name in []"));
        assert!(holds("player.hp in [30.0]"));
    }

    fn fails(text: &str) -> (&'static str, usize, usize) {
        let e = Condition::parse(text).expect_err(text);
        (e.code, e.start, e.end)
    }

    #[test]
    fn errors_point_at_their_bytes() {
        assert_eq!(fails(""), ("empty", 0, 0));
        assert_eq!(fails("   "), ("empty", 0, 3));
        assert_eq!(fails("hp = 3"), ("expected_operator", 3, 4));
        assert_eq!(fails("hp <> 3"), ("expected_operator", 3, 5));
        assert_eq!(fails("hp=<3"), ("expected_operator", 2, 4));
        assert_eq!(fails("hp => 3"), ("expected_operator", 3, 5));
        let message = |text| Condition::parse(text).expect_err(text).message;
        assert_eq!(
            message("hp <> 3"),
            "\"<>\" is not an operator here: write !="
        );
        assert_eq!(message("hp = 3"), "\"=\" is not an operator here: write ==");
        assert_eq!(fails("hp"), ("expected_operator", 2, 2));
        assert_eq!(fails("hp == "), ("expected_value", 6, 6));
        assert_eq!(fails("hp == abc"), ("bad_value", 6, 9));
        assert_eq!(fails("hp == 'abc"), ("unclosed_string", 6, 10));
        assert_eq!(fails("(hp == 1"), ("expected_close", 0, 1));
        assert_eq!(fails("hp == 1 hp == 2"), ("unexpected", 8, 10));
        assert_eq!(fails("a[0 == 1"), ("bad_path", 0, 8));
        assert_eq!(fails("/a~2 == 1"), ("bad_path", 0, 4));
        assert_eq!(fails("== 1"), ("expected_path", 0, 1));
        assert_eq!(fails("hp in 3"), ("expected_value", 6, 7));
        assert_eq!(fails("hp in [1 2]"), ("unexpected", 9, 11));
        assert_eq!(fails("好感度 == 'x"), ("unclosed_string", 13, 15));
        let deep = format!("{}hp == 1", "not ".repeat(100));
        assert_eq!(fails(&deep).0, "too_deep");
        let long = vec!["hp == 1"; 300].join(" and ");
        assert_eq!(fails(&long).0, "too_long");
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_text_parses_or_errs_with_a_span_inside_it(
            text in "[a-z0-9 .\\[\\]\"'/=!<>(),~好-]{0,40}|(not |and |or |exists |in |player\\.hp |== |< |1 |'x' |\\( |\\) |\\[ |\\] |, ){0,12}",
        ) {
            match Condition::parse(&text) {
                Ok(condition) => {
                    let _ = condition.holds(&state());
                }
                Err(e) => {
                    prop_assert!(e.start <= e.end && e.end <= text.len(), "{e:?} in {text:?}");
                    prop_assert!(text.is_char_boundary(e.start) && text.is_char_boundary(e.end), "{e:?}");
                }
            }
        }
    }
}
