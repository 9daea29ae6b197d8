//! The JSON repair conformance corpus (vendored in `tests/corpora/json-repair/`, with its sources and
//! licenses in `tests/corpora/README.md`) run against the lenient layer.
//!
//! Every case is repaired and compared with the upstream libraries' expected value: a text that starts
//! like JSON goes through [`repair_json`]; a text that starts with prose goes through [`json_values`],
//! the extractor's block finder (several values become one array, as the libraries return them). Pass
//! counts are printed per category and per file; the test fails when a count drops below the committed
//! baseline in `tests/data/repair_corpus_baseline.txt`, or when a consensus case that is in scope
//! fails. Cases where this engine deliberately differs are listed in
//! `tests/data/repair_corpus_differences.tsv` with what this engine reads instead, the repairs it must
//! report and the reason; the test checks that each listed case gives exactly that, so a listed case
//! cannot start failing for another reason unseen. A missing corpus file is a failure: it is part of
//! the repository. Set `SHOW_FAILURES=1` to print every failing case.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value as Json;
use statecraft_translators::internals::repair_json;
use statecraft_translators::json_values;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/json-repair")
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

/// What the lenient layer reads from a corpus input, in the libraries' terms, with the codes of the
/// repairs the parser reported (none when the extractor's block finder read it).
fn repaired(input: &str) -> (Option<Json>, Vec<&'static str>) {
    let trimmed = input.trim_start();
    let starts_like_json = trimmed.is_empty()
        || trimmed.starts_with(['{', '[', '"', '\'', '`', '/', '-', '.', '\u{201c}'])
        || trimmed.starts_with(|c: char| c.is_ascii_digit());
    if !starts_like_json {
        let mut values = json_values(input);
        match values.len() {
            0 => {}
            1 => return (values.pop(), Vec::new()),
            _ => return (Some(Json::Array(values)), Vec::new()),
        }
    }
    match repair_json(input) {
        Some(doc) => {
            let codes = doc.repairs.iter().map(|r| r.kind.code()).collect();
            (Some(doc.value), codes)
        }
        None => (None, Vec::new()),
    }
}

/// A listed deliberate difference: what this engine reads instead, and why.
struct Difference {
    /// The value read, or `None` for nothing.
    ours: Option<Json>,
    /// Repair codes that must be among those reported.
    repairs: Vec<String>,
    reason: String,
}

/// `tests/data/repair_corpus_differences.tsv`: file, line, what we read (`nothing` or JSON), the
/// repairs reported (comma-separated, `-` for none) and the reason, tab separated.
fn differences() -> BTreeMap<(String, usize), Difference> {
    data_file("repair_corpus_differences.tsv")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.splitn(5, '\t').collect();
            let [file, number, ours, repairs, reason] = fields[..] else {
                panic!("a listed difference has five tab-separated fields: {line}");
            };
            let number = number
                .parse()
                .unwrap_or_else(|_| panic!("bad line number in: {line}"));
            let ours = match ours {
                "nothing" => None,
                json => Some(
                    serde_json::from_str(json)
                        .unwrap_or_else(|e| panic!("bad value ({e}) in: {line}")),
                ),
            };
            let repairs = match repairs {
                "-" => Vec::new(),
                codes => codes.split(',').map(str::to_owned).collect(),
            };
            assert!(
                !reason.trim().is_empty(),
                "a listed difference needs a reason: {line}"
            );
            let difference = Difference {
                ours,
                repairs,
                reason: reason.to_owned(),
            };
            ((file.to_owned(), number), difference)
        })
        .collect()
}

struct Outcome {
    line: usize,
    categories: Vec<String>,
    passed: bool,
    input: String,
    got: Option<Json>,
    repairs: Vec<&'static str>,
    expected: Json,
}

fn run_file(name: &str) -> Vec<Outcome> {
    let path = corpus_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read the vendored corpus file {}: {error}",
            path.display()
        )
    });
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
        let (got, repairs) = repaired(&input);
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
            repairs,
            expected,
        });
    }
    outcomes
}

#[test]
fn repair_corpus_meets_its_baseline() {
    let differences = differences();
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
            let listed = differences.get(&key);
            if let Some(difference) = listed {
                listed_seen.insert(key.clone());
                if let Some(wrong) = documented(outcome, difference) {
                    stale.push(format!(
                        "{file}:{} is listed as a deliberate difference ({}), but {wrong}",
                        outcome.line, difference.reason
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
            if file == "repair_cases_consensus.jsonl" && !outcome.passed && listed.is_none() {
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
        "the differences list does not match:\n{}",
        stale.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Why a listed case does not behave as documented, or `None` when it does: it must still differ from
/// the corpus, read exactly the documented value, and report the documented repairs.
fn documented(outcome: &Outcome, difference: &Difference) -> Option<String> {
    if outcome.passed {
        return Some("it now passes; remove it from the list".to_owned());
    }
    let read_as_documented = match (&outcome.got, &difference.ours) {
        (Some(got), Some(ours)) => same(got, ours),
        (None, None) => true,
        _ => false,
    };
    if !read_as_documented {
        return Some(format!(
            "it reads {} where the list documents {}",
            outcome
                .got
                .as_ref()
                .map_or("nothing".to_owned(), Json::to_string),
            difference
                .ours
                .as_ref()
                .map_or("nothing".to_owned(), Json::to_string)
        ));
    }
    let missing: Vec<&str> = difference
        .repairs
        .iter()
        .map(String::as_str)
        .filter(|code| !outcome.repairs.contains(code))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "it does not report the documented repairs {missing:?} (it reports {:?})",
            outcome.repairs
        )
    })
}
