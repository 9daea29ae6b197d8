//! Round trip: for any batch MVU can express, instructions → MVU text → instructions gives the batch
//! back, and a second round gives the same text.

use proptest::prelude::*;
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

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
    fn translation_never_panics_on_command_like_text(text in "(_\\.(set|add|insert|remove)\\(|['\"`\\\\(),;\\[\\]{}/ ]|[a-z0-9.<>\\-+*%]|\n|//){0,40}") {
        let translation = mvu::from_text(&text, &MvuOptions::default());
        for diagnostic in &translation.diagnostics {
            prop_assert!(diagnostic.span.end <= text.len() && diagnostic.span.start <= diagnostic.span.end);
        }
    }
}
