//! Golden views of the examples' states: the whole state and a budget of half of it, in both formats,
//! each with its token counts by the estimator. `UPDATE_EXPECT=1 cargo test -p statecraft-prompt
//! --test view` rewrites `tests/view/*.txt`; review the diff.

use std::path::PathBuf;

use serde_json::Value as Json;
use statecraft_prompt::{ViewFormat, ViewOptions, estimate_tokens, view};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn read_json(path: &PathBuf) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An example's state and schema (the MVU card's state from the card).
fn example(name: &str) -> (Json, Option<Json>) {
    let folder = examples().join(name);
    let state = folder.join("state.json");
    if state.exists() {
        let schema = folder.join("schema.json");
        return (
            read_json(&state),
            schema.exists().then(|| read_json(&schema)),
        );
    }
    let bytes = std::fs::read(folder.join("card.json")).unwrap();
    let card = statecraft_translators::card::read(&bytes, &Default::default()).unwrap();
    (card.state, None)
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/view")
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
fn golden_views_of_the_examples() {
    for name in ["fantasy", "romance", "rules", "timeline", "mvu-card"] {
        let (state, schema) = example(name);
        for (format, suffix) in [(ViewFormat::Json, "json"), (ViewFormat::Compact, "compact")] {
            let whole = view(
                &state,
                schema.as_ref(),
                &ViewOptions {
                    format,
                    ..ViewOptions::default()
                },
            );
            let budget = whole.full_tokens / 2;
            let half = view(
                &state,
                schema.as_ref(),
                &ViewOptions {
                    format,
                    budget: Some(budget),
                    ..ViewOptions::default()
                },
            );
            assert!(half.tokens <= budget, "{name} {suffix}");
            assert_eq!(half.tokens, estimate_tokens(&half.text));
            let text = format!(
                "whole: {} tokens\n{}\n\nbudget {budget}: {} tokens\n{}\n",
                whole.tokens, whole.text, half.tokens, half.text
            );
            golden(&format!("{name}.{suffix}.txt"), &text);
        }
    }
}
