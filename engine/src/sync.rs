//! Sync: a chat, as its front end shows it, mapped onto the history tree by content.
//!
//! A chat path is the list of the model's replies as shown, oldest first. Each reply is named by its
//! content key, the SHA-256 of its UTF-8 text ([`ContentKey`]), and every step a sync makes carries the
//! key of the reply it was made from. Walking from the root, reply `i` is the child of reply `i - 1`'s
//! step with the same key (`History::child_by_key`, O(1)); the first reply without one, and every reply
//! after it, is read and applied there, each on the step of the one before. A reply the engine refuses
//! still makes a step: it changes nothing and keeps the refusal's feedback, so the mapping stays total
//! and the reply is never applied again. Syncing the same path twice changes nothing.
//!
//! A card update (`Store::take_card`) is no reply: the walk goes through the latest one made on a
//! reply's step (or on the root) before it looks for the next reply, and ends below it, so that the
//! replies after a card update build on the new card and a chat that shows nothing newer ends on it.
//!
//! The walk starts below the replies that trimming folded into the root (`History::root_keys`): the
//! path must begin with them, since the states before them are gone. A step trimmed off a branch no
//! longer resolves by its key, and a later sync applies its reply again; keyed draws
//! ([`Random::for_reply`](crate::Random::for_reply)) make that give the same result.
//!
//! Reading a reply's text into a batch is the host's: the engine never reads text. It asks a
//! [`ReplyReader`], which the translators' extractor implements in the server and the command.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::error::{BatchError, ErrorKind};
use crate::history::{StepId, TimelineError};
use crate::instruction::Batch;
use crate::store::{ApplyOptions, Commit, Outcome, Resolve, Store};
use crate::value::Value;

/// A reply's content key: the SHA-256 of its UTF-8 text, written as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentKey([u8; 32]);

impl ContentKey {
    /// The key of a reply's text. Time: O(text).
    pub fn of_text(text: &str) -> ContentKey {
        ContentKey(Sha256::digest(text.as_bytes()).into())
    }

    /// Its 32 bytes.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// The key under which a card update is found among its parent's children
/// (`History::card_update_on`): no reply's text hashes to 32 zero bytes.
pub(crate) const CARD_UPDATE: ContentKey = ContentKey([0; 32]);

/// Why a text is not a content key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not 64 characters long.
    #[error("a content key is 64 hex digits (a SHA-256); this one has {0} characters")]
    Length(usize),
    /// A character that is not a hex digit.
    #[error("a content key is 64 hex digits (a SHA-256); character {at} is not one")]
    NotHex {
        /// Its index, from 0.
        at: usize,
    },
}

impl FromStr for ContentKey {
    type Err = KeyError;

    /// Reads 64 hex digits (either case).
    fn from_str(text: &str) -> Result<ContentKey, KeyError> {
        let digits = text.as_bytes();
        if digits.len() != 64 {
            return Err(KeyError::Length(text.chars().count()));
        }
        // Every digit is looked up and the first bad one sought only when there is one: a sync
        // path carries a key for every reply the chat shows.
        let mut bytes = [0u8; 32];
        let mut bad = 0u8;
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let (high, low) = (HEX_DIGIT[pair[0] as usize], HEX_DIGIT[pair[1] as usize]);
            bad |= high | low;
            *byte = high << 4 | low;
        }
        if bad & NOT_HEX != 0 {
            let at = digits
                .iter()
                .position(|&digit| HEX_DIGIT[digit as usize] == NOT_HEX)
                .unwrap_or(0);
            return Err(KeyError::NotHex { at });
        }
        Ok(ContentKey(bytes))
    }
}

/// What [`HEX_DIGIT`] holds for a byte that is no hex digit: no digit's value has its bits.
const NOT_HEX: u8 = 0xF0;

/// Each byte's value as a hex digit (either case), else [`NOT_HEX`].
const HEX_DIGIT: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut digit = 0;
    while digit < 16 {
        let value = digit as u8;
        table[b"0123456789abcdef"[digit] as usize] = value;
        table[b"0123456789ABCDEF"[digit] as usize] = value;
        digit += 1;
    }
    table
};

impl fmt::Display for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for ContentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentKey({self})")
    }
}

impl Serialize for ContentKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ContentKey, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// One reply of a chat path: its text, or only its key when the caller trusts the game to know it.
#[derive(Clone, Copy, Debug)]
pub enum SyncReply<'a> {
    /// The reply's text.
    Text(&'a str),
    /// The reply's key alone: enough when a step made from it lies at its place, else its text is asked
    /// for ([`SyncError::NeedText`]).
    Key(ContentKey),
}

impl SyncReply<'_> {
    fn key(&self) -> ContentKey {
        match self {
            SyncReply::Text(text) => ContentKey::of_text(text),
            SyncReply::Key(key) => *key,
        }
    }
}

/// One reply of a chat path as JSON gives it (`{"text": T}` or `{"sha256": H}`), owned.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatReply {
    /// `{"text": T}`.
    Text(String),
    /// `{"sha256": H}`.
    Key(ContentKey),
}

/// Why an item of a chat path is not a reply: its index and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("replies[{index}]: {problem}")]
pub struct ChatReplyError {
    /// The item's index in the path.
    pub index: usize,
    /// What is wrong with it.
    pub problem: String,
}

impl ChatReply {
    /// As [`Store::sync`] takes it.
    pub fn as_sync(&self) -> SyncReply<'_> {
        match self {
            ChatReply::Text(text) => SyncReply::Text(text),
            ChatReply::Key(key) => SyncReply::Key(*key),
        }
    }

    /// Reads a chat path, as serde's `deserialize_with` takes it: a list whose items are
    /// `{"text": T}`, `{"sha256": H}` (64 hex digits), or `H` alone as a string (the compact form of a
    /// key). The replies, or the first item that is none of these, named with what is wrong; the
    /// outer error is the JSON's own (not a list, or not JSON). A bare key is read as the JSON is
    /// parsed, without a JSON value between: a path of 1,000 known replies is 1,000 of them.
    /// Time: O(items).
    pub fn deserialize_path<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Result<Vec<ChatReply>, ChatReplyError>, D::Error> {
        deserializer.deserialize_seq(PathVisitor)
    }

    /// One item of a chat path that is not a string (a string is a bare key, [`ChatReply::read_key`]),
    /// or what is wrong with it.
    fn read(item: serde_json::Value) -> Result<ChatReply, String> {
        use serde_json::Value as Json;
        let mut members = match item {
            Json::Object(members) => members,
            _ => {
                return Err(
                    r#"a reply is {"text": "..."}, {"sha256": "..."} or the key alone as a string"#
                        .to_owned(),
                );
            }
        };
        if let Some(name) = members
            .keys()
            .find(|name| !matches!(name.as_str(), "text" | "sha256"))
        {
            return Err(format!(
                "unknown member `{name}`; a reply has `text` or `sha256`"
            ));
        }
        match (members.remove("text"), members.remove("sha256")) {
            (Some(Json::String(text)), None) => Ok(ChatReply::Text(text)),
            (None, Some(Json::String(key))) => key
                .parse()
                .map(ChatReply::Key)
                .map_err(|error| format!("`sha256`: {error}")),
            (Some(_), Some(_)) => {
                Err("give `text` or `sha256`, not both (the key of a text is known)".to_owned())
            }
            (None, None) => {
                Err("a reply needs `text` (what the model wrote) or `sha256` (its key)".to_owned())
            }
            _ => Err("`text` and `sha256` are strings".to_owned()),
        }
    }

    /// A reply given as a bare string: its key.
    fn read_key(key: &str) -> Result<ChatReply, String> {
        key.parse()
            .map(ChatReply::Key)
            .map_err(|error| format!("a reply given as a bare string is its key: {error}"))
    }
}

/// Reads a chat path's items one by one, keeping the first that is no reply (and reading on, so
/// that the JSON after the list is read as before).
struct PathVisitor;

impl<'de> Visitor<'de> for PathVisitor {
    type Value = Result<Vec<ChatReply>, ChatReplyError>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of replies")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Self::Value, A::Error> {
        let mut replies = Vec::with_capacity(items.size_hint().unwrap_or(0).min(4_096));
        let mut first_bad = None;
        let mut index = 0;
        while let Some(PathItem(item)) = items.next_element()? {
            match item {
                Ok(reply) => replies.push(reply),
                Err(problem) => {
                    first_bad.get_or_insert(ChatReplyError { index, problem });
                }
            }
            index += 1;
        }
        Ok(first_bad.map_or(Ok(replies), Err))
    }
}

/// One item of a chat path: a bare key read where it stands, anything else as a JSON value first
/// (which is how numbers come through whatever number form the JSON reader keeps).
struct PathItem(Result<ChatReply, String>);

impl<'de> Deserialize<'de> for PathItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PathItem, D::Error> {
        deserializer.deserialize_any(PathItemVisitor)
    }
}

struct PathItemVisitor;

impl PathItemVisitor {
    fn json<E>(value: serde_json::Value) -> Result<PathItem, E> {
        Ok(PathItem(ChatReply::read(value)))
    }
}

impl<'de> Visitor<'de> for PathItemVisitor {
    type Value = PathItem;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a reply")
    }

    fn visit_str<E>(self, key: &str) -> Result<PathItem, E> {
        Ok(PathItem(ChatReply::read_key(key)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PathItem, A::Error> {
        let item = serde_json::Value::deserialize(MapAccessDeserializer::new(map))?;
        PathItemVisitor::json(item)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, items: A) -> Result<PathItem, A::Error> {
        let item = serde_json::Value::deserialize(SeqAccessDeserializer::new(items))?;
        PathItemVisitor::json(item)
    }

    fn visit_bool<E>(self, value: bool) -> Result<PathItem, E> {
        PathItemVisitor::json(value.into())
    }

    fn visit_i64<E>(self, value: i64) -> Result<PathItem, E> {
        PathItemVisitor::json(value.into())
    }

    fn visit_u64<E>(self, value: u64) -> Result<PathItem, E> {
        PathItemVisitor::json(value.into())
    }

    fn visit_f64<E>(self, value: f64) -> Result<PathItem, E> {
        PathItemVisitor::json(value.into())
    }

    fn visit_unit<E>(self) -> Result<PathItem, E> {
        PathItemVisitor::json(serde_json::Value::Null)
    }

    fn visit_none<E>(self) -> Result<PathItem, E> {
        PathItemVisitor::json(serde_json::Value::Null)
    }
}

/// How a host reads a reply's text into a batch.
pub trait ReplyReader {
    /// The batch a reply's text holds, read against `state` (the state it will run on), with the
    /// options it must run under (policies, spans); or, when the text holds no batch that can run
    /// (invalid instructions), the feedback that says why, for the model.
    fn read(&mut self, text: &str, state: &Value) -> Result<(Batch, ApplyOptions), String>;

    /// For the reply read last, what decides its commands again one by one, when the store's profile
    /// applies commands so (see [`Store::apply_resolved`]); `None` otherwise.
    fn resolver(&mut self) -> Option<&mut dyn Resolve> {
        None
    }

    /// The feedback for the reply read last, whose batch the engine refused with `errors`.
    fn refused(&mut self, errors: &[BatchError]) -> String;
}

/// Options of one sync.
#[derive(Clone, Debug)]
pub struct SyncOptions {
    /// Make the last reply's step current (the default). `false` only reads there: the state a
    /// regenerated reply builds on is its parent's, which stays off the current line.
    pub move_to_end: bool,
    /// When the sync's time is up: each batch runs under it; see [`Synced::stopped`].
    pub deadline: Option<Instant>,
}

impl Default for SyncOptions {
    fn default() -> SyncOptions {
        SyncOptions {
            move_to_end: true,
            deadline: None,
        }
    }
}

/// A reply that a sync applied: the step it made.
#[derive(Clone, Debug)]
pub struct AppliedReply {
    /// Its index in the path.
    pub index: usize,
    /// Its key.
    pub key: ContentKey,
    /// The commit (its step is always `Some`): for a refused reply an empty one.
    pub commit: Commit,
    /// For a refused reply, the feedback that says why.
    pub refusal: Option<Arc<str>>,
}

impl AppliedReply {
    /// The step it made.
    pub fn step(&self) -> StepId {
        self.commit.step.unwrap_or(self.commit.parent)
    }
}

/// What a sync did.
#[derive(Clone, Debug)]
pub struct Synced {
    /// The last reply's step (the root for an empty path).
    pub end: StepId,
    /// How many replies already had their step.
    pub reused: usize,
    /// The replies applied, in order.
    pub applied: Vec<AppliedReply>,
    /// Set when a batch ran past the deadline or the history could not be rebuilt: the sync stopped
    /// there, before that reply. The steps made before it stay (they are right, and a retry reuses
    /// them), and the current step is back where it was.
    pub stopped: Option<Vec<BatchError>>,
}

/// Why a sync changed nothing.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SyncError {
    /// These replies (indices in the path) were given by key alone and no step at their place has it.
    #[error(
        "{} given by key alone match{} no step at {} place: send {} text",
        plural(.0.len(), "reply", "replies"), if .0.len() == 1 { "es" } else { "" },
        if .0.len() == 1 { "its" } else { "their" }, if .0.len() == 1 { "its" } else { "their" }
    )]
    NeedText(Vec<usize>),
    /// The path needs more new steps than the history keeps.
    #[error(
        "the chat path has {replies} replies but the history keeps at most {max_steps} steps; \
         reply {index} and after would trim the path's own steps"
    )]
    TooLong {
        /// The path's length.
        replies: usize,
        /// The history's step bound.
        max_steps: usize,
        /// The first reply beyond it.
        index: usize,
    },
    /// The store keeps no history, so it has no steps to find replies by.
    #[error("this game keeps no history (max_steps is 0), so a chat cannot be synced to it")]
    HistoryOff,
    /// The path differs from the replies trimming folded into the root, whose earlier states are gone.
    #[error(
        "reply {index} differs from the chat this game synced before, and the states before its \
         {kept} oldest replies were trimmed (history bound): they cannot be rebuilt"
    )]
    Trimmed {
        /// The first reply that differs (or the path's length, when it ends inside them).
        index: usize,
        /// How many replies the root holds.
        kept: usize,
    },
    /// The history could not be walked (damage).
    #[error(transparent)]
    Timeline(#[from] TimelineError),
}

impl SyncError {
    /// The machine-readable kind.
    pub fn code(&self) -> &'static str {
        match self {
            SyncError::NeedText(_) => "need_text",
            SyncError::TooLong { .. } => "path_too_long",
            SyncError::HistoryOff => "history_off",
            SyncError::Trimmed { .. } => "path_trimmed",
            SyncError::Timeline(error) => error.code(),
        }
    }
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

impl Store {
    /// Syncs a chat path (see the module docs): reuses the steps its replies already have, reads and
    /// applies the rest with `reader`, and ends on the last reply's step (or only reads there, see
    /// [`SyncOptions::move_to_end`]). Changes nothing on an error. Time: hashing the texts given, O(1)
    /// per reused reply, a checkout to the first missing reply's parent, and each applied reply's own
    /// work.
    pub fn sync(
        &mut self,
        replies: &[SyncReply<'_>],
        options: &SyncOptions,
        reader: &mut dyn ReplyReader,
    ) -> Result<Synced, SyncError> {
        let max_steps = self.history_limits().max_steps;
        if max_steps == 0 {
            return Err(SyncError::HistoryOff);
        }
        let keys: Vec<ContentKey> = replies.iter().map(SyncReply::key).collect();
        let kept = self.root_keys();
        if keys.len() < kept.len() || keys[..kept.len()] != *kept {
            let index = keys
                .iter()
                .zip(kept)
                .position(|(given, kept)| given != kept)
                .unwrap_or(keys.len().min(kept.len()));
            return Err(SyncError::Trimmed {
                index,
                kept: kept.len(),
            });
        }
        let mut at = self.through_card_updates(StepId::ROOT);
        let mut next = kept.len();
        while let Some(&key) = keys.get(next)
            && let Some(child) = self.child_by_key(at, key)
        {
            at = self.through_card_updates(child);
            next += 1;
        }
        if keys.len() - next > max_steps {
            return Err(SyncError::TooLong {
                replies: keys.len(),
                max_steps,
                index: next + max_steps,
            });
        }
        let need: Vec<usize> = (next..replies.len())
            .filter(|&index| matches!(replies[index], SyncReply::Key(_)))
            .collect();
        if !need.is_empty() {
            return Err(SyncError::NeedText(need));
        }
        let from = self.current_step();
        let mut synced = Synced {
            end: at,
            reused: next,
            applied: Vec::new(),
            stopped: None,
        };
        for (index, reply) in replies.iter().enumerate().skip(next) {
            let SyncReply::Text(text) = reply else {
                unreachable!("every reply past the reused ones has its text (checked above)");
            };
            match self.apply_reply(at, keys[index], text, options.deadline, reader) {
                Ok((commit, refusal)) => {
                    let applied = AppliedReply {
                        index,
                        key: keys[index],
                        commit,
                        refusal,
                    };
                    at = applied.step();
                    synced.applied.push(applied);
                }
                Err(errors) => {
                    synced.stopped = Some(errors);
                    break;
                }
            }
        }
        synced.end = at;
        let stay = synced.stopped.is_some() || !options.move_to_end;
        let target = if stay { from } else { at };
        // A step trimmed by the sync's own commits cannot be returned to; the game then stays where the
        // sync ended.
        if self.current_step() != target && self.checkout(target).is_err() && stay {
            self.checkout(at)?;
        }
        Ok(synced)
    }

    /// The step a walk that reached `at` goes on from: the latest card update made on it, and on
    /// that one, and so on, else `at` itself. A card update is made on the step of the reply the chat
    /// showed last; the replies after it build on the new card.
    /// Time: O(1) per card update crossed.
    fn through_card_updates(&self, mut at: StepId) -> StepId {
        while let Some(update) = self.history_card_update_on(at) {
            at = update;
        }
        at
    }

    /// Reads and applies one reply on step `at`, making a keyed step; a refused reply makes an empty
    /// step with its refusal. Errors are those that stop the sync (a deadline, damage).
    fn apply_reply(
        &mut self,
        at: StepId,
        key: ContentKey,
        text: &str,
        deadline: Option<Instant>,
        reader: &mut dyn ReplyReader,
    ) -> Result<(Commit, Option<Arc<str>>), Vec<BatchError>> {
        let state = if at == self.current_step() {
            self.state().clone()
        } else {
            self.state_at(at)
                .map_err(|error| {
                    vec![BatchError::whole_batch(
                        ErrorKind::HistoryDamaged,
                        None,
                        error.to_string(),
                    )]
                })?
                .value()
                .clone()
        };
        let read = reader.read(text, &state);
        // The batch writes the state in place where nothing else holds it: this copy must not
        // outlive the reading.
        drop(state);
        let feedback = match read {
            Ok((batch, options)) => {
                let options = ApplyOptions {
                    label: None,
                    at: Some(at.into()),
                    key: Some(key),
                    deadline,
                    ..options
                };
                match self.apply_resolved(&batch, &options, reader.resolver()) {
                    Outcome::Committed(commit) => return Ok((commit, None)),
                    Outcome::Rejected(rejection) => {
                        if rejection.errors.iter().any(|error| {
                            matches!(
                                error.kind,
                                ErrorKind::DeadlineExceeded
                                    | ErrorKind::HistoryDamaged
                                    | ErrorKind::UnknownStep
                            )
                        }) {
                            return Err(rejection.errors);
                        }
                        reader.refused(&rejection.errors)
                    }
                }
            }
            Err(feedback) => feedback,
        };
        let refusal: Arc<str> = Arc::from(feedback);
        let commit = self
            .commit_refusal(at, key, Arc::clone(&refusal))
            .map_err(|error| {
                vec![BatchError::whole_batch(
                    ErrorKind::HistoryDamaged,
                    None,
                    error.to_string(),
                )]
            })?;
        Ok((commit, Some(refusal)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_the_sha256_of_the_text_in_lowercase_hex() {
        assert_eq!(
            ContentKey::of_text("abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let upper: ContentKey = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
            .parse()
            .unwrap();
        assert_eq!(upper, ContentKey::of_text("abc"));
    }

    #[test]
    fn a_key_that_is_not_64_hex_digits_says_why() {
        assert_eq!("abc".parse::<ContentKey>(), Err(KeyError::Length(3)));
        let mut text = "0".repeat(64);
        text.replace_range(10..11, "g");
        assert_eq!(text.parse::<ContentKey>(), Err(KeyError::NotHex { at: 10 }));
        // The first bad digit is named, wherever it is and whatever follows it.
        for (at, bad) in [
            (0, "g"),
            (63, "G"),
            (31, " "),
            (40, "/"),
            (41, ":"),
            (5, "@"),
            (6, "`"),
        ] {
            let mut text = "aF".repeat(32);
            text.replace_range(at..at + 1, bad);
            text.replace_range(63..64, if at == 63 { bad } else { "x" });
            assert_eq!(
                text.parse::<ContentKey>(),
                Err(KeyError::NotHex { at }),
                "{text}"
            );
        }
        let mut text = "0".repeat(62);
        text.push('é');
        assert_eq!(text.parse::<ContentKey>(), Err(KeyError::NotHex { at: 62 }));
    }

    #[test]
    fn a_key_reads_back_from_its_text_for_every_digit() {
        for byte in 0..=255u8 {
            let key = ContentKey([byte; 32]);
            assert_eq!(key.to_string().parse::<ContentKey>(), Ok(key));
            assert_eq!(
                key.to_string().to_uppercase().parse::<ContentKey>(),
                Ok(key)
            );
        }
    }

    /// A chat path read from its text as the server reads a body, and from a JSON value as the
    /// command reads a file: the two must agree.
    fn path(text: &str) -> Result<Vec<ChatReply>, ChatReplyError> {
        let from_text = ChatReply::deserialize_path(&mut serde_json::Deserializer::from_str(text))
            .expect("a JSON list");
        let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
        let from_value = ChatReply::deserialize_path(value).expect("a JSON list");
        assert_eq!(from_text, from_value, "{text}");
        from_text
    }

    #[test]
    fn a_chat_path_reads_texts_keys_and_bare_keys() {
        let key = ContentKey::of_text("b");
        let text = format!(r#"[{{"text": "a\n\u00e9"}}, {{"sha256": "{key}"}}, "{key}"]"#);
        assert_eq!(
            path(&text),
            Ok(vec![
                ChatReply::Text("a\n\u{e9}".to_owned()),
                ChatReply::Key(key),
                ChatReply::Key(key),
            ])
        );
        assert_eq!(path("[]"), Ok(Vec::new()));
    }

    #[test]
    fn the_first_item_that_is_no_reply_is_named_by_index_with_what_is_wrong() {
        let key = ContentKey::of_text("b");
        let cases = [
            (
                r#"["abc"]"#.to_owned(),
                0,
                "a bare string is its key: a content key is 64 hex digits",
            ),
            ("[1]".to_owned(), 0, "or the key alone as a string"),
            ("[1.5e400]".to_owned(), 0, "or the key alone as a string"),
            ("[-3]".to_owned(), 0, "or the key alone as a string"),
            ("[null]".to_owned(), 0, "or the key alone as a string"),
            ("[true]".to_owned(), 0, "or the key alone as a string"),
            (
                r#"[[{"text": "a"}]]"#.to_owned(),
                0,
                "or the key alone as a string",
            ),
            (
                r#"[{"text": 1}]"#.to_owned(),
                0,
                "`text` and `sha256` are strings",
            ),
            (
                r#"[{"text": {"a": [1]}}]"#.to_owned(),
                0,
                "`text` and `sha256` are strings",
            ),
            (r#"[{}]"#.to_owned(), 0, "a reply needs `text`"),
            (r#"[{"txt": "a"}]"#.to_owned(), 0, "unknown member `txt`"),
            (
                format!(r#"[{{"text": "a", "sha256": "{key}"}}]"#),
                0,
                "not both",
            ),
            (
                r#"[{"sha256": "xyz"}]"#.to_owned(),
                0,
                "`sha256`: a content key",
            ),
            // The first bad item is named, whatever follows it.
            (
                format!(r#"["{key}", {{"text": "a"}}, 7, "nope", {{}}]"#),
                2,
                "or the key alone",
            ),
        ];
        for (text, index, says) in cases {
            let error = path(&text).expect_err(&text);
            assert_eq!(error.index, index, "{text}");
            assert!(error.problem.contains(says), "{text}: {}", error.problem);
        }
    }

    #[test]
    fn a_bad_item_leaves_the_json_after_the_path_read() {
        #[derive(Deserialize)]
        struct Body {
            #[serde(deserialize_with = "ChatReply::deserialize_path")]
            replies: Result<Vec<ChatReply>, ChatReplyError>,
            after: bool,
        }
        let body: Body =
            serde_json::from_str(r#"{"replies": [{"x": [1, {"y": 2}]}, 3, "k"], "after": true}"#)
                .unwrap();
        assert_eq!(body.replies.unwrap_err().index, 0);
        assert!(body.after);
        // What is not a list, or not JSON, is the JSON reader's error.
        assert!(
            serde_json::from_str::<Body>(r#"{"replies": {"text": "a"}, "after": true}"#).is_err()
        );
        assert!(serde_json::from_str::<Body>(r#"{"replies": ["a", "after": true}"#).is_err());
    }
}
