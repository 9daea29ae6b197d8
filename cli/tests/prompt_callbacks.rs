//! `prompt --scripts` and `schema --scripts`: the rules text, the JSON Schema and the grammar list
//! exactly the callbacks a scripts folder registers, with the arguments each describes (issue 12).

use std::path::PathBuf;

use serde_json::{Value, json};
use statecraft_engine::{StateSchema, Value as StateValue};

mod support;
use support::run_in;

fn fantasy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/fantasy")
}

fn arg(path: PathBuf) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn prompt_lists_the_registered_callbacks() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        &[
            "prompt",
            "--state",
            &arg(fantasy().join("state.json")),
            "--schema",
            &arg(fantasy().join("schema.json")),
            "--scripts",
            &arg(fantasy().join("scripts")),
        ],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    for name in [
        "gain_xp(amount)",
        "buy(item, count?)",
        "sell(item)",
        "advance_quest(stage)",
    ] {
        assert!(
            run.stdout.contains(&format!("- {name}: ")),
            "{name}\n{}",
            run.stdout
        );
    }
    assert_eq!(run.stdout.matches("{\"op\":\"callback\"").count(), 4);
}

#[test]
fn schema_and_grammar_allow_exactly_the_registered_callbacks() {
    let dir = tempfile::tempdir().unwrap();
    let schema = arg(fantasy().join("schema.json"));
    let scripts = arg(fantasy().join("scripts"));
    let run = run_in(
        dir.path(),
        &["schema", "--schema", &schema, "--scripts", &scripts],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let document: Value = serde_json::from_str(&run.stdout).unwrap();
    // The engine's schema check compiles the document as any JSON Schema validator would.
    let validator = StateSchema::new(document).unwrap();
    let is_valid = |batch: &Value| {
        validator
            .check_full(&StateValue::from_json(batch))
            .is_empty()
    };
    assert!(is_valid(
        &json!([{"op": "callback", "path": ["gain_xp"], "value": [120]}])
    ));
    assert!(is_valid(
        &json!([{"op": "callback", "path": ["buy"], "value": ["potion", 2]}])
    ));
    assert!(!is_valid(
        &json!([{"op": "callback", "path": ["gain_xp"], "value": ["lots"]}])
    ));
    assert!(!is_valid(
        &json!([{"op": "callback", "path": ["teleport"], "value": []}])
    ));
    assert!(!is_valid(
        &json!([{"op": "callback", "path": ["advance_quest"], "value": ["moon"]}])
    ));

    let run = run_in(
        dir.path(),
        &[
            "schema",
            "--schema",
            &schema,
            "--scripts",
            &scripts,
            "--gbnf",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    for name in ["gain_xp", "buy", "sell", "advance_quest"] {
        assert!(
            run.stdout.contains(&format!("\"\\\"{name}\\\"\"")),
            "{name}\n{}",
            run.stdout
        );
    }
}

#[test]
fn a_scripts_folder_that_does_not_load_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scripts")).unwrap();
    std::fs::write(
        dir.path().join("scripts/bad.lua"),
        "on(\"x\", function() end, { args = { { name = \"a\", type = \"int\" } } })\n",
    )
    .unwrap();
    let run = run_in(dir.path(), &["schema", "--scripts", "scripts"], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("bad.lua:1"), "{}", run.stderr);
    assert!(
        run.stderr.contains("type \"int\" is not one of"),
        "{}",
        run.stderr
    );
}
