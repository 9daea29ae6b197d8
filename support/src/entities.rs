//! What the engine's benches (and the instruction-count programs) share: the state of 1,000 entities x 100 integer fields, and batches of
//! 10 single-field assigns at scattered places, the same for every variant.

use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, HistoryLimits, Instruction, Path, Segment};

pub const ENTITIES: usize = 1_000;
pub const FIELDS: usize = 100;
pub const BATCH: usize = 10;

pub fn state_json(entities: usize, fields: usize) -> Json {
    let mut root = serde_json::Map::new();
    for e in 0..entities {
        let mut entity = serde_json::Map::new();
        for f in 0..fields {
            entity.insert(format!("f{f}"), json!(f));
        }
        root.insert(format!("e{e}"), Json::Object(entity));
    }
    json!({ "entities": root })
}

/// A cheap deterministic generator, so every variant sees the same writes.
#[derive(Debug)]
pub struct Lcg(u64);

impl Lcg {
    pub fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound
    }
}

/// `count` batches of 10 scattered assigns, as (entity, field, value) triples.
pub fn writes(count: usize, entities: usize, fields: usize) -> Vec<Vec<(usize, usize, i64)>> {
    let mut rng = Lcg(7);
    (0..count)
        .map(|i| {
            (0..BATCH)
                .map(|j| (rng.next(entities), rng.next(fields), (i * BATCH + j) as i64))
                .collect()
        })
        .collect()
}

pub fn engine_batch(writes: &[(usize, usize, i64)]) -> Batch {
    Batch::new(
        writes
            .iter()
            .map(|&(e, f, v)| {
                let path = Path::from(vec![
                    Segment::key("entities"),
                    Segment::key(&format!("e{e}")),
                    Segment::key(&format!("f{f}")),
                ]);
                Instruction::assign(path, v)
            })
            .collect(),
    )
}

pub fn unbounded() -> HistoryLimits {
    HistoryLimits {
        max_steps: usize::MAX,
        max_bytes: usize::MAX,
    }
}
