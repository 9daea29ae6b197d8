//! Property tests for the lenient layer.
//!
//! For any valid batch cut into blocks, each block wrapped in any way a model wraps JSON (bare, fences
//! of both kinds, labelled or not, tags in any case with attributes, tool calls) with prose, `{name}`
//! placeholders and `<think>` drafts around them, extraction returns exactly the batch. For any text at
//! all, extraction and the repair parser return without panicking and every span lies inside the text.
//! Cut anywhere, a reply yields a prefix of its batch: never an instruction completed with a guess.
//! Valid JSON is read exactly as `serde_json` reads it, with no repair.

use proptest::prelude::*;
use serde_json::{Value as Json, json};
use statecraft_engine::Batch;
use statecraft_translators::internals::{parse_value, repair_json};
use statecraft_translators::{ExtractOptions, extract};

/// Strings that cannot close a fence or a tag early: no backtick, tilde or `<`.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 _.,:;!?'\"\\\\/{}\\[\\]-]{0,12}",
        "[\u{4e00}-\u{4e20}\u{e9}\u{fc}\u{1f600}]{0,4}",
        Just("x.y".to_owned()),
        Just(String::new()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    text().prop_filter("forbidden segments are refused by the engine", |k| {
        !matches!(k.as_str(), "__proto__" | "constructor" | "prototype")
    })
}

fn leaf() -> impl Strategy<Value = Json> {
    prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1000i32..1000).prop_map(|n| json!(f64::from(n) / 4.0)),
        text().prop_map(Json::String),
    ]
}

fn value() -> impl Strategy<Value = Json> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Json::Object(m.into_iter().collect())),
        ]
    })
}

fn path(min: usize) -> impl Strategy<Value = Json> {
    prop::collection::vec(
        prop_oneof![
            key().prop_map(Json::String),
            (0usize..5).prop_map(|n| json!(n))
        ],
        min..4,
    )
    .prop_map(Json::Array)
}

fn instruction() -> impl Strategy<Value = Json> {
    prop_oneof![
        (path(1), value(), prop::option::of(value()), prop::option::of(text())).prop_map(|(path, value, old, reason)| {
            let mut i = json!({"op": "assign", "path": path, "value": value});
            if let Some(old) = old {
                i["old"] = old;
            }
            if let Some(reason) = reason {
                i["reason"] = Json::String(reason);
            }
            i
        }),
        (path(1), value()).prop_map(|(path, value)| json!({"op": "push", "path": path, "value": value})),
        (path(0), prop::collection::btree_map(key(), value(), 0..3))
            .prop_map(|(path, map)| json!({"op": "merge", "path": path, "value": Json::Object(map.into_iter().collect())})),
        path(1).prop_map(|path| json!({"op": "delete", "path": path})),
        (path(1), -100i64..100).prop_map(|(path, n)| json!({"op": "increment", "path": path, "value": n})),
    ]
}

const PROSE: [&str; 7] = [
    "The goblin strikes.",
    "Use the {name} template, {player}.",
    "Stats [sic] change now:",
    "你好，旅行者。",
    "It costs {gold} coins (see below)",
    "",
    "Done!",
];

/// Wraps one block of instructions as a model might.
fn wrap(block: &[Json], style: usize, pretty: bool) -> String {
    let body = if block.len() == 1 && style % 2 == 0 {
        block[0].to_string()
    } else if pretty {
        serde_json::to_string_pretty(&Json::Array(block.to_vec())).unwrap_or_default()
    } else {
        Json::Array(block.to_vec()).to_string()
    };
    match style {
        0 | 1 => body,
        2 => format!("```json\n{body}\n```"),
        3 => format!("```\n{body}\n```"),
        4 => format!("~~~JSON\n{body}\n~~~"),
        5 => format!("<UpdateVariable type=\"state\">\n{body}\n</UpdateVariable>"),
        6 => format!("<updatevariable>{body}</UPDATEVARIABLE>"),
        7 => format!(
            "<tool_call>\n{}\n</tool_call>",
            json!({"name": "update_state", "arguments": {"instructions": Json::Array(block.to_vec())}})
        ),
        _ => format!("```json\n{body}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_valid_batch_in_any_wrapping_extracts_exactly(
        instructions in prop::collection::vec(instruction(), 1..6),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        styles in prop::collection::vec(0usize..9, 4),
        prose in prop::collection::vec(0usize..PROSE.len(), 5),
        think in any::<bool>(),
        pretty in any::<bool>(),
    ) {
        let expected = Batch::from_json(&Json::Array(instructions.clone())).expect("generated batches are valid");
        let mut bounds: Vec<usize> = cuts.iter().map(|i| i.index(instructions.len())).collect();
        bounds.push(0);
        bounds.push(instructions.len());
        bounds.sort_unstable();
        bounds.dedup();
        let mut reply = String::new();
        if think {
            reply.push_str("<think>\nDraft: {\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 1}\n</think>\n");
        }
        let blocks: Vec<&[Json]> = bounds.windows(2).map(|w| &instructions[w[0]..w[1]]).filter(|b| !b.is_empty()).collect();
        for (index, block) in blocks.iter().enumerate() {
            reply.push_str(PROSE[prose[index % prose.len()]]);
            reply.push('\n');
            // An unclosed fence only makes sense for the last block.
            let mut style = styles[index % styles.len()];
            if style == 8 && index + 1 != blocks.len() {
                style = 2;
            }
            reply.push_str(&wrap(block, style, pretty));
            reply.push('\n');
        }
        if styles[0] != 8 || blocks.len() > 1 {
            reply.push_str(PROSE[prose[4]]);
        }
        let extraction = extract(&reply, &ExtractOptions::default());
        prop_assert!(extraction.valid, "{reply}\n{:#?}", extraction.diagnostics);
        prop_assert_eq!(extraction.batch.to_json(), expected.to_json(), "{}", reply);
    }

    #[test]
    fn cut_output_never_yields_a_guessed_instruction(
        instructions in prop::collection::vec(instruction(), 1..5),
        cut in any::<prop::sample::Index>(),
        style in 0usize..9,
        pretty in any::<bool>(),
    ) {
        // Whatever byte the output stops at, the instructions read are a prefix of the batch: a cut
        // instruction is dropped, never completed with a guess (`8` cut from `80`).
        let expected = Batch::from_json(&Json::Array(instructions.clone())).expect("generated batches are valid");
        let reply = format!("Here you go:\n{}", wrap(&instructions, style, pretty));
        let mut at = cut.index(reply.len() + 1);
        while !reply.is_char_boundary(at) {
            at -= 1;
        }
        let extraction = extract(&reply[..at], &ExtractOptions::default());
        let got = &extraction.batch.instructions;
        prop_assert!(got.len() <= expected.len(), "{}", &reply[..at]);
        prop_assert_eq!(&got[..], &expected.instructions[..got.len()], "{}", &reply[..at]);
    }

    #[test]
    fn valid_json_is_read_exactly_as_serde_json_reads_it(json in value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&json).unwrap_or_default()
        } else {
            serde_json::to_string(&json).unwrap_or_default()
        };
        let parsed = parse_value(&text, 0);
        prop_assert_eq!(parsed.to_json(), Some(json), "{}", text);
        prop_assert!(parsed.repairs.is_empty(), "{}: {:?}", text, parsed.repairs);
        prop_assert_eq!(parsed.span, 0..text.len());
    }

    #[test]
    fn any_text_extracts_without_panicking(text in "(?s).{0,200}") {
        let extraction = extract(&text, &ExtractOptions::default());
        for diagnostic in &extraction.diagnostics {
            prop_assert!(diagnostic.span.start <= diagnostic.span.end && diagnostic.span.end <= text.len());
        }
        prop_assert!(extraction.report.score <= 100);
        let _ = repair_json(&text);
        for start in [0, text.len() / 2] {
            if text.is_char_boundary(start) {
                let parsed = parse_value(&text, start);
                prop_assert!(parsed.span.end <= text.len());
                for repair in &parsed.repairs {
                    prop_assert!(repair.span.start <= repair.span.end && repair.span.end <= text.len());
                }
            }
        }
    }

    #[test]
    fn json_shaped_noise_extracts_without_panicking(
        tokens in prop::collection::vec(prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "\"", "'", "op", "\"op\"", "\"assign\"", "\"path\"", "\"a.b\"", "1", "8",
            "true", "None", "//", "/*", "*/", "#", "\n", " ", "```", "~~~", "<tool_call>", "</tool_call>",
            "<think>", "</think>", "_.set(", ")", ";", "\\", "“", "”", "...",
        ]), 0..60),
    ) {
        let text: String = tokens.concat();
        let extraction = extract(&text, &ExtractOptions::default());
        for diagnostic in &extraction.diagnostics {
            prop_assert!(diagnostic.span.end <= text.len());
        }
        // Whatever was read decodes again as a batch.
        let json = extraction.batch.to_json();
        prop_assert!(json.as_array().is_some());
    }
}
