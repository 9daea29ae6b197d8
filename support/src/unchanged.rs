//! What a rejected batch leaves exactly as it was, for the tests of every crate that rejects batches
//! (`statecraft_test_support::unchanged`).
//!
//! A rejected batch promises equality, not the same nodes: the batch writes the state in place and
//! a failure replays its changes backwards, so the state is equal to what it was while the nodes it
//! wrote are new ones. [`Unchanged`] holds all that a rejection must leave alone: the state, as JSON
//! so that `1` and `1.0` differ (`Value`'s own equality is numeric), and the whole history (every
//! step with its change log, label, key and children, the current step, the next id, the bytes the
//! byte bound counts and the order trimming would take).

use serde_json::{Value as Json, json};
use statecraft_engine::Store;

/// A store's state and history at one moment, to compare with a later moment.
#[derive(Debug, PartialEq)]
pub struct Unchanged {
    state: Json,
    history: Json,
}

impl Unchanged {
    /// What `store` holds now.
    pub fn of(store: &Store) -> Unchanged {
        let steps: Vec<Json> = store
            .history()
            .map(|step| {
                json!({
                    "id": step.id,
                    "parent": step.parent,
                    "label": step.label,
                    "key": step.key,
                    "refusal": step.refusal,
                    "changes": serde_json::to_value(&**step.changes).expect("changes serialize"),
                    "applied": step.applied,
                    "current": step.current,
                    "children": step.children,
                })
            })
            .collect();
        Unchanged {
            state: store.state().to_json(),
            history: json!({
                "current": store.current_step(),
                "next": store.next_step_id(),
                "len": store.history_len(),
                "bytes": store.history_bytes(),
                "recency": store.recency(),
                "root_keys": store.root_keys(),
                "steps": steps,
            }),
        }
    }

    /// What differs in `store` from this, if anything.
    pub fn differs(&self, store: &Store) -> Option<String> {
        let now = Unchanged::of(store);
        if self.state != now.state {
            return Some(format!(
                "the state changed: {} became {}",
                self.state, now.state
            ));
        }
        (self.history != now.history).then(|| {
            format!(
                "the history changed: {:#} became {:#}",
                self.history, now.history
            )
        })
    }

    /// Panics, saying what differs, unless `store` still holds exactly this.
    #[track_caller]
    pub fn assert(&self, store: &Store, context: &str) {
        if let Some(difference) = self.differs(store) {
            panic!("{context}: {difference}");
        }
    }
}
