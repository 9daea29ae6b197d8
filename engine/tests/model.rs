//! Model-based property tests: random batches, including failing ones, run on the store and on a naive
//! `serde_json` model written independently from the SPEC. Invariants: the store matches the model, a
//! failed batch changes nothing, undo restores the exact previous state, redo re-applies it, and the
//! history bounds hold.

use proptest::prelude::*;
use serde_json::{Map, Value as Json, json};
use statecraft_engine::{Batch, HistoryLimits, Outcome, Store, Value};

#[derive(Clone, Debug)]
enum Seg {
    Key(&'static str),
    Index(usize),
}

#[derive(Clone, Debug)]
struct Op {
    name: &'static str,
    path: Vec<Seg>,
    value: Json,
    old: Option<Json>,
}

impl Op {
    fn to_json(&self) -> Json {
        let path: Vec<Json> = self
            .path
            .iter()
            .map(|s| match s {
                Seg::Key(k) => json!(k),
                Seg::Index(i) => json!(i),
            })
            .collect();
        let mut out = json!({"op": self.name, "path": path});
        if matches!(
            self.name,
            "assign" | "push" | "merge" | "increment" | "splice"
        ) {
            out["value"] = self.value.clone();
        }
        if let Some(old) = &self.old {
            out["old"] = old.clone();
        }
        out
    }
}

fn seg() -> impl Strategy<Value = Seg> {
    prop_oneof![
        Just(Seg::Key("a")),
        Just(Seg::Key("b")),
        Just(Seg::Key("0")),
        (0usize..3).prop_map(Seg::Index),
    ]
}

fn leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        (-3i64..4).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        Just(json!("x")),
        Just(json!(null)),
        Just(json!([])),
        Just(json!([1, 2])),
        Just(json!({})),
        Just(json!({"a": 1})),
        Just(json!({"b": {"a": 2}})),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let name = prop_oneof![
        Just("assign"),
        Just("assign"),
        Just("delete"),
        Just("push"),
        Just("pop"),
        Just("increment"),
        Just("merge"),
        Just("splice"),
    ];
    (
        name,
        prop::collection::vec(seg(), 1..4),
        leaf(),
        prop::option::weighted(0.2, leaf()),
        -3i64..4,
        0i64..3,
    )
        .prop_map(|(name, path, value, old, start, count)| {
            let value = match name {
                "increment" => json!(start),
                "merge" if !value.is_object() => json!({"a": value}),
                "splice" => json!({"start": start, "deleteCount": count, "items": [value]}),
                _ => value,
            };
            Op {
                name,
                path,
                value,
                old,
            }
        })
}

/// The naive model: plain recursion on serde_json, following SPEC §1–§3 directly.
mod model {
    use super::*;

    fn key_of(seg: &Seg) -> String {
        match seg {
            Seg::Key(k) => (*k).to_owned(),
            Seg::Index(i) => i.to_string(),
        }
    }

    fn index_of(seg: &Seg) -> Option<usize> {
        match seg {
            Seg::Index(i) => Some(*i),
            Seg::Key(k) if *k == "0" => Some(0),
            Seg::Key(_) => None,
        }
    }

    fn get<'a>(state: &'a Json, path: &[Seg]) -> Result<Option<&'a Json>, ()> {
        let Some((first, rest)) = path.split_first() else {
            return Ok(Some(state));
        };
        let child = match state {
            Json::Object(map) => map.get(&key_of(first)),
            Json::Array(items) => items.get(index_of(first).ok_or(())?),
            Json::Null => None,
            _ => return Err(()),
        };
        match child {
            Some(child) => get(child, rest),
            None => Ok(None),
        }
    }

    /// The container holding the last segment, creating parents when `create`.
    fn parent<'a>(state: &'a mut Json, path: &[Seg], create: bool) -> Result<&'a mut Json, ()> {
        if path.len() == 1 {
            return Ok(state);
        }
        let fresh = if matches!(path[1], Seg::Index(_)) {
            json!([])
        } else {
            json!({})
        };
        let child = match state {
            Json::Object(map) => {
                let key = key_of(&path[0]);
                let slot = map.entry(key).or_insert(Json::Null);
                if slot.is_null() {
                    if !create {
                        return Err(());
                    }
                    *slot = fresh;
                }
                slot
            }
            Json::Array(items) => {
                let i = index_of(&path[0]).ok_or(())?;
                if i == items.len() && create {
                    items.push(fresh.clone());
                }
                let slot = items.get_mut(i).ok_or(())?;
                if slot.is_null() {
                    if !create {
                        return Err(());
                    }
                    *slot = fresh;
                }
                slot
            }
            _ => return Err(()),
        };
        parent(child, &path[1..], create)
    }

    fn slot<'a>(parent: &'a mut Json, last: &Seg) -> Result<Option<&'a mut Json>, ()> {
        match parent {
            Json::Object(map) => Ok(map.get_mut(&key_of(last))),
            Json::Array(items) => Ok(items.get_mut(index_of(last).ok_or(())?)),
            _ => Err(()),
        }
    }

    fn put(parent: &mut Json, last: &Seg, value: Json) -> Result<(), ()> {
        match parent {
            Json::Object(map) => {
                map.insert(key_of(last), value);
                Ok(())
            }
            Json::Array(items) => {
                let i = index_of(last).ok_or(())?;
                match i.cmp(&items.len()) {
                    std::cmp::Ordering::Less => items[i] = value,
                    std::cmp::Ordering::Equal => items.push(value),
                    std::cmp::Ordering::Greater => return Err(()),
                }
                Ok(())
            }
            _ => Err(()),
        }
    }

    fn merge(target: &mut Map<String, Json>, patch: &Map<String, Json>) {
        for (k, v) in patch {
            match (target.get_mut(k), v) {
                (Some(Json::Object(inner)), Json::Object(p)) => merge(inner, p),
                _ => {
                    target.insert(k.clone(), v.clone());
                }
            }
        }
    }

    fn numbers_equal(a: &Json, b: &Json) -> bool {
        match (a, b) {
            (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
            (Json::Array(x), Json::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| numbers_equal(p, q))
            }
            (Json::Object(x), Json::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| numbers_equal(v, w)))
            }
            _ => a == b,
        }
    }

    pub(super) fn apply(state: &mut Json, op: &Op) -> Result<(), ()> {
        if let Some(old) = &op.old {
            let current = get(state, &op.path)?.cloned().unwrap_or(Json::Null);
            if !numbers_equal(&current, old) {
                return Err(());
            }
        }
        let last = op.path.last().unwrap();
        let creates = matches!(op.name, "assign" | "push" | "merge");
        let parent = parent(state, &op.path, creates)?;
        match op.name {
            "assign" => put(parent, last, op.value.clone()),
            "delete" => match parent {
                Json::Object(map) => map.remove(&key_of(last)).map(drop).ok_or(()),
                Json::Array(items) => {
                    let i = index_of(last).ok_or(())?;
                    if i < items.len() {
                        items.remove(i);
                        Ok(())
                    } else {
                        Err(())
                    }
                }
                _ => Err(()),
            },
            "push" => match slot(parent, last)? {
                Some(Json::Array(items)) => {
                    items.push(op.value.clone());
                    Ok(())
                }
                None | Some(Json::Null) => put(parent, last, json!([op.value.clone()])),
                Some(_) => Err(()),
            },
            "pop" => match slot(parent, last)? {
                Some(Json::Array(items)) => items.pop().map(drop).ok_or(()),
                _ => Err(()),
            },
            "increment" => match slot(parent, last)? {
                Some(Json::Number(n)) => {
                    let delta = op.value.as_i64().unwrap();
                    let sum = match n.as_i64() {
                        Some(i) => json!(i.checked_add(delta).ok_or(())?),
                        None => json!(n.as_f64().unwrap() + delta as f64),
                    };
                    put(parent, last, sum)
                }
                _ => Err(()),
            },
            "merge" => {
                let patch = op.value.as_object().unwrap();
                match slot(parent, last)? {
                    Some(Json::Object(map)) => {
                        merge(map, patch);
                        Ok(())
                    }
                    None | Some(Json::Null) => put(parent, last, op.value.clone()),
                    Some(_) => Err(()),
                }
            }
            "splice" => match slot(parent, last)? {
                Some(Json::Array(items)) => {
                    let len = items.len() as i64;
                    let start = op.value["start"].as_i64().unwrap();
                    let start = if start < 0 {
                        (len + start).max(0)
                    } else {
                        start.min(len)
                    } as usize;
                    let count = op.value["deleteCount"]
                        .as_i64()
                        .unwrap()
                        .clamp(0, len - start as i64) as usize;
                    let new: Vec<Json> = op.value["items"].as_array().unwrap().clone();
                    items.splice(start..start + count, new);
                    Ok(())
                }
                _ => Err(()),
            },
            other => unreachable!("{other}"),
        }
    }
}

fn initial() -> Json {
    json!({"a": {"a": 1, "b": [1, {"a": 2}]}, "b": [0, 1, 2], "0": 5})
}

/// The model's view of a batch: all-or-nothing.
fn model_batch(state: &Json, ops: &[Op]) -> Option<Json> {
    let mut next = state.clone();
    for op in ops {
        model::apply(&mut next, op).ok()?;
    }
    Some(next)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_model_and_undo_redo_restore(batches in prop::collection::vec(prop::collection::vec(op(), 0..4), 1..8)) {
        let mut store = Store::builder(Value::from(initial()))
            .history_limits(HistoryLimits { max_steps: 5, max_bytes: 1 << 20 })
            .build()
            .unwrap();
        let mut model_state = initial();
        let mut states = vec![store.snapshot()];
        for ops in &batches {
            let batch = Batch::from_json(&Json::Array(ops.iter().map(Op::to_json).collect())).unwrap();
            let before = store.snapshot();
            let expected = model_batch(&model_state, ops);
            match (store.apply(&batch), expected) {
                (Outcome::Committed(commit), Some(expected)) => {
                    prop_assert_eq!(store.state().to_json(), expected.clone(), "batch {:?}", ops);
                    model_state = expected;
                    if commit.step.is_some() {
                        // Undo restores the exact previous state; redo re-applies it.
                        let after = store.snapshot();
                        store.undo().unwrap();
                        prop_assert_eq!(store.state(), before.value());
                        prop_assert_eq!(store.state().to_json(), before.value().to_json());
                        store.redo().unwrap();
                        prop_assert_eq!(store.state().to_json(), after.value().to_json());
                        states.push(after);
                    }
                }
                (Outcome::Rejected(rejection), None) => {
                    prop_assert!(store.state().ptr_eq(before.value()), "a rejected batch changed the state: {:?}", rejection);
                }
                (Outcome::Committed(_), None) => prop_assert!(false, "store accepted what the model refused: {:?}", ops),
                (Outcome::Rejected(r), Some(_)) => prop_assert!(false, "store refused what the model accepted: {:?} {:?}", ops, r.errors),
            }
            prop_assert!(store.history().count() <= 5);
        }
        // Undo everything retained, then check we reached the state that many steps back.
        let retained = store.history().filter(|s| s.applied).count();
        for _ in 0..retained {
            prop_assert!(store.undo().unwrap().is_some());
        }
        prop_assert!(store.undo().unwrap().is_none());
        let back = &states[states.len() - 1 - retained];
        prop_assert_eq!(store.state().to_json(), back.value().to_json());
        for _ in 0..retained {
            prop_assert!(store.redo().unwrap().is_some());
        }
        prop_assert_eq!(store.state().to_json(), model_state);
    }
}
