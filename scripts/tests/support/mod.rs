//! Helpers shared by the integration tests: stores built on Lua handlers, batches from JSON, and a
//! watchdog so that a regression in the limits fails a test instead of hanging it.

#![allow(dead_code, unreachable_pub)]

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, Commit, Limits, Outcome, Store, Value};
use statecraft_scripts::LuaHandlers;

#[allow(unused_imports)]
pub(crate) use statecraft_test_support::unchanged::Unchanged;

/// Limits small enough that attacks end quickly, large enough for honest scripts.
pub fn test_limits() -> Limits {
    Limits {
        max_callback_steps: 500_000,
        max_callback_time: Duration::from_secs(5),
        max_callback_memory: 16 << 20,
        max_emitted: 10_000,
        ..Limits::default()
    }
}

/// A store on `state` whose handlers come from `scripts` (file name, source).
pub fn store_with(scripts: &[(&str, &str)], state: Json, limits: Limits) -> Store {
    let handlers =
        LuaHandlers::from_sources(scripts.iter().copied(), &limits).expect("scripts load");
    Store::builder(Value::from_json(&state))
        .handler(handlers)
        .limits(limits)
        .build()
        .expect("no schema")
}

/// [`store_with`] under [`test_limits`].
pub fn store(scripts: &[(&str, &str)], state: Json) -> Store {
    store_with(scripts, state, test_limits())
}

/// A batch from its JSON form.
pub fn batch(json: Json) -> Batch {
    Batch::from_json(&json).expect("valid batch")
}

/// A batch of one callback.
pub fn callback(name: &str, args: Json) -> Batch {
    batch(json!([{"op": "callback", "path": [name], "value": args}]))
}

/// The store's state as JSON.
pub fn state(store: &Store) -> Json {
    store.state().to_json()
}

/// Applies and expects a commit.
pub fn commit(store: &mut Store, batch: &Batch) -> Commit {
    match store.apply(batch) {
        Outcome::Committed(commit) => commit,
        Outcome::Rejected(rejection) => panic!("expected a commit, got {:?}", rejection.errors),
    }
}

/// Applies and expects a rejection; returns the messages joined.
pub fn reject(store: &mut Store, batch: &Batch) -> String {
    match store.apply(batch) {
        Outcome::Rejected(rejection) => rejection
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        Outcome::Committed(commit) => panic!(
            "expected a rejection, got a commit with {:?}",
            commit.changes
        ),
    }
}

/// Runs `test` on its own thread and fails if it does not finish within `seconds`.
pub fn watchdog(seconds: u64, test: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(seconds)) {
        Ok(()) => worker.join().expect("test thread"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The test panicked: re-raise its panic here so the failure message is the test's own.
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("the test did not finish within {seconds} s: a limit failed")
        }
    }
}
