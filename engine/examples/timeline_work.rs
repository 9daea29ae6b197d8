//! A fixed amount of the timeline benchmarks' work, for instruction counts under callgrind (exact
//! whatever the machine's load, unlike criterion's wall clock): plays the bench chat of
//! `support/src/chat.rs` (3,000 replies committed with `at`, on 10k keys), reads `state_at` of 64
//! steps spread over it 20 times, switches between two sibling swipes 1,000 times, and applies 1,000
//! more replies with the tree in place. Compare `Store::apply_with`, `Store::state_at` and
//! `Store::checkout` inclusive counts before and after a change:
//!
//! ```text
//! cargo build --profile profiling -p statecraft-engine --example timeline_work
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/profiling/examples/timeline_work
//! callgrind_annotate --inclusive=yes cg.out | grep -E 'Store::(apply_with|state_at|checkout)'
//! ```

use statecraft_engine::{HistoryLimits, StepId, Store, Value};

use chat::{Lcg, MESSAGES, SWIPES, label, reply, state_json};
use statecraft_test_support::chat;

fn main() {
    let mut store = Store::builder(Value::from(&state_json(100, 100)))
        .history_limits(HistoryLimits {
            max_steps: usize::MAX,
            max_bytes: usize::MAX,
        })
        .build()
        .unwrap();
    chat::play(100, 100, |batch, options| {
        assert!(store.apply_with(batch, options).is_committed());
    });
    let mut rng = Lcg(11);
    let targets: Vec<StepId> = (0..64)
        .map(|_| {
            let step = label(rng.next(MESSAGES), rng.next(SWIPES));
            store.find(step.as_str()).unwrap()
        })
        .collect();
    let mut read = 0usize;
    for _ in 0..20 {
        for &target in &targets {
            read += store
                .state_at(target)
                .unwrap()
                .value()
                .as_object()
                .map_or(0, |o| o.len());
        }
    }
    let last = MESSAGES - 1;
    let swipes = [
        store.find(label(last, 0).as_str()).unwrap(),
        store.find(label(last, 1).as_str()).unwrap(),
    ];
    for i in 0..1_000 {
        store.checkout(swipes[i % 2]).unwrap();
    }
    let mut rng = Lcg(3);
    for i in 0..1_000 {
        assert!(store.apply(&reply(&mut rng, 100, 100, i)).is_committed());
    }
    println!(
        "{} steps, {} bytes counted, {read}",
        store.history_len(),
        store.history_bytes()
    );
}
