//! MVU's views of a state after a step, for status bars written against MVU (docs/mvu.md, "MVU's
//! views"): `stat_data` (the state), `display_data` (the state before the step with every value the
//! step changed shown as MVU shows it, `"old->new (reason)"`) and `delta_data` (only those).
//!
//! MVU builds both from its commands as they run; here they are built from the step's change log,
//! one change at a time in order, with MVU's texts: a value replaced (`_.set`, `_.add`) is
//! `old->new (reason)` (a `[value, "description"]` pair shown by its value), a key or element added
//! is MVU's `ASSIGNED ...` (or `MERGED ...`) at its container, a key removed is `REMOVED path ...`,
//! an element removed is `REMOVED item from ...` at its array. This module must not run anything: it
//! reads a change log.

use std::sync::Arc;

use serde_json::{Map, Value as Json};
use statecraft_engine::{Change, Op, Path, ReplayError, Segment, Store, Value, replay_backward};

/// The three views MVU keeps beside a state.
#[derive(Clone, Debug, PartialEq)]
pub struct MvuViews {
    /// The state itself.
    pub stat_data: Json,
    /// The state before the step, every value the step changed replaced by MVU's text of the change.
    pub display_data: Json,
    /// Only the changed values, as MVU's texts.
    pub delta_data: Json,
}

/// The views of `after`, the state a step made from `before` with `changes` (its change log, in
/// order). Time: O(size of the state + the changes).
pub fn views(before: &Value, after: &Value, changes: &[Change]) -> MvuViews {
    let mut display_data = before.to_json();
    let mut delta_data = Json::Object(Map::new());
    for change in changes {
        let Some((at, text)) = describe(change, after) else {
            continue;
        };
        set_at(&mut display_data, at.segments(), Json::String(text.clone()));
        set_at(&mut delta_data, at.segments(), Json::String(text));
    }
    MvuViews {
        stat_data: after.to_json(),
        display_data,
        delta_data,
    }
}

/// The views of a store's current step: its state, and the state before it rebuilt from the step's
/// change log (at the root, nothing changed). An error only for a history rebuilt from damaged data.
/// Time: O(size of the state + the step's changes).
pub fn current_views(store: &Store) -> Result<MvuViews, ReplayError> {
    let after = store.state();
    let changes = store
        .step(store.current_step())
        .map(|info| Arc::clone(info.changes));
    let changes: &[Change] = changes.as_deref().unwrap_or_default();
    let mut before = after.clone();
    replay_backward(&mut before, changes)?;
    Ok(views(&before, after, changes))
}

/// Where MVU shows a change, and its text.
fn describe(change: &Change, after: &Value) -> Option<(Path, String)> {
    let reason = change
        .reason
        .as_deref()
        .map_or_else(String::new, |reason| format!("({reason})"));
    let segments = change.path.segments();
    let parent = || Path::from(segments[..segments.len().saturating_sub(1)].to_vec());
    match (&change.old, &change.new) {
        (Some(old), Some(new)) => {
            // A pair's value changed: MVU shows the pair by its value.
            let at = match segments.split_last() {
                Some((Segment::Index(0), rest)) if is_pair(after.lookup(rest)) => parent(),
                _ => change.path.clone(),
            };
            let text = format!(
                "{}->{} {reason}",
                trim_quotes(&stringify(&old.to_json())),
                trim_quotes(&stringify(&new.to_json()))
            );
            Some((at, text))
        }
        (None, Some(new)) => {
            let (last, rest) = segments.split_last()?;
            let container = path_text(rest);
            let value = stringify(&new.to_json());
            let text = match (change.op, last, after.lookup(rest)) {
                (_, Segment::Index(_), Some(Value::Array(_))) => {
                    format!("ASSIGNED {value} into array '{container}' {reason}")
                }
                (Op::Merge, key, _) => format!(
                    "MERGED object {{{}:{value}}} into object '{container}' {reason}",
                    stringify(&Json::String(key_text(key)))
                ),
                (_, key, _) => format!(
                    "ASSIGNED key '{}' with value {value} into object '{container}' {reason}",
                    key_text(key)
                ),
            };
            Some((parent(), text))
        }
        (Some(_), None) => {
            let (last, rest) = segments.split_last()?;
            match (last, after.lookup(rest)) {
                (Segment::Index(_), Some(Value::Array(_))) => Some((
                    parent(),
                    format!("REMOVED item from '{}' {reason}", path_text(rest)),
                )),
                _ => Some((
                    change.path.clone(),
                    format!("REMOVED path '{}' {reason}", path_text(segments)),
                )),
            }
        }
        (None, None) => None,
    }
}

/// MVU's `[value, "description"]`: two elements, the second a string, the first no array.
fn is_pair(value: Option<&Value>) -> bool {
    let Some(Value::Array(items)) = value else {
        return false;
    };
    items.len() == 2
        && matches!(items.get(1), Some(Value::String(_)))
        && !matches!(items.get(0), Some(Value::Array(_)))
}

fn key_text(segment: &Segment) -> String {
    match segment {
        Segment::Key(key) => key.to_string(),
        Segment::Index(index) => index.to_string(),
    }
}

/// A path as lodash writes it: `a.b[0]`, with `["..."]` for a key a dot path cannot hold.
fn path_text(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Index(index) => out.push_str(&format!("[{index}]")),
            Segment::Key(key) => {
                let plain = !key.is_empty()
                    && !key
                        .chars()
                        .any(|c| matches!(c, '.' | '[' | ']' | '"' | '\'') || c.is_whitespace());
                if plain {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                } else {
                    out.push_str(&format!("[{}]", stringify(&Json::String(key.to_string()))));
                }
            }
        }
    }
    out
}

/// `JSON.stringify`: compact, and a float with no fraction written as JavaScript writes it (`1`,
/// not `1.0`).
fn stringify(value: &Json) -> String {
    fn js(value: &Json) -> Json {
        match value {
            Json::Number(number) if !number.is_i64() && !number.is_u64() => match number.as_f64() {
                Some(float) if float.fract() == 0.0 && float.abs() < 9.0e15 => {
                    Json::from(float as i64)
                }
                _ => value.clone(),
            },
            Json::Array(items) => Json::Array(items.iter().map(js).collect()),
            Json::Object(map) => {
                Json::Object(map.iter().map(|(k, v)| (k.clone(), js(v))).collect())
            }
            other => other.clone(),
        }
    }
    serde_json::to_string(&js(value)).unwrap_or_default()
}

/// MVU's `trimQuotesAndBackslashes`: quotes, backticks, backslashes and spaces off both ends.
fn trim_quotes(text: &str) -> &str {
    text.trim_matches(|c| matches!(c, '\\' | '"' | '\'' | '`' | ' '))
}

/// lodash's `set`: `value` at `segments`, making the containers on the way (an array where the next
/// segment is an index), over whatever was there.
fn set_at(root: &mut Json, segments: &[Segment], value: Json) {
    let Some((last, parents)) = segments.split_last() else {
        *root = value;
        return;
    };
    let mut cursor = root;
    for (depth, segment) in parents.iter().enumerate() {
        let next_is_index = matches!(segments[depth + 1], Segment::Index(_));
        cursor = child(cursor, segment, next_is_index);
    }
    *child(cursor, last, false) = value;
}

/// The slot `segment` names in `container`, made (with its container) when missing.
fn child<'j>(container: &'j mut Json, segment: &Segment, index_next: bool) -> &'j mut Json {
    let fresh = || {
        if index_next {
            Json::Array(Vec::new())
        } else {
            Json::Object(Map::new())
        }
    };
    let slot = match (container, segment) {
        (Json::Array(items), Segment::Index(index)) => {
            if items.len() <= *index {
                items.resize(*index + 1, Json::Null);
            }
            &mut items[*index]
        }
        (container, segment) => {
            if !container.is_object() {
                *container = Json::Object(Map::new());
            }
            let Json::Object(map) = container else {
                unreachable!("made an object above")
            };
            map.entry(key_text(segment)).or_insert_with(fresh)
        }
    };
    if !(slot.is_object() || slot.is_array()) {
        *slot = fresh();
    }
    slot
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use statecraft_engine::{Batch, Store};

    fn step(state: Json, batch: Json) -> MvuViews {
        let before = Value::from(state);
        let mut store = Store::new(before.clone());
        let commit = store
            .apply(&Batch::from_json(&batch).unwrap())
            .committed()
            .expect("committed");
        views(&before, store.state(), &commit.changes)
    }

    #[test]
    fn a_replaced_value_is_old_to_new_as_mvu_writes_it() {
        let views = step(
            json!({"hp": 10, "name": "Ann", "stats": {"mood": [1.0, "0-5"]}, "other": 1}),
            json!([
                {"op": "assign", "path": ["hp"], "value": 8, "reason": "hit"},
                {"op": "assign", "path": ["name"], "value": "Bo"},
                {"op": "increment", "path": ["stats", "mood", 0], "value": 1}
            ]),
        );
        assert_eq!(
            views.display_data,
            json!({"hp": "10->8 (hit)", "name": "Ann->Bo ", "stats": {"mood": "1->2 "}, "other": 1})
        );
        assert_eq!(
            views.delta_data,
            json!({"hp": "10->8 (hit)", "name": "Ann->Bo ", "stats": {"mood": "1->2 "}})
        );
        assert_eq!(views.stat_data["stats"]["mood"], json!([2.0, "0-5"]));
    }

    #[test]
    fn additions_and_removals_use_mvus_texts_at_their_container() {
        let views = step(
            json!({"bag": ["rope"], "npcs": {"ann": 1, "bo": 2}, "log": [1, 2]}),
            json!([
                {"op": "push", "path": ["bag"], "value": "lamp"},
                {"op": "assign", "path": ["npcs", "cy"], "value": {"hp": 1}},
                {"op": "delete", "path": ["npcs", "bo"], "reason": "left"},
                {"op": "delete", "path": ["log", 0]}
            ]),
        );
        assert_eq!(
            views.delta_data,
            json!({
                "bag": "ASSIGNED \"lamp\" into array 'bag' ",
                "npcs": {"bo": "REMOVED path 'npcs.bo' (left)"},
                "log": "REMOVED item from 'log' "
            })
        );
        // The key added shows at its container, which a later removal inside it then fills in.
        assert_eq!(
            views.display_data["npcs"],
            json!({"bo": "REMOVED path 'npcs.bo' (left)"})
        );
    }

    #[test]
    fn paths_are_written_as_lodash_reads_them() {
        assert_eq!(
            path_text(&[
                Segment::key("a"),
                Segment::Index(2),
                Segment::key("x.y"),
                Segment::key("中文")
            ]),
            "a[2][\"x.y\"].中文"
        );
        assert_eq!(trim_quotes("\"'text'\""), "text");
    }
}
