//! The persisted form of a game's timeline, whatever stores it: a base, then records in order.
//!
//! A game is its base ([`BaseRecord`]: the state at the root, the schema, the scripts reference, the
//! history bounds, metadata) followed by [`TimelineRecord`]s: a [`StepRecord`] for every commit (its id,
//! the step it was committed on, its label, its change log and the steps its commit trimmed), a
//! [`CheckoutRecord`] for every move of the current step (undo, redo, checkout), and a
//! [`PositionRecord`] after a compaction (the current step, the order in which the other steps were
//! visited, the next free id). Replaying the records in order on a store built from the base rebuilds
//! exactly the store that wrote them: the same tree, labels, current step, redo choices and trimming
//! order. A save file frames these records (`format.rs`); an SQL backend can keep the same records as
//! rows, one per record, with the change log as JSON. Each record's JSON form is the one in
//! `saves/FORMAT.md`. This module must not touch files or interpret instructions.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use statecraft_engine::{
    AppliedReply, Array, CardVersion, Change, Commit, ContentKey, HistoryLimits, Key, Object, Op,
    Path, Profile, StepId, StepMarks, Store, StructureSchema, Synced, TimelineError, Value,
};

/// Everything needed to rebuild a store before its first record.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaseRecord {
    /// The state at the root (the state before every retained step).
    #[serde(deserialize_with = "direct")]
    pub state: Value,
    /// The state's JSON Schema, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
    /// The scripts folder, as given at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripts: Option<String>,
    /// The history bounds the game keeps.
    pub history: HistoryLimits,
    /// Free-form metadata (creation time, front end, card name).
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// The game's seed for scripts' `ctx.random`. Version 3 files always hold it and older ones never
    /// do (their games draw with seed 0); a database row written before it has none either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The content keys of the chat replies the state already holds (synced replies whose steps
    /// trimming folded into the root), oldest first: a later sync's path must start with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub root_keys: Vec<ContentKey>,
    /// The game's profile (docs/mvu.md, "Profiles"); absent for `strict`. Only version 4 files and
    /// later hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// MVU's automatic schema of the game's card, in MVU's shape, which the `mvu` profiles enforce.
    /// Only version 4 files and later hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_schema: Option<serde_json::Value>,
    /// The fingerprint of the game's card (the SHA-256 of its `[InitVar]` text or statecraft
    /// settings, docs/mvu.md "Card updates"), by which a front end notices that the card changed.
    /// Only version 5 files and later hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_fingerprint: Option<String>,
    /// The SillyTavern macros the game was made with (`user`, `char`), which every later reply's
    /// commands are read with. Only version 5 files and later hold them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub macros: BTreeMap<String, String>,
}

impl BaseRecord {
    /// The profile the base names, `strict` when none.
    pub fn profile(&self) -> Profile {
        self.profile.unwrap_or_default()
    }

    /// The version of the card at the root: the automatic schema compiled, and the fingerprint.
    pub fn card(&self) -> Result<CardVersion, statecraft_engine::SchemaError> {
        CardRecord {
            fingerprint: self.card_fingerprint.clone(),
            automatic_schema: self.automatic_schema.clone(),
        }
        .version()
    }

    /// Sets the root's card from a version of it.
    pub fn set_card(&mut self, card: &CardVersion) {
        let record = CardRecord::of(card);
        self.card_fingerprint = record.fingerprint;
        self.automatic_schema = record.automatic_schema;
    }
}

/// A version of a game's card as a record keeps it: its fingerprint and MVU's automatic schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardRecord {
    /// The card's fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// MVU's automatic schema of the card, in MVU's shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automatic_schema: Option<serde_json::Value>,
}

impl CardRecord {
    /// What a record keeps of a card version.
    pub fn of(card: &CardVersion) -> CardRecord {
        CardRecord {
            fingerprint: card.fingerprint.clone(),
            automatic_schema: card.structure.as_ref().map(|s| s.source().clone()),
        }
    }

    /// The card version, its automatic schema compiled.
    pub fn version(self) -> Result<CardVersion, statecraft_engine::SchemaError> {
        Ok(CardVersion {
            structure: self
                .automatic_schema
                .map(StructureSchema::new)
                .transpose()?,
            fingerprint: self.fingerprint,
        })
    }
}

/// One record after the base. Externally tagged in JSON (`{"step": {...}}`), so that reading never
/// buffers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum TimelineRecord {
    /// A commit.
    Step(StepRecord),
    /// A move of the current step.
    Checkout(CheckoutRecord),
    /// Where a compacted timeline stands.
    Position(PositionRecord),
}

/// A committed step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    /// Its id.
    pub id: StepId,
    /// The step it was committed on (0 for the root).
    pub parent: StepId,
    /// Its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The content key of the chat reply a sync made it from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<ContentKey>,
    /// Why that reply was refused (the step changes nothing): the feedback for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Its change log, in order.
    #[serde(with = "change_log")]
    pub changes: Arc<[Change]>,
    /// The new version of the card it took, when it is a card update. Only version 5 files and
    /// later hold it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CardRecord>,
    /// The steps its commit trimmed, in the order trimmed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trimmed: Vec<StepId>,
}

/// A move of the current step: an undo, a redo or a checkout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckoutRecord {
    /// The step that became current (0 for the root).
    pub to: StepId,
}

/// Where a compacted timeline stands once its steps are recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PositionRecord {
    /// The current step.
    pub current: StepId,
    /// The steps off the current line, least recently visited first (redo and trimming follow it).
    pub recency: Vec<StepId>,
    /// The smallest id never given, so that ids of trimmed steps are not given again.
    pub next_id: StepId,
}

impl StepRecord {
    /// What to record for a commit, or `None` if it made no step.
    pub fn of_commit(commit: &Commit, label: Option<&str>) -> Option<StepRecord> {
        Some(StepRecord {
            id: commit.step?,
            parent: commit.parent,
            label: label.map(str::to_owned),
            key: None,
            refusal: None,
            changes: Arc::clone(&commit.changes),
            card: None,
            trimmed: commit.trimmed.iter().map(|step| step.id).collect(),
        })
    }

    /// What to record for a card update's commit (`Store::take_card`), or `None` if it made no step
    /// (history off).
    pub fn of_card_update(
        commit: &Commit,
        label: Option<&str>,
        card: &CardVersion,
    ) -> Option<StepRecord> {
        let mut record = StepRecord::of_commit(commit, label)?;
        record.card = Some(CardRecord::of(card));
        Some(record)
    }

    /// What to record for a reply a sync applied.
    pub fn of_reply(reply: &AppliedReply) -> StepRecord {
        StepRecord {
            id: reply.step(),
            parent: reply.commit.parent,
            label: None,
            key: Some(reply.key),
            refusal: reply.refusal.as_deref().map(str::to_owned),
            changes: Arc::clone(&reply.commit.changes),
            card: None,
            trimmed: reply.commit.trimmed.iter().map(|step| step.id).collect(),
        }
    }
}

impl TimelineRecord {
    /// Replays this record on a store built from the base and the records before it, as the game that
    /// wrote it did: a step is committed on its parent with its id, then its trims are made; a checkout
    /// moves; a position moves and restores the visit order. An error means the records were not made
    /// from this store (damage); the store may then be left at any retained step.
    /// Time: that of the checkout, plus the step's changes.
    pub fn replay(&self, store: &mut Store) -> Result<(), TimelineError> {
        match self {
            TimelineRecord::Step(step) => {
                let card = match &step.card {
                    Some(card) => Some(Arc::new(card.clone().version().map_err(|error| {
                        TimelineError::UnusableCard {
                            step: step.id,
                            problem: error.to_string(),
                        }
                    })?)),
                    None => None,
                };
                store.replay_step(
                    step.id,
                    step.parent,
                    StepMarks {
                        label: step.label.clone(),
                        key: step.key,
                        refusal: step.refusal.as_deref().map(Arc::from),
                        card,
                    },
                    Arc::clone(&step.changes),
                )?;
                for &trimmed in &step.trimmed {
                    store.forget(trimmed)?;
                }
            }
            TimelineRecord::Checkout(checkout) => {
                store.checkout(checkout.to)?;
            }
            TimelineRecord::Position(position) => {
                store.checkout(position.current)?;
                store.restore_recency(&position.recency, position.next_id)?;
            }
        }
        Ok(())
    }

    /// The records of a sync that started on step `from` and left the store at `now`: a step for
    /// every reply it applied, then a checkout when the store is not on the last of them.
    pub fn of_sync(from: StepId, synced: &Synced, now: StepId) -> Vec<TimelineRecord> {
        let mut records: Vec<TimelineRecord> = synced
            .applied
            .iter()
            .map(|reply| TimelineRecord::Step(StepRecord::of_reply(reply)))
            .collect();
        let recorded = synced.applied.last().map_or(from, AppliedReply::step);
        if now != recorded {
            records.push(TimelineRecord::Checkout(CheckoutRecord { to: now }));
        }
        records
    }

    /// The records that rebuild `store`'s whole timeline on its root state: every retained step, in id
    /// order (parents first), then where it stands. Time: O(n log n) plus the steps' changes, shared.
    pub fn all_of(store: &Store) -> Vec<TimelineRecord> {
        let mut records: Vec<TimelineRecord> = store
            .history()
            .map(|step| {
                TimelineRecord::Step(StepRecord {
                    id: step.id,
                    parent: step.parent,
                    label: step.label.map(str::to_owned),
                    key: step.key,
                    refusal: step.refusal.map(str::to_owned),
                    changes: Arc::clone(step.changes),
                    card: step.card_update.map(CardRecord::of),
                    trimmed: Vec::new(),
                })
            })
            .collect();
        records.push(TimelineRecord::Position(PositionRecord {
            current: store.current_step(),
            recency: store.recency(),
            next_id: store.next_step_id(),
        }));
        records
    }
}

/// A change log in JSON: every change `{"path", "old"?, "new"?, "reason"?, "op"}`, where an absent
/// `old` or `new` means the slot did not exist and JSON `null` is a value.
pub(crate) mod change_log {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        changes: &Arc<[Change]>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(changes.iter().map(|change| DiskChangeRef {
            path: &change.path,
            old: change.old.as_ref(),
            new: change.new.as_ref(),
            reason: change.reason.as_deref(),
            op: change.op.name(),
        }))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Arc<[Change]>, D::Error> {
        let changes = Vec::<DiskChange>::deserialize(deserializer)?;
        changes
            .into_iter()
            .map(DiskChange::into_change)
            .collect::<Result<Vec<_>, _>>()
            .map(Arc::from)
            .map_err(serde::de::Error::custom)
    }
}

/// One primitive change as written. An absent `old` or `new` is left out; JSON `null` is a value.
#[derive(Serialize)]
struct DiskChangeRef<'a> {
    path: &'a Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    old: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    op: &'a str,
}

/// One primitive change as read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiskChange {
    path: Path,
    #[serde(default, deserialize_with = "present")]
    old: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    new: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
    op: String,
}

impl DiskChange {
    /// The engine's change, or what is wrong with this one.
    fn into_change(self) -> Result<Change, String> {
        let op: Op = self
            .op
            .parse()
            .map_err(|()| format!("unknown op \"{}\" in a change", self.op))?;
        Ok(Change {
            path: self.path,
            old: self.old,
            new: self.new,
            reason: self.reason.map(Arc::from),
            op,
        })
    }
}

/// A member that is there is a value, `null` included; serde's default would read `null` as absent.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    direct(deserializer).map(Some)
}

/// Reads an engine value straight from the JSON text. The engine's own `Deserialize` goes through a
/// `serde_json::Value` first, which for a large state costs as much as the rest of loading again (the
/// intermediate tree is built, converted and dropped); this builds the persistent tree in one pass.
/// serde_json's nesting limit still applies.
fn direct<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    deserializer.deserialize_any(ValueVisitor)
}

/// A value read by [`direct`], for sequences and maps.
struct Direct(Value);

impl<'de> Deserialize<'de> for Direct {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Direct, D::Error> {
        direct(deserializer).map(Direct)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a json value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        direct(deserializer)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Value, E> {
        statecraft_engine::Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(Arc::from(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Array::new();
        while let Some(Direct(item)) = seq.next_element()? {
            items.push_back(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Object::new();
        let Some(first) = map.next_key::<Key>()? else {
            return Ok(Value::Object(object));
        };
        if first == NUMBER_TOKEN {
            return Ok(Value::Number(map.next_value_seed(NumberText)?));
        }
        object.insert(first, map.next_value::<Direct>()?.0);
        // A repeated key keeps its last value, as serde_json's own reading does.
        while let Some((key, Direct(item))) = map.next_entry::<Key, Direct>()? {
            object.insert(key, item);
        }
        Ok(Value::Object(object))
    }
}

/// How serde_json hands a number to a visitor when numbers keep their exact text (its
/// `arbitrary_precision` feature, which this workspace uses): as a map with this one key, whose value
/// is the number's text. serde_json's own `Value` reads numbers the same way.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Reads the text of a number handed over as [`NUMBER_TOKEN`]'s value.
struct NumberText;

impl<'de> serde::de::DeserializeSeed<'de> for NumberText {
    type Value = statecraft_engine::Number;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for NumberText {
    type Value = statecraft_engine::Number;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the text of a number")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<statecraft_engine::Number, E> {
        text.parse().map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_stays_a_value_and_absence_stays_absence() {
        let change = Change {
            path: Path::from(vec!["a".into()]),
            old: Some(Value::Null),
            new: None,
            reason: Some(Arc::from("why")),
            op: Op::Delete,
        };
        let record = TimelineRecord::Step(StepRecord {
            id: StepId::new(3),
            parent: StepId::ROOT,
            label: Some("m1".into()),
            key: None,
            refusal: None,
            changes: Arc::from(vec![change]),
            card: None,
            trimmed: vec![StepId::new(1)],
        });
        let text = serde_json::to_string(&record).unwrap();
        assert_eq!(
            text,
            r#"{"step":{"id":3,"parent":0,"label":"m1","changes":[{"path":["a"],"old":null,"reason":"why","op":"delete"}],"trimmed":[1]}}"#
        );
        let back: TimelineRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn an_unknown_op_in_a_change_is_named() {
        let error = serde_json::from_str::<TimelineRecord>(
            r#"{"step":{"id":1,"parent":0,"changes":[{"path":["a"],"new":1,"op":"frobnicate"}]}}"#,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("unknown op \"frobnicate\""),
            "{error}"
        );
    }

    #[test]
    fn the_direct_reader_agrees_with_the_engine() {
        let text = r#"{"i": 5, "f": 5.0, "neg": -3, "big": 18446744073709551615, "e": 1e300, "s": "a\"\u00e9b",
            "n": null, "t": true, "list": [[], {}, [1, [2, {"deep": "x"}]]], "dup": 1, "dup": 2}"#;
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let read = direct(&mut deserializer).unwrap();
        let engine: Value = serde_json::from_str(text).unwrap();
        assert_eq!(read, engine);
        assert_eq!(
            read.to_string(),
            engine.to_string(),
            "integers and floats keep their kind"
        );
        assert_eq!(read.to_json()["dup"], serde_json::json!(2));
    }
}
