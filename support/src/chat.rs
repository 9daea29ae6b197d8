//! The chat of the timeline benchmarks (issue 14), shared by `engine/benches/timeline.rs` and
//! `saves/benches/timeline.rs` so that both measure the very same states: 1,000 messages with 3 swipes
//! each (3,000 steps), every reply about 10 assigns scattered over a state of `characters` x `fields`
//! integer fields. Every swipe of a message commits on the same parent, and the chat goes on from swipe
//! `message % SWIPES`, so every message has three branches.

use serde_json::{Value as Json, json};
use statecraft_engine::{ApplyOptions, Batch, Instruction, Path, Segment, StepId};

pub const MESSAGES: usize = 1_000;
pub const SWIPES: usize = 3;
pub const CHANGES: usize = 10;

/// `characters` x `fields` integer fields: `{"characters": {"c0": {"f0": 0, ...}, ...}}`.
pub fn state_json(characters: usize, fields: usize) -> Json {
    let mut root = serde_json::Map::new();
    for c in 0..characters {
        let mut character = serde_json::Map::new();
        for f in 0..fields {
            character.insert(format!("f{f}"), json!(f));
        }
        root.insert(format!("c{c}"), Json::Object(character));
    }
    json!({ "characters": root })
}

/// A cheap deterministic generator, so every variant sees the same writes.
#[derive(Debug)]
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound
    }
}

/// A reply: `CHANGES` assigns of `value` at scattered places.
pub fn reply(rng: &mut Lcg, characters: usize, fields: usize, value: i64) -> Batch {
    Batch::new(
        (0..CHANGES)
            .map(|_| {
                let path = Path::from(vec![
                    Segment::key("characters"),
                    Segment::key(&format!("c{}", rng.next(characters))),
                    Segment::key(&format!("f{}", rng.next(fields))),
                ]);
                Instruction::assign(path, value)
            })
            .collect(),
    )
}

/// The label of a swipe, as a front end would write it.
pub fn label(message: usize, swipe: usize) -> String {
    format!("m{message}/s{swipe}")
}

/// Plays the chat: `commit` is called with every reply and its options (its label, and the step it
/// commits on), in order, and must commit it.
pub fn play(characters: usize, fields: usize, mut commit: impl FnMut(&Batch, &ApplyOptions)) {
    let mut rng = Lcg(7);
    let mut parent: Option<String> = None;
    for message in 0..MESSAGES {
        for swipe in 0..SWIPES {
            let options = ApplyOptions {
                label: Some(label(message, swipe)),
                at: Some(match &parent {
                    Some(parent) => parent.as_str().into(),
                    None => StepId::ROOT.into(),
                }),
                ..ApplyOptions::default()
            };
            let batch = reply(&mut rng, characters, fields, (message * 10 + swipe) as i64);
            commit(&batch, &options);
        }
        parent = Some(label(message, message % SWIPES));
    }
}
