//! String path spellings (docs/instructions.md) read into canonical [`Path`]s.
//!
//! Model output, MVU commands and scripts write paths as text: `"player.hp"`, `"inventory[0].name"`,
//! `"a[\"x.y\"]"`, `"a['x.y']"` or the JSON Pointer `"/player/hp"`. This module owns reading those
//! spellings, following lodash's `toPath` for the dotted and bracketed forms and RFC 6901 for pointers.
//! Dotted and pointer segments are always string keys (`a.0.b` names the key `"0"`); only a canonical
//! integer in brackets (`a[0]`) becomes [`Segment::Index`], so text never creates an array by accident.
//! The rules live here, in the engine, so that the translators and the Lua host read a path spelling
//! the same way. This module must not report diagnostics or touch instructions: callers decide how to
//! report a normalisation, and execution decides what a segment means on an existing array.

use crate::path::{Path, PointerError, Segment, decimal_index};

/// How a path was spelled in the text, so that callers can report the normalisation precisely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathSpelling {
    /// Keys separated by dots, or a single bare key: `player.hp`, `hp`.
    Dotted,
    /// At least one bracket segment: `inventory[0].name`, `a["x.y"]`, `a['x.y']`.
    Bracketed,
    /// An RFC 6901 JSON Pointer: `/player/hp`, with `~0` for `~` and `~1` for `/`.
    Pointer,
    /// The empty string, read as the root (as a JSON Pointer reads it).
    Empty,
}

impl PathSpelling {
    /// A short name for messages: `dotted`, `bracketed`, `JSON Pointer`, `empty`.
    pub fn describe(self) -> &'static str {
        match self {
            PathSpelling::Dotted => "dotted",
            PathSpelling::Bracketed => "bracketed",
            PathSpelling::Pointer => "JSON Pointer",
            PathSpelling::Empty => "empty",
        }
    }
}

/// Why a string path could not be read: what, at which byte, in which path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathSpellingError {
    /// A text starting with `/` is not a valid JSON Pointer.
    #[error("{problem}: \"{path}\"")]
    Pointer {
        /// The path as written.
        path: String,
        /// What is wrong with the pointer.
        problem: PointerError,
    },
    /// A `[` with no `]` after it.
    #[error("unclosed '[' at byte {at} of path \"{path}\"")]
    UnclosedBracket {
        /// The path as written.
        path: String,
        /// The byte offset of the `[`.
        at: usize,
    },
    /// A quoted key in brackets whose quote is never closed.
    #[error("unclosed quote in brackets at byte {at} of path \"{path}\"")]
    UnclosedQuote {
        /// The path as written.
        path: String,
        /// The byte offset of the opening quote.
        at: usize,
    },
    /// A quoted key in brackets not followed by `]`.
    #[error("expected ']' after the quoted key at byte {at} of path \"{path}\"")]
    ExpectedBracket {
        /// The path as written.
        path: String,
        /// The byte offset where `]` was expected.
        at: usize,
    },
    /// Text glued after a `]` (`a[0]b`).
    #[error("unexpected text after ']' at byte {at} of path \"{path}\"")]
    TextAfterBracket {
        /// The path as written.
        path: String,
        /// The byte offset of the text.
        at: usize,
    },
    /// A `]` with no `[` before it.
    #[error("unmatched ']' at byte {at} of path \"{path}\"")]
    UnmatchedBracket {
        /// The path as written.
        path: String,
        /// The byte offset of the `]`.
        at: usize,
    },
}

/// Reads a string path spelling into a canonical [`Path`].
///
/// A text starting with `/` is a JSON Pointer; `""` is the root; anything else is read with lodash's
/// `toPath` rules: `.` separates keys, `[n]` with a canonical decimal `n` is an index, `["k"]` and
/// `['k']` quote a key that may hold dots or brackets (backslash escapes the next character), and any
/// other bracket content (`a[b]`, `a[-1]`, `a[01]`) is a key, as lodash reads it. Empty keys from
/// `a..b`, a leading `.` or a trailing `.` are kept, as lodash keeps them. Malformed brackets (an
/// unclosed `[` or quote, text glued after `]`) are an error rather than a guess.
///
/// Time: O(n) in the length of `text`.
pub fn parse_path(text: &str) -> Result<(Path, PathSpelling), PathSpellingError> {
    if text.is_empty() {
        return Ok((Path::root(), PathSpelling::Empty));
    }
    if text.starts_with('/') {
        return Path::from_pointer(text)
            .map(|path| (path, PathSpelling::Pointer))
            .map_err(|problem| PathSpellingError::Pointer {
                path: text.to_owned(),
                problem,
            });
    }
    parse_lodash(text)
}

fn parse_lodash(text: &str) -> Result<(Path, PathSpelling), PathSpellingError> {
    let bytes = text.as_bytes();
    let mut segments = Vec::new();
    let mut bracketed = false;
    let mut i = 0;
    // lodash pushes an empty key for a leading dot.
    if bytes[0] == b'.' {
        segments.push(Segment::key(""));
    }
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                // A dot followed by a dot or by the end names an empty key, as in lodash.
                if i + 1 == bytes.len() || bytes[i + 1] == b'.' {
                    segments.push(Segment::key(""));
                }
                i += 1;
            }
            b'[' => {
                bracketed = true;
                let (segment, next) = read_bracket(text, i)?;
                segments.push(segment);
                i = next;
                if i < bytes.len() && bytes[i] != b'.' && bytes[i] != b'[' {
                    return Err(PathSpellingError::TextAfterBracket {
                        path: text.to_owned(),
                        at: i,
                    });
                }
            }
            b']' => {
                return Err(PathSpellingError::UnmatchedBracket {
                    path: text.to_owned(),
                    at: i,
                });
            }
            _ => {
                let start = i;
                while i < bytes.len() && !matches!(bytes[i], b'.' | b'[' | b']') {
                    i += 1;
                }
                segments.push(Segment::key(&text[start..i]));
            }
        }
    }
    let spelling = if bracketed {
        PathSpelling::Bracketed
    } else {
        PathSpelling::Dotted
    };
    Ok((Path::from(segments), spelling))
}

/// Reads one bracket segment starting at the `[` at byte `open`; returns it and the byte after `]`.
fn read_bracket(text: &str, open: usize) -> Result<(Segment, usize), PathSpellingError> {
    let bytes = text.as_bytes();
    let start = open + 1;
    match bytes.get(start) {
        Some(&quote @ (b'"' | b'\'')) => {
            let mut key = String::new();
            let mut i = start + 1;
            loop {
                let Some(c) = text[i..].chars().next() else {
                    return Err(PathSpellingError::UnclosedQuote {
                        path: text.to_owned(),
                        at: start,
                    });
                };
                if c == quote as char {
                    i += 1;
                    break;
                }
                if c == '\\' {
                    // lodash's `reEscapeChar` drops the backslash and keeps the next character.
                    i += 1;
                    let Some(escaped) = text[i..].chars().next() else {
                        return Err(PathSpellingError::UnclosedQuote {
                            path: text.to_owned(),
                            at: start,
                        });
                    };
                    key.push(escaped);
                    i += escaped.len_utf8();
                    continue;
                }
                key.push(c);
                i += c.len_utf8();
            }
            if bytes.get(i) != Some(&b']') {
                return Err(PathSpellingError::ExpectedBracket {
                    path: text.to_owned(),
                    at: i,
                });
            }
            Ok((Segment::key(&key), i + 1))
        }
        _ => {
            let Some(len) = text[start..].find(']') else {
                return Err(PathSpellingError::UnclosedBracket {
                    path: text.to_owned(),
                    at: open,
                });
            };
            let inner = &text[start..start + len];
            if inner.contains('[') {
                return Err(PathSpellingError::UnclosedBracket {
                    path: text.to_owned(),
                    at: open,
                });
            }
            let segment = match decimal_index(inner) {
                Some(index) => Segment::Index(index),
                None => Segment::key(inner),
            };
            Ok((segment, start + len + 1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path;
    use rstest::rstest;

    #[rstest]
    #[case("player.hp", path!["player", "hp"], PathSpelling::Dotted)]
    #[case("hp", path!["hp"], PathSpelling::Dotted)]
    #[case("a.0.b", path!["a", "0", "b"], PathSpelling::Dotted)]
    #[case("inventory[0].name", path!["inventory", 0, "name"], PathSpelling::Bracketed)]
    #[case("a[0][1]", path!["a", 0, 1], PathSpelling::Bracketed)]
    #[case("a[\"x.y\"]", path!["a", "x.y"], PathSpelling::Bracketed)]
    #[case("a['x.y']", path!["a", "x.y"], PathSpelling::Bracketed)]
    #[case("a['x.y'].z", path!["a", "x.y", "z"], PathSpelling::Bracketed)]
    #[case("a['it\\'s']", path!["a", "it's"], PathSpelling::Bracketed)]
    #[case("a[\"0\"]", path!["a", "0"], PathSpelling::Bracketed)]
    #[case("a[b]", path!["a", "b"], PathSpelling::Bracketed)]
    #[case("a[-1]", path!["a", "-1"], PathSpelling::Bracketed)]
    #[case("a[01]", path!["a", "01"], PathSpelling::Bracketed)]
    #[case("[0].a", path![0, "a"], PathSpelling::Bracketed)]
    #[case("a..b", path!["a", "", "b"], PathSpelling::Dotted)]
    #[case(".a", path!["", "a"], PathSpelling::Dotted)]
    #[case("a[0]..b", path!["a", 0, "", "b"], PathSpelling::Bracketed)]
    #[case("a[0].", path!["a", 0, ""], PathSpelling::Bracketed)]
    #[case("a.", path!["a", ""], PathSpelling::Dotted)]
    #[case("角色.好感度", path!["角色", "好感度"], PathSpelling::Dotted)]
    #[case("/player/hp", path!["player", "hp"], PathSpelling::Pointer)]
    #[case("/a~1b/c~0d/0", path!["a/b", "c~d", "0"], PathSpelling::Pointer)]
    #[case("/", path![""], PathSpelling::Pointer)]
    #[case("", Path::root(), PathSpelling::Empty)]
    fn reads_spellings(#[case] text: &str, #[case] expected: Path, #[case] spelling: PathSpelling) {
        assert_eq!(parse_path(text), Ok((expected, spelling)));
    }

    #[rstest]
    #[case("a[0", "unclosed '['")]
    #[case("a['x", "unclosed quote")]
    #[case("a['x'", "expected ']'")]
    #[case("a[0]b", "unexpected text after ']'")]
    #[case("a]", "unmatched ']'")]
    #[case("/a~2", "'~' must be followed")]
    fn refuses_malformed_spellings(#[case] text: &str, #[case] fragment: &str) {
        let error = parse_path(text).unwrap_err().to_string();
        assert!(error.contains(fragment), "{text}: {error}");
    }
}
