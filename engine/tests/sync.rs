//! Sync (docs/timeline.md, "Chats as the source of truth"): a chat path mapped onto the tree by
//! content. Each reply here is a JSON batch as text; increments make every state depend on the order
//! of the replies before it, so a reply applied on the wrong step shows.

use serde_json::{Value as Json, json};
use statecraft_engine::{
    ApplyOptions, Batch, BatchError, ContentKey, HistoryLimits, ReplyReader, StepId, Store,
    SyncError, SyncOptions, SyncReply, Synced, Value,
};

/// Reads a reply as a JSON batch; text that is not one is refused with "not a batch".
struct JsonReader;

impl ReplyReader for JsonReader {
    fn read(&mut self, text: &str, _state: &Value) -> Result<(Batch, ApplyOptions), String> {
        let json: Json = serde_json::from_str(text).map_err(|_| "not a batch".to_owned())?;
        let batch = Batch::from_json(&json).map_err(|errors| errors.to_string())?;
        Ok((batch, ApplyOptions::default()))
    }

    fn refused(&mut self, errors: &[BatchError]) -> String {
        format!("refused: {}", errors[0].kind.code())
    }
}

fn add(n: i64) -> String {
    json!([{"op": "increment", "path": ["gold"], "value": n}]).to_string()
}

fn store() -> Store {
    Store::new(Value::from(json!({"gold": 0})))
}

fn texts(replies: &[String]) -> Vec<SyncReply<'_>> {
    replies.iter().map(|text| SyncReply::Text(text)).collect()
}

fn sync(store: &mut Store, replies: &[String]) -> Synced {
    store
        .sync(&texts(replies), &SyncOptions::default(), &mut JsonReader)
        .expect("synced")
}

fn gold(store: &Store) -> Json {
    store.state().to_json()["gold"].clone()
}

#[test]
fn a_first_sync_applies_every_reply_and_a_second_changes_nothing() {
    let mut store = store();
    let chat = vec![add(1), add(2), add(3)];
    let first = sync(&mut store, &chat);
    assert_eq!((first.reused, first.applied.len()), (0, 3));
    assert_eq!(gold(&store), json!(6));
    assert_eq!(store.current_step(), first.end);
    let history = store.history_len();

    let again = sync(&mut store, &chat);
    assert_eq!((again.reused, again.applied.len()), (3, 0));
    assert_eq!(again.end, first.end);
    assert_eq!(store.history_len(), history);
    assert_eq!(gold(&store), json!(6));
}

#[test]
fn keys_alone_find_the_steps_and_unknown_keys_ask_for_their_text() {
    let mut store = store();
    let chat = vec![add(1), add(2)];
    let first = sync(&mut store, &chat);
    let keys: Vec<SyncReply<'_>> = chat
        .iter()
        .map(|text| SyncReply::Key(ContentKey::of_text(text)))
        .collect();
    let again = store
        .sync(&keys, &SyncOptions::default(), &mut JsonReader)
        .unwrap();
    assert_eq!(again.end, first.end);

    let new = add(5);
    let mut longer = keys.clone();
    longer.push(SyncReply::Key(ContentKey::of_text(&new)));
    longer.push(SyncReply::Text(&new));
    let before = store.history_len();
    let error = store
        .sync(&longer, &SyncOptions::default(), &mut JsonReader)
        .unwrap_err();
    assert_eq!(error, SyncError::NeedText(vec![2]));
    assert_eq!(error.code(), "need_text");
    assert_eq!(store.history_len(), before, "nothing changed");
    assert_eq!(gold(&store), json!(3));
}

#[test]
fn a_swipe_is_a_sibling_and_swiping_back_brings_back_its_state() {
    let mut store = store();
    let first = sync(&mut store, &[add(1), add(2)]);
    let swiped = sync(&mut store, &[add(1), add(10)]);
    assert_eq!(gold(&store), json!(11));
    assert_eq!(swiped.reused, 1);
    let parent = store.step(swiped.end).unwrap().parent;
    assert_eq!(store.step(first.end).unwrap().parent, parent);

    let back = sync(&mut store, &[add(1), add(2)]);
    assert_eq!(back.applied.len(), 0);
    assert_eq!(back.end, first.end);
    assert_eq!(gold(&store), json!(3));
}

#[test]
fn an_edit_in_the_middle_branches_and_replays_the_replies_after_it() {
    let mut store = store();
    sync(&mut store, &[add(1), add(2), add(4)]);
    let edited = sync(&mut store, &[add(1), add(20), add(4)]);
    assert_eq!((edited.reused, edited.applied.len()), (1, 2));
    assert_eq!(gold(&store), json!(25));
    // Deleting the middle message: the last reply now follows the first.
    let deleted = sync(&mut store, &[add(1), add(4)]);
    assert_eq!(deleted.applied.len(), 1);
    assert_eq!(gold(&store), json!(5));
}

#[test]
fn a_refused_reply_makes_an_empty_step_with_its_feedback_and_is_never_applied_again() {
    let mut store = store();
    let chat = vec![
        add(1),
        "no batch here".to_owned(),
        json!([{"op": "delete", "path": ["absent"]}]).to_string(),
        add(2),
    ];
    let synced = sync(&mut store, &chat);
    assert_eq!(gold(&store), json!(3));
    let refusals: Vec<Option<&str>> = synced
        .applied
        .iter()
        .map(|reply| reply.refusal.as_deref())
        .collect();
    assert_eq!(
        refusals,
        [
            None,
            Some("not a batch"),
            Some("refused: missing_target"),
            None
        ]
    );
    for reply in &synced.applied {
        let step = store.step(reply.step()).unwrap();
        assert_eq!(step.key, Some(ContentKey::of_text(&chat[reply.index])));
        assert_eq!(step.refusal, reply.refusal.as_deref());
        if reply.refusal.is_some() {
            assert!(step.changes.is_empty());
        }
    }
    let again = sync(&mut store, &chat);
    assert_eq!(again.applied.len(), 0);
}

#[test]
fn a_reply_that_changes_nothing_still_has_its_step() {
    let mut store = store();
    let chat = vec!["[]".to_owned(), "[]".to_owned()];
    let synced = sync(&mut store, &chat);
    assert_eq!(synced.applied.len(), 2);
    assert_ne!(synced.end, StepId::ROOT);
    assert_eq!(sync(&mut store, &chat).applied.len(), 0);
    // The same text twice in a row is two steps, one below the other.
    assert_eq!(store.path_to(synced.end).unwrap().len(), 2);
}

#[test]
fn move_false_reads_the_end_without_moving() {
    let mut store = store();
    let shown = sync(&mut store, &[add(1), add(2)]);
    let options = SyncOptions {
        move_to_end: false,
        ..SyncOptions::default()
    };
    let parent = store
        .sync(&texts(&[add(1)]), &options, &mut JsonReader)
        .unwrap();
    assert_eq!(store.current_step(), shown.end);
    assert_eq!(
        store.state_at(parent.end).unwrap().value().to_json()["gold"],
        json!(1)
    );
    // New replies made under move: false stay off the current line too.
    let ahead = store
        .sync(&texts(&[add(1), add(2), add(7)]), &options, &mut JsonReader)
        .unwrap();
    assert_eq!(ahead.applied.len(), 1);
    assert_eq!(store.current_step(), shown.end);
    assert_eq!(gold(&store), json!(3));
}

#[test]
fn the_empty_path_is_the_root() {
    let mut store = store();
    sync(&mut store, &[add(1)]);
    let empty = sync(&mut store, &[]);
    assert_eq!(empty.end, StepId::ROOT);
    assert_eq!(gold(&store), json!(0));
}

#[test]
fn a_path_longer_than_the_history_bound_is_refused_before_anything_runs() {
    let mut store = Store::builder(Value::from(json!({"gold": 0})))
        .history_limits(HistoryLimits {
            max_steps: 3,
            ..HistoryLimits::default()
        })
        .build()
        .unwrap();
    let chat: Vec<String> = (1..=4).map(add).collect();
    let error = store
        .sync(&texts(&chat), &SyncOptions::default(), &mut JsonReader)
        .unwrap_err();
    assert_eq!(
        error,
        SyncError::TooLong {
            replies: 4,
            max_steps: 3,
            index: 3
        }
    );
    assert_eq!(store.history_len(), 0);
}

#[test]
fn replies_trimmed_into_the_root_stay_matched_and_an_edit_before_them_is_refused() {
    let mut store = Store::builder(Value::from(json!({"gold": 0})))
        .history_limits(HistoryLimits {
            max_steps: 3,
            ..HistoryLimits::default()
        })
        .build()
        .unwrap();
    let mut chat: Vec<String> = Vec::new();
    for n in 1..=6 {
        chat.push(add(n));
        sync(&mut store, &chat);
    }
    assert_eq!(gold(&store), json!(21));
    assert_eq!(store.root_keys().len(), 3);
    assert_eq!(sync(&mut store, &chat).applied.len(), 0);
    // A swipe of the last reply still works.
    chat[5] = add(100);
    sync(&mut store, &chat);
    assert_eq!(gold(&store), json!(115));
    // An edit of a reply folded into the root cannot be rebuilt.
    chat[0] = add(50);
    let error = store
        .sync(&texts(&chat), &SyncOptions::default(), &mut JsonReader)
        .unwrap_err();
    assert_eq!(error, SyncError::Trimmed { index: 0, kept: 3 });
    assert_eq!(error.code(), "path_trimmed");
}

#[test]
fn a_history_that_is_off_cannot_sync() {
    let mut store = Store::builder(Value::from(json!({"gold": 0})))
        .history_limits(HistoryLimits {
            max_steps: 0,
            ..HistoryLimits::default()
        })
        .build()
        .unwrap();
    let error = store
        .sync(&texts(&[add(1)]), &SyncOptions::default(), &mut JsonReader)
        .unwrap_err();
    assert_eq!(error, SyncError::HistoryOff);
}
