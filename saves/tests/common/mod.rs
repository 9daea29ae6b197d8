//! Helpers shared by the save tests: batches from JSON, fast options, and a comparable view of a game.

#![allow(dead_code, unreachable_pub)]

use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, Store};
use statecraft_saves::{Durability, OpenOptions};

/// A batch from JSON; the tests only write valid ones.
pub fn batch(json: Json) -> Batch {
    Batch::from_json(&json).unwrap_or_else(|errors| panic!("invalid test batch: {errors:?}"))
}

/// Options that skip fsync: these tests check what is written, not the disk.
pub fn unsynced() -> OpenOptions {
    OpenOptions::default().durability(Durability::Unsynced)
}

/// The state and the whole history tree (ids, parents, labels, applied flags, change logs), the current
/// step, the visit order and the next id as JSON, to compare two stores.
pub fn view(store: &Store) -> Json {
    let history: Vec<Json> = store
        .history()
        .map(|step| {
            let mut view = json!({"id": step.id, "parent": step.parent, "label": step.label, "applied": step.applied, "changes": step.changes});
            // Only a card update says so, so that the files of older versions stay as written.
            if let Some(card) = step.card_update {
                view["card"] = json!(statecraft_saves::CardRecord::of(card));
            }
            view
        })
        .collect();
    json!({
        "state": store.state(),
        "history": history,
        "current": store.current_step(),
        "recency": store.recency(),
        "next_id": store.next_step_id(),
    })
}
