//! Embedding statecraft in a Rust program: read a model reply, apply it atomically, keep snapshots,
//! undo and redo, roll back a regenerated message, and serve `callback` instructions from Rust.
//!
//! Run with `cargo run -p statecraft --example embed`. Every step asserts what it shows, so the example
//! fails loudly if the library stops behaving as described.

use serde_json::json;
use statecraft_engine::{
    ApplyOptions, Batch, CallbackCall, CallbackHandler, HandlerError, HostEvent, Instruction, Op,
    Outcome, Path, Response, Store, Value,
};
use statecraft_translators::{ExtractOptions, extract};

/// A host-side handler written in Rust instead of Lua: `heal(amount)` raises hp without passing
/// `max_hp`, and tells the front end what happened. It reads the state as it stands at that point of
/// the batch and answers with instructions, which the engine validates and runs in the same batch.
#[derive(Debug, Default)]
struct Healer {
    calls: usize,
}

impl CallbackHandler for Healer {
    fn call(&mut self, call: CallbackCall<'_>) -> Result<Response, HandlerError> {
        if call.name != "heal" {
            return Err(HandlerError::Unknown);
        }
        self.calls += 1;
        let number = |path: &[&str]| -> Result<i64, HandlerError> {
            let mut cursor = call.state;
            for key in path {
                cursor = cursor
                    .as_object()
                    .and_then(|object| object.get(*key))
                    .ok_or_else(|| {
                        HandlerError::Failed(format!("heal: the state has no {}", path.join(".")))
                    })?;
            }
            cursor.as_number().and_then(|n| n.as_i64()).ok_or_else(|| {
                HandlerError::Failed(format!("heal: {} is not an integer", path.join(".")))
            })
        };
        let amount = call
            .args
            .first()
            .and_then(|a| a.as_number())
            .and_then(|n| n.as_i64())
            .ok_or_else(|| HandlerError::Failed("heal needs an integer amount".to_owned()))?;
        let (hp, max) = (number(&["player", "hp"])?, number(&["player", "max_hp"])?);
        let healed = (hp + amount).min(max);
        Ok(Response {
            value: Some(Value::from(healed)),
            instructions: vec![
                Instruction::assign(Path::from(vec!["player".into(), "hp".into()]), healed)
                    .with_reason("healed"),
            ],
            events: vec![HostEvent {
                name: "message".to_owned(),
                payload: Value::from(format!("+{} hp", healed - hp).as_str()),
            }],
        })
    }
}

fn main() {
    let state = Value::from(json!({"player": {"hp": 30, "max_hp": 40, "gold": 10}}));
    let mut store = Store::builder(state)
        .handler(Healer::default())
        .build()
        .expect("no schema to violate");
    let hp = |store: &Store| {
        store
            .get(&Path::from(vec!["player".into(), "hp".into()]))
            .cloned()
    };

    // 1. A raw model reply: prose, a fence, a trailing comma and a dotted path. The extractor repairs it
    //    and reports every repair; the score says how clean the text was.
    let reply = "The goblin hits you!\n```json\n[{\"op\": \"increment\", \"path\": \"player.hp\", \"value\": -12},]\n```";
    let extraction = extract(reply, &ExtractOptions::default());
    println!(
        "read {} instruction(s), repair score {}",
        extraction.batch.len(),
        extraction.report.score
    );
    for diagnostic in &extraction.diagnostics {
        println!(
            "  {}:{} {} [{}]",
            diagnostic.line, diagnostic.column, diagnostic.message, diagnostic.kind
        );
    }
    // The batch comes with the options the reply calls for (MVU text runs with `old_mismatch = warn`),
    // or not at all when the reply holds an invalid instruction.
    let (batch, options) = extraction
        .applicable()
        .expect("the repaired reply is valid");

    // 2. A snapshot is an O(1) copy that never sees later changes.
    let before = store.snapshot();
    let options = ApplyOptions {
        label: Some("msg-1".to_owned()),
        ..options
    };
    let Outcome::Committed(commit) = store.apply_with(batch, &options) else {
        panic!("the repaired reply applies")
    };
    for change in commit.changes.iter() {
        let show = |v: &Option<Value>| {
            v.as_ref()
                .map_or_else(|| "(none)".to_owned(), ToString::to_string)
        };
        println!(
            "  {}: {} -> {}",
            change.path,
            show(&change.old),
            show(&change.new)
        );
    }
    assert_eq!(hp(&store), Some(Value::from(18)));
    assert_eq!(before.value().to_json()["player"]["hp"], json!(30));

    // 3. A rejected batch is a normal outcome: nothing changes and the errors say what and where.
    let stale = Batch::new(vec![
        Instruction::assign(Path::from(vec!["player".into(), "gold".into()]), 99).with_old(0),
    ]);
    match store.apply(&stale) {
        Outcome::Rejected(rejection) => {
            for error in &rejection.errors {
                println!("rejected: {error}");
            }
        }
        Outcome::Committed(_) => panic!("a stale old value must be rejected"),
    }
    assert_eq!(hp(&store), Some(Value::from(18)));

    // 4. A callback served by the Rust handler above; its event arrives only because the batch committed.
    let heal = Batch::new(vec![
        Instruction::new(Op::Callback, Path::from(vec!["heal".into()]))
            .with_value(Value::from(json!([50]))),
    ]);
    let label = ApplyOptions {
        label: Some("msg-2".to_owned()),
        ..ApplyOptions::default()
    };
    let Outcome::Committed(commit) = store.apply_with(&heal, &label) else {
        panic!("heal applies")
    };
    println!(
        "events: {:?}",
        commit
            .events
            .iter()
            .map(|e| format!("{} {}", e.name, e.payload))
            .collect::<Vec<_>>()
    );
    assert_eq!(hp(&store), Some(Value::from(40)));

    // 5. Undo and redo cost the size of the step, not of the state.
    store.undo().expect("the history fits the state");
    assert_eq!(hp(&store), Some(Value::from(18)));
    store.redo().expect("the history fits the state");
    assert_eq!(hp(&store), Some(Value::from(40)));

    // 6. The user regenerates message 2: roll back every step after message 1, then apply the new reply.
    let undone = store
        .undo_to("msg-1")
        .expect("the history fits the state")
        .expect("msg-1 is in the history");
    println!("undo_to(msg-1) rolled back {undone} step(s)");
    assert_eq!(hp(&store), Some(Value::from(18)));
    println!("final state: {}", store.state());
}
