//! The GBNF grammar (llama.cpp's grammar format) for one instruction batch, written from an
//! [`InstructionSpec`].
//!
//! This module owns the grammar spelling of the language: rule `s<id>` for every shape, `p<t>` for
//! every target's path, `i<k>` for every (target, op group) pair, in the same order as the JSON Schema
//! of [`crate::batch_schema`]. It must not decide what the language is. Where a grammar cannot
//! say what the schema says it is documented here:
//!
//! - Members come in a fixed order: an instruction's as `op`, `path`, `value`, `old`, `reason`; an
//!   object value's declared keys alphabetically, then undeclared keys. (The JSON Schema takes any
//!   order; its written text lists members in the same order for decoders that follow it.)
//! - Integers are written as integers of at most 16 digits, without a fraction (`2`, not `2.0`); their
//!   bounds are exact. Numbers with bounds are written without an exponent, and their bounds are exact
//!   when each is an integer of at most 15 digits (`"minimum": 0, "exclusiveMaximum": 1`); other number
//!   bounds keep only the sign (no minus sign when the lower bound is zero or more) and are left to
//!   the schema.
//! - Whitespace between tokens is at most 20 spaces, tabs or newlines, so a model cannot stall on it.
//! - A `\u` escape cannot name a UTF-16 surrogate (`\uD800`-`\uDFFF`): a lone one is not valid JSON
//!   text for most parsers, and characters outside the basic plane can be written as they are.
//! - The `reason` string is spelt as a right-recursive rule (`reason-text`), the same language as
//!   `string`. Decoders with a lexer (llguidance) turn every rule that uses no recursive rule into one
//!   lexeme, and a lexer does not back up: an instruction that became one lexeme hid the shorter `{`
//!   of an instruction beside it that could not (one with a free `value`), so the second could never
//!   be written. Every instruction has the optional reason member, so no instruction becomes a lexeme.

use std::fmt::Write as _;

use serde_json::Value as Json;

use crate::spec::{InstructionSpec, SegmentPattern, Shape, ShapeId, Target};

/// Digits an unbounded integer may have in the grammar.
const MAX_DIGITS: usize = 16;

/// Rules every grammar shares: JSON whitespace, strings, numbers and free values.
const COMMON: &str = r#"ws ::= [ \t\n]{0,20}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))
index ::= "0" | [1-9] [0-9]{0,15}
array-index ::= index | "\"" index "\""
reason-member ::= (ws "," ws "\"reason\"" ws ":" ws reason-text)?
reason-text ::= "\"" reason-rest
reason-rest ::= "\"" | char reason-rest
segment ::= string | index
unsigned-number ::= ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
number ::= "-"? unsigned-number
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"
array ::= "[" ws (value (ws "," ws value)*)? ws "]"
"#;

/// The GBNF grammar for one batch; its start rule is `root`.
///
/// Time: O(shapes × members + targets).
pub fn batch_gbnf(spec: &InstructionSpec) -> String {
    let mut out = String::new();
    let mut branches = Vec::new();
    let mut body = String::new();
    for (t, target) in spec.targets.iter().enumerate() {
        let _ = writeln!(body, "p{t} ::= {}", path_rule(target));
        for group in &target.groups {
            let k = branches.len();
            branches.push(format!("i{k}"));
            let ops: Vec<String> = group
                .ops
                .iter()
                .map(|op| literal(&format!("\"{}\"", op.name())))
                .collect();
            let _ = write!(
                body,
                "i{k} ::= \"{{\" ws {} ws \":\" ws ({}) ws \",\" ws {} ws \":\" ws p{t}",
                literal("\"op\""),
                ops.join(" | "),
                literal("\"path\""),
            );
            if let Some(operand) = group.operand {
                let _ = write!(
                    body,
                    " ws \",\" ws {} ws \":\" ws s{operand}",
                    literal("\"value\"")
                );
            }
            if target.takes_old {
                let _ = write!(
                    body,
                    " (ws \",\" ws {} ws \":\" ws (s{} | \"null\"))?",
                    literal("\"old\""),
                    target.shape,
                );
            }
            let _ = writeln!(body, " reason-member ws \"}}\"");
        }
    }
    if branches.is_empty() {
        out.push_str("root ::= ws \"[\" ws \"]\" ws\n");
    } else {
        out.push_str(
            "root ::= ws \"[\" ws (instruction (ws \",\" ws instruction)*)? ws \"]\" ws\n",
        );
        let _ = writeln!(out, "instruction ::= {}", branches.join(" | "));
    }
    out.push_str(&body);
    for (id, shape) in spec.shapes.iter().enumerate() {
        shape_rules(&mut out, id, shape);
    }
    out.push_str(COMMON);
    out
}

/// A GBNF string literal matching exactly `text`.
fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON value's compact text as a literal.
fn json_literal(value: &Json) -> String {
    literal(&value.to_string())
}

fn path_rule(target: &Target) -> String {
    let segments: Vec<String> = target
        .path
        .iter()
        .map(|segment| match segment {
            SegmentPattern::Key(key) => json_literal(&Json::String(key.clone())),
            SegmentPattern::AnyKey => "string".to_owned(),
            SegmentPattern::AnyIndex => "array-index".to_owned(),
        })
        .collect();
    let mut parts = vec![segments.join(" ws \",\" ws ")];
    if target.open_tail {
        parts.push(if segments.is_empty() {
            "segment (ws \",\" ws segment)*".to_owned()
        } else {
            "(ws \",\" ws segment)+".to_owned()
        });
    }
    parts.retain(|part| !part.is_empty());
    if parts.is_empty() {
        return "\"[\" ws \"]\"".to_owned();
    }
    format!("\"[\" ws {} ws \"]\"", parts.join(" "))
}

fn shape_rules(out: &mut String, id: ShapeId, shape: &Shape) {
    let rule = match shape {
        Shape::Any => "value".to_owned(),
        Shape::Null => "\"null\"".to_owned(),
        Shape::Boolean => "\"true\" | \"false\"".to_owned(),
        Shape::String => "string".to_owned(),
        Shape::Integer { min, max } => integer_rule(*min, *max),
        Shape::Number {
            min,
            exclusive_min,
            max,
            exclusive_max,
        } => number_rule(
            min.map(|m| (m, *exclusive_min)),
            max.map(|m| (m, *exclusive_max)),
        ),
        Shape::Enum(options) => {
            if options.is_empty() {
                // Nothing fits an empty enum; a rule that never matches keeps the grammar valid.
                NEVER.to_owned()
            } else {
                let literals: Vec<String> = options.iter().map(json_literal).collect();
                literals.join(" | ")
            }
        }
        Shape::Array { items } => {
            format!("\"[\" ws (s{items} (ws \",\" ws s{items})*)? ws \"]\"")
        }
        Shape::Union(options) => {
            let names: Vec<String> = options.iter().map(|o| format!("s{o}")).collect();
            names.join(" | ")
        }
        Shape::Tuple { items, required } => tuple_rule(items, *required),
        Shape::Object {
            properties, extra, ..
        } => {
            // Members: declared keys in order, then undeclared ones (repeatable).
            let mut items: Vec<(String, Presence)> = properties
                .iter()
                .map(|p| {
                    let key = json_literal(&Json::String(p.name.clone()));
                    let presence = if p.required {
                        Presence::Required
                    } else {
                        Presence::Optional
                    };
                    (format!("{key} ws \":\" ws s{}", p.shape), presence)
                })
                .collect();
            if let Some(extra) = extra {
                items.push((format!("string ws \":\" ws s{extra}"), Presence::Repeated));
            }
            let rest = |i: usize| -> String {
                if i < items.len() {
                    format!(" s{id}-r{i}")
                } else {
                    String::new()
                }
            };
            let mut first = Vec::new();
            let mut all_optional = true;
            for (i, (member, presence)) in items.iter().enumerate() {
                match presence {
                    Presence::Repeated => first.push(format!("{member}{}", rest(i))),
                    _ => first.push(format!("{member}{}", rest(i + 1))),
                }
                if *presence == Presence::Required {
                    all_optional = false;
                    break;
                }
            }
            for (i, (member, presence)) in items.iter().enumerate() {
                let step = match presence {
                    Presence::Required => format!("ws \",\" ws {member}"),
                    Presence::Optional => format!("(ws \",\" ws {member})?"),
                    Presence::Repeated => format!("(ws \",\" ws {member})*"),
                };
                let _ = writeln!(out, "s{id}-r{i} ::= {step}{}", rest(i + 1));
            }
            if first.is_empty() {
                "\"{\" ws \"}\"".to_owned()
            } else {
                let body = first.join(" | ");
                let optional = if all_optional { "?" } else { "" };
                format!("\"{{\" ws ({body}){optional} ws \"}}\"")
            }
        }
    };
    let _ = writeln!(out, "s{id} ::= {rule}");
}

/// A list with a value of each shape in order, the ones after `required` optional from the end:
/// `"[" ws s1 ws "," ws s2 (ws "," ws s3 (ws "," ws s4)?)? ws "]"`.
fn tuple_rule(items: &[ShapeId], required: usize) -> String {
    let (first, rest) = items.split_at(required);
    let mut optional = String::new();
    for (i, item) in rest.iter().enumerate().rev() {
        let separator = if i == 0 && first.is_empty() {
            ""
        } else {
            "ws \",\" ws "
        };
        optional = format!(
            "({separator}s{item}{}{optional})?",
            if optional.is_empty() { "" } else { " " }
        );
    }
    let required: Vec<String> = first.iter().map(|item| format!("s{item}")).collect();
    let body = [required.join(" ws \",\" ws "), optional]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if body.is_empty() {
        "\"[\" ws \"]\"".to_owned()
    } else {
        format!("\"[\" ws {body} ws \"]\"")
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Presence {
    Required,
    Optional,
    Repeated,
}

/// The largest bound magnitude the exact number grammar handles.
const MAX_EXACT_BOUND: f64 = 1.0e15;

/// A number within bounds, each `(value, exclusive)`. Exact when every bound is an integer of at most
/// 15 digits: such numbers are written without an exponent, as an integer part checked against the
/// bounds and a fraction whose digits decide the edge cases (`1` and `1.0` are at most 1, `1.5` is
/// not). Other bounds keep only the sign (see the module documentation).
fn number_rule(min: Option<(f64, bool)>, max: Option<(f64, bool)>) -> String {
    let exact = |bound: Option<(f64, bool)>| {
        bound.is_none_or(|(b, _)| b.fract() == 0.0 && b.abs() < MAX_EXACT_BOUND)
    };
    match (min, max) {
        (None, None) => return "number".to_owned(),
        (Some((0.0, false)), None) => return "unsigned-number".to_owned(),
        _ if !exact(min) || !exact(max) => {
            return if min.is_some_and(|(m, _)| m >= 0.0) {
                "unsigned-number".to_owned()
            } else {
                "number".to_owned()
            };
        }
        _ => {}
    }
    // Bounds are integral and small here, so the conversions are exact.
    let as_int = |(b, exclusive): (f64, bool)| (b as i64, exclusive);
    let (min, max) = (min.map(as_int), max.map(as_int));
    let mut alternatives = Vec::new();
    // Non-negative part: [max(min, 0), max].
    let (low, low_exclusive) = match min {
        Some((m, exclusive)) if m >= 0 => (m.unsigned_abs(), exclusive),
        _ => (0, false),
    };
    match max {
        Some((m, _)) if m < 0 => {}
        _ => {
            let high = max.map(|(m, exclusive)| (m.unsigned_abs(), exclusive));
            alternatives.extend(magnitudes(low, low_exclusive, high));
        }
    }
    // Negative part, as magnitudes: above 0 (or -max) and up to -min.
    if min.is_none_or(|(m, _)| m < 0) {
        let (low, low_exclusive) = match max {
            Some((m, exclusive)) if m < 0 => (m.unsigned_abs(), exclusive),
            _ => (0, true),
        };
        let high = min.map(|(m, exclusive)| (m.unsigned_abs(), exclusive));
        let negative = magnitudes(low, low_exclusive, high);
        if !negative.is_empty() {
            alternatives.push(format!("\"-\" ({})", negative.join(" | ")));
        }
    }
    if alternatives.is_empty() {
        NEVER.to_owned()
    } else {
        alternatives.join(" | ")
    }
}

/// Decimal numerals without sign or exponent for the magnitudes between `low` and `high` (each
/// bound inclusive unless its flag says exclusive; `high` `None` is unbounded).
fn magnitudes(low: u64, low_exclusive: bool, high: Option<(u64, bool)>) -> Vec<String> {
    const ANY_FRACTION: &str = "(\".\" [0-9]{1,16})?";
    const ZERO_FRACTION: &str = "(\".\" \"0\"{1,16})?";
    const NONZERO_FRACTION: &str = "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}";
    let mut out = Vec::new();
    // Integer parts strictly inside the bounds take any fraction.
    let first = if low_exclusive { low + 1 } else { low };
    let whole = match high {
        None => digits_range(first, None),
        Some((h, _)) if h >= 1 && first < h => digits_range(first, Some(h - 1)),
        Some(_) => Vec::new(),
    };
    out.extend(whole.into_iter().map(|p| format!("{p} {ANY_FRACTION}")));
    // An exclusive low bound itself only with a fraction above zero, when that stays below high.
    if low_exclusive && high.is_none_or(|(h, _)| low < h) {
        out.push(format!("{} {NONZERO_FRACTION}", literal(&low.to_string())));
    }
    // An inclusive high bound itself only with a zero fraction.
    if let Some((h, false)) = high {
        if h > low || (h == low && !low_exclusive) {
            out.push(format!("{} {ZERO_FRACTION}", literal(&h.to_string())));
        }
    }
    out
}

/// A rule body that matches nothing: no character lies outside the whole Unicode range.
const NEVER: &str = "[^\\x00-\\U0010FFFF]";

/// An integer within inclusive bounds, exactly, as alternatives of digit patterns.
fn integer_rule(min: Option<i64>, max: Option<i64>) -> String {
    let mut alternatives = Vec::new();
    // Non-negative part: [max(min, 0), max].
    let low = min.map_or(0, |m| m.max(0)) as u64;
    let nonneg = match max {
        Some(m) if m < 0 => None,
        Some(m) if (m as u64) < low => None,
        Some(m) => Some((low, Some(m as u64))),
        None => Some((low, None)),
    };
    if let Some((a, b)) = nonneg {
        alternatives.extend(digits_range(a, b));
    }
    // Negative part: magnitudes [max(1, -max), -min].
    let negative_allowed = min.is_none_or(|m| m < 0);
    if negative_allowed {
        let low = max.map_or(1, |m| if m >= 0 { 1 } else { m.unsigned_abs() });
        let high = min.map(i64::unsigned_abs);
        if high.is_none_or(|h| h >= low) {
            let magnitudes = digits_range(low, high);
            alternatives.push(format!("\"-\" ({})", magnitudes.join(" | ")));
        }
    }
    if alternatives.is_empty() {
        // No integer satisfies the bounds.
        NEVER.to_owned()
    } else {
        alternatives.join(" | ")
    }
}

/// Decimal numerals (no sign, no leading zeros) for the integers in `[low, high]`; `None` is
/// unbounded (up to [`MAX_DIGITS`] digits).
fn digits_range(low: u64, high: Option<u64>) -> Vec<String> {
    let low_len = low.to_string().len();
    let mut out = Vec::new();
    match high {
        Some(high) => {
            let high_len = high.to_string().len();
            for len in low_len..=high_len {
                let from = if len == low_len {
                    low
                } else {
                    10u64.pow(len as u32 - 1)
                };
                let to = if len == high_len {
                    high
                } else {
                    10u64.pow(len as u32) - 1
                };
                out.extend(same_length(&from.to_string(), &to.to_string()));
            }
        }
        None => {
            let to = "9".repeat(low_len);
            out.extend(same_length(&low.to_string(), &to));
            if low_len < MAX_DIGITS {
                out.push(format!("[1-9] [0-9]{{{low_len},{}}}", MAX_DIGITS - 1));
            }
        }
    }
    out
}

/// Patterns for the numerals from `from` to `to`, both of the same length, `from <= to`.
fn same_length(from: &str, to: &str) -> Vec<String> {
    if from.is_empty() {
        return vec![String::new()];
    }
    if from == to {
        return vec![literal(from)];
    }
    let (first_from, rest_from) = from.split_at(1);
    let (first_to, rest_to) = to.split_at(1);
    let join = |head: String, tail: String| {
        if tail.is_empty() {
            head
        } else {
            format!("{head} {tail}")
        }
    };
    if first_from == first_to {
        return same_length(rest_from, rest_to)
            .into_iter()
            .map(|tail| join(literal(first_from), tail))
            .collect();
    }
    let low_digit = first_from.as_bytes()[0] - b'0';
    let high_digit = first_to.as_bytes()[0] - b'0';
    let width = rest_from.len();
    let mut out = Vec::new();
    let mut middle_from = low_digit;
    if rest_from.bytes().any(|b| b != b'0') {
        let nines = "9".repeat(width);
        out.extend(
            same_length(rest_from, &nines)
                .into_iter()
                .map(|tail| join(literal(first_from), tail)),
        );
        middle_from += 1;
    }
    let mut middle_to = high_digit;
    let mut high = Vec::new();
    if rest_to.bytes().any(|b| b != b'9') {
        let zeros = "0".repeat(width);
        high = same_length(&zeros, rest_to)
            .into_iter()
            .map(|tail| join(literal(first_to), tail))
            .collect();
        middle_to -= 1;
    }
    if middle_from <= middle_to {
        let class = if middle_from == middle_to {
            format!("[{middle_from}]")
        } else {
            format!("[{middle_from}-{middle_to}]")
        };
        let tail = match width {
            0 => String::new(),
            1 => "[0-9]".to_owned(),
            n => format!("[0-9]{{{n}}}"),
        };
        out.push(join(class, tail));
    }
    out.extend(high);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ranges_split_by_digit() {
        assert_eq!(
            integer_rule(Some(0), Some(100)),
            "[0-9] | [1-9] [0-9] | \"100\""
        );
        assert_eq!(
            integer_rule(Some(37), Some(52)),
            "\"3\" [7-9] | [4] [0-9] | \"5\" [0-2]"
        );
        assert_eq!(integer_rule(Some(1), None), "[1-9] | [1-9] [0-9]{1,15}");
        assert_eq!(integer_rule(Some(-5), Some(-2)), "\"-\" ([2-5])");
        assert_eq!(integer_rule(Some(5), Some(2)), "[^\\x00-\\U0010FFFF]");
    }

    #[test]
    fn number_bounds_split_on_the_integer_part() {
        assert_eq!(
            number_rule(Some((0.0, false)), Some((1.0, false))),
            "\"0\" (\".\" [0-9]{1,16})? | \"1\" (\".\" \"0\"{1,16})?"
        );
        assert_eq!(
            number_rule(Some((-1.0, true)), Some((0.0, true))),
            "\"-\" (\"0\" \".\" \"0\"{0,15} [1-9] [0-9]{0,15})"
        );
        assert_eq!(number_rule(Some((0.5, false)), None), "unsigned-number");
        assert_eq!(number_rule(None, Some((0.5, false))), "number");
        assert_eq!(number_rule(Some((2.0, false)), Some((1.0, false))), NEVER);
    }

    #[test]
    fn literals_escape_quotes_and_controls() {
        assert_eq!(literal("\"a\\b\"\n"), "\"\\\"a\\\\b\\\"\\n\"");
    }
}
