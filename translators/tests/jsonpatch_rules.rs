//! JSON Patch documents read into batches, and change logs written back as JSON Patch.

use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, Limits, Outcome, Store, Value};
use statecraft_translators::{Severity, jsonpatch};

#[rstest]
#[case::rfc_ops(
    r#"[{"op": "add", "path": "/a/-", "value": 1}, {"op": "replace", "path": "/b", "value": "x"}, {"op": "remove", "path": "/c/0"},
        {"op": "move", "from": "/d", "path": "/e"}, {"op": "copy", "from": "/e", "path": "/f"}, {"op": "test", "path": "/f", "value": null}]"#,
    json!([{"op": "add", "path": ["a", "-"], "value": 1}, {"op": "replace", "path": ["b"], "value": "x"}, {"op": "remove", "path": ["c", "0"]},
           {"op": "move", "path": ["e"], "from": ["d"]}, {"op": "copy", "path": ["f"], "from": ["e"]}, {"op": "test", "path": ["f"], "value": null}]),
    &[]
)]
#[case::mvu_delta(r#"[{"op": "delta", "path": "/测试", "value": 10}]"#, json!([{"op": "increment", "path": ["测试"], "value": 10}]), &[])]
#[case::mvu_insert(r#"[{"op": "insert", "path": "/主角/持有物品/-", "value": {"name": "铜钥匙"}}]"#, json!([{"op": "add", "path": ["主角", "持有物品", "-"], "value": {"name": "铜钥匙"}}]), &[])]
#[case::missing_slash(r#"[{"op": "insert", "path": "主角/备忘录", "value": "x"}]"#, json!([{"op": "add", "path": ["主角", "备忘录"], "value": "x"}]), &[("json_patch_repaired", Severity::Warning)])]
#[case::unknown_member(r#"[{"op": "remove", "path": "/a", "note": 1}]"#, json!([{"op": "remove", "path": ["a"]}]), &[("json_patch_repaired", Severity::Warning)])]
#[case::single_operation(r#"{"op": "remove", "path": "/a"}"#, json!([{"op": "remove", "path": ["a"]}]), &[])]
#[case::empty_document("[]", json!([]), &[])]
#[case::dotted_key(r#"[{ "op": "remove", "path": "/inventory.v2/items/1" }]"#, json!([{"op": "remove", "path": ["inventory.v2", "items", "1"]}]), &[])]
#[case::not_json(r#"[{"op": "add", "path": "/a", "value": 1},]"#, json!([]), &[("json_patch_not_json", Severity::Error)])]
#[case::byte_order_mark("\u{feff}[{\"op\": \"remove\", \"path\": \"/a\"}]", json!([{"op": "remove", "path": ["a"]}]), &[])]
#[case::not_an_array("42", json!([]), &[("json_patch_invalid", Severity::Error)])]
#[case::instruction_op(r#"[{"op": "assign", "path": ["a"], "value": 1}]"#, json!([]), &[("json_patch_invalid", Severity::Error)])]
#[case::no_op_member(r#"[{"path": "/a"}]"#, json!([]), &[("json_patch_invalid", Severity::Error)])]
#[case::missing_value(r#"[{"op": "add", "path": "/a"}, {"op": "replace", "path": "/b", "value": 1}]"#, json!([]), &[("json_patch_invalid", Severity::Error)])]
#[case::move_needs_from(r#"[{"op": "move", "to": "/a", "path": "/b"}]"#, json!([]), &[("json_patch_invalid", Severity::Error)])]
fn reading_documents(
    #[case] text: &str,
    #[case] batch: Json,
    #[case] diagnostics: &[(&str, Severity)],
) {
    let read = jsonpatch::from_text(text, &Limits::default());
    assert_eq!(read.batch.to_json(), batch);
    let mut found: Vec<(&str, Severity)> = read
        .diagnostics
        .iter()
        .map(|d| (d.kind.code(), d.severity))
        .collect();
    found.sort();
    let mut wanted = diagnostics.to_vec();
    wanted.sort();
    assert_eq!(found, wanted, "{:#?}", read.diagnostics);
}

#[test]
fn a_syntax_error_points_at_its_byte() {
    let text = "[\n  {\"op\": \"add\", \"path\": \"/a\" \"value\": 1}\n]";
    let read = jsonpatch::from_text(text, &Limits::default());
    let diagnostic = &read.diagnostics[0];
    assert_eq!((diagnostic.line, diagnostic.column), (2, 30));
    assert_eq!(
        &text[diagnostic.span.start..diagnostic.span.start + 7],
        "\"value\""
    );
}

#[test]
fn every_problem_is_reported_with_the_span_of_what_it_is_about() {
    let text = "[\n  {\"op\": \"add\", \"path\": \"/a\", \"value\": 1},\n  {\"op\": \"add\", \"path\": \"/b\"},\n  \
                {\"op\": \"frob\", \"path\": \"/c\"},\n  {\"op\": \"move\", \"from\": 5, \"path\": \"/d\"}\n]";
    let read = jsonpatch::from_text(text, &Limits::default());
    assert!(read.batch.is_empty());
    let found: Vec<(&str, usize, &str)> = read
        .diagnostics
        .iter()
        .map(|d| (&text[d.span.clone()], d.line, &d.message[..]))
        .collect();
    assert_eq!(found.len(), 3, "{found:#?}");
    assert_eq!(found[0].0, "{\"op\": \"add\", \"path\": \"/b\"}");
    assert!(
        found[0].2.starts_with("instruction 1, field /value"),
        "{found:#?}"
    );
    assert_eq!((found[1].0, found[1].1), ("\"frob\"", 4));
    assert_eq!((found[2].0, found[2].1), ("5", 5));
    // A document that is valid but not an array is a problem of the whole text.
    let read = jsonpatch::from_text(" 42", &Limits::default());
    assert_eq!(read.diagnostics[0].span, 0..3);
}

#[test]
fn a_syntax_error_after_a_byte_order_mark_points_at_its_byte() {
    let text = "\u{feff}[{\"op\": \"add\", \"path\": \"/a\" \"value\": 1}]";
    let read = jsonpatch::from_text(text, &Limits::default());
    let diagnostic = &read.diagnostics[0];
    assert_eq!(
        &text[diagnostic.span.start..diagnostic.span.start + 7],
        "\"value\""
    );
}

#[rstest]
#[case::add_replace_remove(
    json!({"a": 1, "list": [1, 2], "gone": true}),
    json!([{"op": "replace", "path": "/a", "value": 2}, {"op": "add", "path": "/list/1", "value": 9}, {"op": "remove", "path": "/gone"}, {"op": "add", "path": "/new", "value": {"x": []}}]),
    json!([{"op": "replace", "path": "/a", "value": 2}, {"op": "add", "path": "/list/1", "value": 9}, {"op": "remove", "path": "/gone"}, {"op": "add", "path": "/new", "value": {"x": []}}])
)]
#[case::escaped_pointer(
    json!({}),
    json!([{"op": "add", "path": "/a~1b", "value": {"~": 1}}, {"op": "add", "path": "/c~0", "value": 2}]),
    json!([{"op": "add", "path": "/a~1b", "value": {"~": 1}}, {"op": "add", "path": "/c~0", "value": 2}])
)]
#[case::move_is_remove_then_add(
    json!({"from": [1], "to": {}}),
    json!([{"op": "move", "from": "/from/0", "path": "/to/x"}]),
    json!([{"op": "remove", "path": "/from/0"}, {"op": "add", "path": "/to/x", "value": 1}])
)]
fn exporting_change_logs(#[case] doc: Json, #[case] patch: Json, #[case] export: Json) {
    let mut store = Store::new(Value::from_json(&doc));
    let read = jsonpatch::from_value(&patch, &Limits::default());
    let Outcome::Committed(commit) = store.apply(&read.batch) else {
        panic!("the patch was rejected")
    };
    let exported = jsonpatch::from_changes(&commit.changes);
    assert_eq!(exported, export);
    let mut replay = Store::new(Value::from_json(&doc));
    assert!(
        replay
            .apply(&jsonpatch::from_value(&exported, &Limits::default()).batch)
            .is_committed()
    );
    assert_eq!(replay.state(), store.state());
}

#[test]
fn a_patch_batch_is_written_back_as_its_document_and_instructions_have_no_patch_form() {
    let document = json!([
        {"op": "add", "path": "/a~1b/-", "value": 1},
        {"op": "move", "from": "/c", "path": "/d"},
        {"op": "test", "path": "/d", "value": null}
    ]);
    let read = jsonpatch::from_value(&document, &Limits::default());
    assert_eq!(jsonpatch::from_batch(&read.batch), Ok(document));

    let instructions = Batch::from_json(&json!([
        {"op": "assign", "path": ["b"], "value": 1},
        {"op": "increment", "path": ["c"], "value": 1}
    ]))
    .unwrap();
    let errors = jsonpatch::from_batch(&instructions).unwrap_err();
    let fields: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(fields.len(), 2, "{fields:#?}");
    assert!(fields[0].starts_with("instruction 0, field /op: `assign` has no json patch form"));
    assert!(fields[1].starts_with("instruction 1, field /op: `increment` has no json patch form"));

    // Decoding refuses a text that mixes both kinds, but a host can build such a batch in code: it
    // has no patch form either, and only the instructions without one are named.
    let mut mixed = read.batch.clone();
    mixed
        .instructions
        .insert(1, instructions.instructions[1].clone());
    let errors = jsonpatch::from_batch(&mixed).unwrap_err();
    let fields: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(fields.len(), 1, "{fields:#?}");
    assert!(fields[0].starts_with("instruction 1, field /op: `increment` has no json patch form"));

    assert_eq!(jsonpatch::from_batch(&Batch::default()), Ok(json!([])));
}
