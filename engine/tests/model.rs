//! Model-based property tests: random batches, including failing ones, and random moves on the history
//! tree (apply, apply at a step, undo, redo, checkout, undo_to, new bounds) run on the store and on a
//! naive model written independently from docs/instructions.md and docs/timeline.md: `serde_json`
//! states, and a history that keeps a full copy of the state for every step. Invariants: the store matches the model, every retained step's
//! state (read with `state_at`) is the model's copy, a failed batch changes nothing (the state, the
//! current step and the whole history stay exactly as they were), snapshots readers took at any
//! point never change, undo restores the exact previous state, redo re-applies
//! it, labels are unique, and trimming drops exactly the steps the model drops, in the same order. The
//! model cannot know the store's byte estimate, so with a small byte bound it checks the order, not the
//! count: the steps the store dropped are the model's next ones to drop, at least as many as the step
//! bound needs, and afterwards the byte bound holds unless only the current step is left.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, HistoryLimits, Outcome, Snapshot, StepId, StepRef, Store, TimelineError,
    Value,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

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

/// The naive model: plain recursion on serde_json, following docs/instructions.md and docs/timeline.md directly.
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

/// A step of the model's history: a full copy of the state committed there.
#[derive(Clone, Debug)]
struct ModelStep {
    parent: u64,
    label: Option<String>,
    state: Json,
    /// When the step last left the current line.
    visited: u64,
}

/// The naive history tree of docs/timeline.md, with every step's state copied in full. Ids are numbers, 0 the
/// root. Everything is found by scanning, which is fine for a few dozen steps.
#[derive(Debug)]
struct Timeline {
    root: Json,
    steps: BTreeMap<u64, ModelStep>,
    current: u64,
    clock: u64,
    next_id: u64,
    max_steps: usize,
    max_bytes: usize,
}

impl Timeline {
    fn state(&self, id: u64) -> &Json {
        if id == 0 {
            &self.root
        } else {
            &self.steps[&id].state
        }
    }

    /// The step and its ancestors, up to the root (included).
    fn line(&self, id: u64) -> Vec<u64> {
        let mut line = vec![id];
        let mut at = id;
        while at != 0 {
            at = self.steps[&at].parent;
            line.push(at);
        }
        line
    }

    fn children(&self, id: u64) -> Vec<u64> {
        self.steps
            .iter()
            .filter(|(_, s)| s.parent == id)
            .map(|(&c, _)| c)
            .collect()
    }

    fn by_label(&self, label: &str) -> Option<u64> {
        self.steps
            .iter()
            .find(|(_, s)| s.label.as_deref() == Some(label))
            .map(|(&id, _)| id)
    }

    /// Moves the current step; the steps that leave the current line are stamped.
    fn move_to(&mut self, to: u64) {
        if to == self.current {
            return;
        }
        self.clock += 1;
        let target = self.line(to);
        for id in self.line(self.current) {
            if !target.contains(&id) && id != 0 {
                self.steps.get_mut(&id).unwrap().visited = self.clock;
            }
        }
        self.current = to;
    }

    /// Records a step; the caller trims (see [`Timeline::trim`]).
    fn commit(&mut self, label: Option<String>, state: Json) -> (u64, Option<u64>) {
        let id = self.next_id;
        self.next_id += 1;
        let moved = label.as_deref().and_then(|l| self.by_label(l));
        if let Some(old) = moved {
            self.steps.get_mut(&old).unwrap().label = None;
        }
        self.steps.insert(
            id,
            ModelStep {
                parent: self.current,
                label,
                state,
                visited: self.clock,
            },
        );
        self.current = id;
        (id, moved)
    }

    /// Drops `count` steps (fewer if only the current step is left) in the order of docs/timeline.md: least
    /// recently visited branch tips first, never the current step or its ancestors while anything else
    /// can go; then the oldest steps of the current line.
    fn trim(&mut self, count: usize) -> Vec<u64> {
        let mut dropped = Vec::new();
        while dropped.len() < count {
            let tip = self
                .steps
                .iter()
                .filter(|&(&id, _)| id != self.current && self.children(id).is_empty())
                .map(|(&id, s)| (s.visited, id))
                .min();
            if let Some((_, id)) = tip {
                self.steps.remove(&id);
                dropped.push(id);
                continue;
            }
            match self.children(0)[..] {
                [only] if only != self.current => {
                    let step = self.steps.remove(&only).unwrap();
                    self.root = step.state;
                    for s in self.steps.values_mut() {
                        if s.parent == only {
                            s.parent = 0;
                        }
                    }
                    dropped.push(only);
                }
                _ => break,
            }
        }
        dropped
    }
}

#[derive(Clone, Debug)]
enum Action {
    Apply(Vec<Op>, Option<u8>),
    /// Apply at the n-th retained step (modulo, 0 = the root), a label, or an unknown step.
    ApplyAt(Target, Vec<Op>, Option<u8>),
    Undo,
    Redo,
    Checkout(Target),
    UndoTo(u8),
    Bounds(usize, usize),
}

#[derive(Clone, Debug)]
enum Target {
    Nth(usize),
    Label(u8),
    Unknown,
}

fn label(n: u8) -> String {
    format!("m{n}")
}

fn action() -> impl Strategy<Value = Action> {
    let target = prop_oneof![
        4 => (0usize..20).prop_map(Target::Nth),
        2 => (0u8..6).prop_map(Target::Label),
        1 => Just(Target::Unknown),
    ];
    let ops = || prop::collection::vec(op(), 0..4);
    let label = || prop::option::weighted(0.7, 0u8..6);
    prop_oneof![
        4 => (ops(), label()).prop_map(|(ops, l)| Action::Apply(ops, l)),
        3 => (target.clone(), ops(), label()).prop_map(|(t, ops, l)| Action::ApplyAt(t, ops, l)),
        2 => Just(Action::Undo),
        2 => Just(Action::Redo),
        2 => target.prop_map(Action::Checkout),
        1 => (0u8..6).prop_map(Action::UndoTo),
        1 => (0usize..9, max_bytes()).prop_map(|(steps, bytes)| Action::Bounds(steps, bytes)),
    ]
}

/// No byte bound (trimming by steps alone, whose count the model knows), or a small one, from less than
/// one step to a few checkpoints' worth.
fn max_bytes() -> impl Strategy<Value = usize> {
    prop_oneof![
        2 => Just(usize::MAX),
        3 => 0usize..6_000,
    ]
}

fn limits(max_steps: usize, max_bytes: usize) -> HistoryLimits {
    HistoryLimits {
        max_steps,
        max_bytes,
    }
}

/// Checks the steps a commit or new bounds trimmed against the model, and drops them there: they are
/// the model's next steps to drop, in order; as many as the step bound needs when bytes are unbounded,
/// at least as many otherwise; and then the byte bound holds unless only the current step is left.
fn check_trim(
    store: &Store,
    model: &mut Timeline,
    trimmed: &[statecraft_engine::TrimmedStep],
) -> Result<(), TestCaseError> {
    let trimmed = ids(trimmed);
    let needed = model.steps.len().saturating_sub(model.max_steps);
    if model.max_bytes == usize::MAX {
        prop_assert_eq!(&trimmed, &model.trim(needed));
    } else {
        let expected = model.trim(trimmed.len().max(needed));
        prop_assert_eq!(
            &trimmed,
            &expected,
            "the store trimmed other steps than the model's next ones"
        );
    }
    prop_assert!(
        store.history_bytes() <= model.max_bytes || store.history_len() == 1,
        "{} bytes counted over a bound of {} with {} steps left",
        store.history_bytes(),
        model.max_bytes,
        store.history_len()
    );
    Ok(())
}

/// The step a target names, for the store and for the model (`None` when it names nothing).
fn resolve(target: &Target, model: &Timeline) -> (StepRef, Option<u64>) {
    match target {
        Target::Nth(n) => {
            let ids: Vec<u64> = std::iter::once(0)
                .chain(model.steps.keys().copied())
                .collect();
            let id = ids[n % ids.len()];
            (StepRef::Id(StepId::new(id)), Some(id))
        }
        Target::Label(l) => (StepRef::Label(label(*l)), model.by_label(&label(*l))),
        Target::Unknown => (StepRef::Id(StepId::new(model.next_id + 7)), None),
    }
}

fn ids(trimmed: &[statecraft_engine::TrimmedStep]) -> Vec<u64> {
    trimmed.iter().map(|t| t.id.get()).collect()
}

/// Every retained step agrees with the model: parent, label, place on the current line, and its state.
fn check(store: &Store, model: &Timeline) -> Result<(), TestCaseError> {
    prop_assert_eq!(store.current_step().get(), model.current);
    prop_assert_eq!(store.state().to_json(), model.state(model.current).clone());
    let line = model.line(model.current);
    let listed: Vec<(u64, u64, Option<&str>, bool, bool)> = store
        .history()
        .map(|s| (s.id.get(), s.parent.get(), s.label, s.applied, s.current))
        .collect();
    let expected: Vec<(u64, u64, Option<&str>, bool, bool)> = model
        .steps
        .iter()
        .map(|(&id, s)| {
            (
                id,
                s.parent,
                s.label.as_deref(),
                line.contains(&id),
                id == model.current,
            )
        })
        .collect();
    prop_assert_eq!(listed, expected);
    prop_assert_eq!(
        store.state_at(StepId::ROOT).unwrap().value().to_json(),
        model.root.clone()
    );
    for (&id, step) in &model.steps {
        let at = store.state_at(StepId::new(id)).unwrap();
        prop_assert_eq!(
            at.value().to_json(),
            step.state.clone(),
            "state at step {}",
            id
        );
        let children: Vec<u64> = store
            .children(StepId::new(id))
            .unwrap()
            .iter()
            .map(|c| c.get())
            .collect();
        prop_assert_eq!(children, model.children(id));
        let path: Vec<u64> = store
            .path_to(StepId::new(id))
            .unwrap()
            .iter()
            .map(|c| c.get())
            .collect();
        let mut expected_path = model.line(id);
        expected_path.pop();
        expected_path.reverse();
        prop_assert_eq!(path, expected_path);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, so a failure seen once, in CI or anywhere, is reproduced by every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_history_tree_matches_a_model_that_copies_every_state(
        actions in prop::collection::vec(action(), 1..40),
        max_steps in 1usize..8,
        checkpoint_every in 1u64..5,
        max_bytes in max_bytes(),
    ) {
        let mut store = Store::builder(Value::from(initial()))
            .history_limits(limits(max_steps, max_bytes))
            .checkpoint_every(checkpoint_every)
            .build()
            .unwrap();
        let mut model = Timeline {
            root: initial(),
            steps: BTreeMap::new(),
            current: 0,
            clock: 0,
            next_id: 1,
            max_steps,
            max_bytes,
        };
        // Snapshots a reader took along the way, with the state each showed: persistent nodes they
        // share with the store are copied before the store writes them, so they never change.
        let mut readers: Vec<(Snapshot, Json)> = Vec::new();
        for (index, action) in actions.iter().enumerate() {
            if index % 3 == 0 {
                readers.push((store.snapshot(), store.state().to_json()));
            }
            match action {
                Action::Apply(ops, l) | Action::ApplyAt(_, ops, l) => {
                    let (at, at_model) = match action {
                        Action::ApplyAt(target, ..) => {
                            let (at, id) = resolve(target, &model);
                            (Some(at), Some(id))
                        }
                        _ => (None, None),
                    };
                    let batch = Batch::from_json(&Json::Array(ops.iter().map(Op::to_json).collect())).unwrap();
                    let options = ApplyOptions { label: l.map(label), at, ..ApplyOptions::default() };
                    let unchanged = Unchanged::of(&store);
                    let position = store.current_step();
                    let base = match at_model {
                        Some(None) => None,
                        Some(Some(id)) => Some(id),
                        None => Some(model.current),
                    };
                    let expected = base.and_then(|b| model_batch(model.state(b), ops).map(|s| (b, s)));
                    match (store.apply_with(&batch, &options), expected) {
                        (Outcome::Committed(commit), Some((base, state))) => {
                            model.move_to(base);
                            let unchanged = &state == model.state(base);
                            match commit.step {
                                None => {
                                    prop_assert!(unchanged || model.max_steps == 0, "a batch that changed the state made no step: {:?}", ops);
                                    prop_assert!(commit.trimmed.is_empty());
                                    if model.max_steps == 0 {
                                        model.root = state;
                                        // The step is dropped at once, but its id is used up.
                                        if !commit.changes.is_empty() || l.is_some() {
                                            model.next_id += 1;
                                        }
                                    }
                                }
                                Some(id) => {
                                    let (expected_id, moved) = model.commit(l.map(label), state);
                                    prop_assert_eq!(id.get(), expected_id);
                                    prop_assert_eq!(commit.label_moved_from.map(StepId::get), moved);
                                    check_trim(&store, &mut model, &commit.trimmed)?;
                                    // Undo restores the exact previous state; redo re-applies it.
                                    let after = store.snapshot();
                                    let parent = model.steps[&id.get()].parent;
                                    prop_assert_eq!(store.undo().unwrap(), Some(id));
                                    prop_assert_eq!(store.state().to_json(), model.state(parent).clone());
                                    prop_assert_eq!(store.redo().unwrap(), Some(id));
                                    prop_assert_eq!(store.state(), after.value());
                                    model.move_to(parent);
                                    model.move_to(id.get());
                                }
                            }
                        }
                        (Outcome::Rejected(rejection), None) => {
                            let difference = unchanged.differs(&store);
                            prop_assert!(difference.is_none(), "{:?}: {}", rejection, difference.unwrap_or_default());
                            prop_assert_eq!(store.current_step(), position, "a rejected batch moved the current step");
                        }
                        (Outcome::Committed(_), None) => prop_assert!(false, "store accepted what the model refused: {:?}", action),
                        (Outcome::Rejected(r), Some(_)) => prop_assert!(false, "store refused what the model accepted: {:?} {:?}", action, r.errors),
                    }
                }
                Action::Undo => {
                    let undone = store.undo().unwrap().map(StepId::get);
                    let expected = (model.current != 0).then_some(model.current);
                    prop_assert_eq!(undone, expected);
                    if let Some(id) = expected {
                        model.move_to(model.steps[&id].parent);
                    }
                }
                Action::Redo => {
                    let expected = model
                        .children(model.current)
                        .into_iter()
                        .max_by_key(|id| (model.steps[id].visited, *id));
                    prop_assert_eq!(store.redo().unwrap().map(StepId::get), expected);
                    if let Some(id) = expected {
                        model.move_to(id);
                    }
                }
                Action::Checkout(target) => {
                    let (to, id) = resolve(target, &model);
                    match (store.checkout(to), id) {
                        (Ok(_), Some(id)) => model.move_to(id),
                        (Err(TimelineError::UnknownStep(_) | TimelineError::UnknownLabel(_)), None) => {}
                        (other, id) => prop_assert!(false, "checkout {:?}: {:?}, model {:?}", target, other, id),
                    }
                }
                Action::UndoTo(l) => {
                    let target = model.by_label(&label(*l)).filter(|id| model.line(model.current).contains(id));
                    let crossed = store.undo_to(&label(*l)).unwrap();
                    prop_assert_eq!(crossed.is_some(), target.is_some());
                    if let Some(id) = target {
                        prop_assert_eq!(crossed, Some(model.line(model.current).iter().position(|&s| s == id).unwrap()));
                        model.move_to(id);
                    }
                }
                Action::Bounds(max_steps, max_bytes) => {
                    let trimmed = store.set_history_limits(limits(*max_steps, *max_bytes));
                    model.max_steps = *max_steps;
                    model.max_bytes = *max_bytes;
                    if *max_steps == 0 {
                        let all: Vec<u64> = model.steps.keys().copied().collect();
                        model.root = model.state(model.current).clone();
                        model.steps.clear();
                        model.current = 0;
                        prop_assert_eq!(ids(&trimmed), all);
                    } else {
                        check_trim(&store, &mut model, &trimmed)?;
                    }
                }
            }
            check(&store, &model)?;
            for (snapshot, shown) in &readers {
                prop_assert_eq!(&snapshot.value().to_json(), shown, "a reader's snapshot changed");
            }
            prop_assert!(store.history_len() <= model.max_steps.max(1));
            prop_assert!(store.history_bytes() <= model.max_bytes || store.history_len() <= 1);
        }
    }
}
