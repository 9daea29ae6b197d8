//! End to end through HTTP: the scripted scenarios of `examples/` (messy replies, MVU text with
//! macros, Lua handlers and watchers, schema and old-value rejections, regenerated turns) played turn
//! by turn against the router in process, each turn checked against its expectation file as `play` checks
//! it. A regenerated turn is a swipe: committed `at` the parent of the step it replaces.

use std::collections::BTreeMap;
use std::path::Path;

use axum::http::StatusCode;
use serde_json::{Value as Json, json};

use super::Harness;

/// The expectation members this test checks; any other member fails the test, so that an
/// expectation is never silently skipped.
const KNOWN: [&str; 11] = [
    "regenerates",
    "schema_violation",
    "outcome",
    "values",
    "absent",
    "errors",
    "warnings",
    "events",
    "diagnostics",
    "min_score",
    "changes",
];

fn read_json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Numbers compare numerically, and an absent value counts as `null`, as `play` and `grade` compare.
fn same(found: Option<&Json>, expected: &Json) -> bool {
    match (found, expected) {
        (None | Some(Json::Null), Json::Null) => true,
        (Some(Json::Number(a)), Json::Number(b)) => a.as_f64() == b.as_f64(),
        (Some(found), expected) => found == expected,
        (None, _) => false,
    }
}

fn kinds(list: &Json) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item["kind"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn play(server: &Harness, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    let mut game = json!({"state": read_json(&dir.join("state.json")), "id": name});
    if dir.join("schema.json").exists() {
        game["schema"] = read_json(&dir.join("schema.json"));
    }
    let scripts_dir = dir.join("scripts");
    if scripts_dir.is_dir() {
        let mut scripts = BTreeMap::new();
        for entry in std::fs::read_dir(&scripts_dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "lua") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                scripts.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
        game["scripts"] = json!(scripts);
    }
    let settings = if dir.join("scenario.json").exists() {
        read_json(&dir.join("scenario.json"))
    } else {
        json!({})
    };
    let macros = settings.get("macros").cloned().unwrap_or(json!({}));
    // The scenario's seed goes with the game, as `play` gives it to the store.
    if let Some(seed) = settings.get("seed") {
        game["seed"] = seed.clone();
    }
    let id = server.create(&game);
    let mut turns: Vec<_> = std::fs::read_dir(dir.join("turns"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    turns.sort();
    assert!(!turns.is_empty(), "{name} has turns");
    // The step each turn committed, to find the parent a regenerated turn swipes from.
    let mut committed: Vec<(String, u64)> = Vec::new();
    for turn in &turns {
        let stem = turn.file_stem().unwrap().to_string_lossy().into_owned();
        let label = format!("turn-{stem}");
        let expect_path = turn.with_file_name(format!("{stem}.expect.json"));
        let expect = if expect_path.exists() {
            read_json(&expect_path)
        } else {
            json!({})
        };
        for key in expect.as_object().unwrap().keys() {
            assert!(
                KNOWN.contains(&key.as_str()),
                "{name}/{stem}: unknown expectation {key}"
            );
        }
        let mut body = json!({"input": std::fs::read_to_string(turn).unwrap(), "label": label, "macros": macros});
        let policy = expect
            .get("schema_violation")
            .or(settings.get("schema_violation"));
        if let Some(policy) = policy {
            body["policies"] = json!({"schema_violation": policy});
        }
        // A regenerated turn replaces the previous one; a previous turn that was rejected left no
        // step, so then the swipe commits on the current step, as `play` does.
        let previous = format!("turn-{:02}", stem.parse::<u32>().unwrap() - 1);
        if expect["regenerates"] == json!(true)
            && let Some((_, replaced)) = committed.last().filter(|(label, _)| *label == previous)
        {
            let log = server
                .call("GET", &format!("/v1/games/{id}/log"), None)
                .body;
            let parent = log["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|step| step["id"] == json!(replaced))
                .map(|step| step["parent"].clone())
                .expect("the replaced step is in the log");
            body["at"] = parent;
        }
        let answer = server.call("POST", &format!("/v1/games/{id}/apply"), Some(&body));
        let context = format!("{name}/{stem}: {:#}", answer.body);
        let outcome = if answer.status == StatusCode::OK {
            "committed"
        } else {
            "rejected"
        };
        assert!(matches!(answer.status.as_u16(), 200 | 422), "{context}");
        if let Some(expected) = expect["outcome"].as_str() {
            assert_eq!(outcome, expected, "{context}");
        }
        if answer.status == StatusCode::OK {
            committed.push((label.clone(), answer.body["step"].as_u64().unwrap()));
        }
        for kind in expect["errors"].as_array().into_iter().flatten() {
            assert!(
                kinds(&answer.body["errors"]).contains(&kind.as_str().unwrap().to_owned()),
                "{context}"
            );
        }
        for kind in expect["warnings"].as_array().into_iter().flatten() {
            assert!(
                kinds(&answer.body["warnings"]).contains(&kind.as_str().unwrap().to_owned()),
                "{context}"
            );
        }
        for kind in expect["diagnostics"].as_array().into_iter().flatten() {
            assert!(
                kinds(&answer.body["diagnostics"]).contains(&kind.as_str().unwrap().to_owned()),
                "{context}"
            );
        }
        if let Some(events) = expect["events"].as_array() {
            let names: Vec<&Json> = answer.body["events"]
                .as_array()
                .map(|events| events.iter().map(|event| &event["name"]).collect())
                .unwrap_or_default();
            assert_eq!(names, events.iter().collect::<Vec<_>>(), "{context}");
        }
        if let Some(min) = expect["min_score"].as_u64() {
            assert!(
                answer.body["report"]["score"].as_u64().unwrap() >= min,
                "{context}"
            );
        }
        if let Some(count) = expect["changes"].as_u64() {
            assert_eq!(
                answer.body["changes"].as_array().map(Vec::len),
                Some(count as usize),
                "{context}"
            );
        }
        let shown = server.call("GET", &format!("/v1/games/{id}"), None);
        assert_eq!(shown.status, StatusCode::OK, "{:?}", shown.body);
        let state = shown.body["state"].clone();
        for (pointer, expected) in expect["values"].as_object().into_iter().flatten() {
            assert!(
                same(state.pointer(pointer), expected),
                "{name}/{stem}: {pointer} in {state:#}"
            );
        }
        for pointer in expect["absent"].as_array().into_iter().flatten() {
            assert!(
                state.pointer(pointer.as_str().unwrap()).is_none(),
                "{name}/{stem}: {pointer}"
            );
        }
    }
}

#[test]
fn the_example_scenarios_play_through_http() {
    let server = Harness::sqlite(100);
    for name in ["fantasy", "romance", "rules"] {
        play(&server, name);
    }
}
