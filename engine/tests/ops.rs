//! Table tests: every op's effect and result, and every error with its exact text and pointers.

use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, MissingParent, MissingTarget, OldMismatch, Outcome, Policies, Store, Value,
};

use statecraft_test_support::unchanged;

use unchanged::Unchanged;

/// Applies `batch` to `state` and returns the new state and the results, or the rendered errors. The
/// batch runs twice, on a store whose state nothing else holds (so it writes in place) and on one
/// whose state a reader's snapshot holds (so every node it writes is copied first): both must agree,
/// a rejection must leave each store exactly as it was, and the snapshot must never change.
fn apply(state: Json, batch: Json, policies: Policies) -> Result<(Json, Vec<Json>), Vec<String>> {
    let batch = Batch::from_json(&batch)
        .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let outcomes: Vec<_> = [false, true]
        .into_iter()
        .map(|held| {
            let mut store = Store::builder(Value::from(state.clone()))
                .policies(policies)
                .build()
                .unwrap();
            let unchanged = Unchanged::of(&store);
            let snapshot = held.then(|| store.snapshot());
            let outcome = match store.apply(&batch) {
                Outcome::Committed(commit) => Ok((
                    store.state().to_json(),
                    commit
                        .results
                        .iter()
                        .map(|r| r.as_ref().map_or(json!("<absent>"), Value::to_json))
                        .collect(),
                )),
                Outcome::Rejected(rejection) => {
                    unchanged.assert(&store, "a rejected batch");
                    Err(rejection.errors.iter().map(ToString::to_string).collect())
                }
            };
            if let Some(snapshot) = snapshot {
                assert_eq!(
                    snapshot.value().to_json(),
                    state,
                    "a reader's snapshot changed"
                );
            }
            outcome
        })
        .collect();
    assert_eq!(
        outcomes[0], outcomes[1],
        "in place and copied on write differ"
    );
    outcomes.into_iter().next().expect("two runs")
}

fn check(state: Json, batch: Json, expected_state: Json, expected_results: Json) {
    let (got, results) =
        apply(state, batch, Policies::default()).unwrap_or_else(|e| panic!("rejected: {e:#?}"));
    assert_eq!(got, expected_state);
    assert_eq!(Json::Array(results), expected_results);
}

#[rstest]
#[case::assign_new_key(json!({}), json!({"op": "assign", "path": ["hp"], "value": 5}), json!({"hp": 5}), json!(["<absent>"]))]
#[case::assign_replaces(json!({"hp": 5}), json!({"op": "assign", "path": ["hp"], "value": 4}), json!({"hp": 4}), json!([5]))]
#[case::assign_creates_objects(json!({}), json!({"op": "assign", "path": ["a", "b"], "value": 1}), json!({"a": {"b": 1}}), json!(["<absent>"]))]
#[case::assign_integer_creates_array(json!({}), json!({"op": "assign", "path": ["a", 0], "value": 1}), json!({"a": [1]}), json!(["<absent>"]))]
#[case::assign_string_never_creates_array(json!({}), json!({"op": "assign", "path": ["a", "2024"], "value": 1}), json!({"a": {"2024": 1}}), json!(["<absent>"]))]
#[case::assign_decimal_key_indexes_array(json!({"a": [1, 2]}), json!({"op": "assign", "path": ["a", "1"], "value": 9}), json!({"a": [1, 9]}), json!([2]))]
#[case::assign_appends_at_len(json!({"a": [1]}), json!({"op": "assign", "path": ["a", 1], "value": 2}), json!({"a": [1, 2]}), json!(["<absent>"]))]
#[case::assign_through_null(json!({"a": null}), json!({"op": "assign", "path": ["a", "b"], "value": 1}), json!({"a": {"b": 1}}), json!(["<absent>"]))]
#[case::floats_stay_floats(json!({"x": 1}), json!({"op": "assign", "path": ["x"], "value": 5.0}), json!({"x": 5.0}), json!([1]))]
#[case::get_present(json!({"a": {"b": 2}}), json!({"op": "get", "path": ["a", "b"]}), json!({"a": {"b": 2}}), json!([2]))]
#[case::get_missing_is_absent(json!({}), json!({"op": "get", "path": ["a", "b"]}), json!({}), json!(["<absent>"]))]
#[case::get_root(json!({"a": 1}), json!({"op": "get", "path": []}), json!({"a": 1}), json!([{"a": 1}]))]
#[case::delete_key(json!({"a": 1, "b": 2}), json!({"op": "delete", "path": ["a"]}), json!({"b": 2}), json!([1]))]
#[case::delete_element_shifts(json!({"a": [1, 2, 3]}), json!({"op": "delete", "path": ["a", 0]}), json!({"a": [2, 3]}), json!([1]))]
#[case::merge_deep(json!({"p": {"a": 1, "s": {"x": 1}}}), json!({"op": "merge", "path": ["p"], "value": {"b": 2, "s": {"y": 2}}}), json!({"p": {"a": 1, "b": 2, "s": {"x": 1, "y": 2}}}), json!([{"a": 1, "s": {"x": 1}}]))]
#[case::merge_arrays_replace(json!({"p": {"l": [1, 2]}}), json!({"op": "merge", "path": ["p"], "value": {"l": [3]}}), json!({"p": {"l": [3]}}), json!([{"l": [1, 2]}]))]
#[case::merge_null_is_a_value(json!({"p": {"a": 1}}), json!({"op": "merge", "path": ["p"], "value": {"a": null}}), json!({"p": {"a": null}}), json!([{"a": 1}]))]
#[case::merge_missing_target(json!({}), json!({"op": "merge", "path": ["p"], "value": {"a": 1}}), json!({"p": {"a": 1}}), json!(["<absent>"]))]
#[case::merge_root(json!({"a": 1}), json!({"op": "merge", "path": [], "value": {"b": 2}}), json!({"a": 1, "b": 2}), json!([{"a": 1}]))]
#[case::push(json!({"bag": ["a"]}), json!({"op": "push", "path": ["bag"], "value": "b"}), json!({"bag": ["a", "b"]}), json!([2]))]
#[case::push_missing_target(json!({}), json!({"op": "push", "path": ["bag"], "value": "a"}), json!({"bag": ["a"]}), json!([1]))]
#[case::pop(json!({"bag": ["a", "b"]}), json!({"op": "pop", "path": ["bag"]}), json!({"bag": ["a"]}), json!(["b"]))]
#[case::splice_js(json!({"l": [1, 2, 3, 4]}), json!({"op": "splice", "path": ["l"], "value": {"start": 1, "deleteCount": 2, "items": ["x"]}}), json!({"l": [1, "x", 4]}), json!([[2, 3]]))]
#[case::splice_negative_start(json!({"l": [1, 2, 3]}), json!({"op": "splice", "path": ["l"], "value": {"start": -1}}), json!({"l": [1, 2]}), json!([[3]]))]
#[case::splice_clamps(json!({"l": [1, 2]}), json!({"op": "splice", "path": ["l"], "value": {"start": 9, "deleteCount": 5, "items": [3]}}), json!({"l": [1, 2, 3]}), json!([[]]))]
#[case::splice_negative_clamps_to_zero(json!({"l": [1, 2]}), json!({"op": "splice", "path": ["l"], "value": {"start": -9, "deleteCount": 1}}), json!({"l": [2]}), json!([[1]]))]
#[case::increment_int(json!({"g": 5}), json!({"op": "increment", "path": ["g"], "value": -2}), json!({"g": 3}), json!([3]))]
#[case::increment_float(json!({"g": 5}), json!({"op": "increment", "path": ["g"], "value": 0.5}), json!({"g": 5.5}), json!([5.5]))]
#[case::old_matches_numerically(json!({"hp": 100}), json!({"op": "assign", "path": ["hp"], "value": 80, "old": 100.0}), json!({"hp": 80}), json!([100]))]
#[case::old_null_matches_missing(json!({}), json!({"op": "assign", "path": ["hp"], "value": 80, "old": null}), json!({"hp": 80}), json!(["<absent>"]))]
#[case::empty_batch(json!({"a": 1}), json!([]), json!({"a": 1}), json!([]))]
#[case::rfc_add_inserts(json!({"l": [1, 2]}), json!({"op": "add", "path": "/l/1", "value": 9}), json!({"l": [1, 9, 2]}), json!(["<absent>"]))]
#[case::rfc_add_dash_appends(json!({"l": [1]}), json!({"op": "add", "path": "/l/-", "value": 2}), json!({"l": [1, 2]}), json!(["<absent>"]))]
#[case::rfc_move(json!({"a": 1}), json!([{"op": "move", "from": "/a", "path": "/b"}]), json!({"b": 1}), json!(["<absent>"]))]
#[case::rfc_copy(json!({"a": [1]}), json!([{"op": "copy", "from": "/a", "path": "/b"}]), json!({"a": [1], "b": [1]}), json!(["<absent>"]))]
#[case::rfc_replace_root(json!({"a": 1}), json!([{"op": "replace", "path": "", "value": [1]}]), json!([1]), json!([{"a": 1}]))]
#[case::mvu_delta(json!({"n": 1}), json!([{"op": "delta", "path": "/n", "value": 2}]), json!({"n": 3}), json!([3]))]
fn op_effects(
    #[case] state: Json,
    #[case] batch: Json,
    #[case] expected: Json,
    #[case] results: Json,
) {
    check(state, batch, expected, results);
}

#[rstest]
#[case::empty_path(json!({}), json!({"op": "assign", "path": [], "value": 1}),
    "instruction 0, field /path: assign needs a path inside the state; only get and merge may target the root")]
#[case::forbidden_path(json!({}), json!({"op": "assign", "path": ["a", "__proto__"], "value": 1}),
    "instruction 0, field /path/1: \"__proto__\" is a forbidden key (front ends are JavaScript; it would reach the object prototype)")]
#[case::forbidden_value_key(json!({}), json!({"op": "assign", "path": ["a"], "value": {"b": {"constructor": 1}}}),
    "instruction 0, field /value/b/constructor: \"constructor\" is a forbidden key (front ends are JavaScript; it would reach the object prototype)")]
#[case::merge_needs_object(json!({}), json!({"op": "merge", "path": ["a"], "value": 1}),
    "instruction 0, field /value: merge needs an object value, not a number")]
#[case::increment_needs_number(json!({"a": 1}), json!({"op": "increment", "path": ["a"], "value": "1"}),
    "instruction 0, field /value: increment needs a number value, not a string")]
#[case::splice_shape(json!({"a": []}), json!({"op": "splice", "path": ["a"], "value": {"begin": 1}}),
    "instruction 0, field /value: splice takes start, deleteCount and items, not \"begin\"")]
#[case::push_to_object(json!({"a": {}}), json!({"op": "push", "path": ["a"], "value": 1}),
    "instruction 0, at /a: push needs an array, found an object")]
#[case::merge_into_string(json!({"a": "x"}), json!({"op": "merge", "path": ["a"], "value": {}}),
    "instruction 0, at /a: cannot merge an object into a string")]
#[case::path_through_scalar(json!({"a": 5}), json!({"op": "assign", "path": ["a", "b", "c"], "value": 1}),
    "instruction 0, at /a: the path continues through a number, which has no members")]
#[case::index_past_end(json!({"a": [1]}), json!({"op": "assign", "path": ["a", 3], "value": 1}),
    "instruction 0, at /a/3: index 3 is past the end of an array of length 1 (arrays have no holes)")]
#[case::key_on_array(json!({"a": [1]}), json!({"op": "assign", "path": ["a", "x"], "value": 1}),
    "instruction 0, at /a/x: found an array, which has no key \"x\"; array segments are indexes like 0 or \"0\"")]
#[case::delete_missing(json!({}), json!({"op": "delete", "path": ["a"]}),
    "instruction 0, at /a: nothing exists at this path")]
#[case::pop_empty(json!({"a": []}), json!({"op": "pop", "path": ["a"]}),
    "instruction 0, at /a: the array is empty")]
#[case::increment_missing(json!({}), json!({"op": "increment", "path": ["a"], "value": 1}),
    "instruction 0, at /a: nothing exists at this path to increment")]
#[case::increment_overflow(json!({"a": 9223372036854775807_i64}), json!({"op": "increment", "path": ["a"], "value": 18446744073709551615_u64}),
    "instruction 0, at /a: 9223372036854775807 + 18446744073709551615 overflows")]
#[case::increment_type(json!({"a": "x"}), json!({"op": "increment", "path": ["a"], "value": 1}),
    "instruction 0, at /a: increment needs a number, found a string")]
#[case::old_mismatch(json!({"hp": 90}), json!([{"op": "get", "path": []}, {"op": "assign", "path": ["hp"], "value": 80, "old": 100}]),
    "instruction 1, at /hp: expected old value 100, found 90")]
#[case::unknown_callback(json!({}), json!({"op": "callback", "path": ["levelUp"]}),
    "instruction 0, field /path/0: no handler named \"levelUp\"")]
#[case::rfc_test_fails(json!({"a": 1}), json!([{"op": "test", "path": "/a", "value": 2}]),
    "instruction 0, at /a: test expected 2, found 1")]
#[case::rfc_replace_missing(json!({}), json!([{"op": "replace", "path": "/a", "value": 2}]),
    "instruction 0, at /a: nothing exists at this path to replace")]
#[case::rfc_add_missing_parent(json!({}), json!([{"op": "add", "path": "/a/b", "value": 2}]),
    "instruction 0, at /a: the parent of this location does not exist")]
#[case::later_failure_undoes_earlier(json!({"a": 1}), json!([{"op": "assign", "path": ["a"], "value": 2}, {"op": "delete", "path": ["zz"]}]),
    "instruction 1, at /zz: nothing exists at this path")]
fn op_errors(#[case] state: Json, #[case] batch: Json, #[case] error: &str) {
    let errors = apply(state, batch, Policies::default()).expect_err("must be rejected");
    assert_eq!(errors, [error]);
}

#[test]
fn validation_reports_every_error() {
    let errors = apply(
        json!({}),
        json!([
            {"op": "assign", "path": [], "value": 1},
            {"op": "push", "path": ["prototype"], "value": {"__proto__": 1}},
        ]),
        Policies::default(),
    )
    .unwrap_err();
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

#[test]
fn policies_change_soft_failures() {
    let warn = Policies {
        old_mismatch: OldMismatch::Warn,
        ..Policies::default()
    };
    let (state, _) = apply(
        json!({"hp": 90}),
        json!({"op": "assign", "path": ["hp"], "value": 80, "old": 100}),
        warn,
    )
    .unwrap();
    assert_eq!(state, json!({"hp": 80}));

    let reject_parents = Policies {
        missing_parent: MissingParent::Reject,
        ..Policies::default()
    };
    let errors = apply(
        json!({}),
        json!({"op": "assign", "path": ["a", "b"], "value": 1}),
        reject_parents,
    )
    .unwrap_err();
    assert_eq!(
        errors,
        [
            "instruction 0, at /a: this parent does not exist and the missing_parent policy is reject"
        ]
    );

    let skip = Policies {
        missing_target: MissingTarget::Skip,
        ..Policies::default()
    };
    let (state, results) = apply(
        json!({"a": 1}),
        json!([{"op": "delete", "path": ["b"]}, {"op": "delete", "path": ["a"]}]),
        skip,
    )
    .unwrap();
    assert_eq!(state, json!({}));
    assert_eq!(results, [json!("<absent>"), json!(1)]);
}

#[test]
fn old_mismatch_warning_is_reported() {
    let mut store = Store::new(Value::from(json!({"hp": 90})));
    let batch = Batch::from_json(&json!({"op": "assign", "path": ["hp"], "value": 80, "old": 100}))
        .unwrap();
    let options = ApplyOptions {
        policies: Some(Policies::mvu()),
        ..ApplyOptions::default()
    };
    let commit = store.apply_with(&batch, &options).committed().unwrap();
    assert_eq!(
        commit.warnings[0].to_string(),
        "instruction 0, at /hp: expected old value 100, found 90"
    );
}

#[test]
fn test_failure_rejects_whatever_the_old_policy() {
    let ignore = Policies {
        old_mismatch: OldMismatch::Ignore,
        ..Policies::default()
    };
    let errors = apply(
        json!({"a": 1}),
        json!([{"op": "test", "path": "/a", "value": 2}]),
        ignore,
    )
    .unwrap_err();
    assert_eq!(errors.len(), 1);
}

#[test]
fn best_effort_applies_what_succeeds() {
    let mut store = Store::new(Value::from(json!({"a": 1, "l": [1]})));
    let batch = Batch::from_json(&json!([
        {"op": "assign", "path": ["a"], "value": 2},
        {"op": "merge", "path": ["l"], "value": {"x": 1}},
        {"op": "assign", "path": [], "value": 1},
        {"op": "push", "path": ["l"], "value": 2},
    ]))
    .unwrap();
    let options = ApplyOptions {
        best_effort: true,
        ..ApplyOptions::default()
    };
    let commit = store.apply_with(&batch, &options).committed().unwrap();
    assert_eq!(store.state().to_json(), json!({"a": 2, "l": [1, 2]}));
    let warnings: Vec<String> = commit.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "instruction 2, field /path: assign needs a path inside the state; only get and merge may target the root",
            "instruction 1, at /l: cannot merge an object into an array",
        ]
    );
}

#[test]
fn change_log_records_every_primitive_change() {
    let mut store = Store::new(Value::from(json!({"p": {"hp": 10}})));
    let batch = Batch::from_json(&json!([
        {"op": "assign", "path": ["p", "hp"], "value": 8, "reason": "goblin"},
        {"op": "assign", "path": ["q", "bag", 0], "value": "rope"},
    ]))
    .unwrap();
    let commit = store.apply(&batch).committed().unwrap();
    let log = serde_json::to_value(&commit.changes).unwrap();
    assert_eq!(
        log,
        json!([
            {"path": ["p", "hp"], "old": 10, "new": 8, "reason": "goblin", "op": "assign"},
            {"path": ["q"], "new": {}, "op": "assign"},
            {"path": ["q", "bag"], "new": [], "op": "assign"},
            {"path": ["q", "bag", 0], "new": "rope", "op": "assign"},
        ])
    );
}

#[test]
fn integers_beyond_64_bits_are_kept_exactly_and_never_rounded() {
    let state: Json =
        serde_json::from_str(r#"{"big": 123456789012345678901234567890, "n": 1}"#).unwrap();
    let mut store = Store::new(Value::from(state));
    // An unrelated change leaves the big integer as it was.
    let commit = store
        .apply(&Batch::parse(r#"{"op": "increment", "path": ["n"], "value": 1}"#).unwrap())
        .committed()
        .unwrap();
    assert!(commit.warnings.is_empty());
    assert_eq!(
        store.state().to_string(),
        r#"{"big":123456789012345678901234567890,"n":2}"#
    );
    // Old values compare exactly: the nearest float of the next integer is the same, the integer is not.
    let stale =
        r#"{"op": "assign", "path": ["big"], "value": 0, "old": 123456789012345678901234567891}"#;
    let errors = store
        .apply(&Batch::parse(stale).unwrap())
        .rejected()
        .unwrap();
    assert_eq!(errors[0].kind, statecraft_engine::ErrorKind::OldMismatch);
    // Adding to it would leave 64 bits: an overflow, not a float.
    let errors = store
        .apply(&Batch::parse(r#"{"op": "increment", "path": ["big"], "value": 1}"#).unwrap())
        .rejected()
        .unwrap();
    assert_eq!(
        errors[0].to_string(),
        "instruction 0, at /big: 123456789012345678901234567890 + 1 overflows"
    );
}

#[test]
fn a_json_patch_reads_back_from_its_canonical_form() {
    // `extract` and `convert --to json` write every path as a list, a patch's too; reading that
    // text back must give the same patch, or their output could not be applied.
    let patch = Batch::from_json(&json!([
        {"op": "add", "path": "/l/1", "value": 9},
        {"op": "move", "from": "/a~1b", "path": "/l/-"},
        {"op": "test", "path": "/l/0", "value": 1},
    ]))
    .unwrap();
    assert_eq!(Batch::from_json(&patch.to_json()).unwrap(), patch);
    // An integer segment is the reference token it spells, as in the pointer.
    let state = json!({"l": [1, 2], "a/b": "x"});
    let by_list = json!([{"op": "add", "path": ["l", 1], "value": 9}]);
    let by_pointer = json!([{"op": "add", "path": "/l/1", "value": 9}]);
    assert_eq!(
        apply(state.clone(), by_list, Policies::default()),
        apply(state, by_pointer, Policies::default())
    );
}
