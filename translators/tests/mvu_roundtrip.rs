//! Round trip: for any batch MVU can express, instructions → MVU text → instructions gives the batch
//! back, and a second round gives the same text.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value as Json};
use statecraft_engine::{Batch, Instruction, Op, Path, Segment, Value};
use statecraft_translators::Severity;
use statecraft_translators::mvu::{self, MvuOptions};

/// Keys MVU paths can hold: no `.`, `[`, `]`, quotes, backslash, line breaks, not empty, and no
/// leading `/` (which would read as a JSON Pointer).
fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_\\-$<>{} 悠纪好感度背包]{1,6}".prop_filter("not a pointer", |k| !k.starts_with('/'))
}

fn path() -> impl Strategy<Value = Path> {
    (
        key(),
        prop::collection::vec(
            prop_oneof![
                key().prop_map(|k| Segment::key(&k)),
                (0usize..20).prop_map(Segment::Index)
            ],
            0..3,
        ),
    )
        .prop_map(|(first, rest)| {
            let mut segments = vec![Segment::key(&first)];
            segments.extend(rest);
            Path::from(segments)
        })
}

fn json() -> impl Strategy<Value = Json> {
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<u64>().prop_map(Json::from),
        // Integers beyond 64 bits, which statecraft keeps exactly.
        "-?[1-9][0-9]{20,40}".prop_map(|digits| Json::Number(digits.parse().unwrap())),
        // Floats beyond a double's range, which JSON text holds and statecraft keeps.
        "-?[1-9](\\.[0-9]{1,3})?e[+-]?[4-9][0-9]{2}"
            .prop_map(|digits| Json::Number(digits.parse().unwrap())),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Json::Number)),
        any::<String>().prop_map(Json::String),
        "[\"'`\\\\/(),;\\n{}\\[\\]<>]{0,8}".prop_map(Json::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            prop::collection::vec((any::<String>(), inner), 0..4)
                .prop_map(|entries| Json::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn number() -> impl Strategy<Value = Json> {
    prop_oneof![
        any::<i64>().prop_map(Json::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Json::Number)),
    ]
}

fn reason() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z0-9悠纪()';\"/][a-z0-9 悠纪()';\"/]{0,8}[a-z0-9悠纪]")
}

fn instruction() -> impl Strategy<Value = Instruction> {
    let operation = prop_oneof![
        (path(), json(), prop::option::of(json())).prop_map(|(p, v, old)| {
            let i = Instruction::assign(p, Value::from_json(&v));
            match old {
                Some(old) => i.with_old(Value::from_json(&old)),
                None => i,
            }
        }),
        (path(), number())
            .prop_map(|(p, n)| Instruction::new(Op::Increment, p).with_value(Value::from_json(&n))),
        path().prop_map(|p| Instruction::new(Op::Delete, p)),
        (path(), json())
            .prop_map(|(p, v)| Instruction::new(Op::Push, p).with_value(Value::from_json(&v))),
        (path(), -5i64..20, json()).prop_map(|(p, start, v)| {
            Instruction::new(Op::Splice, p).with_value(Value::from_json(
                &serde_json::json!({"start": start, "deleteCount": 0, "items": [v]}),
            ))
        }),
    ];
    (operation, reason()).prop_map(|(i, r)| match r {
        Some(r) => i.with_reason(r),
        None => i,
    })
}

/// Text an MVU reply might hold: well-formed commands with paths and arguments of every quoting,
/// broken ones, and noise made of the characters the scanner cares about, one piece a line.
fn command_like_text() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec![
        "_.set(",
        "_.add(",
        "_.insert(",
        "_.remove(",
        "_.set (",
        "_.assign(",
    ]);
    let path = prop_oneof![
        "'[a-z好]{1,3}(\\.[a-z0-9]{1,3}){0,2}(\\[[0-9]\\])?'",
        "\"[a-z好]{1,3}(\\.[a-z]{1,3}){0,2}\"",
        "`[a-z]{1,3}`",
    ];
    let argument = prop::sample::select(vec![
        "1",
        "-2.5",
        "1e3",
        "'x'",
        "\"y\"",
        "'it\\'s'",
        "[1, 'a']",
        "{\"k\": 1}",
        "{k: 'v'}",
        "null",
        "true",
        "`t`",
        "2 + 3",
        "'好'",
    ]);
    let command = (
        name,
        path,
        prop::collection::vec(argument, 0..3),
        prop::option::of("[a-z 好]{0,6}"),
        any::<bool>(),
    )
        .prop_map(|(name, path, arguments, reason, closed)| {
            let mut text = format!("{name}{path}");
            for argument in arguments {
                text.push_str(", ");
                text.push_str(argument);
            }
            if closed {
                text.push_str(");");
            }
            if let Some(reason) = reason {
                text.push_str("//");
                text.push_str(&reason);
            }
            text
        });
    let noise =
        "(_\\.(set|add|insert|remove)\\(|['\"`\\\\(),;\\[\\]{}/ ]|[a-z0-9.<>\\-+*%好]|//){0,20}";
    prop::collection::vec(prop_oneof![3 => command, 1 => noise], 0..6)
        .prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        // A failing case is saved beside this file (`*.proptest-regressions`, committed) and run first
        // from then on, so a failure seen once, in CI or anywhere, is reproduced by every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn expressible_batches_survive_the_round_trip(instructions in prop::collection::vec(instruction(), 0..6)) {
        let batch = Batch::new(instructions);
        let (text, emitted) = mvu::to_text(&batch);
        prop_assert!(emitted.is_empty(), "{emitted:?}");
        let first = mvu::from_text(&text, &MvuOptions::default());
        prop_assert!(first.diagnostics.iter().all(|d| d.severity != Severity::Error), "{text}\n{:?}", first.diagnostics);
        prop_assert_eq!(&first.instructions, &batch.instructions, "{}", text);
        let (again, _) = mvu::to_text(&Batch::new(first.instructions.clone()));
        prop_assert_eq!(&again, &text);
        let second = mvu::from_text(&again, &MvuOptions::default());
        prop_assert_eq!(second.instructions, first.instructions);
    }

    #[test]
    fn translation_never_panics_on_any_text(text in any::<String>()) {
        let _ = mvu::from_text(&text, &MvuOptions::default());
    }

    #[test]
    fn command_like_text_translates_and_writes_back(text in command_like_text()) {
        let translation = mvu::from_text(&text, &MvuOptions::default());
        for diagnostic in &translation.diagnostics {
            prop_assert!(diagnostic.span.end <= text.len() && diagnostic.span.start <= diagnostic.span.end);
            prop_assert!(text.is_char_boundary(diagnostic.span.start) && text.is_char_boundary(diagnostic.span.end));
        }
        // Whatever was read writes back as MVU text; when nothing is reported lost, that text reads
        // back as the same instructions (the fuzz target `mvu` checks the same on any bytes).
        let batch = Batch::new(translation.instructions);
        let (written, emitted) = mvu::to_text(&batch);
        if emitted.is_empty() {
            let read = mvu::from_text(&written, &MvuOptions::default());
            prop_assert!(read.diagnostics.iter().all(|d| d.severity != Severity::Error), "{}\n{:?}", written, read.diagnostics);
            prop_assert_eq!(&read.instructions, &batch.instructions, "{}", written);
            let (again, _) = mvu::to_text(&Batch::new(read.instructions));
            prop_assert_eq!(again, written);
        }
    }
}

#[test]
fn integers_beyond_64_bits_are_read_exactly() {
    // Numbers keep their exact value everywhere (docs/numbers-and-keys.md), in MVU text too: as a
    // bare argument, inside a JavaScript literal, and in YAML's flow forms.
    let text = "_.set('a', 123456789012345678901234567890);\n\
                _.set('b', [-123456789012345678901234567890]);\n\
                _.set('c', {x: 18446744073709551616, y: z});\n";
    let read = mvu::from_text(text, &MvuOptions::default());
    let values: Vec<Json> = read
        .instructions
        .iter()
        .map(|i| i.value.as_ref().unwrap().to_json())
        .collect();
    let exact = |digits: &str| Json::Number(digits.parse().unwrap());
    assert_eq!(
        values,
        vec![
            exact("123456789012345678901234567890"),
            Json::Array(vec![exact("-123456789012345678901234567890")]),
            serde_json::json!({"x": exact("18446744073709551616"), "y": "z"}),
        ]
    );
}

#[test]
fn floats_beyond_a_doubles_range_are_read_exactly() {
    // `1e400` is a JSON number that statecraft keeps; MVU text writes it as such, so it must read
    // back as that number, not as the text "1e+400" (and an `_.add` of it must not be skipped).
    let text = "_.set('a', 1e400);\n_.add('b', -2.5E+400);\n_.set('c', {x: 1e-400, y: z});\n";
    let read = mvu::from_text(text, &MvuOptions::default());
    let values: Vec<Json> = read
        .instructions
        .iter()
        .map(|i| i.value.as_ref().unwrap().to_json())
        .collect();
    let exact = |digits: &str| Json::Number(digits.parse().unwrap());
    assert_eq!(
        values,
        vec![
            exact("1e400"),
            exact("-2.5E+400"),
            serde_json::json!({"x": exact("1e-400"), "y": "z"}),
        ]
    );
}
