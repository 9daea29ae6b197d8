//! Baseline (b) of the store benchmarks: a plain `serde_json` document changed by the `json-patch`
//! crate, with history kept as inverse patches (each read from the document before the patch runs).
//! Shared by `store.rs`, which times it, and `examples/instruction_counts.rs`, which counts its
//! instructions, so that both compare the engine with the same code.

use serde_json::{Value as Json, json};

/// The JSON Patch of one batch of (entity, field, value) writes: a `replace` per write.
pub fn patch_of(writes: &[(usize, usize, i64)]) -> json_patch::Patch {
    let ops: Vec<Json> = writes
        .iter()
        .map(|&(e, f, v)| json!({"op": "replace", "path": format!("/entities/e{e}/f{f}"), "value": v}))
        .collect();
    serde_json::from_value(Json::Array(ops)).unwrap()
}

/// The document and its undo history.
#[derive(Debug)]
pub struct PatchHistory {
    pub doc: Json,
    pub history: Vec<json_patch::Patch>,
}

impl PatchHistory {
    pub fn new(doc: Json) -> PatchHistory {
        PatchHistory {
            doc,
            history: Vec::new(),
        }
    }

    /// Applies `patch` (of `replace` operations) and keeps the patch that reverts it. Returns how many
    /// patches the history holds.
    pub fn apply(&mut self, patch: &json_patch::Patch) -> usize {
        let inverse: Vec<Json> = patch
            .0
            .iter()
            .rev()
            .map(|op| {
                let json_patch::PatchOperation::Replace(op) = op else {
                    unreachable!("the bench's patches only replace")
                };
                let old = self
                    .doc
                    .pointer(op.path.as_str())
                    .cloned()
                    .unwrap_or(Json::Null);
                json!({"op": "replace", "path": op.path.to_string(), "value": old})
            })
            .collect();
        json_patch::patch(&mut self.doc, patch).unwrap();
        self.history
            .push(serde_json::from_value(Json::Array(inverse)).unwrap());
        self.history.len()
    }
}
