//! Sync against a model (docs/timeline.md, "Chats as the source of truth"): random chat actions of a
//! front end (append a reply, add a swipe, switch swipes, delete a swipe, edit any reply, delete any
//! message, truncate, branch into a new chat and switch chats), each followed by a sync of the shown
//! path; after every sync the game's state must be what folding the shown replies over the initial
//! state gives, computed here without the engine. Replies are real text (prose and a JSON fence) read
//! by the extractor; some are refused, some call a Lua callback, and a Lua `after` hook counts every
//! committed reply inside the same batch, so reuse, re-application and refusals all show in the state.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value as Json, json};
use statecraft_engine::{Limits, Store, SyncOptions, SyncReply, Value};
use statecraft_scripts::LuaHandlers;
use statecraft_translators::{ExtractOptions, ExtractReader};

/// `double` doubles the gold; the `after` hook counts committed replies in `turns`.
const SCRIPT: &str = r#"
on("double", function(ctx)
    ctx.emit({op = "assign", path = "gold", value = ctx.get("gold") * 2})
end)
after(function(ctx, changes)
    ctx.emit({op = "increment", path = "turns", value = 1})
end)
"#;

/// What a reply does.
#[derive(Clone, Copy, Debug)]
enum Effect {
    Add(i64),
    Push(i64),
    Double,
    /// Deletes a path that does not exist: refused.
    Refused,
}

/// A reply: its effect and a nonce that makes its text its own.
#[derive(Clone, Copy, Debug)]
struct Reply {
    effect: Effect,
    nonce: u32,
}

impl Reply {
    fn text(&self) -> String {
        let batch = match self.effect {
            Effect::Add(n) => json!([{"op": "increment", "path": ["gold"], "value": n}]),
            Effect::Push(n) => json!([{"op": "push", "path": ["log"], "value": n}]),
            Effect::Double => json!([{"op": "callback", "path": ["double"]}]),
            Effect::Refused => json!([{"op": "delete", "path": ["nothing", "here"]}]),
        };
        format!("Reply {}.\n```json\n{batch}\n```\n", self.nonce)
    }
}

#[derive(Clone, Debug)]
struct Message {
    swipes: Vec<Reply>,
    shown: usize,
}

#[derive(Clone, Debug)]
enum Action {
    Append(Reply),
    NewSwipe(Reply),
    SwitchSwipe(usize),
    DeleteSwipe,
    Edit(usize, Reply),
    Delete(usize),
    Truncate(usize),
    Branch(usize),
    SwitchChat(usize),
}

fn reply() -> impl Strategy<Value = Reply> {
    let effect = prop_oneof![
        4 => (-5i64..20).prop_map(Effect::Add),
        2 => (0i64..9).prop_map(Effect::Push),
        1 => Just(Effect::Double),
        1 => Just(Effect::Refused),
    ];
    (effect, 0u32..1_000_000).prop_map(|(effect, nonce)| Reply { effect, nonce })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        5 => reply().prop_map(Action::Append),
        2 => reply().prop_map(Action::NewSwipe),
        2 => (0usize..4).prop_map(Action::SwitchSwipe),
        1 => Just(Action::DeleteSwipe),
        2 => (0usize..40, reply()).prop_map(|(at, reply)| Action::Edit(at, reply)),
        1 => (0usize..40).prop_map(Action::Delete),
        1 => (0usize..40).prop_map(Action::Truncate),
        1 => (0usize..40).prop_map(Action::Branch),
        1 => (0usize..4).prop_map(Action::SwitchChat),
    ]
}

/// Applies an action to the chats (the active one is `active`), as a front end would.
fn act(chats: &mut Vec<Vec<Message>>, active: &mut usize, action: &Action) {
    let chat = &mut chats[*active];
    match action {
        Action::Append(reply) => chat.push(Message {
            swipes: vec![*reply],
            shown: 0,
        }),
        Action::NewSwipe(reply) => {
            if let Some(last) = chat.last_mut() {
                last.swipes.push(*reply);
                last.shown = last.swipes.len() - 1;
            }
        }
        Action::SwitchSwipe(to) => {
            if let Some(last) = chat.last_mut() {
                last.shown = to % last.swipes.len();
            }
        }
        Action::DeleteSwipe => {
            if let Some(last) = chat.last_mut()
                && last.swipes.len() > 1
            {
                last.swipes.remove(last.shown);
                last.shown = last.shown.min(last.swipes.len() - 1);
            }
        }
        Action::Edit(at, reply) => {
            if !chat.is_empty() {
                let len = chat.len();
                let message = &mut chat[at % len];
                message.swipes[message.shown] = *reply;
            }
        }
        Action::Delete(at) => {
            if !chat.is_empty() {
                let len = chat.len();
                chat.remove(at % len);
            }
        }
        Action::Truncate(to) => {
            let keep = to % (chat.len() + 1);
            chat.truncate(keep);
        }
        Action::Branch(at) => {
            let keep = at % (chat.len() + 1);
            let branch = chat[..keep].to_vec();
            chats.push(branch);
            *active = chats.len() - 1;
        }
        Action::SwitchChat(to) => *active = to % chats.len(),
    }
}

/// The state the shown replies make, folded without the engine.
fn fold(chat: &[Message]) -> Json {
    let (mut gold, mut log, mut turns) = (0i64, Vec::new(), 0i64);
    for message in chat {
        match message.swipes[message.shown].effect {
            Effect::Add(n) => gold += n,
            Effect::Push(n) => log.push(n),
            Effect::Double => gold *= 2,
            Effect::Refused => continue,
        }
        turns += 1;
    }
    json!({"gold": gold, "log": log, "turns": turns})
}

fn store() -> Store {
    let limits = Limits::default();
    let handlers = LuaHandlers::from_sources([("rules.lua", SCRIPT)], &limits).expect("loads");
    Store::builder(Value::from(json!({"gold": 0, "log": [], "turns": 0})))
        .handler(handlers)
        .limits(limits)
        .build()
        .expect("no schema")
}

fn sync(store: &mut Store, chat: &[Message]) -> statecraft_engine::Synced {
    let texts: Vec<String> = chat
        .iter()
        .map(|message| message.swipes[message.shown].text())
        .collect();
    let path: Vec<SyncReply<'_>> = texts.iter().map(|text| SyncReply::Text(text)).collect();
    let mut reader = ExtractReader::new(ExtractOptions::default());
    store
        .sync(&path, &SyncOptions::default(), &mut reader)
        .expect("a path of texts always syncs")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        // A failing case is saved beside this file and replayed first on every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_chat_action_then_a_sync_gives_the_state_of_the_shown_replies(
        actions in prop::collection::vec(action(), 1..40),
    ) {
        let mut store = store();
        let mut chats = vec![Vec::new()];
        let mut active = 0;
        for (number, action) in actions.iter().enumerate() {
            act(&mut chats, &mut active, action);
            let chat = &chats[active];
            let synced = sync(&mut store, chat);
            prop_assert!(synced.stopped.is_none());
            prop_assert_eq!(
                store.state().to_json(),
                fold(chat),
                "after action {} ({:?})", number, action
            );
            prop_assert_eq!(store.current_step(), synced.end);
            let again = sync(&mut store, chat);
            prop_assert!(again.applied.is_empty(), "a second sync applies nothing");
        }
    }
}
