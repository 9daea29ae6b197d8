//! A fixed amount of the "schema check per batch" bench's work (`benches/store.rs`), for instruction
//! counts under callgrind (wall clock is unreliable on a shared machine): `N` batches of 10 assigns on
//! 1,000 entities x 100 fields, with the schema checked under `reject` or `repair`.
//!
//! ```text
//! cargo build --profile profiling -p statecraft-engine --example schema_repair_cost
//! valgrind --tool=callgrind target/profiling/examples/schema_repair_cost reject|repair N
//! ```
//!
//! The cost of one batch is the difference of two runs with different N, divided by the difference
//! of the N.

use statecraft_test_support::entities as common;

use serde_json::json;
use statecraft_engine::{Batch, Policies, SchemaViolation, StateSchema, Store, Value};

use common::{ENTITIES, FIELDS, engine_batch, state_json, writes};

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: schema_repair_cost reject|repair N";
    let schema_violation = match args.next().as_deref() {
        Some("reject") => SchemaViolation::Reject,
        Some("repair") => SchemaViolation::Repair,
        _ => panic!("{usage}"),
    };
    let times: usize = args.next().and_then(|n| n.parse().ok()).expect(usage);
    let schema = StateSchema::new(json!({
        "type": "object",
        "properties": {"entities": {"type": "object", "additionalProperties": {"$ref": "#/$defs/entity"}}},
        "$defs": {"entity": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}}
    }))
    .expect("schema");
    let batches: Vec<Batch> = writes(1_024, ENTITIES, FIELDS)
        .iter()
        .map(|w| engine_batch(w))
        .collect();
    let mut store = Store::builder(Value::from(&state_json(ENTITIES, FIELDS)))
        .schema(schema)
        .policies(Policies {
            schema_violation,
            ..Policies::default()
        })
        .build()
        .expect("store");
    for i in 0..times {
        assert!(store.apply(&batches[i % batches.len()]).is_committed());
    }
}
