//! The chat timeline as a front end uses it (docs/timeline.md): swipes are siblings, a
//! return to an earlier swipe brings back exactly its state, a deleted message returns to its parent,
//! an edit starts a branch, labels are unique, and trimming drops the least recently visited branches
//! and says which. The model test (`model.rs`) checks the same rules on random sequences.

use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, ErrorKind, HistoryLimits, StepId, StepRef, Store, TimelineError, Value,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

fn batch(json: Json) -> Batch {
    Batch::from_json(&json).unwrap()
}

/// Commits `{"op": "assign", "path": [key], "value": value}` labelled `label`, at `at` if given.
fn set(store: &mut Store, at: Option<&str>, label: &str, key: &str, value: i64) -> StepId {
    let options = ApplyOptions {
        label: Some(label.to_owned()),
        at: at.map(StepRef::from),
        ..ApplyOptions::default()
    };
    store
        .apply_with(
            &batch(json!({"op": "assign", "path": [key], "value": value})),
            &options,
        )
        .committed()
        .expect("committed")
        .step
        .expect("a step")
}

fn state(store: &Store) -> Json {
    store.state().to_json()
}

#[test]
fn swipes_are_siblings_and_switching_back_brings_back_exactly_that_swipe() {
    let mut store = Store::new(Value::from(json!({"mood": 0, "gold": 0})));
    let m1 = set(&mut store, None, "m1", "gold", 5);
    let s1 = set(&mut store, None, "m2/s1", "mood", 1);
    // A regenerated reply commits on the step before it, beside the first swipe.
    let s2 = set(&mut store, Some("m1"), "m2/s2", "mood", 2);
    let s3 = set(&mut store, Some("m1"), "m2/s3", "gold", 50);
    assert_eq!(store.children(m1).unwrap(), [s1, s2, s3]);
    assert_eq!(
        state(&store),
        json!({"mood": 0, "gold": 50}),
        "no swipe inherits another's changes"
    );
    store.checkout("m2/s1").unwrap();
    assert_eq!(state(&store), json!({"mood": 1, "gold": 5}));
    store.checkout(s2).unwrap();
    assert_eq!(state(&store), json!({"mood": 2, "gold": 5}));
    assert_eq!(store.path_to("m2/s2").unwrap(), [m1, s2]);
    // Reading any swipe does not move.
    assert_eq!(
        store.state_at("m2/s3").unwrap().value().to_json(),
        json!({"mood": 0, "gold": 50})
    );
    assert_eq!(store.current_step(), s2);
    assert_eq!(
        store.state_at(StepId::ROOT).unwrap().value().to_json(),
        json!({"mood": 0, "gold": 0})
    );
}

#[test]
fn undo_goes_to_the_parent_and_redo_to_the_child_current_most_recently() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    let a = set(&mut store, None, "a", "n", 1);
    let b = set(&mut store, Some("a"), "b", "n", 2);
    let c = set(&mut store, Some("a"), "c", "n", 3);
    let b2 = set(&mut store, Some("b"), "b2", "n", 22);
    // b2 (under b) was current after c: redo from a goes down b's branch, then to b2.
    assert_eq!(store.checkout(a).unwrap(), 2);
    assert_eq!(store.redo().unwrap(), Some(b));
    assert_eq!(store.redo().unwrap(), Some(b2));
    assert_eq!(store.redo().unwrap(), None);
    store.checkout(c).unwrap();
    assert_eq!(store.undo().unwrap(), Some(c));
    assert_eq!(store.redo().unwrap(), Some(c), "c was on the line after b");
    assert_eq!(store.undo().unwrap(), Some(c));
    assert_eq!(store.undo().unwrap(), Some(a));
    assert_eq!(store.undo().unwrap(), None, "the root has no parent");
    assert_eq!(state(&store), json!({"n": 0}));
}

#[test]
fn a_deleted_message_returns_to_its_parent_and_an_edit_starts_a_branch() {
    let mut store = Store::new(Value::from(json!({"hp": 10, "bag": []})));
    set(&mut store, None, "m1", "hp", 9);
    set(&mut store, None, "m2", "hp", 8);
    set(&mut store, None, "m3", "hp", 7);
    // Deleting m3: back to the state m2 committed.
    store.checkout("m2").unwrap();
    assert_eq!(state(&store)["hp"], json!(8));
    // Editing m1: the edited message commits on m1's parent, the root, beside m1; the old line stays.
    let options = ApplyOptions {
        label: Some("m1/edit".into()),
        at: Some(StepId::ROOT.into()),
        ..ApplyOptions::default()
    };
    let edit = store
        .apply_with(
            &batch(json!({"op": "push", "path": ["bag"], "value": "rope"})),
            &options,
        )
        .committed()
        .unwrap()
        .step
        .unwrap();
    assert_eq!(store.step(edit).unwrap().parent, StepId::ROOT);
    assert_eq!(state(&store), json!({"hp": 10, "bag": ["rope"]}));
    assert_eq!(
        store.state_at("m3").unwrap().value().to_json(),
        json!({"hp": 7, "bag": []})
    );
}

#[test]
fn apply_at_is_atomic_and_an_unknown_step_is_a_rejection() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    set(&mut store, None, "m1", "n", 1);
    let m2 = set(&mut store, None, "m2", "n", 2);
    let unchanged = Unchanged::of(&store);
    let failing = ApplyOptions {
        at: Some("m1".into()),
        ..ApplyOptions::default()
    };
    let errors = store
        .apply_with(
            &batch(json!({"op": "assign", "path": ["n"], "value": 5, "old": 99})),
            &failing,
        )
        .rejected()
        .unwrap();
    assert_eq!(errors[0].kind, ErrorKind::OldMismatch, "{errors:?}");
    unchanged.assert(&store, "a rejected batch at another step");
    assert_eq!(
        store.current_step(),
        m2,
        "a rejected batch moved the current step"
    );
    let unknown = ApplyOptions {
        at: Some("m9".into()),
        ..ApplyOptions::default()
    };
    let errors = store
        .apply_with(&batch(json!([])), &unknown)
        .rejected()
        .unwrap();
    assert_eq!(errors[0].kind, ErrorKind::UnknownStep);
    assert_eq!(
        errors[0].message,
        "cannot commit on the step labelled \"m9\": no step is labelled \"m9\""
    );
    assert_eq!(store.current_step(), m2);
    // The old value is checked against the state at m1, not the current one.
    let ok = ApplyOptions {
        at: Some("m1".into()),
        ..ApplyOptions::default()
    };
    let commit = store
        .apply_with(
            &batch(json!({"op": "assign", "path": ["n"], "value": 5, "old": 1})),
            &ok,
        )
        .committed()
        .unwrap();
    let step = commit.step.unwrap();
    assert_eq!(store.step(step).unwrap().parent, store.find("m1").unwrap());
    assert_eq!(store.current_step(), step);
    assert_eq!(state(&store), json!({"n": 5}));
}

#[test]
fn a_reused_label_moves_to_the_new_step_and_says_so() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    set(&mut store, None, "m1", "n", 1);
    let first = set(&mut store, None, "m2/s1", "n", 2);
    // The front end re-applies an edited swipe under the same label.
    let options = ApplyOptions {
        label: Some("m2/s1".into()),
        at: Some("m1".into()),
        ..ApplyOptions::default()
    };
    let commit = store
        .apply_with(
            &batch(json!({"op": "assign", "path": ["n"], "value": 3})),
            &options,
        )
        .committed()
        .unwrap();
    assert_eq!(commit.label_moved_from, Some(first));
    assert_eq!(store.find("m2/s1").unwrap(), commit.step.unwrap());
    assert_eq!(
        store.step(first).unwrap().label,
        None,
        "the old swipe stays, unlabelled"
    );
    assert_eq!(
        store.state_at(first).unwrap().value().to_json(),
        json!({"n": 2})
    );
}

#[test]
fn undo_to_stays_on_the_current_line() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    set(&mut store, None, "m1", "n", 1);
    set(&mut store, None, "m2", "n", 2);
    set(&mut store, Some("m1"), "m2b", "n", 3);
    assert_eq!(
        store.undo_to("m2").unwrap(),
        None,
        "m2 is on another branch"
    );
    assert_eq!(store.undo_to("m1").unwrap(), Some(1));
    assert_eq!(state(&store), json!({"n": 1}));
    assert_eq!(
        store.checkout("nope"),
        Err(TimelineError::UnknownLabel("nope".into()))
    );
    assert_eq!(
        store.checkout(StepId::new(99)),
        Err(TimelineError::UnknownStep(StepId::new(99)))
    );
}

#[test]
fn trimming_drops_the_least_recently_visited_branches_first_and_reports_them() {
    let mut store = Store::builder(Value::from(json!({"n": 0})))
        .history_limits(HistoryLimits {
            max_steps: 5,
            max_bytes: usize::MAX,
        })
        .build()
        .unwrap();
    set(&mut store, None, "m1", "n", 1);
    let s1 = set(&mut store, None, "m2/s1", "n", 21);
    let s2 = set(&mut store, Some("m1"), "m2/s2", "n", 22);
    let s3 = set(&mut store, Some("m1"), "m2/s3", "n", 23);
    // Back to swipe 1, then on to swipe 3: swipe 2 is now the least recently visited.
    store.checkout(s1).unwrap();
    store.checkout(s3).unwrap();
    let commit = store
        .apply_with(
            &batch(json!({"op": "assign", "path": ["n"], "value": 3})),
            &ApplyOptions {
                label: Some("m3".into()),
                ..ApplyOptions::default()
            },
        )
        .committed()
        .unwrap();
    assert!(commit.trimmed.is_empty(), "five steps fit");
    let commit = store
        .apply_with(
            &batch(json!({"op": "assign", "path": ["n"], "value": 4})),
            &ApplyOptions {
                label: Some("m4".into()),
                ..ApplyOptions::default()
            },
        )
        .committed()
        .unwrap();
    assert_eq!(commit.trimmed.len(), 1);
    assert_eq!(commit.trimmed[0].id, s2);
    assert_eq!(commit.trimmed[0].label.as_deref(), Some("m2/s2"));
    assert_eq!(
        store.find("m2/s2"),
        Err(TimelineError::UnknownLabel("m2/s2".into()))
    );
    assert!(store.state_at(s1).is_ok(), "the other swipe stays");
    // Lowering the bound: swipe 1 goes next, then the oldest steps of the current line, whose state
    // becomes the root; the current step always stays.
    let trimmed = store.set_history_limits(HistoryLimits {
        max_steps: 1,
        max_bytes: usize::MAX,
    });
    let labels: Vec<_> = trimmed.iter().map(|t| t.label.as_deref()).collect();
    assert_eq!(
        labels,
        [Some("m2/s1"), Some("m1"), Some("m2/s3"), Some("m3")]
    );
    assert_eq!(store.history_len(), 1);
    assert_eq!(
        store.state_at(StepId::ROOT).unwrap().value().to_json(),
        json!({"n": 3})
    );
    assert_eq!(state(&store), json!({"n": 4}));
    assert_eq!(
        store.step(store.current_step()).unwrap().parent,
        StepId::ROOT
    );
}

#[test]
fn checkpoints_keep_far_reads_short_and_exact() {
    let mut store = Store::builder(Value::from(json!({"n": 0})))
        .checkpoint_every(8)
        .build()
        .unwrap();
    let mut ids = Vec::new();
    for i in 1..=100 {
        ids.push(set(&mut store, None, &format!("m{i}"), "n", i));
    }
    // A branch near the root, then reads all over the tree from there.
    let branch = set(&mut store, Some("m3"), "m4b", "n", -4);
    for (i, id) in ids.iter().enumerate() {
        let read = store.state_at(*id).unwrap();
        assert_eq!(read.value().to_json(), json!({"n": i + 1}));
    }
    store.checkout("m77").unwrap();
    assert_eq!(state(&store), json!({"n": 77}));
    store.checkout(branch).unwrap();
    assert_eq!(state(&store), json!({"n": -4}));
}

#[test]
fn with_history_off_the_root_follows_the_state() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    set(&mut store, None, "m1", "n", 1);
    let trimmed = store.set_history_limits(HistoryLimits {
        max_steps: 0,
        max_bytes: 0,
    });
    assert_eq!(trimmed.len(), 1);
    let commit = store
        .apply(&batch(json!({"op": "assign", "path": ["n"], "value": 2})))
        .committed()
        .unwrap();
    assert_eq!(commit.step, None);
    // The step was dropped at once, but its id is used up: it is never given again, and the next
    // batch's `Random` differs.
    assert_eq!(store.next_step_id(), StepId::new(3));
    assert_eq!(store.current_step(), StepId::ROOT);
    assert_eq!(
        store.state_at(StepId::ROOT).unwrap().value().to_json(),
        json!({"n": 2})
    );
    assert_eq!(store.undo().unwrap(), None);
}

#[test]
fn with_history_off_a_batch_that_changes_nothing_uses_no_step_id_unless_labelled() {
    let mut store = Store::new(Value::from(json!({"n": 0})));
    store.set_history_limits(HistoryLimits {
        max_steps: 0,
        max_bytes: 0,
    });
    let nothing = batch(json!([]));
    store.apply(&nothing).committed().unwrap();
    assert_eq!(store.next_step_id(), StepId::new(1));
    let labelled = ApplyOptions {
        label: Some("m1".to_owned()),
        ..ApplyOptions::default()
    };
    store.apply_with(&nothing, &labelled).committed().unwrap();
    assert_eq!(store.next_step_id(), StepId::new(2));
}
