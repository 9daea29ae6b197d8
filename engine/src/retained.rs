//! What a checkpoint keeps alive, estimated for the history's byte bound.
//!
//! A checkpoint is an O(1) clone of the state's persistent root: it shares every node with the states
//! around it, so taking one costs nothing. What it keeps alive are the nodes that the writes between it
//! and the kept state above it (the previous checkpoint, or the root) copied: every write copies the
//! path of map and vector nodes from the root down to the value it replaces, and the copies made on the
//! way to a checkpoint stay alive as long as the checkpoint does. Along a line of kept states, those
//! copies add up to everything the kept states hold besides the live state, less the copies made since
//! the last checkpoint (at most one checkpoint spacing of steps).
//!
//! Writes that meet in a node copy it once, so the estimate counts distinct nodes: for every container
//! written, how many distinct children were written in it, and from its size how many of its nodes those
//! writes reach at each level of its tree. The node sizes follow the `imbl` nodes a `Value` is built
//! of, from the sizes of a key and a value; those are the same in every build (`value.rs` asserts a
//! value's 24 bytes at compile time), so the bound means the same everywhere. This module must not
//! change any state: it reads change paths and the sizes of the containers they name.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::change::Change;
use crate::path::Segment;
use crate::value::{Key, Value};

/// A node's chunk header and reference counts.
const NODE_HEADER_BYTES: usize = 32;
/// An object's node: a B-tree leaf of 16 entries (a 24-byte key and a 24-byte value each), with its
/// chunk header and reference counts. Branch nodes hold 16 keys and 17 pointers, about two thirds of
/// that; the estimate counts them at the leaf's size, which keeps it simple and errs on the safe side.
const MAP_NODE_BYTES: usize =
    NODE_HEADER_BYTES + 16 * (std::mem::size_of::<Key>() + std::mem::size_of::<Value>());
/// How many entries an object's node holds on average: nodes split in half when full (16), and grow
/// again as entries arrive.
const MAP_FILL: usize = 10;
/// An array's node: a chunk of 64 values of 24 bytes, with its header and reference counts.
const VECTOR_NODE_BYTES: usize = NODE_HEADER_BYTES + 64 * std::mem::size_of::<Value>();
/// How many values an array's node holds.
const VECTOR_FILL: usize = 64;

/// The estimated bytes of the nodes that the change logs `logs`, replayed on a kept state, copied before
/// reaching `state` (the state after them): the nodes `state` holds that the kept state does not.
/// Time: O(changes × path length), plus a lookup in `state` per distinct container written.
pub(crate) fn copied_bytes(logs: &[&[Change]], state: &Value) -> usize {
    // Every distinct child written, named by the hash of its path: a write at `/a/b/c` writes `a` in
    // the root, `b` in `/a` and `c` in `/a/b`. Each new child counts for its container.
    let changes = logs.iter().map(|log| log.len()).sum::<usize>();
    let mut written: HashSet<u64, Mixed> =
        HashSet::with_capacity_and_hasher(2 * changes, Mixed::default());
    let mut containers: HashMap<u64, (&[Segment], usize), Mixed> =
        HashMap::with_capacity_and_hasher(changes, Mixed::default());
    let mut prefixes: Vec<u64> = Vec::new();
    for change in logs.iter().flat_map(|log| log.iter()) {
        let path = change.path.segments();
        prefixes.clear();
        let mut hash = ROOT_HASH;
        prefixes.push(hash);
        for segment in path {
            hash = extend(hash, segment);
            prefixes.push(hash);
        }
        // Deepest first: once a prefix was seen, every shorter one was too.
        for end in (1..=path.len()).rev() {
            if !written.insert(prefixes[end]) {
                break;
            }
            containers
                .entry(prefixes[end - 1])
                .or_insert((&path[..end - 1], 0))
                .1 += 1;
        }
    }
    containers
        .into_values()
        .map(|(container, written)| match state.lookup(container) {
            Some(Value::Object(object)) => {
                tree_bytes(object.len(), written, MAP_FILL, MAP_NODE_BYTES)
            }
            Some(Value::Array(array)) => {
                tree_bytes(array.len(), written, VECTOR_FILL, VECTOR_NODE_BYTES)
            }
            // Gone, or no longer a container, by the end: what was copied inside it is garbage.
            _ => 0,
        })
        .sum()
}

/// The hash of the root's path (FNV-1a's offset basis).
const ROOT_HASH: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The hash of a path one segment longer (FNV-1a over the key's bytes or the index's, each segment
/// closed by a byte that UTF-8 text never holds, different for keys and indexes). Cheap: this runs for
/// every segment of every change a checkpoint is charged for.
fn extend(hash: u64, segment: &Segment) -> u64 {
    let step = |hash: u64, byte: u8| (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
    match segment {
        Segment::Key(key) => step(key.bytes().fold(hash, step), 0xff),
        Segment::Index(index) => step(index.to_le_bytes().into_iter().fold(hash, step), 0xfe),
    }
}

/// Hashes a `u64` path hash for the sets above: FNV leaves its low bits weak, so they are mixed
/// (SplitMix64's finalizer) before a table picks buckets by them.
#[derive(Default)]
struct Mixer(u64);

impl Hasher for Mixer {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type Mixed = BuildHasherDefault<Mixer>;

/// The bytes of the nodes that writes to `written` distinct entries reach in a tree of `len` entries
/// whose nodes hold `fill` entries (or children) each: at every level, the distinct nodes that many
/// writes spread over the level's nodes are expected to hit (`n (1 - (1 - 1/n)^w)` for `n` nodes).
fn tree_bytes(len: usize, written: usize, fill: usize, node_bytes: usize) -> usize {
    let mut nodes = len.div_ceil(fill).max(1);
    if written == 1 {
        // One write reaches one node per level (what the sum below gives, without a `powf` a level):
        // the common case, a container written once between two checkpoints.
        let mut levels = 1;
        while nodes > 1 {
            nodes = nodes.div_ceil(fill);
            levels += 1;
        }
        return levels * node_bytes;
    }
    let mut touched = 0.0;
    loop {
        let n = nodes as f64;
        touched += n * (1.0 - (1.0 - 1.0 / n).powf(written as f64));
        if nodes == 1 {
            return (touched * node_bytes as f64).round() as usize;
        }
        nodes = nodes.div_ceil(fill);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::instruction::Op;
    use crate::path::Path;

    fn write(path: &[&str]) -> Change {
        Change {
            path: Path::from(path.iter().map(|k| Segment::key(k)).collect::<Vec<_>>()),
            old: Some(Value::from(0)),
            new: Some(Value::from(1)),
            reason: None,
            op: Op::Assign,
        }
    }

    #[test]
    fn a_small_object_is_one_node_however_often_it_is_written() {
        let state = Value::from(json!({"a": 1, "b": 2}));
        let once = copied_bytes(&[&[write(&["a"])]], &state);
        assert_eq!(once, MAP_NODE_BYTES);
        let many = copied_bytes(&[&[write(&["a"]), write(&["b"]), write(&["a"])]], &state);
        assert_eq!(many, MAP_NODE_BYTES);
    }

    #[test]
    fn a_write_copies_a_node_per_level_of_every_map_on_its_path() {
        // 100 entries: 10 leaves under one branch, so a write copies 2 nodes there, plus the root's.
        let inner: serde_json::Map<String, serde_json::Value> =
            (0..100).map(|i| (format!("k{i}"), json!(i))).collect();
        let state = Value::from(json!({ "big": inner }));
        assert_eq!(
            copied_bytes(&[&[write(&["big", "k5"])]], &state),
            3 * MAP_NODE_BYTES
        );
        // 30 distinct entries are expected to reach 10 (1 - 0.9^30) = 9.58 of the 10 leaves; the branch
        // above them and the root once.
        let spread: Vec<Change> = (0..30).map(|i| write(&["big", &format!("k{i}")])).collect();
        let leaves = 10.0 * (1.0 - 0.9f64.powi(30));
        assert_eq!(
            copied_bytes(&[&spread], &state),
            ((2.0 + leaves) * MAP_NODE_BYTES as f64).round() as usize
        );
        // Writing one entry many times copies its path once.
        let again: Vec<Change> = (0..30).map(|_| write(&["big", "k5"])).collect();
        assert_eq!(copied_bytes(&[&again], &state), 3 * MAP_NODE_BYTES);
    }

    #[test]
    fn one_write_counts_one_node_per_level_as_the_general_sum_does() {
        for len in [0usize, 1, 9, 10, 11, 100, 101, 1_000, 10_000, 123_457] {
            for (fill, bytes) in [(MAP_FILL, MAP_NODE_BYTES), (VECTOR_FILL, VECTOR_NODE_BYTES)] {
                let mut nodes = len.div_ceil(fill).max(1);
                let mut touched = 0.0f64;
                loop {
                    let n = nodes as f64;
                    touched += n * (1.0 - (1.0 - 1.0 / n).powf(1.0));
                    if nodes == 1 {
                        break;
                    }
                    nodes = nodes.div_ceil(fill);
                }
                let general = (touched * bytes as f64).round() as usize;
                assert_eq!(tree_bytes(len, 1, fill, bytes), general, "{len} entries");
            }
        }
    }

    #[test]
    fn containers_gone_by_the_end_count_nothing() {
        let state = Value::from(json!({"a": 1}));
        // `/gone/x` was written, then `/gone` removed: only the root's node stays copied.
        assert_eq!(
            copied_bytes(&[&[write(&["gone", "x"]), write(&["gone"])]], &state),
            MAP_NODE_BYTES
        );
    }

    /// What the estimate must equal, counted the plain way: every container's distinct children in a
    /// set (no hashes), and each container looked up from the root.
    fn counted_naively(logs: &[&[Change]], state: &Value) -> usize {
        let mut children: BTreeMap<Vec<Segment>, BTreeSet<Segment>> = BTreeMap::new();
        for change in logs.iter().flat_map(|log| log.iter()) {
            let path = change.path.segments();
            for end in 1..=path.len() {
                children
                    .entry(path[..end - 1].to_vec())
                    .or_default()
                    .insert(path[end - 1].clone());
            }
        }
        children
            .iter()
            .map(|(container, written)| match state.lookup(container) {
                Some(Value::Object(object)) => {
                    tree_bytes(object.len(), written.len(), MAP_FILL, MAP_NODE_BYTES)
                }
                Some(Value::Array(array)) => {
                    tree_bytes(array.len(), written.len(), VECTOR_FILL, VECTOR_NODE_BYTES)
                }
                _ => 0,
            })
            .sum()
    }

    fn segment() -> impl Strategy<Value = Segment> {
        prop_oneof![
            prop::sample::select(vec!["a", "b", "c", "0", "1", "long key"]).prop_map(Segment::key),
            (0usize..3).prop_map(Segment::Index),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
            )),
            ..ProptestConfig::default()
        })]

        #[test]
        fn hashed_paths_count_what_a_map_of_containers_counts(
            logs in prop::collection::vec(
                prop::collection::vec(prop::collection::vec(segment(), 0..5), 0..12),
                0..4,
            ),
            big in 0usize..300,
        ) {
            let list: Vec<i64> = (0..big as i64).collect();
            let state = Value::from(json!({
                "a": {"a": {"b": 1}, "b": list, "c": [[1], {"a": 2}]},
                "b": [{"a": 1}, list, null],
                "0": {"1": {"long key": {}}},
                "c": 3,
            }));
            let logs: Vec<Vec<Change>> = logs
                .into_iter()
                .map(|log| {
                    log.into_iter()
                        .map(|path| Change {
                            path: Path::from(path),
                            old: None,
                            new: Some(Value::from(1)),
                            reason: None,
                            op: Op::Assign,
                        })
                        .collect()
                })
                .collect();
            let logs: Vec<&[Change]> = logs.iter().map(Vec::as_slice).collect();
            prop_assert_eq!(copied_bytes(&logs, &state), counted_naively(&logs, &state));
        }
    }

    #[test]
    fn arrays_count_their_chunks() {
        let state = Value::from(json!({"list": (0..200).collect::<Vec<_>>()}));
        let change = Change {
            path: Path::from(vec![Segment::key("list"), Segment::Index(7)]),
            old: Some(Value::from(7)),
            new: Some(Value::from(8)),
            reason: None,
            op: Op::Assign,
        };
        // 200 values: 4 chunks under one node; a write copies one chunk and the node above it.
        assert_eq!(
            copied_bytes(&[&[change]], &state),
            MAP_NODE_BYTES + 2 * VECTOR_NODE_BYTES
        );
    }
}
