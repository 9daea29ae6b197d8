//! A number in the state: its exact JSON text, kept cheap to copy.
//!
//! The workspace builds `serde_json` with `arbitrary_precision`, so that a number keeps its exact
//! text (integers past 64 bits, `1.50`, `1e3` survive every read and write), and its `Number` is a
//! heap string: copying one allocates. A state's persistent nodes are copied on write, every number
//! in a copied node with them, so the state keeps its own [`Number`]: an integer whose text is the
//! plain decimal of an `i64` (almost every number a game holds) inline, copied as eight bytes, and
//! any other number as `serde_json`'s own, shared behind a reference count. Both spell exactly the
//! text that was read, and the methods answer as `serde_json::Number`'s do. This module must not know
//! about values or paths.

use std::fmt;
use std::hash::Hash;
use std::str::FromStr;
use std::sync::Arc;

/// A JSON number with its exact text (see the module's doc). Clone: O(1), and no allocation for an
/// integer that fits 64 bits. Equality is textual, as `serde_json::Number`'s: `1` and `1.0` differ
/// (the numeric comparison is [`crate::numbers_equal`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Number(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// An integer whose text is exactly this `i64`'s decimal spelling.
    Int(i64),
    /// Any other number (a float, an integer past `i64`, `-0`), as `serde_json` read it.
    Text(Arc<serde_json::Number>),
}

impl Number {
    /// The number `f`, if it is finite, spelled as `serde_json` spells a float (`5.0`, `1e300`).
    pub fn from_f64(f: f64) -> Option<Number> {
        serde_json::Number::from_f64(f).map(Number::from)
    }

    /// The value as an `i64`, if it is an integer in range. Time: O(1) for an inline integer.
    pub fn as_i64(&self) -> Option<i64> {
        match &self.0 {
            Repr::Int(i) => Some(*i),
            Repr::Text(n) => n.as_i64(),
        }
    }

    /// The value as a `u64`, if it is a non-negative integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        match &self.0 {
            Repr::Int(i) => u64::try_from(*i).ok(),
            Repr::Text(n) => n.as_u64(),
        }
    }

    /// The value as an `i128`, if it is an integer in range.
    pub fn as_i128(&self) -> Option<i128> {
        match &self.0 {
            Repr::Int(i) => Some(i128::from(*i)),
            Repr::Text(n) => n.as_i128(),
        }
    }

    /// The value as a finite `f64` (the nearest one).
    pub fn as_f64(&self) -> Option<f64> {
        match &self.0 {
            Repr::Int(i) => Some(*i as f64),
            Repr::Text(n) => n.as_f64(),
        }
    }

    /// Whether it is an integer that fits an `i64`.
    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// Whether it is an integer that fits a `u64`.
    pub fn is_u64(&self) -> bool {
        self.as_u64().is_some()
    }

    /// Whether it is written as a float (with a fraction or an exponent) and finite.
    pub fn is_f64(&self) -> bool {
        match &self.0 {
            Repr::Int(_) => false,
            Repr::Text(n) => n.is_f64(),
        }
    }

    /// Whether it is written as an integer (no fraction, no exponent), whatever its size.
    pub fn is_integer(&self) -> bool {
        match &self.0 {
            Repr::Int(_) => true,
            Repr::Text(n) => !n.as_str().contains(['.', 'e', 'E']),
        }
    }

    /// The same number as `serde_json` holds it (an allocation).
    pub fn to_json(&self) -> serde_json::Number {
        match &self.0 {
            Repr::Int(i) => serde_json::Number::from(*i),
            Repr::Text(n) => serde_json::Number::clone(n),
        }
    }
}

/// Whether `text` is the decimal spelling `i64`'s `Display` gives: an optional minus, no leading
/// zero, and not `-0` (which is not the integer 0's spelling).
fn is_plain_decimal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0"
}

impl From<serde_json::Number> for Number {
    fn from(n: serde_json::Number) -> Number {
        let text = n.as_str();
        match text.parse::<i64>() {
            Ok(i) if is_plain_decimal(text) => Number(Repr::Int(i)),
            _ => Number(Repr::Text(Arc::new(n))),
        }
    }
}

impl From<&serde_json::Number> for Number {
    fn from(n: &serde_json::Number) -> Number {
        let text = n.as_str();
        match text.parse::<i64>() {
            Ok(i) if is_plain_decimal(text) => Number(Repr::Int(i)),
            _ => Number(Repr::Text(Arc::new(n.clone()))),
        }
    }
}

impl From<&Number> for serde_json::Number {
    fn from(n: &Number) -> serde_json::Number {
        n.to_json()
    }
}

impl From<Number> for serde_json::Number {
    fn from(n: Number) -> serde_json::Number {
        n.to_json()
    }
}

macro_rules! from_signed {
    ($($t:ty)*) => {$(
        impl From<$t> for Number {
            fn from(n: $t) -> Number {
                Number(Repr::Int(i64::from(n)))
            }
        }
    )*};
}

from_signed!(i8 i16 i32 i64 u8 u16 u32);

macro_rules! from_wide {
    ($($t:ty)*) => {$(
        impl From<$t> for Number {
            fn from(n: $t) -> Number {
                match i64::try_from(n) {
                    Ok(i) => Number(Repr::Int(i)),
                    Err(_) => Number(Repr::Text(Arc::new(serde_json::Number::from(n)))),
                }
            }
        }
    )*};
}

from_wide!(u64 usize isize);

/// Reads a JSON number's text, as `serde_json::Number` does (a plain integer without allocating).
impl FromStr for Number {
    type Err = serde_json::Error;

    fn from_str(text: &str) -> Result<Number, serde_json::Error> {
        if is_plain_decimal(text)
            && let Ok(i) = text.parse::<i64>()
        {
            return Ok(Number(Repr::Int(i)));
        }
        text.parse::<serde_json::Number>().map(Number::from)
    }
}

/// The exact text.
impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Int(i) => fmt::Display::fmt(i, f),
            Repr::Text(n) => fmt::Display::fmt(n, f),
        }
    }
}

/// `Number(text)`, as `serde_json::Number` writes itself.
impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({self})")
    }
}

/// The exact text, as `serde_json::Number` writes it.
impl serde::Serialize for Number {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Int(i) => serializer.serialize_i64(*i),
            Repr::Text(n) => n.serialize(serializer),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Number {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
        serde_json::Number::deserialize(deserializer).map(Number::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling reads back as `serde_json` spells it (which writes an exponent's sign: `1e3`
    /// is `1e+3`), whichever way it is kept, and answers as `serde_json` does.
    #[test]
    fn every_number_keeps_its_exact_text() {
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "18446744073709551616",
            "123456789012345678901234567890",
            "1.0",
            "1.50",
            "1e3",
            "-2.5E-3",
            "0.1",
        ] {
            let number: Number = text.parse().unwrap();
            let json: serde_json::Number = text.parse().unwrap();
            let spelled = json.to_string();
            assert_eq!(number.to_string(), spelled);
            assert_eq!(serde_json::to_string(&number).unwrap(), spelled);
            assert_eq!(number.to_json(), json);
            assert_eq!(Number::from(json.clone()), number);
            assert_eq!(number.as_i64(), json.as_i64(), "{text}");
            assert_eq!(number.as_u64(), json.as_u64(), "{text}");
            assert_eq!(number.as_i128(), json.as_i128(), "{text}");
            assert_eq!(number.as_f64(), json.as_f64(), "{text}");
            assert_eq!(number.is_f64(), json.is_f64(), "{text}");
            assert_eq!(format!("{number:?}"), format!("{json:?}"));
        }
    }

    #[test]
    fn plain_integers_are_kept_inline_and_others_as_read() {
        let inline = |text: &str| matches!(text.parse::<Number>().unwrap().0, Repr::Int(_));
        assert!(inline("0") && inline("-7") && inline("9223372036854775807"));
        assert!(!inline("-0") && !inline("1.0") && !inline("9223372036854775808"));
        assert_eq!(Number::from(5u64), "5".parse().unwrap());
        assert_eq!(Number::from(u64::MAX).to_string(), u64::MAX.to_string());
        assert_ne!(Number::from(1), Number::from_f64(1.0).unwrap());
    }
}
