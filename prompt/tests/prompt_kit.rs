//! The prompt kit's evidence: the tailored JSON Schema, the GBNF grammar and the spec's own matcher
//! agree with each other and with the engine, and the golden prompts stay as reviewed.
//!
//! - Every batch the engine commits on the fixture state, instruction by instruction, is accepted by
//!   the schema (checked with the `jsonschema` crate), the grammar (checked with the recogniser in
//!   `prompt/gbnf_check.rs`) and the spec; on every generated batch, accepted or not, the three give
//!   the same verdict. (The engine checks a batch's final state only, so a batch may pass through an
//!   invalid state and still commit; the schema checks each instruction and refuses that.) Batches are
//!   drawn from the fixture schema's real paths, wrong paths, every taught op and typed, mistyped and
//!   out-of-bounds values. The language is arrays of `assign`, `increment`, `push`, `pop`, `splice`,
//!   `delete` and `merge` instructions without `metadata` (see `prompt/src/spec.rs`), so the
//!   generator stays inside those.
//! - Strings sampled from each grammar parse as JSON and satisfy the schema written from the same spec.
//! - Malformed batches are refused by both.
//! - Golden prompts: `UPDATE_EXPECT=1 cargo test -p statecraft-prompt --test prompt_kit` rewrites
//!   `tests/prompt/*.txt`; review the diff for length and clarity.

#[path = "prompt/gbnf_check.rs"]
mod gbnf_check;

use std::path::PathBuf;

use gbnf_check::Grammar;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, CallbackArg, CallbackSignature, StateSchema, Store, Value};
use statecraft_prompt::{
    InstructionSpec, Lang, Mode, PromptOptions, STRICT_KEYWORDS, ViewFormat, ViewOptions,
    batch_gbnf, batch_schema, pass_schema, prompt, prompt_with,
};

fn fixture(name: &str) -> Json {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/prompt")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Everything one schema gives: the spec, its JSON Schema compiled, its grammar parsed.
struct Kit {
    spec: InstructionSpec,
    validator: jsonschema::Validator,
    grammar: Grammar,
    gbnf: String,
}

fn kit(schema: Option<&Json>) -> Kit {
    kit_of(InstructionSpec::from_schema(schema))
}

fn kit_of(spec: InstructionSpec) -> Kit {
    let document = batch_schema(&spec);
    let validator = jsonschema::validator_for(document.json())
        .unwrap_or_else(|e| panic!("the tailored schema does not compile: {e}"));
    let gbnf = batch_gbnf(&spec);
    let grammar =
        Grammar::parse(&gbnf).unwrap_or_else(|e| panic!("the grammar does not parse: {e}\n{gbnf}"));
    Kit {
        spec,
        validator,
        grammar,
        gbnf,
    }
}

/// The canonical text of a batch: members in the grammar's order (op, path, value, old, reason),
/// values as `serde_json` writes them (object keys sorted).
fn canonical(batch: &[Json]) -> String {
    let items: Vec<String> = batch
        .iter()
        .map(|instruction| {
            let members: Vec<String> = ["op", "path", "value", "old", "reason"]
                .iter()
                .filter_map(|key| Some(format!("\"{key}\": {}", instruction.get(*key)?)))
                .collect();
            format!("{{{}}}", members.join(", "))
        })
        .collect();
    format!("[{}]", items.join(",\n "))
}

/// The fixture's paths, right and wrong.
fn paths() -> Vec<Json> {
    let right = [
        json!(["player"]),
        json!(["player", "name"]),
        json!(["player", "hp"]),
        json!(["player", "max_hp"]),
        json!(["player", "gold"]),
        json!(["player", "speed"]),
        json!(["player", "luck"]),
        json!(["player", "weight"]),
        json!(["player", "cursed"]),
        json!(["player", "title"]),
        json!(["player", "inventory"]),
        json!(["player", "inventory", 0]),
        json!(["player", "inventory", 1]),
        json!(["player", "inventory", "0"]),
        json!(["player", "inventory", 0, "name"]),
        json!(["player", "inventory", 0, "count"]),
        json!(["player", "tags"]),
        json!(["player", "tags", 0]),
        json!(["quest"]),
        json!(["quest", "stage"]),
        json!(["quest", "log"]),
        json!(["quest", "log", 0]),
        json!(["relations"]),
        json!(["relations", "elder"]),
        json!(["relations", "smith"]),
        json!(["notes"]),
        json!(["notes", "twist"]),
        json!([]),
    ];
    let wrong = [
        json!(["player", "HP"]),
        json!(["player", "mana"]),
        json!(["quest", "stage", 0]),
        json!(["player", "hp", "max"]),
        json!(["player", "inventory", "first"]),
        json!(["player", "inventory", -1]),
        json!(["relations", "elder", "x"]),
        json!(["ghost"]),
    ];
    right.into_iter().chain(wrong).collect()
}

fn values() -> Vec<Json> {
    vec![
        json!(0),
        json!(1),
        json!(-5),
        json!(25),
        json!(150),
        json!(2.5),
        json!(0.5),
        json!(-0.25),
        json!(-1.5),
        json!(50),
        json!(49.75),
        json!("forest"),
        json!("Forest"),
        json!("a \"quoted\" word,\nnew line, é 中"),
        json!(true),
        json!(null),
        json!([]),
        json!(["brave"]),
        json!(["nope"]),
        json!([{"name": "rope"}]),
        json!({"name": "rope"}),
        json!({"count": 2, "name": "rope"}),
        json!({"count": 0, "name": "x"}),
        json!({"hp": 10}),
        json!({"hp": -1}),
        json!({"stage": "cave"}),
        json!({"deleteCount": 1, "items": [], "start": 0}),
        json!({"items": ["sly"], "start": -1}),
        json!({"items": [{"name": "gem"}], "start": 0}),
        json!({"player": {"gold": 5}}),
        json!({"elder": 50, "smith": -3}),
        json!({"title": "Sir"}),
        json!({"twist": "none"}),
    ]
}

const OPS: [&str; 7] = [
    "assign",
    "increment",
    "push",
    "pop",
    "splice",
    "delete",
    "merge",
];

/// One generated instruction: indexes into the pools, an `old` choice and whether to give a reason.
type Pick = (usize, usize, usize, usize, bool);

fn instruction(pick: Pick, state: &Json) -> Json {
    let (path_index, op_index, value_index, old_choice, reason) = pick;
    let paths = paths();
    let path = paths[path_index % paths.len()].clone();
    let op = OPS[op_index % OPS.len()];
    let mut out = json!({"op": op, "path": path});
    if !matches!(op, "pop" | "delete") {
        let values = values();
        out["value"] = values[value_index % values.len()].clone();
    }
    match old_choice % 4 {
        1 => out["old"] = Json::Null,
        2 => {
            let pointer: String = path
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| match s {
                    Json::String(k) => format!("/{k}"),
                    other => format!("/{other}"),
                })
                .collect();
            out["old"] = state.pointer(&pointer).cloned().unwrap_or(Json::Null);
        }
        3 => out["old"] = json!(999),
        _ => {}
    }
    if reason {
        out["reason"] = json!("because");
    }
    out
}

/// Whether the engine commits `batch` on the store's state; a commit is undone at once, so every case
/// starts from the fixture state.
fn commits(store: &mut Store, batch: &Json) -> bool {
    let Ok(decoded) = Batch::from_json(batch) else {
        return false;
    };
    let committed = store.apply(&decoded).is_committed();
    if committed {
        store.undo().expect("undo right after a commit");
    }
    committed
}

/// Whether the engine commits each instruction of `batch` in turn, each as its own batch, so that
/// every state on the way satisfies the schema; every commit is undone afterwards.
///
/// The engine checks a batch's final state only, so a batch may pass through an invalid state (put a
/// wrong value in a slot, then pop it). The batch schema checks each instruction against the state
/// schema and refuses that: it is the stricter contract for what a model should write. So the schema
/// must accept what commits step by step, not everything that commits as a whole.
fn commits_step_by_step(store: &mut Store, batch: &Json) -> bool {
    let mut applied = 0;
    let mut all = true;
    for instruction in batch.as_array().into_iter().flatten() {
        if commits_kept(store, &Json::Array(vec![instruction.clone()])) {
            applied += 1;
        } else {
            all = false;
            break;
        }
    }
    for _ in 0..applied {
        store.undo().expect("undo a step just applied");
    }
    all
}

/// Whether the engine commits `batch`, keeping the commit.
fn commits_kept(store: &mut Store, batch: &Json) -> bool {
    Batch::from_json(batch).is_ok_and(|decoded| store.apply(&decoded).is_committed())
}

#[test]
fn engine_schema_grammar_and_spec_agree() {
    let schema_json = fixture("schema.json");
    let state_json = fixture("state.json");
    let kit = kit(Some(&schema_json));
    let state = Value::from_json(&state_json);
    let schema = StateSchema::new(schema_json.clone()).expect("fixture schema compiles");
    let store = std::cell::RefCell::new(
        Store::builder(state)
            .schema(schema)
            .build()
            .expect("fixture state satisfies its schema"),
    );
    let mut committed = 0usize;
    let mut accepted = 0usize;
    let mut runner = TestRunner::new(Config {
        cases: 600,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, as the other property tests do. `source_file` tells the runner where "beside"
        // is: the `proptest!` macro fills it in, a hand-made runner must.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        source_file: Some(file!()),
        ..Config::default()
    });
    let pick = (0..64usize, 0..16usize, 0..64usize, 0..4usize, any::<bool>());
    let result = runner.run(&prop::collection::vec(pick, 1..=3), |picks| {
        let batch: Vec<Json> = picks.iter().map(|p| instruction(*p, &state_json)).collect();
        let batch_json = Json::Array(batch.clone());
        let text = canonical(&batch);
        let engine = commits_step_by_step(&mut store.borrow_mut(), &batch_json);
        let by_schema = kit.validator.is_valid(&batch_json);
        let by_grammar = kit.grammar.recognises(&text);
        let by_spec = kit.spec.accepts_batch(&batch_json);
        prop_assert!(
            !engine || by_schema,
            "the engine commits, step by step, what the schema refuses:\n{text}"
        );
        prop_assert_eq!(
            by_schema,
            by_grammar,
            "schema and grammar disagree:\n{}",
            text
        );
        prop_assert_eq!(by_schema, by_spec, "schema and spec disagree:\n{}", text);
        Ok(())
    });
    if let Err(error) = result {
        panic!("{error}");
    }
    // Found by this property once: a wrong value put in a slot and then popped commits as a whole
    // (the final state is valid) but not step by step, and the schema refuses it.
    let through_invalid = json!([
        {"op": "assign", "path": ["player", "inventory", 0], "value": 0},
        {"op": "pop", "path": ["player", "inventory"]}
    ]);
    assert!(
        commits(&mut store.borrow_mut(), &through_invalid),
        "the fixture's inventory should have one item"
    );
    assert!(!commits_step_by_step(
        &mut store.borrow_mut(),
        &through_invalid
    ));
    assert!(!kit.validator.is_valid(&through_invalid));
    // The generator must exercise both sides: count verdicts on a fixed sweep of single instructions.
    for path in 0..paths().len() {
        for op in 0..OPS.len() {
            for value in 0..values().len() {
                let one = vec![instruction((path, op, value, 0, false), &state_json)];
                let batch_json = Json::Array(one);
                if kit.validator.is_valid(&batch_json) {
                    accepted += 1;
                }
                if commits(&mut store.borrow_mut(), &batch_json) {
                    committed += 1;
                    assert!(kit.validator.is_valid(&batch_json), "{batch_json}");
                    assert!(
                        kit.grammar
                            .recognises(&canonical(batch_json.as_array().unwrap_or(&Vec::new()))),
                        "{batch_json}"
                    );
                }
            }
        }
    }
    println!(
        "single instructions: {committed} committed by the engine, {accepted} accepted by the schema"
    );
    assert!(committed >= 100, "too few committed cases: {committed}");
    assert!(
        accepted > committed,
        "the schema should accept some batches the engine rejects (bounds after increments, missing targets)"
    );
}

#[test]
fn out_of_schema_batches_are_refused_by_both() {
    let kit = kit(Some(&fixture("schema.json")));
    let refused = [
        json!([{"op": "push", "path": ["player", "hp"], "value": 1}]),
        json!([{"op": "increment", "path": ["player", "name"], "value": 1}]),
        json!([{"op": "merge", "path": ["player", "tags"], "value": {"a": 1}}]),
        json!([{"op": "assign", "path": ["player", "hp"], "value": 121}]),
        json!([{"op": "assign", "path": ["player", "hp"], "value": -1}]),
        json!([{"op": "assign", "path": ["player", "hp"], "value": 2.5}]),
        json!([{"op": "assign", "path": ["quest", "stage"], "value": "castle"}]),
        json!([{"op": "assign", "path": ["player", "mana"], "value": 3}]),
        json!([{"op": "assign", "path": ["player", "inventory", 0], "value": {"count": 2}}]),
        json!([{"op": "assign", "path": ["relations", "elder"], "value": 101}]),
        json!([{"op": "assign", "path": ["player", "luck"], "value": 1.5}]),
        json!([{"op": "assign", "path": ["player", "luck"], "value": -1.25}]),
        json!([{"op": "assign", "path": ["player", "weight"], "value": 50}]),
        json!([{"op": "assign", "path": ["player", "weight"], "value": 0}]),
        json!([{"op": "assign", "path": ["player", "speed"], "value": -0.5}]),
        json!([{"op": "delete", "path": ["player", "hp"]}]),
        json!([{"op": "pop", "path": ["player", "inventory"], "value": 1}]),
        json!([{"op": "assign", "path": [], "value": {}}]),
        json!([{"op": "get", "path": ["player"]}]),
        json!([{"op": "increment", "path": ["player", "hp"], "value": 1.5}]),
        json!([{"op": "splice", "path": ["player", "tags"], "value": {"start": 0, "items": ["evil"]}}]),
        json!([{"op": "assign", "path": ["player", "hp"], "value": 3, "extra": 1}]),
        json!([{"op": "assign", "path": ["player", "hp"], "value": 3, "old": "x"}]),
        json!({"op": "assign", "path": ["player", "hp"], "value": 3}),
    ];
    for batch in refused {
        let text = match batch.as_array() {
            Some(items) if items.iter().all(|i| i.get("extra").is_none()) => canonical(items),
            _ => batch.to_string(),
        };
        assert!(!kit.validator.is_valid(&batch), "schema accepted {batch}");
        assert!(!kit.grammar.recognises(&text), "grammar accepted {text}");
        assert!(!kit.spec.accepts_batch(&batch), "spec accepted {batch}");
    }
    let malformed = [
        r#"[{"op": "assign", "path": ["player", "hp"] "value": 3}]"#,
        r#"[{"op": "assign", "path": ["player", "hp"], "value": 3},]"#,
        r#"[{'op': 'assign', 'path': ['player', 'hp'], 'value': 3}]"#,
        r#"[{"op": "assign", "path": "player.hp", "value": 3}]"#,
        r#"[{op: "assign", "path": ["player", "hp"], "value": 3}]"#,
        r#"```json
[{"op": "assign", "path": ["player", "hp"], "value": 3}]
```"#,
        r#"Sure! [{"op": "assign", "path": ["player", "hp"], "value": 3}]"#,
        r#"[{"op": "assign", "path": ["player", "hp"], "value": 3}"#,
        r#"[{"op": "assign", "path": ["player", "hp"], "value": 03}]"#,
        r#"[{"op": "assign", "path": ["player", "hp"], "value": True}]"#,
        r#"[{"path": ["player", "hp"], "op": "assign", "value": 3}]"#,
    ];
    for text in malformed {
        assert!(!kit.grammar.recognises(text), "grammar accepted {text}");
        if let Ok(json) = serde_json::from_str::<Json>(text) {
            // Member order is the grammar's business only; the schema takes any order.
            let reordered = text.starts_with(r#"[{"path""#);
            assert_eq!(
                kit.validator.is_valid(&json),
                reordered,
                "schema verdict on {text}"
            );
        }
    }
    assert!(kit.grammar.recognises(&canonical(&[
        json!({"op": "assign", "path": ["player", "hp"], "value": 3})
    ])));
    assert!(kit.grammar.recognises("[]"));
    for fits in [
        r#"[{"op": "assign", "path": ["player", "luck"], "value": 1.0}]"#,
        r#"[{"op": "assign", "path": ["player", "luck"], "value": -1}]"#,
        r#"[{"op": "assign", "path": ["player", "luck"], "value": -0.125}]"#,
        r#"[{"op": "assign", "path": ["player", "weight"], "value": 0.001}]"#,
        r#"[{"op": "assign", "path": ["player", "weight"], "value": 49.999}]"#,
    ] {
        let json: Json = serde_json::from_str(fits).unwrap_or_else(|e| panic!("{fits}: {e}"));
        assert!(kit.validator.is_valid(&json), "schema refused {fits}");
        assert!(kit.grammar.recognises(fits), "grammar refused {fits}");
        assert!(kit.spec.accepts_batch(&json), "spec refused {fits}");
    }
    assert!(
        kit.grammar
            .recognises(" [\n  {\"op\":\"pop\",\"path\":[\"quest\",\"log\"]}\n]\n")
    );
}

/// A small deterministic random source for sampling (xorshift), so failures reproduce.
fn rng(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed.max(1);
    move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if bound == 0 {
            0
        } else {
            (state % bound as u64) as usize
        }
    }
}

#[test]
fn grammar_samples_satisfy_the_schema() {
    let recursive = json!({
        "$defs": {"node": {"type": "object", "required": ["v"], "properties": {
            "v": {"type": "integer", "minimum": -3, "maximum": 1234},
            "next": {"$ref": "#/$defs/node"},
            "kind": {"type": ["string", "null"]}
        }}},
        "$ref": "#/$defs/node"
    });
    let schemas = [Some(fixture("schema.json")), None, Some(recursive)];
    for (index, schema) in schemas.iter().enumerate() {
        let kit = kit(schema.as_ref());
        let mut next = rng(7 + index as u64);
        let mut instructions = 0;
        for _ in 0..300 {
            let text = kit.grammar.sample(&mut next, 12);
            let json: Json = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("sample is not json ({e}):\n{text}"));
            if let Some(errors) = kit.validator.iter_errors(&json).next() {
                panic!("sample refused by the schema: {errors}\n{text}");
            }
            assert!(kit.spec.accepts_batch(&json), "spec refused {text}");
            assert!(
                kit.grammar.recognises(&text),
                "recogniser refused its own sample:\n{text}"
            );
            instructions += json.as_array().map_or(0, Vec::len);
        }
        assert!(instructions > 200, "samples too small: {instructions}");
    }
}

#[test]
fn free_language_without_a_schema() {
    let kit = kit(None);
    let batch = json!([
        {"op": "assign", "path": ["a", 0, "b"], "value": {"x": [1, 2.5, null]}},
        {"op": "merge", "path": [], "value": {"k": true}},
        {"op": "pop", "path": ["list"]},
        {"op": "increment", "path": ["n"], "value": -2}
    ]);
    let text = canonical(batch.as_array().unwrap_or(&Vec::new()));
    assert!(kit.validator.is_valid(&batch));
    assert!(kit.grammar.recognises(&text), "{}\n{text}", kit.gbnf);
    let bad = json!([{"op": "increment", "path": ["n"], "value": "2"}]);
    assert!(!kit.validator.is_valid(&bad));
    assert!(
        !kit.grammar
            .recognises(&canonical(bad.as_array().unwrap_or(&Vec::new())))
    );
}

/// Every place of `schema` where a subschema stands, with its JSON Pointer.
fn subschemas<'a>(schema: &'a Json, pointer: String, out: &mut Vec<(String, &'a Json)>) {
    out.push((pointer.clone(), schema));
    let Some(map) = schema.as_object() else {
        return;
    };
    for (keyword, member) in map {
        let here = format!("{pointer}/{keyword}");
        match (keyword.as_str(), member) {
            ("items" | "additionalProperties" | "not", _) => subschemas(member, here, out),
            ("prefixItems" | "anyOf" | "oneOf" | "allOf", Json::Array(list)) => {
                for (i, item) in list.iter().enumerate() {
                    subschemas(item, format!("{here}/{i}"), out);
                }
            }
            ("properties" | "$defs", Json::Object(members)) => {
                for (name, item) in members {
                    subschemas(item, format!("{here}/{name}"), out);
                }
            }
            _ => {}
        }
    }
}

/// The keys of the JSON object that opens at byte `open` of `text`, in the order they are written.
fn written_keys(text: &str, open: usize) -> Vec<String> {
    let bytes = text.as_bytes();
    let (mut depth, mut at, mut keys) = (0usize, open, Vec::new());
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b'"' => {
                let mut end = at + 1;
                while bytes[end] != b'"' {
                    end += if bytes[end] == b'\\' { 2 } else { 1 };
                }
                let after = text[end + 1..].trim_start();
                if depth == 1 && after.starts_with(':') {
                    keys.push(text[at + 1..end].to_owned());
                }
                at = end;
            }
            _ => {}
        }
        at += 1;
    }
    keys
}

#[test]
fn generated_schemas_have_no_boolean_subschemas_and_list_members_in_natural_order() {
    for schema in [None, Some(fixture("schema.json"))] {
        let document = batch_schema(&InstructionSpec::from_schema(schema.as_ref()));
        let mut found = Vec::new();
        subschemas(document.json(), String::new(), &mut found);
        for (pointer, subschema) in found {
            // `additionalProperties: false` is the one boolean every decoder reads as a keyword.
            if subschema.is_boolean() {
                assert!(
                    pointer.ends_with("/additionalProperties") && subschema == &json!(false),
                    "boolean subschema at {pointer}"
                );
            }
        }
        // The written text lists every instruction's members in the natural order.
        let text = document.to_string();
        let marker = "\"properties\": {\n";
        let mut branches = 0;
        for (at, _) in text.match_indices(marker) {
            let keys = written_keys(&text, at + marker.len() - 2);
            if keys.first().map(String::as_str) != Some("op") {
                continue;
            }
            branches += 1;
            let natural = ["op", "path", "value", "old", "reason"];
            let expected: Vec<&str> = natural
                .into_iter()
                .filter(|m| keys.iter().any(|k| k == m))
                .collect();
            assert_eq!(keys, expected, "{text}");
        }
        assert_eq!(
            branches,
            document.json()["items"]["anyOf"].as_array().unwrap().len()
        );
    }
}

/// Compares `actual` with the golden file, or rewrites it when `UPDATE_EXPECT` is set.
fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/prompt")
        .join(name);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_EXPECT=1 to create it)",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "{name} changed; rerun with UPDATE_EXPECT=1 and review the diff"
    );
}

#[test]
fn golden_prompts() {
    let schema = fixture("schema.json");
    let state = Value::from_json(&fixture("state.json"));
    for (lang, name) in [(Lang::En, "en.txt"), (Lang::Zh, "zh.txt")] {
        let made = prompt(&state, Some(&schema), &[], lang);
        assert!(!made.text().contains("goblin king"), "hidden notes leaked");
        // Every example in the rules must be in the tailored language.
        let spec = InstructionSpec::from_schema(Some(&schema));
        for line in made.rules.lines().filter(|l| l.starts_with("- ")) {
            let example = &line[line.find('{').unwrap_or(0)..];
            let json: Json =
                serde_json::from_str(example).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(spec.accepts(&json), "example outside the language: {line}");
        }
        // Short: the rules stay under 1,400 bytes (~300 tokens) in either language.
        assert!(
            made.rules.len() < 1400,
            "{name}: {} bytes",
            made.rules.len()
        );
        golden(name, &made.text());
    }
    let bare = prompt(&state, None, &[], Lang::En);
    assert!(
        bare.text().contains("goblin king"),
        "without a schema nothing is hidden"
    );
    golden("en-no-schema.txt", &bare.text());
}

#[test]
fn without_a_schema_everything_the_engine_commits_is_in_the_free_language() {
    let state_json = json!({"a": {"b": [1, {"c": 2}]}, "n": 1, "f": 0.5, "s": "x", "list": []});
    let mut store = Store::new(Value::from_json(&state_json));
    let kit = kit(None);
    let paths = [
        json!([]),
        json!(["a"]),
        json!(["a", "b"]),
        json!(["a", "b", 0]),
        json!(["a", "b", "1", "c"]),
        json!(["a", "b", 2]),
        json!(["n"]),
        json!(["f"]),
        json!(["s"]),
        json!(["list"]),
        json!(["new", "deep", 0]),
        json!(["s", "through"]),
    ];
    let values = [
        json!(1),
        json!(-2.5),
        json!("t"),
        json!(null),
        json!([1]),
        json!({"k": 1}),
        json!({"start": 0, "deleteCount": 1}),
    ];
    let (mut committed, mut checked) = (0, 0);
    for path in &paths {
        for op in OPS {
            for value in values.iter().map(Some).chain([None]) {
                let mut instruction = json!({"op": op, "path": path});
                if let Some(value) = value {
                    instruction["value"] = value.clone();
                }
                let batch = Json::Array(vec![instruction]);
                checked += 1;
                if commits(&mut store, &batch) {
                    committed += 1;
                    let text = canonical(batch.as_array().map_or(&[][..], Vec::as_slice));
                    assert!(kit.validator.is_valid(&batch), "schema refused {text}");
                    assert!(kit.grammar.recognises(&text), "grammar refused {text}");
                    assert!(kit.spec.accepts_batch(&batch), "spec refused {text}");
                }
            }
        }
    }
    println!("free language: {committed} of {checked} single instructions committed, all accepted");
    assert!(committed > 50, "{committed}");
}

/// The fantasy example's shop and level-up callbacks, described as their scripts describe them.
fn callbacks() -> Vec<CallbackSignature> {
    let arg = |name: &str, schema: Json, optional: bool| CallbackArg {
        name: name.to_owned(),
        doc: None,
        schema,
        optional,
    };
    vec![
        CallbackSignature {
            name: "gain_xp".into(),
            doc: Some("grant experience points".into()),
            args: Some(vec![arg(
                "amount",
                json!({"type": "integer", "minimum": 0}),
                false,
            )]),
        },
        CallbackSignature {
            name: "buy".into(),
            doc: None,
            args: Some(vec![
                arg(
                    "item",
                    json!({"type": "string", "enum": ["rope", "lamp"]}),
                    false,
                ),
                arg("count", json!({"type": "integer", "minimum": 1}), true),
            ]),
        },
        CallbackSignature {
            name: "rest".into(),
            doc: None,
            args: Some(Vec::new()),
        },
        CallbackSignature {
            name: "anything".into(),
            doc: None,
            args: None,
        },
    ]
}

#[test]
fn the_registered_callbacks_and_only_they_are_in_the_language() {
    let schema = fixture("schema.json");
    let with = kit_of(InstructionSpec::from_schema(Some(&schema)).with_callbacks(&callbacks()));
    let verdicts = [
        (
            json!({"op": "callback", "path": ["gain_xp"], "value": [50]}),
            true,
        ),
        (
            json!({"op": "callback", "path": ["gain_xp"], "value": [50], "reason": "goblins"}),
            true,
        ),
        (
            json!({"op": "callback", "path": ["buy"], "value": ["rope"]}),
            true,
        ),
        (
            json!({"op": "callback", "path": ["buy"], "value": ["lamp", 2]}),
            true,
        ),
        (json!({"op": "callback", "path": ["rest"]}), true),
        (
            json!({"op": "callback", "path": ["anything"], "value": [1, "two", {"three": 3}]}),
            true,
        ),
        (
            json!({"op": "callback", "path": ["gain_xp"], "value": ["fifty"]}),
            false,
        ),
        (
            json!({"op": "callback", "path": ["gain_xp"], "value": [-1]}),
            false,
        ),
        (json!({"op": "callback", "path": ["gain_xp"]}), false),
        (
            json!({"op": "callback", "path": ["gain_xp"], "value": [1, 2]}),
            false,
        ),
        (
            json!({"op": "callback", "path": ["gain_xp"], "value": [1], "old": null}),
            false,
        ),
        (
            json!({"op": "callback", "path": ["buy"], "value": ["sword"]}),
            false,
        ),
        (
            json!({"op": "callback", "path": ["buy"], "value": []}),
            false,
        ),
        (
            json!({"op": "callback", "path": ["rest"], "value": []}),
            false,
        ),
        (
            json!({"op": "callback", "path": ["level_up"], "value": [1]}),
            false,
        ),
    ];
    for (instruction, accepted) in verdicts {
        let batch = Json::Array(vec![instruction]);
        let text = canonical(batch.as_array().unwrap());
        assert_eq!(
            with.validator.is_valid(&batch),
            accepted,
            "schema on {text}"
        );
        assert_eq!(
            with.grammar.recognises(&text),
            accepted,
            "grammar on {text}\n{}",
            with.gbnf
        );
        assert_eq!(with.spec.accepts_batch(&batch), accepted, "spec on {text}");
    }
    // Without callbacks the language has no callback op at all.
    let bare = kit(Some(&schema));
    let call = json!([{"op": "callback", "path": ["gain_xp"], "value": [50]}]);
    assert!(!bare.validator.is_valid(&call));
    assert!(
        !bare
            .grammar
            .recognises(&canonical(call.as_array().unwrap()))
    );
    assert!(!bare.spec.accepts_batch(&call));
}

#[test]
fn the_rules_text_lists_each_callback_with_its_arguments_and_an_example_the_language_accepts() {
    let schema = fixture("schema.json");
    let state = Value::from_json(&fixture("state.json"));
    let made = prompt(&state, Some(&schema), &callbacks(), Lang::En);
    for line in [
        "- gain_xp(amount): grant experience points. amount: integer >= 0. {\"op\":\"callback\",\"path\":[\"gain_xp\"],\"value\":[0]}",
        "- buy(item, count?): item: \"rope\" | \"lamp\"; count: integer >= 1, optional. {\"op\":\"callback\",\"path\":[\"buy\"],\"value\":[\"rope\"]}",
        "- rest(). {\"op\":\"callback\",\"path\":[\"rest\"]}",
        "- anything(...). {\"op\":\"callback\",\"path\":[\"anything\"],\"value\":[]}",
    ] {
        assert!(made.rules.contains(line), "{line}\n{}", made.rules);
    }
    assert_eq!(made.rules.matches("\"op\":\"callback\"").count(), 4);
    let without = prompt(&state, Some(&schema), &[], Lang::En);
    assert!(!without.rules.contains("callback"), "{}", without.rules);
}

#[test]
fn golden_pass_and_state_prompts() {
    let schema = fixture("schema.json");
    let state = Value::from_json(&fixture("state.json"));
    let reply = "Aria sells the rusty sword for 10 gold and sets off for the forest.";
    for (lang, name) in [(Lang::En, "pass-en.txt"), (Lang::Zh, "pass-zh.txt")] {
        let made = prompt_with(
            &state,
            Some(&schema),
            &[],
            &PromptOptions {
                lang,
                mode: Mode::Pass,
                reply: Some(reply),
                ..PromptOptions::default()
            },
        );
        assert!(made.as_text().contains(reply), "{name}");
        assert!(
            made.as_text().contains("{\"instructions\": [...]}"),
            "{name}"
        );
        assert!(
            !made.rules.contains("\"op\":\"merge\""),
            "{name}: merge taught"
        );
        let spec = InstructionSpec::from_schema(Some(&schema));
        for line in made.rules.lines().filter(|l| l.starts_with("- ")) {
            let example: Json = serde_json::from_str(&line[line.find('{').unwrap()..]).unwrap();
            assert!(spec.accepts(&example), "{name}: {line}");
        }
        golden(name, made.as_text());
    }
    // The state alone, compact and within a budget: no command rules.
    let made = prompt_with(
        &state,
        Some(&schema),
        &[],
        &PromptOptions {
            mode: Mode::State,
            view: ViewOptions {
                format: ViewFormat::Compact,
                budget: Some(90),
                ..ViewOptions::default()
            },
            ..PromptOptions::default()
        },
    );
    assert!(!made.as_text().contains("\"op\""));
    assert!(made.view.tokens <= 90);
    golden("state-compact-90.txt", made.as_text());
}

/// Every subschema of the pass schema, with its pointer.
fn every_subschema<'a>(schema: &'a Json, pointer: String, out: &mut Vec<(String, &'a Json)>) {
    if let Json::Object(map) = schema {
        out.push((pointer.clone(), schema));
        for (key, value) in map {
            match (key.as_str(), value) {
                ("properties" | "$defs", Json::Object(members)) => {
                    for (name, member) in members {
                        every_subschema(member, format!("{pointer}/{key}/{name}"), out);
                    }
                }
                ("anyOf", Json::Array(options)) => {
                    for (i, option) in options.iter().enumerate() {
                        every_subschema(option, format!("{pointer}/anyOf/{i}"), out);
                    }
                }
                ("items", item) => every_subschema(item, format!("{pointer}/items"), out),
                _ => {}
            }
        }
    }
}

#[test]
fn the_pass_schema_is_inside_openais_strict_subset_and_reads_as_a_batch() {
    let schema = fixture("schema.json");
    for spec in [
        InstructionSpec::from_schema(Some(&schema)),
        InstructionSpec::from_schema(None),
        InstructionSpec::from_schema(Some(&schema)).with_callbacks(&callbacks()),
    ] {
        let pass = pass_schema(&spec);
        let json = pass.json();
        assert_eq!(json["type"], "object");
        assert_eq!(json["required"], json!(["instructions"]));
        let mut all = Vec::new();
        every_subschema(json, String::new(), &mut all);
        for (pointer, sub) in &all {
            for key in sub.as_object().unwrap().keys() {
                assert!(
                    STRICT_KEYWORDS.contains(&key.as_str()) || key == "maxItems",
                    "{pointer}: keyword {key} is outside the strict subset"
                );
            }
            if sub.get("type") == Some(&json!("object")) || sub.get("properties").is_some() {
                assert_eq!(sub["additionalProperties"], json!(false), "{pointer}");
                let names: Vec<&String> = sub["properties"].as_object().unwrap().keys().collect();
                let required: Vec<&str> = sub["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap())
                    .collect();
                assert_eq!(names.len(), required.len(), "{pointer}");
                for name in names {
                    assert!(
                        required.contains(&name.as_str()),
                        "{pointer}: {name} optional"
                    );
                }
            }
            assert!(
                sub.as_object().is_some_and(|m| !m.is_empty()),
                "{pointer}: empty schema"
            );
            if sub.get("type") == Some(&json!("array")) {
                assert!(sub.get("items").is_some(), "{pointer}: array without items");
            }
        }
        jsonschema::validator_for(json).expect("the pass schema compiles");
    }
    let pass = pass_schema(&InstructionSpec::from_schema(Some(&schema)));
    let validator = jsonschema::validator_for(pass.json()).unwrap();
    let accepted = [
        json!({"instructions": []}),
        json!({"instructions": [
            {"op": "increment", "path": ["player", "gold"], "value": 10},
            {"op": "delete", "path": ["player", "inventory", 0]},
            {"op": "assign", "path": ["quest", "stage"], "value": "forest"},
            {"op": "push", "path": ["player", "tags"], "value": "sly"},
            {"op": "assign", "path": ["relations", "smith"], "value": 5},
            {"op": "splice", "path": ["player", "tags"], "value": {"start": 0, "deleteCount": 1, "items": []}},
        ]}),
    ];
    for answer in &accepted {
        assert!(validator.is_valid(answer), "refused {answer}");
        // And the engine commits it as a batch.
        let mut store = Store::new(Value::from_json(&fixture("state.json")));
        let batch = Batch::from_json(&answer["instructions"]).unwrap();
        assert!(store.apply(&batch).is_committed(), "{answer}");
    }
    let refused = [
        json!([{"op": "increment", "path": ["player", "gold"], "value": 10}]),
        json!({"instructions": [], "extra": 1}),
        json!({"instructions": [{"op": "increment", "path": ["player", "gold"], "value": 1, "reason": "x"}]}),
        json!({"instructions": [{"op": "merge", "path": ["player"], "value": {"gold": 1}}]}),
        json!({"instructions": [{"op": "increment", "path": ["player", "gold"], "value": "x"}]}),
        // Paths lose their per-position keys (["player", "mana"] passes as ["relations", *] would),
        // but a path no target of its length could spell is refused.
        json!({"instructions": [{"op": "assign", "path": ["player", "hp", "max"], "value": 1}]}),
    ];
    for answer in &refused {
        assert!(!validator.is_valid(answer), "accepted {answer}");
    }
    golden("pass-schema.json", &format!("{pass}\n"));
}
