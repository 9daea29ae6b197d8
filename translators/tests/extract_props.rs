//! Property tests for the lenient layer.
//!
//! For any valid batch cut into blocks, each block wrapped in any way a model wraps JSON (bare, fences
//! of both kinds, labelled or not, tags in any case with attributes, tool calls) with prose, `{name}`
//! placeholders and `<think>` drafts around them, extraction returns exactly the batch. For any text at
//! all, extraction and the repair parser return without panicking and every span lies inside the text.
//! Cut anywhere, a reply yields a prefix of its batch: never an instruction completed with a guess.
//! Valid JSON is read exactly as `serde_json` reads it, with no repair: JSON text generated with every
//! number form, escape and whitespace, keys that repeat and deep nesting, where the integer `-0` (read
//! as `0`) is the one difference.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, BatchErrors, Instruction};
use statecraft_translators::internals::{parse_value, repair_json};
use statecraft_translators::{ExtractOptions, extract, jsonpatch};

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

/// JSON whitespace: any run of space, tab, line feed and carriage return.
fn whitespace() -> impl Strategy<Value = String> {
    "[ \t\n\r]{0,3}"
}

/// A JSON number as text: any sign, integer digits from one to forty (far beyond 64 bits), a
/// fraction, an exponent of either case and sign; and the zeros of every form.
fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?(0|[1-9][0-9]{0,39})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?",
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        prop::sample::select(vec!["0", "-0", "0.0", "-0.0", "0e0", "-0E-0", "-0.000e+12"])
            .prop_map(str::to_owned),
    ]
}

/// A JSON string as text: any character JSON allows unescaped, every short escape, `\u` escapes of
/// both cases outside the surrogates, and surrogate pairs.
fn string_text() -> impl Strategy<Value = String> {
    fn hex(unit: u32, upper: bool) -> String {
        if upper {
            format!("\\u{unit:04X}")
        } else {
            format!("\\u{unit:04x}")
        }
    }
    let part = prop_oneof![
        "[^\"\\\\\u{0}-\u{1f}]{1,4}",
        prop::sample::select(vec![
            "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"
        ])
        .prop_map(str::to_owned),
        (
            prop_oneof![0u32..0xD800, 0xE000u32..0x1_0000],
            any::<bool>()
        )
            .prop_map(|(unit, upper)| hex(unit, upper)),
        (0xD800u32..0xDC00, 0xDC00u32..0xE000, any::<bool>())
            .prop_map(|(high, low, upper)| format!("{}{}", hex(high, upper), hex(low, upper))),
    ];
    prop::collection::vec(part, 0..6).prop_map(|parts| format!("\"{}\"", parts.concat()))
}

/// Any JSON text: scalars, arrays and objects (keys that repeat, also through escapes) with any
/// whitespace between every token, up to six containers deep.
fn json_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(vec!["null", "true", "false"]).prop_map(str::to_owned),
        number_text(),
        string_text(),
    ];
    leaf.prop_recursive(6, 48, 5, |inner| {
        let key = prop_oneof![
            string_text(),
            prop::sample::select(vec!["\"a\"", "\"\\u0061\"", "\"\""]).prop_map(str::to_owned),
        ];
        let item = (whitespace(), inner.clone(), whitespace());
        let member = (
            whitespace(),
            key,
            whitespace(),
            whitespace(),
            inner,
            whitespace(),
        );
        prop_oneof![
            (whitespace(), prop::collection::vec(item, 0..5)).prop_map(|(space, items)| {
                let items: Vec<String> = items.into_iter().map(|(a, v, b)| a + &v + &b).collect();
                format!("[{space}{}]", items.join(","))
            }),
            (whitespace(), prop::collection::vec(member, 0..5)).prop_map(|(space, members)| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(a, k, b, c, v, d)| format!("{a}{k}{b}:{c}{v}{d}"))
                    .collect();
                format!("{{{space}{}}}", members.join(","))
            }),
        ]
    })
}

/// `json` as the repair parser reads it: the integer `-0` is the integer `0` (the parser reads
/// integers as 64-bit integers first, which have no negative zero). That is the one difference;
/// every other number, `-0.0` and `-0e0` included, keeps its exact text.
fn minus_zero_as_zero(json: Json) -> Json {
    match json {
        Json::Number(n) if n.to_string() == "-0" => json!(0),
        Json::Array(items) => Json::Array(items.into_iter().map(minus_zero_as_zero).collect()),
        Json::Object(map) => Json::Object(
            map.into_iter()
                .map(|(key, value)| (key, minus_zero_as_zero(value)))
                .collect(),
        ),
        other => other,
    }
}

/// A JSON Pointer of one to three segments, with `~` and `/` escaped inside keys.
fn pointer() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            key(),
            (0usize..5).prop_map(|n| n.to_string()),
            Just("-".to_owned()),
            Just("a/b~c".to_owned()),
        ],
        1..4,
    )
    .prop_map(|segments| {
        segments
            .iter()
            .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
            .collect()
    })
}

/// One RFC 6902 operation.
fn patch_operation() -> impl Strategy<Value = Json> {
    prop_oneof![
        (
            prop::sample::select(vec!["add", "replace", "test"]),
            pointer(),
            value()
        )
            .prop_map(|(op, path, value)| json!({"op": op, "path": path, "value": value})),
        pointer().prop_map(|path| json!({"op": "remove", "path": path})),
        (
            prop::sample::select(vec!["move", "copy"]),
            pointer(),
            pointer()
        )
            .prop_map(|(op, from, path)| json!({"op": op, "from": from, "path": path})),
    ]
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

/// One instruction's canonical form and what strict decoding reads from it: the RFC 6902 document
/// for a JSON Patch op (its paths are pointers there), the instruction list for the rest.
fn decoded_again(instruction: &Instruction) -> (Json, Result<Batch, BatchErrors>) {
    let single = Batch::new(vec![instruction.clone()]);
    let json = if instruction.op.is_json_patch() {
        jsonpatch::from_batch(&single).expect("a JSON Patch op has a patch form")
    } else {
        single.to_json()
    };
    let again = Batch::from_json(&json);
    (json, again)
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
    #![proptest_config(ProptestConfig {
        cases: 256,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, so a failure seen once, in CI or anywhere, is reproduced by every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

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
    fn any_json_text_is_read_exactly_as_serde_json_reads_it(
        lead in whitespace(),
        body in json_text(),
        trail in whitespace(),
        nesting in 0usize..100,
    ) {
        // Up to a hundred arrays around it: serde_json reads 128 levels, the parser 256.
        let body = format!("{}{body}{}", "[".repeat(nesting), "]".repeat(nesting));
        let text = format!("{lead}{body}{trail}");
        let json: Json = match serde_json::from_str(&text) {
            Ok(json) => json,
            Err(error) => return Err(TestCaseError::fail(format!("the generator wrote invalid JSON ({error}): {text}"))),
        };
        let parsed = parse_value(&text, 0);
        prop_assert_eq!(parsed.to_json(), Some(minus_zero_as_zero(json)), "{}", text);
        prop_assert!(parsed.repairs.is_empty(), "{}: {:?}", text, parsed.repairs);
        prop_assert_eq!(parsed.span, lead.len()..lead.len() + body.len(), "{}", text);
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
    fn json_patch_documents_extract_and_decode_again(
        operations in prop::collection::vec(patch_operation(), 1..5),
        style in 0usize..8,
        pretty in any::<bool>(),
    ) {
        // A JSON Patch document in any wrapping is read as its ops, and each op's patch form
        // (pointers, not lists) decodes strictly to exactly that op.
        let expected = Batch::from_json(&Json::Array(operations.clone())).expect("generated documents are valid");
        let reply = format!("Patch:\n{}\n", wrap(&operations, style | 1, pretty));
        let extraction = extract(&reply, &ExtractOptions::default());
        prop_assert_eq!(&extraction.batch, &expected, "{}", reply);
        for instruction in &extraction.batch.instructions {
            let (json, again) = decoded_again(instruction);
            prop_assert_eq!(again, Ok(Batch::new(vec![instruction.clone()])), "{}\n{}", reply, json);
        }
    }

    #[test]
    fn json_shaped_noise_extracts_without_panicking(
        tokens in prop::collection::vec(prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", "\"", "'", "op", "\"op\"", "\"assign\"", "\"path\"", "\"a.b\"", "1", "8",
            "true", "None", "//", "/*", "*/", "#", "\n", " ", "```", "~~~", "<tool_call>", "</tool_call>",
            "<think>", "</think>", "_.set(", ")", ";", "\\", "“", "”", "...",
            "\"value\"", "\"replace\"", "\"add\"", "\"move\"", "\"from\"", "\"/a/0\"", "\"a/b\"", "\"/-\"",
        ]), 0..60),
    ) {
        let text: String = tokens.concat();
        let extraction = extract(&text, &ExtractOptions::default());
        for diagnostic in &extraction.diagnostics {
            prop_assert!(diagnostic.span.end <= text.len());
        }
        // Whatever was read decodes again, instruction by instruction, to exactly what was read.
        for instruction in &extraction.batch.instructions {
            let (json, again) = decoded_again(instruction);
            prop_assert_eq!(again, Ok(Batch::new(vec![instruction.clone()])), "{}\n{}", text, json);
        }
    }
}
