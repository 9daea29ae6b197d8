//! The JSON repair conformance corpus (`../shared/corpora/json-repair/`) run against the lenient layer.
//!
//! Every case is repaired and compared with the upstream libraries' expected value: a text that starts
//! like JSON goes through [`repair_json`]; a text that starts with prose goes through [`json_values`],
//! the extractor's block finder (several values become one array, as the libraries return them). Pass counts are
//! printed per category and per file; the test fails when a count drops below the committed baseline
//! in `tests/data/repair_corpus_baseline.txt`, or when a consensus case that is in scope fails. Cases
//! where this engine deliberately differs are listed, with the reason, in
//! `tests/data/repair_corpus_differences.tsv`; the test checks that each listed case still differs, so
//! the list cannot go stale. When the corpus folder is absent the test says so and checks nothing else.
//! Set `SHOW_FAILURES=1` to print every failing case.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value as Json;
use statecraft_translators::{json_values, repair_json};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora/json-repair")
}

fn data_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

/// Equality where numbers compare by value (`2` equals `2.0`), as the corpus was written by Python.
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// What the lenient layer reads from a corpus input, in the libraries' terms.
fn repaired(input: &str) -> Option<Json> {
    let trimmed = input.trim_start();
    let starts_like_json = trimmed.is_empty()
        || trimmed.starts_with(['{', '[', '"', '\'', '`', '/', '-', '.', '\u{201c}'])
        || trimmed.starts_with(|c: char| c.is_ascii_digit());
    if !starts_like_json {
        let mut values = json_values(input);
        match values.len() {
            0 => {}
            1 => return values.pop(),
            _ => return Some(Json::Array(values)),
        }
    }
    repair_json(input).map(|doc| doc.value)
}

struct Outcome {
    line: usize,
    categories: Vec<String>,
    passed: bool,
    input: String,
    got: Option<Json>,
    expected: Json,
}

fn run_file(name: &str) -> Vec<Outcome> {
    let text = std::fs::read_to_string(corpus_dir().join(name))
        .unwrap_or_else(|error| panic!("cannot read {name}: {error}"));
    let mut outcomes = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Json = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("{name}:{}: {error}", index + 1));
        let input = case["input"].as_str().unwrap_or_default().to_owned();
        let expect_fail = case["expect_fail"].as_bool().unwrap_or(false);
        let expected = case["expected"].clone();
        let got = repaired(&input);
        let passed = if expect_fail {
            got.is_none()
        } else {
            got.as_ref().is_some_and(|got| same(got, &expected))
        };
        let mut categories: Vec<String> = case["categories"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect();
        if categories.is_empty() {
            categories.push("valid_or_uncategorised".to_owned());
        }
        outcomes.push(Outcome {
            line: index + 1,
            categories,
            passed,
            input,
            got,
            expected,
        });
    }
    outcomes
}

#[test]
fn repair_corpus_meets_its_baseline() {
    if !corpus_dir().is_dir() {
        println!(
            "corpus absent, skipping: {} not found",
            corpus_dir().display()
        );
        return;
    }
    let differences: BTreeMap<(String, usize), String> = data_file("repair_corpus_differences.tsv")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let mut fields = line.splitn(3, '\t');
            let file = fields.next().unwrap_or_default().to_owned();
            let number = fields
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("bad line number in: {line}"));
            let reason = fields.next().unwrap_or_default().to_owned();
            assert!(
                !reason.is_empty(),
                "a listed difference needs a reason: {line}"
            );
            ((file, number), reason)
        })
        .collect();
    let baseline: BTreeMap<(String, String), usize> = data_file("repair_corpus_baseline.txt")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (
                (fields[0].to_owned(), fields[1].to_owned()),
                fields[2].parse().unwrap_or(0),
            )
        })
        .collect();
    let mut failures = Vec::new();
    let mut stale = Vec::new();
    let mut listed_seen = BTreeSet::new();
    for file in ["repair_cases.jsonl", "repair_cases_consensus.jsonl"] {
        let outcomes = run_file(file);
        let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for outcome in &outcomes {
            let key = (file.to_owned(), outcome.line);
            let listed = differences.contains_key(&key);
            if listed {
                listed_seen.insert(key.clone());
                if outcome.passed {
                    stale.push(format!(
                        "{file}:{} is listed as a difference but passes",
                        outcome.line
                    ));
                }
            }
            for category in outcome.categories.iter().map(String::as_str).chain(["all"]) {
                let entry = counts.entry(category.to_owned()).or_default();
                entry.0 += usize::from(outcome.passed);
                entry.1 += 1;
            }
            if std::env::var_os("SHOW_FAILURES").is_some() && !outcome.passed {
                println!(
                    "FAIL {file}:{} {:?} got {}",
                    outcome.line,
                    outcome.input,
                    outcome
                        .got
                        .as_ref()
                        .map_or("nothing".to_owned(), Json::to_string)
                );
            }
            if file == "repair_cases_consensus.jsonl" && !outcome.passed && !listed {
                failures.push(format!(
                    "{file}:{} {:?}: got {}, expected {}",
                    outcome.line,
                    outcome.input,
                    outcome
                        .got
                        .as_ref()
                        .map_or("nothing".to_owned(), Json::to_string),
                    outcome.expected
                ));
            }
        }
        println!("{file}:");
        for (category, (passed, total)) in &counts {
            println!("  {category:<40} {passed:>4} / {total}");
            if let Some(&floor) = baseline.get(&(file.to_owned(), category.clone())) {
                if *passed < floor {
                    failures.push(format!(
                        "{file} {category}: {passed} passed, below the baseline of {floor}"
                    ));
                }
            }
        }
    }
    for key in differences.keys() {
        if !listed_seen.contains(key) {
            stale.push(format!(
                "{}:{} is listed but is not in the corpus",
                key.0, key.1
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "stale differences list:\n{}",
        stale.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
