//! A game's card over time: the version of its card each step holds, and what taking a new version
//! does to a game in progress (docs/mvu.md, "Card updates").
//!
//! A [`CardVersion`] is what the engine keeps of a card: MVU's automatic schema built from it
//! (enforced under `mvu`) and its fingerprint, a text hosts compare to notice that the card changed.
//! The root holds the version the game was made with; a step that takes a new version (a card update)
//! holds it, and every step below inherits it, so undo, checkout and swipes see the card each step
//! was made under. [`plan`] works out what a new version does to a state: keys the new initial state
//! has and the state lacks are added with their initial values (the container's template, under the
//! new automatic schema, merged in); every value the state holds is kept; keys the old version's
//! automatic schema listed that the new initial state no longer has are listed as dropped, and
//! removed only when asked; under MVU's rules the descriptions of `[value, "description"]` pairs and
//! `description` members follow the new card, as MVU's own "reload InitVar" does. Objects merge key
//! by key; an array, like any value the state holds, is kept whole. This module must not read cards
//! (the translators do) or run the batch (the store does).

use crate::instruction::{Batch, Instruction, Op};
use crate::path::{Path, Segment};
use crate::structure::StructureSchema;
use crate::value::Value;

/// A version of a game's card, as a step holds it.
#[derive(Clone, Debug, Default)]
pub struct CardVersion {
    /// MVU's automatic schema built from the card, which batches under `mvu` obey.
    pub structure: Option<StructureSchema>,
    /// What names this version of the card (hosts use the SHA-256 of its `[InitVar]` text), so that a
    /// front end can tell that the card changed since; `None` when the host keeps none.
    pub fingerprint: Option<String>,
}

/// Two versions are the same when their fingerprints and automatic schemas are.
impl PartialEq for CardVersion {
    fn eq(&self, other: &CardVersion) -> bool {
        self.fingerprint == other.fingerprint
            && self.structure.as_ref().map(StructureSchema::source)
                == other.structure.as_ref().map(StructureSchema::source)
    }
}

/// How to take a new version of a card.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CardUpdateOptions {
    /// Remove the keys the new card dropped; by default they are only listed.
    pub remove_dropped: bool,
    /// Bring the descriptions of `[value, "description"]` pairs and of `description` members up to
    /// the new card, as MVU does (the hosts turn it on under the `mvu` profiles).
    pub descriptions: bool,
}

/// What taking a new version of a card does to a state: the batch that does it and what it lists.
#[derive(Clone, Debug, Default)]
pub struct CardUpdate {
    /// Removals of the dropped keys (when asked), then the additions, then the descriptions.
    pub batch: Batch,
    /// The keys added, each the topmost one the state lacked, in order.
    pub added: Vec<Path>,
    /// The keys the old version listed, the new initial state lacks and the state still holds.
    pub dropped: Vec<Path>,
    /// Whether the batch removes the dropped keys.
    pub removes_dropped: bool,
    /// The descriptions brought up to the new card.
    pub descriptions: Vec<Path>,
}

impl CardUpdate {
    /// Whether the new version changes nothing in the state.
    pub fn is_empty(&self) -> bool {
        self.batch.instructions.is_empty()
    }
}

/// Works out what taking `new` (whose initial state is `initial`) does to `state`, held under `old`.
/// Time: O(size of `initial` + size of `old`'s schema) lookups in `state`, each O(depth × log n),
/// plus the values added.
pub fn plan(
    state: &Value,
    initial: &Value,
    old: &CardVersion,
    new: &CardVersion,
    options: CardUpdateOptions,
) -> CardUpdate {
    let mut update = CardUpdate {
        removes_dropped: options.remove_dropped,
        ..CardUpdate::default()
    };
    if let Some(old) = &old.structure {
        dropped(
            old.source(),
            initial,
            state,
            &mut Vec::new(),
            &mut update.dropped,
        );
    }
    let mut additions = Vec::new();
    let mut descriptions = Vec::new();
    let mut walk = Walk {
        root: state,
        structure: new.structure.as_ref(),
        descriptions: options.descriptions,
        additions: &mut additions,
        described: &mut descriptions,
    };
    walk.object(initial, state, &mut Vec::new());
    if options.remove_dropped {
        update.batch.instructions.extend(
            update
                .dropped
                .iter()
                .map(|path| Instruction::new(Op::Delete, path.clone())),
        );
    }
    for (path, value) in additions {
        update.added.push(path.clone());
        update
            .batch
            .instructions
            .push(Instruction::assign(path, value));
    }
    for (path, value) in descriptions {
        update.descriptions.push(path.clone());
        update
            .batch
            .instructions
            .push(Instruction::assign(path, value));
    }
    update
}

/// The walk of the new initial state beside the state.
struct Walk<'a> {
    root: &'a Value,
    structure: Option<&'a StructureSchema>,
    descriptions: bool,
    additions: &'a mut Vec<(Path, Value)>,
    described: &'a mut Vec<(Path, Value)>,
}

impl Walk<'_> {
    fn object(&mut self, initial: &Value, held: &Value, at: &mut Vec<Segment>) {
        let (Value::Object(initial), Value::Object(held)) = (initial, held) else {
            return;
        };
        for (key, wanted) in initial {
            at.push(Segment::Key(key.clone()));
            match held.get(key) {
                None => {
                    let value = match self.structure {
                        Some(structure) => {
                            structure.added_value(self.root, &at[..at.len() - 1], wanted)
                        }
                        None => wanted.clone(),
                    };
                    self.additions.push((Path::from(at.clone()), value));
                }
                Some(kept) => {
                    if self.descriptions {
                        self.description(key, wanted, kept, at);
                    }
                    self.object(wanted, kept, at);
                }
            }
            at.pop();
        }
    }

    /// A `[value, "description"]` pair's description, or a `description` member, that the new card
    /// words otherwise.
    fn description(&mut self, key: &str, wanted: &Value, kept: &Value, at: &[Segment]) {
        let path = Path::from(at.to_vec());
        match (wanted, kept) {
            (Value::String(new), Value::String(old)) if key == "description" && new != old => {
                self.described.push((path, wanted.clone()));
            }
            (Value::Array(new), Value::Array(old)) => {
                if let (Some(text @ Value::String(_)), Some(Value::String(_))) =
                    (pair_description(new), pair_description(old))
                    && pair_description(new) != pair_description(old)
                {
                    self.described.push((path.child(1usize), text.clone()));
                }
            }
            _ => {}
        }
    }
}

/// The description of a `[value, "description"]` pair.
fn pair_description(items: &crate::value::Array) -> Option<&Value> {
    match (items.len(), items.get(1)) {
        (2, Some(text @ Value::String(_))) => Some(text),
        _ => None,
    }
}

/// The keys an automatic schema node lists (through objects) that `initial` lacks and `held` has.
fn dropped(
    node: &serde_json::Value,
    initial: &Value,
    held: &Value,
    at: &mut Vec<Segment>,
    out: &mut Vec<Path>,
) {
    let (Some(properties), Value::Object(held)) = (
        node.get("properties")
            .and_then(serde_json::Value::as_object),
        held,
    ) else {
        return;
    };
    let Value::Object(initial) = initial else {
        return;
    };
    for (key, child) in properties {
        let Some(kept) = held.get(key.as_str()) else {
            continue;
        };
        at.push(Segment::key(key.as_str()));
        match initial.get(key.as_str()) {
            None => out.push(Path::from(at.clone())),
            Some(wanted) => dropped(child, wanted, kept, at, out),
        }
        at.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn version(schema: serde_json::Value) -> CardVersion {
        CardVersion {
            structure: Some(StructureSchema::new(schema).unwrap()),
            fingerprint: None,
        }
    }

    #[test]
    fn added_kept_dropped_and_descriptions() {
        let old = version(json!({"type": "object", "properties": {
            "hp": {"type": "array"}, "old": {"type": "number"},
            "npcs": {"type": "object", "properties": {"bob": {"type": "object", "properties": {"gone": {"type": "number"}}}}}
        }}));
        let new = version(json!({"type": "object", "properties": {
            "npcs": {"type": "object", "extensible": true, "template": {"mood": "calm"}, "properties": {}}
        }}));
        let state = Value::from(json!({"hp": [7, "old words"], "old": 1, "mine": 3,
                                       "npcs": {"bob": {"gone": 1}}}));
        let initial = Value::from(json!({"hp": [10, "new words"], "mp": 5,
                                         "npcs": {"bob": {}, "amy": {"trust": 1}}}));
        let update = plan(
            &state,
            &initial,
            &old,
            &new,
            CardUpdateOptions {
                remove_dropped: true,
                descriptions: true,
            },
        );
        let texts = |paths: &[Path]| paths.iter().map(Path::to_string).collect::<Vec<_>>();
        assert_eq!(texts(&update.dropped), ["/npcs/bob/gone", "/old"]);
        assert_eq!(texts(&update.added), ["/mp", "/npcs/amy"]);
        assert_eq!(texts(&update.descriptions), ["/hp/1"]);
        let batch: Vec<serde_json::Value> = update
            .batch
            .instructions
            .iter()
            .map(Instruction::to_json)
            .collect();
        assert_eq!(
            batch,
            vec![
                json!({"op": "delete", "path": ["npcs", "bob", "gone"]}),
                json!({"op": "delete", "path": ["old"]}),
                json!({"op": "assign", "path": ["mp"], "value": 5}),
                json!({"op": "assign", "path": ["npcs", "amy"], "value": {"trust": 1, "mood": "calm"}}),
                json!({"op": "assign", "path": ["hp", 1], "value": "new words"}),
            ]
        );
        // Without the options, dropped keys are only listed and descriptions stay.
        let listed = plan(&state, &initial, &old, &new, CardUpdateOptions::default());
        assert_eq!(texts(&listed.dropped), ["/npcs/bob/gone", "/old"]);
        assert_eq!(listed.batch.instructions.len(), 2);
        assert!(listed.descriptions.is_empty());
    }
}
