//! A tolerant JSON parser: broken model JSON in, a [`Document`] plus every repair made out.
//!
//! This module owns reading one JSON value the way a model meant it: trailing, missing and doubled
//! commas, single and smart quotes, unquoted keys and strings, `//`, `/* */` and `#` comments, Python
//! and JavaScript literals, raw control characters in strings, unescaped inner quotes, missing or stray
//! closers, and output that stops in the middle. Every repair is listed with its byte span in the text,
//! and the parser says which parts were cut off by the end of the text so that callers never mistake a
//! completed guess (`8` cut from `80`) for what the model wrote.
//!
//! The parser never recurses and never panics: containers live on an explicit stack, nesting deeper than
//! [`MAX_PARSE_NESTING`] stops value building and skips to the matching closer, and every character is looked at
//! a bounded number of times, so time is linear in the text. It must not decide what is an instruction,
//! where a block starts in prose, or how to report repairs to people: that is the extractor's job.

use std::ops::Range;

use serde_json::{Number, Value as Json};

use crate::document::{Document, Node, NodeId, Text};

/// Deepest container nesting the parser builds. Deeper input is skipped and reported, because values
/// are converted recursively (to `serde_json::Value`, to engine values) and the engine refuses such
/// depth anyway.
pub const MAX_PARSE_NESTING: usize = 256;

statecraft_engine::registry! {
    /// What was repaired.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[non_exhaustive]
    pub enum RepairKind {
        /// A comma before a closer was removed.
        TrailingComma = "trailing_comma",
        /// A comma was missing between two values and was inserted.
        MissingComma = "missing_comma",
        /// A comma with nothing before it (`[,1]`, `{,"a":1}`, `[1,,2]`) was removed.
        ExtraComma = "extra_comma",
        /// A colon was missing between a key and its value.
        MissingColon = "missing_colon",
        /// A key had no value; `null` was used.
        MissingValue = "missing_value",
        /// A string used single quotes.
        SingleQuotes = "single_quotes",
        /// A string used typographic quotes (`“…”`, `‘…’`) or backticks.
        SmartQuotes = "smart_quotes",
        /// A string was written with escaped quotes (`{\"a\": 1}`), as in doubly encoded JSON.
        EscapedQuotes = "escaped_quotes",
        /// A quote inside a string was not escaped and was kept as a character.
        UnescapedQuote = "unescaped_quote",
        /// An object key had no quotes.
        UnquotedKey = "unquoted_key",
        /// A string value had no quotes.
        UnquotedString = "unquoted_string",
        /// `True`, `False` or `None` was read as `true`, `false` or `null`.
        PythonLiteral = "python_literal",
        /// `undefined`, `NaN` or `Infinity` was read as `null`.
        JsLiteral = "js_literal",
        /// A comment was removed.
        Comment = "comment",
        /// A raw newline, tab or other control character inside a string was escaped.
        ControlCharacter = "control_character",
        /// A backslash escape that JSON does not define was read as the character itself.
        InvalidEscape = "invalid_escape",
        /// A `\u` escape named half of a UTF-16 surrogate pair with no other half (`"\ud800"`),
        /// which is no character; U+FFFD was used.
        LoneSurrogate = "lone_surrogate",
        /// A number written outside JSON's grammar (`.5`, `2.`, `2e`) was read as the number meant.
        NumberFixed = "number_fixed",
        /// An ellipsis (`...`) standing for omitted items was removed.
        Ellipsis = "ellipsis",
        /// A non-ASCII space or a byte-order mark between tokens was skipped.
        UnusualWhitespace = "unusual_whitespace",
        /// Text that belongs to no value (`(`, `;`, a stray quote) was skipped.
        Garbage = "garbage",
        /// A closer with no matching opener was removed.
        StrayCloser = "stray_closer",
        /// A container was closed where a different closer or a new value showed its end.
        MissingCloser = "missing_closer",
        /// A JSONP wrapper (`callback({...});`) was removed.
        JsonpWrapper = "jsonp_wrapper",
        /// The text ended inside a string; it was closed.
        UnclosedString = "unclosed_string",
        /// The text ended inside an array or object; it was closed.
        UnclosedContainer = "unclosed_container",
        /// Containers nested deeper than [`MAX_PARSE_NESTING`]; the value was skipped.
        TooDeep = "too_deep",
    }
    impl {
        /// Every kind, in declaration order.
        pub const ALL;
        /// The stable snake_case code used as a diagnostic kind.
        pub fn code;
    }
}

impl RepairKind {
    /// What the repair did, for people: lower-case, no trailing period.
    pub fn describe(self) -> &'static str {
        match self {
            RepairKind::TrailingComma => "removed a trailing comma",
            RepairKind::MissingComma => "inserted a missing comma",
            RepairKind::ExtraComma => "removed a comma with no value before it",
            RepairKind::MissingColon => "inserted a missing colon after a key",
            RepairKind::MissingValue => "a key had no value; used null",
            RepairKind::SingleQuotes => "read a single-quoted string",
            RepairKind::SmartQuotes => "read a string in typographic quotes or backticks",
            RepairKind::EscapedQuotes => "read a string written with escaped quotes",
            RepairKind::UnescapedQuote => "kept an unescaped quote inside a string",
            RepairKind::UnquotedKey => "read an unquoted key",
            RepairKind::UnquotedString => "read an unquoted string",
            RepairKind::PythonLiteral => "read a Python literal as JSON",
            RepairKind::JsLiteral => "read a JavaScript literal as null",
            RepairKind::Comment => "removed a comment",
            RepairKind::ControlCharacter => "escaped a raw control character inside a string",
            RepairKind::InvalidEscape => "read an unknown escape as the character itself",
            RepairKind::LoneSurrogate => {
                "a \\u escape names half of a UTF-16 surrogate pair, which is no character; used U+FFFD"
            }
            RepairKind::NumberFixed => "read a malformed number",
            RepairKind::Ellipsis => "removed an ellipsis",
            RepairKind::UnusualWhitespace => "skipped unusual whitespace",
            RepairKind::Garbage => "skipped text that belongs to no value",
            RepairKind::StrayCloser => "removed a closer with no opener",
            RepairKind::MissingCloser => "closed a container whose closer was missing",
            RepairKind::JsonpWrapper => "removed a JSONP wrapper",
            RepairKind::UnclosedString => "the text ended inside a string",
            RepairKind::UnclosedContainer => "the text ended inside an array or object",
            RepairKind::TooDeep => "skipped a value nested too deeply",
        }
    }
}

/// One repair and the bytes it concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repair {
    /// What was repaired.
    pub kind: RepairKind,
    /// Byte range in the parsed text.
    pub span: Range<usize>,
}

/// One element of a top-level array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Byte range of the element in the parsed text.
    pub span: Range<usize>,
    /// Whether the element ended before the text did: `false` means its end was guessed.
    pub complete: bool,
}

/// The outcome of parsing one value.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed<'a> {
    /// The nodes read; strings that needed no repair borrow the text.
    pub document: Document<'a>,
    /// The value's node in [`Parsed::document`], or `None` when nothing could be read (no value, or
    /// nesting beyond [`MAX_PARSE_NESTING`]).
    pub value: Option<NodeId>,
    /// Byte range from the value's first byte to the byte after the last one consumed.
    pub span: Range<usize>,
    /// Every repair, in text order of discovery.
    pub repairs: Vec<Repair>,
    /// Whether the value ended before the text did. `false` means the end of the text cut it and
    /// whatever the parser closed was a guess.
    pub complete: bool,
    /// For a top-level array, each element with its span and completeness.
    pub children: Vec<Child>,
}

impl Parsed<'_> {
    /// The value as a `serde_json::Value`.
    pub fn to_json(&self) -> Option<Json> {
        self.value.map(|id| self.document.to_json(id))
    }
}

/// Parses one value starting at byte `start` of `text`, after skipping whitespace and comments.
///
/// The end of `text` is the end of the input: pass a slice that ends where a block ends (a fence, a
/// tag). Time: O(n) in the bytes consumed.
pub fn parse_value(text: &str, start: usize) -> Parsed<'_> {
    parse_value_in(text, start, &mut Spare::default())
}

/// [`parse_value`] with the vectors an earlier parse left in `spare`: reading many blocks of one text
/// then allocates about once, not once per block.
pub(crate) fn parse_value_in<'a>(text: &'a str, start: usize, spare: &mut Spare<'a>) -> Parsed<'a> {
    let mut parser = Parser::new(text, start.min(text.len()), spare);
    let parsed = parser.run();
    spare.stack = parser.stack;
    spare.open_items = parser.open_items;
    spare.open_members = parser.open_members;
    spare.buffer = parser.buffer;
    parsed
}

/// Emptied vectors kept from one parse for the next.
#[derive(Default)]
pub(crate) struct Spare<'a> {
    document: Document<'a>,
    repairs: Vec<Repair>,
    children: Vec<Child>,
    stack: Vec<Frame<'a>>,
    open_items: Vec<NodeId>,
    open_members: Vec<(Text<'a>, NodeId)>,
    buffer: String,
}

impl<'a> Spare<'a> {
    /// Keeps the vectors of a parse whose result is no longer needed.
    pub(crate) fn recycle(&mut self, mut parsed: Parsed<'a>) {
        parsed.document.clear();
        parsed.repairs.clear();
        parsed.children.clear();
        self.document = parsed.document;
        self.repairs = parsed.repairs;
        self.children = parsed.children;
    }
}

/// The outcome of [`repair_json`].
#[derive(Clone, Debug, PartialEq)]
pub struct RepairedDocument {
    /// The value; several top-level values become one array.
    pub value: Json,
    /// Every repair made.
    pub repairs: Vec<Repair>,
    /// Whether every value ended before the text did.
    pub complete: bool,
}

/// Repairs a whole text as one JSON document, the way JSON repair libraries do: a Markdown fence
/// around it is removed, several top-level values become one array, and text after the last value is
/// ignored. Returns `None` when the text holds no value at all.
///
/// This is the library-compatible entry point used by the conformance corpus; reading model replies
/// (prose, tags, instructions) is [`crate::extract`]'s job. Time: O(n).
pub fn repair_json(text: &str) -> Option<RepairedDocument> {
    let (body_start, body_end) = strip_fence(text);
    let body = &text[..body_end];
    let mut values = Vec::new();
    let mut repairs = Vec::new();
    let mut complete = true;
    let mut pos = body_start;
    loop {
        let parsed = parse_value(body, pos);
        let Some(value) = parsed.to_json() else { break };
        values.push(value);
        repairs.extend(parsed.repairs);
        complete &= parsed.complete;
        pos = parsed.span.end;
        // Another value may follow after whitespace, commas or newlines; anything else ends the
        // document and is ignored as trailing text.
        let rest = &body.as_bytes()[pos..];
        let skip = rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b','))
            .count();
        match rest.get(skip) {
            Some(b'{' | b'[') => pos += skip,
            _ => break,
        }
    }
    let value = match values.len() {
        0 => return None,
        1 => values.pop().unwrap_or(Json::Null),
        _ => Json::Array(values),
    };
    Some(RepairedDocument {
        value,
        repairs,
        complete,
    })
}

/// The body of a text wrapped in a Markdown fence (```` ```json … ``` ````), or the whole text.
fn strip_fence(text: &str) -> (usize, usize) {
    let trimmed_start = text.len() - text.trim_start().len();
    let rest = &text[trimmed_start..];
    let Some(after) = rest.strip_prefix("```") else {
        return (0, text.len());
    };
    let label = after
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
        .count();
    let body_start = trimmed_start + 3 + label;
    let end = text[body_start..]
        .find("```")
        .map_or(text.len(), |i| body_start + i);
    (body_start, end)
}

/// An open container: where it starts in the text, and where its children start on the parser's
/// scratch stacks (they become the container's node when it closes).
enum Frame<'a> {
    Array {
        start: usize,
        first: usize,
    },
    Object {
        start: usize,
        first: usize,
        key: Option<Text<'a>>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Value,
    ArrayElement,
    ObjectKey,
    AfterValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Key,
    Value,
}

struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    repairs: Vec<Repair>,
    stack: Vec<Frame<'a>>,
    document: Document<'a>,
    /// Elements and members of the open containers, innermost last.
    open_items: Vec<NodeId>,
    open_members: Vec<(Text<'a>, NodeId)>,
    /// Where a string that needs repairs or escapes is read before the document keeps it.
    buffer: String,
    open_arrays: usize,
    open_objects: usize,
    /// How many times the end of the text cut something; a value is complete when this did not move
    /// while it was read.
    cuts: usize,
    /// Byte of the last comma consumed between elements, to report trailing commas.
    comma: Option<usize>,
    root: Option<NodeId>,
    children: Vec<Child>,
    child_start: usize,
    child_cuts: usize,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Non-ASCII characters that read as whitespace between tokens.
fn is_unusual_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{1680}' | '\u{180e}' | '\u{2000}'
            ..='\u{200b}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '\'' | '“' | '”' | '‘' | '’' | '`')
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, start: usize, spare: &mut Spare<'a>) -> Parser<'a> {
        let mut stack = std::mem::take(&mut spare.stack);
        let mut open_items = std::mem::take(&mut spare.open_items);
        let mut open_members = std::mem::take(&mut spare.open_members);
        stack.clear();
        open_items.clear();
        open_members.clear();
        Parser {
            text,
            b: text.as_bytes(),
            pos: start,
            repairs: std::mem::take(&mut spare.repairs),
            stack,
            document: std::mem::take(&mut spare.document),
            open_items,
            open_members,
            buffer: std::mem::take(&mut spare.buffer),
            open_arrays: 0,
            open_objects: 0,
            cuts: 0,
            comma: None,
            root: None,
            children: std::mem::take(&mut spare.children),
            child_start: start,
            child_cuts: 0,
        }
    }

    fn repair(&mut self, kind: RepairKind, span: Range<usize>) {
        self.repairs.push(Repair { kind, span });
    }

    /// Records a repair, or widens the one at `slot` to cover `span` too.
    fn extend_repair(&mut self, slot: &mut Option<usize>, kind: RepairKind, span: Range<usize>) {
        match slot.and_then(|index| self.repairs.get_mut(index)) {
            Some(repair) if repair.kind == kind => repair.span.end = span.end,
            _ => {
                *slot = Some(self.repairs.len());
                self.repair(kind, span);
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        match *self.b.get(pos)? {
            ascii @ 0..0x80 => Some(char::from(ascii)),
            _ => self.text.get(pos..).and_then(|rest| rest.chars().next()),
        }
    }

    /// Skips whitespace, unusual spaces and comments.
    fn skip_trivia(&mut self) {
        while let Some(b) = self.peek() {
            if is_space(b) {
                self.pos += 1;
            } else if b == b'/' && self.b.get(self.pos + 1) == Some(&b'/') || b == b'#' {
                let start = self.pos;
                let len = self.b[start..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .unwrap_or(self.b.len() - start);
                self.pos = start + len;
                self.repair(RepairKind::Comment, start..self.pos);
            } else if b == b'/' && self.b.get(self.pos + 1) == Some(&b'*') {
                let start = self.pos;
                let end =
                    find(&self.b[start + 2..], b"*/").map_or(self.b.len(), |i| start + 2 + i + 2);
                self.pos = end;
                self.repair(RepairKind::Comment, start..end);
            } else if b == b'`' && self.b[self.pos..].starts_with(b"```") {
                // A Markdown fence marker inside the value (```` {```json … ```} ````) is not JSON.
                let start = self.pos;
                self.pos += self.b[start..].iter().take_while(|&&c| c == b'`').count();
                self.pos += self.b[self.pos..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .count();
                self.repair(RepairKind::Garbage, start..self.pos);
            } else if b >= 0x80 {
                match self.char_at(self.pos) {
                    Some(c) if is_unusual_space(c) => {
                        let start = self.pos;
                        self.pos += c.len_utf8();
                        self.repair(RepairKind::UnusualWhitespace, start..self.pos);
                    }
                    _ => return,
                }
            } else {
                return;
            }
        }
    }

    fn run(&mut self) -> Parsed<'a> {
        self.skip_trivia();
        let start = self.pos;
        let jsonp = self.skip_jsonp_head();
        let mut state = State::Value;
        loop {
            if self.root.is_some() {
                break;
            }
            if self.pos >= self.b.len() {
                // The end of the text cuts whatever is still open: close it all and say so.
                self.close_all_at_end();
                break;
            }
            if self.stack.is_empty() && state == State::AfterValue {
                // Only a value skipped for its depth gets here: there is nothing to attach to.
                break;
            }
            state = match state {
                State::Value => self.value(),
                State::ArrayElement => self.array_element(),
                State::ObjectKey => self.object_key(),
                State::AfterValue => self.after_value(),
            };
        }
        let mut end = self.pos;
        if let Some(head) = jsonp {
            end = self.skip_jsonp_tail(head, end);
        }
        let complete = self.cuts == 0;
        Parsed {
            document: std::mem::take(&mut self.document),
            value: self.root,
            span: start..end.max(start),
            repairs: std::mem::take(&mut self.repairs),
            complete,
            children: std::mem::take(&mut self.children),
        }
    }

    /// `callback_123(` before the value: skipped and reported, and its `)` and `;` are skipped after.
    fn skip_jsonp_head(&mut self) -> Option<usize> {
        let start = self.pos;
        let ident = self.b[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))
            .count();
        if ident == 0 || self.b[start].is_ascii_digit() {
            return None;
        }
        let mut p = start + ident;
        while p < self.b.len() && is_space(self.b[p]) {
            p += 1;
        }
        if self.b.get(p) != Some(&b'(') {
            return None;
        }
        self.pos = p + 1;
        self.skip_trivia();
        Some(start)
    }

    fn skip_jsonp_tail(&mut self, head: usize, end: usize) -> usize {
        let mut p = end;
        while p < self.b.len() && is_space(self.b[p]) {
            p += 1;
        }
        if self.b.get(p) == Some(&b')') {
            p += 1;
            while p < self.b.len() && is_space(self.b[p]) {
                p += 1;
            }
            if self.b.get(p) == Some(&b';') {
                p += 1;
            }
            self.repairs.push(Repair {
                kind: RepairKind::JsonpWrapper,
                span: head..p,
            });
            p
        } else {
            self.repairs.push(Repair {
                kind: RepairKind::JsonpWrapper,
                span: head..end,
            });
            end
        }
    }

    fn top_is_root_array(&self) -> bool {
        self.stack.len() == 1 && matches!(self.stack[0], Frame::Array { .. })
    }

    /// A value is expected: a container opens, or a scalar is read and attached.
    fn value(&mut self) -> State {
        self.skip_trivia();
        // At the end of the text a pending key is simply never given a value: the object is cut.
        let Some(b) = self.peek() else {
            return State::AfterValue;
        };
        if self.top_is_root_array() {
            self.child_start = self.pos;
            self.child_cuts = self.cuts;
        }
        match b {
            b'{' | b'[' => {
                if self.stack.len() >= MAX_PARSE_NESTING {
                    self.skip_too_deep();
                    return State::AfterValue;
                }
                let start = self.pos;
                self.pos += 1;
                self.comma = None;
                if b == b'{' {
                    self.stack.push(Frame::Object {
                        start,
                        first: self.open_members.len(),
                        key: None,
                    });
                    self.open_objects += 1;
                    State::ObjectKey
                } else {
                    self.stack.push(Frame::Array {
                        start,
                        first: self.open_items.len(),
                    });
                    self.open_arrays += 1;
                    State::ArrayElement
                }
            }
            b',' | b'}' | b']' if !self.stack.is_empty() => {
                // `{"a": }` or `{"a": ,`: the key has no value.
                let at = self.pos;
                self.repair(RepairKind::MissingValue, at..at);
                self.attach(Node::Null, at);
                State::AfterValue
            }
            _ => {
                let start = self.pos;
                if let Some(value) = self.scalar(Context::Value) {
                    self.attach(value, start);
                    State::AfterValue
                } else {
                    State::Value
                }
            }
        }
    }

    fn array_element(&mut self) -> State {
        self.skip_trivia();
        match self.peek() {
            None => State::AfterValue,
            Some(b']') => {
                if let Some(comma) = self.comma.take() {
                    self.repair(RepairKind::TrailingComma, comma..comma + 1);
                }
                self.pos += 1;
                self.close_top();
                State::AfterValue
            }
            Some(b'}') => self.mismatched_closer(b'}'),
            Some(b',') => {
                let at = self.pos;
                self.repair(RepairKind::ExtraComma, at..at + 1);
                self.pos += 1;
                State::ArrayElement
            }
            Some(b'.') if self.b[self.pos..].starts_with(b"...") => {
                self.skip_ellipsis();
                State::ArrayElement
            }
            Some(_) => {
                self.comma = None;
                State::Value
            }
        }
    }

    fn skip_ellipsis(&mut self) {
        let start = self.pos;
        self.pos += self.b[start..].iter().take_while(|&&b| b == b'.').count();
        self.repair(RepairKind::Ellipsis, start..self.pos);
        // The ellipsis stands for omitted items: a comma after it separates nothing.
        self.skip_trivia();
        if self.peek() == Some(b',') {
            self.pos += 1;
            self.comma = Some(self.pos - 1);
        }
    }

    fn object_key(&mut self) -> State {
        self.skip_trivia();
        let Some(b) = self.peek() else {
            return State::AfterValue;
        };
        match b {
            b'}' => {
                if let Some(comma) = self.comma.take() {
                    self.repair(RepairKind::TrailingComma, comma..comma + 1);
                }
                self.pos += 1;
                self.close_top();
                State::AfterValue
            }
            b']' => self.mismatched_closer(b']'),
            b',' => {
                let at = self.pos;
                self.repair(RepairKind::ExtraComma, at..at + 1);
                self.pos += 1;
                State::ObjectKey
            }
            b'.' if self.b[self.pos..].starts_with(b"...") => {
                self.skip_ellipsis();
                State::ObjectKey
            }
            b'{' | b'[' => {
                if self.stack.len() >= 2
                    && matches!(self.stack[self.stack.len() - 2], Frame::Array { .. })
                {
                    // `[{"i":1{"i":2}]`: the object ended without its `}`, the next element began.
                    let at = self.pos;
                    self.repair(RepairKind::MissingCloser, at..at);
                    self.close_top();
                    State::AfterValue
                } else {
                    // Openers where a key belongs: the whole run is skipped as one repair.
                    let at = self.pos;
                    self.pos += self.b[at..]
                        .iter()
                        .take_while(|&&c| c == b'{' || c == b'[')
                        .count();
                    self.repair(RepairKind::Garbage, at..self.pos);
                    State::ObjectKey
                }
            }
            _ => {
                self.comma = None;
                let Some(key) = self.key() else {
                    return State::ObjectKey;
                };
                self.skip_trivia();
                match self.peek() {
                    Some(b':') => self.pos += 1,
                    Some(b'}' | b',') => {
                        // `{name}` or `{"a", "b": 1}`: a key with no value at all.
                        let at = self.pos;
                        self.repair(RepairKind::MissingValue, at..at);
                        self.set_key(key);
                        self.attach(Node::Null, at);
                        return State::AfterValue;
                    }
                    None => {
                        self.set_key(key);
                        return State::Value;
                    }
                    Some(_) => {
                        let at = self.pos;
                        self.repair(RepairKind::MissingColon, at..at);
                    }
                }
                self.set_key(key);
                State::Value
            }
        }
    }

    fn set_key(&mut self, key: Text<'a>) {
        if let Some(Frame::Object { key: slot, .. }) = self.stack.last_mut() {
            *slot = Some(key);
        }
    }

    /// Reads an object key: a quoted string or an unquoted word up to the colon.
    fn key(&mut self) -> Option<Text<'a>> {
        let c = self.char_at(self.pos)?;
        if is_quote(c) || (c == '\\' && self.b.get(self.pos + 1) == Some(&b'"')) {
            return Some(self.string(Context::Key));
        }
        let start = self.pos;
        let mut p = start;
        while p < self.b.len()
            && !matches!(
                self.b[p],
                b':' | b',' | b'}' | b']' | b'{' | b'[' | b'"' | b'\'' | b'\n' | b'\r'
            )
        {
            if self.b[p] == b'/' && matches!(self.b.get(p + 1), Some(b'/' | b'*')) {
                break;
            }
            p += 1;
        }
        let word = self.text[start..p].trim_end_matches([' ', '\t']);
        if word.is_empty() {
            // Not a key at all (`:` or a stray quote where a key should be): skip one character.
            let len = c.len_utf8();
            self.pos += len;
            self.repair(RepairKind::Garbage, start..start + len);
            return None;
        }
        self.pos = p;
        // `{a":"foo"}`: a stray closing quote after an unquoted key.
        if matches!(self.peek(), Some(b'"' | b'\''))
            && self.next_significant(self.pos + 1) == Some(b':')
        {
            self.repair(RepairKind::Garbage, self.pos..self.pos + 1);
            self.pos += 1;
        }
        self.repair(RepairKind::UnquotedKey, start..start + word.len());
        Some(Text::Borrowed(word))
    }

    /// The next non-space byte at or after `from`, on any line.
    fn next_significant(&self, from: usize) -> Option<u8> {
        self.b[from.min(self.b.len())..]
            .iter()
            .copied()
            .find(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    }

    fn after_value(&mut self) -> State {
        self.skip_trivia();
        let Some(b) = self.peek() else {
            return State::AfterValue;
        };
        let in_object = matches!(self.stack.last(), Some(Frame::Object { .. }));
        match b {
            b',' => {
                self.comma = Some(self.pos);
                self.pos += 1;
                if in_object {
                    State::ObjectKey
                } else {
                    State::ArrayElement
                }
            }
            b'}' | b']' => {
                let matches_top = (b == b'}') == in_object;
                if matches_top {
                    self.pos += 1;
                    self.close_top();
                    State::AfterValue
                } else {
                    self.mismatched_closer(b)
                }
            }
            b':' | b')' | b';' => {
                let at = self.pos;
                self.pos += self.b[at..]
                    .iter()
                    .take_while(|&&c| matches!(c, b':' | b')' | b';'))
                    .count();
                self.repair(RepairKind::Garbage, at..self.pos);
                State::AfterValue
            }
            _ => {
                let at = self.pos;
                self.repair(RepairKind::MissingComma, at..at);
                if in_object {
                    State::ObjectKey
                } else {
                    State::ArrayElement
                }
            }
        }
    }

    /// A closer that does not match the innermost container: it closes the containers above a
    /// matching one, or is removed when nothing open matches it.
    fn mismatched_closer(&mut self, closer: u8) -> State {
        let at = self.pos;
        let open = if closer == b'}' {
            self.open_objects
        } else {
            self.open_arrays
        };
        if open > 0 {
            self.repair(RepairKind::MissingCloser, at..at);
            self.close_top();
        } else {
            self.pos += 1;
            self.repair(RepairKind::StrayCloser, at..at + 1);
        }
        State::AfterValue
    }

    fn close_top(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        let id = match frame {
            Frame::Array { start, first } => {
                self.open_arrays -= 1;
                self.document
                    .push_array(self.open_items.drain(first..), start..self.pos)
            }
            Frame::Object { start, first, .. } => {
                self.open_objects -= 1;
                self.document
                    .push_object(self.open_members.drain(first..), start..self.pos)
            }
        };
        self.attach_node(id);
    }

    fn close_all_at_end(&mut self) {
        let end = self.b.len();
        while let Some(frame) = self.stack.last() {
            let start = match frame {
                Frame::Array { start, .. } | Frame::Object { start, .. } => *start,
            };
            self.repair(RepairKind::UnclosedContainer, start..end);
            self.cuts += 1;
            self.close_top();
        }
    }

    /// Adds a scalar read from `start` up to here to the innermost container (or makes it the root).
    fn attach(&mut self, value: Node<'a>, start: usize) {
        let id = self.document.push(value, start..self.pos);
        self.attach_node(id);
    }

    fn attach_node(&mut self, id: NodeId) {
        let root_array = self.top_is_root_array();
        match self.stack.last_mut() {
            None => self.root = Some(id),
            Some(Frame::Array { .. }) => {
                self.open_items.push(id);
                if root_array {
                    let complete = self.cuts == self.child_cuts;
                    self.children.push(Child {
                        span: self.child_start..self.pos,
                        complete,
                    });
                }
            }
            Some(Frame::Object { key, .. }) => {
                if let Some(key) = key.take() {
                    self.open_members.push((key, id));
                }
            }
        }
    }

    /// Skips a container nested beyond [`MAX_PARSE_NESTING`] up to its matching closer, without building it.
    fn skip_too_deep(&mut self) {
        let start = self.pos;
        let mut depth = 0usize;
        let mut in_string = false;
        while self.pos < self.b.len() {
            let b = self.b[self.pos];
            self.pos += 1;
            if in_string {
                match b {
                    b'\\' => self.pos += 1,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        self.pos = self.pos.min(self.b.len());
        if depth > 0 {
            self.cuts += 1;
        }
        self.repair(RepairKind::TooDeep, start..self.pos);
        // Nothing is attached for the skipped value; the containers around it stay open.
        self.cuts += 1;
    }

    /// Reads a scalar: a string, number, literal or unquoted word. Returns `None` after skipping a
    /// character that starts no value.
    fn scalar(&mut self, context: Context) -> Option<Node<'a>> {
        let c = self.char_at(self.pos)?;
        if is_quote(c) || (c == '\\' && self.b.get(self.pos + 1) == Some(&b'"')) {
            return Some(Node::String(self.string(context)));
        }
        let digit_follows = || {
            self.b
                .get(self.pos + 1)
                .is_some_and(|&b| b.is_ascii_digit() || b == b'.')
        };
        if c.is_ascii_digit() || c == '-' || (matches!(c, '.' | '+') && digit_follows()) {
            if let Some(number) = self.number() {
                return Some(number);
            }
        }
        self.unquoted()
    }

    fn number(&mut self) -> Option<Node<'a>> {
        let start = self.pos;
        let len = self.b[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        let end = start + len;
        match self.b.get(end) {
            None => {}
            Some(&b)
                if is_space(b)
                    || matches!(
                        b,
                        b',' | b'}' | b']' | b'{' | b'[' | b'/' | b')' | b'"' | b'\'' | b'#'
                    ) => {}
            Some(_) => return None,
        }
        let token = &self.text[start..end];
        let (number, fixed) = read_number(token)?;
        self.pos = end;
        if fixed {
            self.repair(RepairKind::NumberFixed, start..end);
        }
        if end == self.b.len() {
            // A number the text ends on may be cut (`8` of `80`).
            self.cuts += 1;
        }
        Some(Node::Number(number))
    }

    /// An unquoted word: a literal, or a string up to the next delimiter on the line.
    fn unquoted(&mut self) -> Option<Node<'a>> {
        let start = self.pos;
        let mut p = start;
        while p < self.b.len() {
            let b = self.b[p];
            if matches!(b, b',' | b'}' | b']' | b'\n' | b'\r' | b'"' | b'{' | b'[') {
                break;
            }
            if b == b'/' && self.b.get(p + 1) == Some(&b'*') {
                break;
            }
            if b == b'/' && self.b.get(p + 1) == Some(&b'/') && p > start && is_space(self.b[p - 1])
            {
                break;
            }
            if b == b')' && self.stack.is_empty() {
                break;
            }
            p += 1;
        }
        let word = self.text[start..p].trim_end_matches([' ', '\t']);
        if word.is_empty() {
            // Punctuation that starts no value: the whole run is one repair (at the root, closers
            // too), so that a megabyte of commas costs one repair, not a million.
            let root = self.stack.is_empty();
            let run = self.b[start..]
                .iter()
                .take_while(|&&c| {
                    matches!(c, b',' | b':' | b';' | b'(' | b')')
                        || (root && matches!(c, b'}' | b']'))
                })
                .count();
            let len = if run > 0 {
                run
            } else {
                self.char_at(start).map_or(1, char::len_utf8)
            };
            self.pos = start + len;
            self.repair(RepairKind::Garbage, start..start + len);
            return None;
        }
        let end = start + word.len();
        self.pos = end;
        if p == self.b.len() {
            self.cuts += 1;
        }
        let value = match word {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            "null" => Node::Null,
            "True" | "False" | "None" => {
                self.repair(RepairKind::PythonLiteral, start..end);
                match word {
                    "True" => Node::Bool(true),
                    "False" => Node::Bool(false),
                    _ => Node::Null,
                }
            }
            "undefined" | "NaN" | "Infinity" | "-Infinity" => {
                self.repair(RepairKind::JsLiteral, start..end);
                Node::Null
            }
            _ => {
                self.repair(RepairKind::UnquotedString, start..end);
                Node::String(Text::Borrowed(word))
            }
        };
        // `{"a":foo","b":1}`: a stray quote right after an unquoted word.
        if self.peek() == Some(b'"')
            && matches!(
                self.next_significant(self.pos + 1),
                None | Some(b',' | b'}' | b']' | b':')
            )
        {
            self.repair(RepairKind::Garbage, self.pos..self.pos + 1);
            self.pos += 1;
        }
        Some(value)
    }

    /// Reads a string at `self.pos`, whose first character is a quote (or `\"`).
    fn string(&mut self, context: Context) -> Text<'a> {
        let start = self.pos;
        let escaped_quotes = self.b[start] == b'\\';
        let open = if escaped_quotes {
            '"'
        } else {
            self.char_at(start).unwrap_or('"')
        };
        match open {
            '\'' => self.repair(RepairKind::SingleQuotes, start..start + 1),
            '"' if escaped_quotes => self.repair(RepairKind::EscapedQuotes, start..start + 2),
            '"' => {}
            _ => self.repair(RepairKind::SmartQuotes, start..start + open.len_utf8()),
        }
        let p = start + if escaped_quotes { 2 } else { open.len_utf8() };
        // Most strings end at their first quote with nothing to unescape: they borrow the text.
        if !escaped_quotes && matches!(open, '"' | '\'' | '`') {
            let quote = open as u8;
            let run = self.b[p..]
                .iter()
                .position(|&b| b == b'\\' || b < 0x20 || b == quote);
            if let Some(end) = run.map(|run| p + run) {
                if self.b[end] == quote && self.is_closing(end + 1, context) {
                    self.pos = end + 1;
                    return Text::Borrowed(&self.text[p..end]);
                }
            }
        }
        let mut out = std::mem::take(&mut self.buffer);
        out.clear();
        self.read_repaired_string(start, p, open, escaped_quotes, context, &mut out);
        let text = self.document.keep(&out);
        self.buffer = out;
        text
    }

    /// Reads the rest of a string opened by `open` at `start`, from `p`, into `out`: the slow path,
    /// for strings with escapes, control characters, inner quotes or no proper end.
    fn read_repaired_string(
        &mut self,
        start: usize,
        mut p: usize,
        open: char,
        escaped_quotes: bool,
        context: Context,
        out: &mut String,
    ) {
        let (close_a, close_b) = match open {
            '\'' => ('\'', '\''),
            '“' | '”' => ('”', '"'),
            '‘' | '’' => ('’', '\''),
            '`' => ('`', '`'),
            _ => ('"', '"'),
        };
        // Only the bytes that may close this kind of string interrupt the fast copy below.
        let stops: fn(u8) -> bool = match open {
            '"' => |b| b == b'"',
            '\'' => |b| b == b'\'',
            '`' => |b| b == b'`',
            _ => |b| b == b'"' || b == b'\'' || b >= 0x80,
        };
        // The last comma inside the string, as (byte in text, length of `out` before it), for
        // `"b,"c": 1` where a missing closing quote is found only at the colon.
        let mut last_comma: Option<(usize, usize)> = None;
        // Repeated inner quotes and control characters in one string extend one repair each, so a
        // string full of them costs one repair, not one per character.
        let mut quote_repair: Option<usize> = None;
        let mut control_repair: Option<usize> = None;
        loop {
            // Copy the plain run in one go: this is the hot loop on valid input.
            let run = self.b[p..]
                .iter()
                .position(|&b| b == b'\\' || b < 0x20 || b == b',' || stops(b))
                .unwrap_or(self.b.len() - p);
            out.push_str(&self.text[p..p + run]);
            p += run;
            let Some(c) = self.text[p..].chars().next() else {
                return self.unclosed_string(start, out);
            };
            if c == '\\' {
                if escaped_quotes && self.b.get(p + 1) == Some(&b'"') {
                    if self.is_closing(p + 2, context) {
                        self.pos = p + 2;
                        return;
                    }
                    out.push('"');
                    p += 2;
                    continue;
                }
                if escaped_quotes && self.b[p + 1..].starts_with(b"\\\"") {
                    out.push('"');
                    p += 3;
                    continue;
                }
                p = self.escape(p, out);
                continue;
            }
            if (c == close_a || c == close_b) && !(escaped_quotes && c == '"') {
                let after = p + c.len_utf8();
                if self.is_closing(after, context) {
                    self.pos = after;
                    return;
                }
                if context == Context::Value && self.next_significant(after) == Some(b':') {
                    if let Some((comma_at, out_len)) = last_comma {
                        // `"b,"c":"d"`: the string ended at its last comma and `"c"` is the next key.
                        out.truncate(out_len);
                        // Quotes kept inside the string after the comma were not inside it after all.
                        while self.repairs.last().is_some_and(|r| r.span.start > comma_at) {
                            self.repairs.pop();
                        }
                        self.repair(RepairKind::UnclosedString, start..comma_at);
                        self.pos = comma_at;
                        return;
                    }
                    self.pos = after;
                    return;
                }
                self.extend_repair(&mut quote_repair, RepairKind::UnescapedQuote, p..after);
                out.push(c);
                p = after;
                continue;
            }
            if c == ',' {
                last_comma = Some((p, out.len()));
            }
            if (c as u32) < 0x20 {
                self.extend_repair(&mut control_repair, RepairKind::ControlCharacter, p..p + 1);
            }
            out.push(c);
            p += c.len_utf8();
        }
    }

    /// Whether a quote whose next byte is `after` closes the string.
    fn is_closing(&self, after: usize, context: Context) -> bool {
        let mut p = after;
        let mut newline = false;
        while p < self.b.len() && matches!(self.b[p], b' ' | b'\t' | b'\r' | b'\n') {
            newline |= self.b[p] == b'\n';
            p += 1;
        }
        let Some(&next) = self.b.get(p) else {
            return true;
        };
        if newline {
            return true;
        }
        match context {
            Context::Key => !(next.is_ascii_alphanumeric() || next == b'_' || next >= 0x80),
            Context::Value => match next {
                b',' | b'}' | b']' | b'"' | b'/' | b'#' | b')' | b';' | b'{' | b'[' => true,
                // `"'` inside a value is more often a quote within text than a new string.
                b'\'' => self.stack.is_empty(),
                b':' => false,
                _ if next.is_ascii_digit() => true,
                _ => self.char_at(p).is_some_and(|c| c == '“' || c == '‘'),
            },
        }
    }

    /// Reads the escape at `p` (a backslash) into `out`; returns the byte after it.
    fn escape(&mut self, p: usize, out: &mut String) -> usize {
        let Some(c) = self.char_at(p + 1) else {
            // A backslash the text ends on: nothing to escape.
            return p + 1;
        };
        let simple = match c {
            '"' => Some('"'),
            '\\' => Some('\\'),
            '/' => Some('/'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            return p + 2;
        }
        if c == 'u' {
            if let Some(unit) = hex4(&self.b[p + 2..]) {
                // A high surrogate followed by a low one is one character.
                if (0xD800..0xDC00).contains(&unit) && self.b[p + 6..].starts_with(b"\\u") {
                    if let Some(low) =
                        hex4(&self.b[p + 8..]).filter(|low| (0xDC00..0xE000).contains(low))
                    {
                        let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        return p + 12;
                    }
                }
                match char::from_u32(unit) {
                    Some(ch) => out.push(ch),
                    None => {
                        self.repair(RepairKind::LoneSurrogate, p..p + 6);
                        out.push('\u{fffd}');
                    }
                }
                return p + 6;
            }
        }
        self.repair(RepairKind::InvalidEscape, p..p + 1 + c.len_utf8());
        out.push(c);
        p + 1 + c.len_utf8()
    }

    /// The text ended inside a string: trailing closers and spaces are taken as structure, the rest
    /// is the string, and the string counts as cut.
    fn unclosed_string(&mut self, start: usize, out: &mut String) {
        let kept = out
            .trim_end_matches(|c: char| c.is_whitespace() || c == ']' || c == '}')
            .len();
        if out[kept..].contains([']', '}']) {
            out.truncate(kept);
        }
        self.pos = self.b.len();
        self.cuts += 1;
        self.repair(RepairKind::UnclosedString, start..self.pos);
    }
}

fn hex4(bytes: &[u8]) -> Option<u32> {
    let digits = bytes.get(..4)?;
    let text = std::str::from_utf8(digits).ok()?;
    if !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

/// Reads a number token, fixing what JSON's grammar refuses; returns whether it was fixed.
fn read_number(token: &str) -> Option<(Number, bool)> {
    if is_json_number(token) {
        // Integers first, so that `-0` stays the integer 0 rather than the float -0.0.
        if let Ok(int) = token.parse::<i64>() {
            return Some((Number::from(int), false));
        }
        if let Ok(number) = token.parse::<Number>() {
            return Some((number, false));
        }
    }
    // JavaScript's and JSON5's explicit plus sign (`"value": +5`, a delta as models write it).
    if let Some(unsigned) = token.strip_prefix('+') {
        if unsigned.starts_with(['+', '-']) {
            return None;
        }
        return read_number(unsigned).map(|(number, _)| (number, true));
    }
    let mut fixed = String::with_capacity(token.len() + 2);
    let (sign, body) = token
        .strip_prefix('-')
        .map_or(("", token), |rest| ("-", rest));
    fixed.push_str(sign);
    if body.starts_with('.') {
        fixed.push('0');
    }
    let body = body.trim_end_matches(['e', 'E', '+', '-']);
    fixed.push_str(body);
    if fixed.ends_with('.') {
        fixed.push('0');
    }
    if !is_json_number(&fixed) {
        return None;
    }
    fixed.parse::<Number>().ok().map(|number| (number, true))
}

/// Whether `token` follows JSON's number grammar exactly.
fn is_json_number(token: &str) -> bool {
    let b = token.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let from = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - from
    };
    let int_start = i;
    let int_len = digits(&mut i);
    if int_len == 0 || (int_len > 1 && b[int_start] == b'0') {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// The first index of `needle` in `haystack`. Time: O(n).
pub(crate) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repaired(text: &str) -> Json {
        repair_json(text).map(|doc| doc.value).unwrap_or(Json::Null)
    }

    #[test]
    fn all_lists_every_kind_in_declaration_order() {
        // The extractor counts repairs in an array indexed by `kind as usize`.
        for (index, kind) in RepairKind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, index, "{kind:?}");
        }
    }

    #[test]
    fn valid_json_is_read_without_repairs() {
        let parsed = parse_value(r#" {"a": [1, 2.5, "x\n\u00e9"], "b": null} "#, 0);
        assert_eq!(
            parsed.to_json(),
            Some(json!({"a": [1, 2.5, "x\n\u{e9}"], "b": null}))
        );
        assert!(parsed.repairs.is_empty());
        assert!(parsed.complete);
        assert_eq!(parsed.span, 1..40);
    }

    #[test]
    fn common_defects_are_repaired_and_reported() {
        let parsed = parse_value("{'a': True, b: None, // note\n \"c\": [1 2,],}", 0);
        assert_eq!(
            parsed.to_json(),
            Some(json!({"a": true, "b": null, "c": [1, 2]}))
        );
        let kinds: Vec<&str> = parsed.repairs.iter().map(|r| r.kind.code()).collect();
        assert_eq!(
            kinds,
            [
                "single_quotes",
                "python_literal",
                "unquoted_key",
                "python_literal",
                "comment",
                "missing_comma",
                "trailing_comma",
                "trailing_comma"
            ]
        );
        assert!(parsed.complete);
    }

    #[test]
    fn a_lone_surrogate_is_named_for_what_it_is() {
        let parsed = parse_value(r#"["\ud800", "\udc00x", "\ud83d\ude00", "\q"]"#, 0);
        assert_eq!(
            parsed.to_json(),
            Some(json!(["\u{fffd}", "\u{fffd}x", "\u{1f600}", "q"]))
        );
        let kinds: Vec<(&str, std::ops::Range<usize>)> = parsed
            .repairs
            .iter()
            .map(|r| (r.kind.code(), r.span.clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("lone_surrogate", 2..8),
                ("lone_surrogate", 12..18),
                ("invalid_escape", 39..41)
            ]
        );
        assert_eq!(
            RepairKind::LoneSurrogate.describe(),
            "a \\u escape names half of a UTF-16 surrogate pair, which is no character; used U+FFFD"
        );
    }

    #[test]
    fn truncation_marks_the_cut_children() {
        let text = r#"[{"op": "assign", "value": 1}, {"op": "assign", "value": 8"#;
        let parsed = parse_value(text, 0);
        assert!(!parsed.complete);
        assert_eq!(parsed.children.len(), 2);
        assert!(parsed.children[0].complete);
        assert_eq!(
            &text[parsed.children[0].span.clone()],
            r#"{"op": "assign", "value": 1}"#
        );
        assert!(!parsed.children[1].complete);
        let cut_string = parse_value(r#"[{"a": "full}"#, 0);
        assert_eq!(cut_string.to_json(), Some(json!([{"a": "full"}])));
        assert!(!cut_string.children[0].complete);
    }

    #[test]
    fn quotes_inside_strings() {
        assert_eq!(
            repaired(r#"{"key": "apple "bee" carrot"}"#),
            json!({"key": "apple \"bee\" carrot"})
        );
        assert_eq!(repaired(r#"{"a":"b,"c":"d"}"#), json!({"a": "b", "c": "d"}));
        assert_eq!(repaired(r#"{“a”:“b”}"#), json!({"a": "b"}));
        assert_eq!(
            repaired(r#"{\"a\": \"b \\"c\\"\"}"#),
            json!({"a": "b \"c\""})
        );
    }

    #[test]
    fn closers_missing_or_stray() {
        assert_eq!(
            repaired(r#"{"a":[{"b":1], "c": 2}"#),
            json!({"a": [{"b": 1}], "c": 2})
        );
        assert_eq!(repaired("[1,[}]"), json!([1, []]));
        assert_eq!(repaired(r#"[{"i":1{"i":2}]"#), json!([{"i": 1}, {"i": 2}]));
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let text = "[".repeat(100_000);
        let parsed = parse_value(&text, 0);
        assert!(!parsed.complete);
        assert!(parsed.repairs.iter().any(|r| r.kind == RepairKind::TooDeep));
        let closed = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let parsed = parse_value(&closed, 0);
        assert_eq!(parsed.span.end, closed.len());
    }

    #[test]
    fn numbers_outside_the_grammar() {
        assert_eq!(
            repaired("[.25, 2., 2e, -0, 007, 1.1.1, 10-20]"),
            json!([0.25, 2.0, 2, 0, "007", "1.1.1", "10-20"])
        );
        assert_eq!(
            repaired("[+5, +2.5, +.5, +-1, ++1, +, +x]"),
            json!([5, 2.5, 0.5, "+-1", "++1", "+", "+x"])
        );
        assert_eq!(
            repaired("{\"big\": 12345678901234567890}"),
            json!({"big": 12345678901234567890u64})
        );
    }
}
