//! The MVU corpus: every block of `corpus.txt` read by this crate and compared with what MVU's own
//! parser extracted (`corpus.mvu-parsed.json`). Blocks that differ must be listed, with the reason, in
//! `tests/mvu/corpus_differences.json`; the agreed count must not drop below the committed baseline.
//! MVU's parser also turns `<JSONPatch>` blocks into its command records (reason `json_patch`); those
//! are compared through this crate's JSON Patch reader.

use std::collections::BTreeMap;
use std::path::Path as FsPath;

use serde_json::Value as Json;
use statecraft_engine::{Limits, Op, Path};
use statecraft_translators::{MvuOptions, parse_commands, parse_path, patch_from_value, translate};

const CORPUS: &str = "../../shared/corpora/mvu";

/// One command in MVU's record form.
#[derive(Debug, PartialEq)]
struct Record {
    kind: String,
    path: Option<Path>,
    values: Vec<Json>,
    reason: String,
}

fn numbers_close(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| numbers_close(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| numbers_close(v, w)))
        }
        _ => a == b,
    }
}

fn same(a: &Record, b: &Record) -> bool {
    a.kind == b.kind
        && a.path == b.path
        && a.reason == b.reason
        && a.values.len() == b.values.len()
        && a.values
            .iter()
            .zip(&b.values)
            .all(|(x, y)| numbers_close(x, y))
}

/// MVU's records for a block.
fn expected(block: &Json) -> Vec<Record> {
    block["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Record {
            kind: c["type"].as_str().unwrap().to_owned(),
            path: parse_path(c["path"].as_str().unwrap()).ok().map(|(p, _)| p),
            values: c["values"].as_array().unwrap().clone(),
            reason: c["reason"].as_str().unwrap_or("").to_owned(),
        })
        .collect()
}

/// This crate's reading of a block: MVU commands, then JSON Patch arrays, in text order.
fn actual(text: &str) -> Vec<Record> {
    let (commands, _) = parse_commands(text, &MvuOptions::default());
    let mut found: Vec<(usize, Record)> = commands
        .into_iter()
        .map(|c| {
            (
                c.span.start,
                Record {
                    kind: c.name.name().to_owned(),
                    path: parse_path(&c.path).ok().map(|(p, _)| p),
                    values: c.args,
                    reason: c.reason.unwrap_or_default(),
                },
            )
        })
        .collect();
    found.extend(patch_arrays(text));
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, r)| r).collect()
}

/// Every top-level JSON array of operations in the text, read as a JSON Patch document and written in
/// MVU's record form (`replace` → set, `delta` → add, `add`/`insert` → insert under the parent,
/// `remove` → delete, `move` → move).
fn patch_arrays(text: &str) -> Vec<(usize, Record)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find('[').map(|i| i + at) {
        let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Json>();
        match stream.next() {
            Some(Ok(json))
                if json
                    .as_array()
                    .is_some_and(|a| !a.is_empty() && a.iter().all(|o| o.get("op").is_some())) =>
            {
                let read = patch_from_value(&json, &Limits::default());
                for instruction in read.batch.instructions {
                    let (kind, path, values) = match instruction.op {
                        Op::Replace => (
                            "set",
                            instruction.path,
                            vec![instruction.value.unwrap().to_json()],
                        ),
                        Op::Increment => (
                            "add",
                            instruction.path,
                            vec![instruction.value.unwrap().to_json()],
                        ),
                        Op::Remove => ("delete", instruction.path, vec![]),
                        Op::Add => {
                            let (parent, last) = instruction.path.split_last().unwrap();
                            let key = match last {
                                statecraft_engine::Segment::Key(k) => Json::String(k.to_string()),
                                statecraft_engine::Segment::Index(i) => Json::String(i.to_string()),
                            };
                            (
                                "insert",
                                Path::from(parent.to_vec()),
                                vec![key, instruction.value.unwrap().to_json()],
                            )
                        }
                        Op::Move => {
                            let to: Vec<String> = instruction
                                .path
                                .segments()
                                .iter()
                                .map(|s| format!("{s:?}"))
                                .collect();
                            (
                                "move",
                                instruction.from.unwrap(),
                                vec![Json::String(format!("[{}]", to.join("][")))],
                            )
                        }
                        other => (other.name(), instruction.path, vec![]),
                    };
                    out.push((
                        i,
                        Record {
                            kind: kind.to_owned(),
                            path: Some(path),
                            values,
                            reason: "json_patch".to_owned(),
                        },
                    ));
                }
                at = i + stream.byte_offset();
            }
            _ => at = i + 1,
        }
    }
    out
}

#[test]
fn mvu_corpus_agrees_with_mvu_or_lists_the_difference() {
    let folder = FsPath::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS);
    let (Ok(corpus), Ok(parsed)) = (
        std::fs::read_to_string(folder.join("corpus.txt")),
        std::fs::read_to_string(folder.join("corpus.mvu-parsed.json")),
    ) else {
        println!("mvu corpus not found at {}; skipped", folder.display());
        return;
    };
    let parsed: Vec<Json> = serde_json::from_str(&parsed).unwrap();
    let listed: Json = serde_json::from_str(include_str!("mvu/corpus_differences.json"))
        .expect("corpus_differences.json is valid json");
    let differences: BTreeMap<String, String> = listed["differences"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let baseline = listed["agreed_baseline"].as_u64().unwrap() as usize;

    let blocks: Vec<&str> = corpus.split("\n-----\n").collect();
    assert_eq!(
        blocks.len(),
        parsed.len(),
        "one parsed record per corpus block"
    );
    let mut agreed = 0;
    let mut problems = Vec::new();
    for (index, (block, record)) in blocks.iter().zip(&parsed).enumerate() {
        let source = record["source"].as_str().unwrap();
        let text = block.split_once('\n').map_or("", |(_, rest)| rest);
        // Every block must translate without panicking, whatever it holds.
        let _ = translate(text, &MvuOptions::default());
        let mine = actual(text);
        let theirs = expected(record);
        let agrees =
            mine.len() == theirs.len() && mine.iter().zip(&theirs).all(|(a, b)| same(a, b));
        let key = index.to_string();
        match (agrees, differences.get(&key)) {
            (true, None) => agreed += 1,
            (true, Some(_)) => problems.push(format!("block {index} ({source}) now agrees; remove it from corpus_differences.json")),
            (false, Some(_)) => {}
            (false, None) => problems.push(format!(
                "block {index} ({source}) differs and is not listed:\n  mvu:  {theirs:?}\n  ours: {mine:?}"
            )),
        }
    }
    println!(
        "mvu corpus: {agreed} agreed, {} differ (listed with reasons), {} blocks",
        differences.len(),
        blocks.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        agreed >= baseline,
        "agreement dropped: {agreed} < baseline {baseline}"
    );
}
