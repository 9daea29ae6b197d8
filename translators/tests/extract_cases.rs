//! Data-driven extraction cases: each `tests/extract/*.txt` holds an input, the expected batch, whether
//! it is valid, and the expected diagnostic kinds in text order.
//!
//! A case file has four sections, each opened by a line `=== name`: `input` (the raw reply, taken
//! verbatim up to the next marker, without its final newline), `batch` (the canonical JSON array),
//! `valid` (`true` or `false`) and `diagnostics` (one kind per line, `kind@start..end` where the span
//! matters). Run with `UPDATE_EXPECT=1` to rewrite the expected sections from the current output, then
//! review the diff.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use statecraft_translators::{ExtractOptions, extract, line_column};

struct Case {
    input: String,
    batch: String,
    valid: String,
    diagnostics: String,
}

fn parse_case(text: &str) -> Case {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        if let Some(name) = line.strip_prefix("=== ") {
            sections.push((name.trim().to_owned(), String::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
        }
    }
    let get = |name: &str| -> String {
        let body = sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_default();
        body.strip_suffix('\n').unwrap_or(&body).to_owned()
    };
    Case {
        input: get("input"),
        batch: get("batch"),
        valid: get("valid"),
        diagnostics: get("diagnostics"),
    }
}

fn render_diagnostics(extraction: &statecraft_translators::Extraction) -> String {
    extraction
        .diagnostics
        .iter()
        .map(|d| format!("{}@{}..{}", d.kind, d.span.start, d.span.end))
        .collect::<Vec<_>>()
        .join("\n")
}

fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/extract");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
}

#[test]
fn extraction_cases() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let files = case_files();
    assert!(
        files.len() >= 30,
        "expected the extraction cases, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let case = parse_case(&text);
        let extraction = extract(&case.input, &ExtractOptions::default());
        let batch = serde_json::to_string_pretty(&extraction.batch.to_json()).unwrap_or_default();
        let valid = extraction.valid.to_string();
        let diagnostics = render_diagnostics(&extraction);
        // Every span must lie inside the input, on character boundaries, with its line and column.
        for d in &extraction.diagnostics {
            assert_eq!(
                (d.line, d.column),
                line_column(&case.input, d.span.start),
                "{}: {d:?}",
                file.display()
            );
            assert!(
                d.span.start <= d.span.end && d.span.end <= case.input.len(),
                "{}: span {:?}",
                file.display(),
                d.span
            );
            assert!(
                case.input.is_char_boundary(d.span.start)
                    && case.input.is_char_boundary(d.span.end),
                "{}",
                file.display()
            );
        }
        if update {
            let rewritten = format!(
                "=== input\n{}\n=== batch\n{batch}\n=== valid\n{valid}\n=== diagnostics\n{diagnostics}\n",
                case.input
            );
            std::fs::write(file, rewritten)
                .unwrap_or_else(|error| panic!("cannot write {}: {error}", file.display()));
            continue;
        }
        let expected_batch: Json = serde_json::from_str(&case.batch).unwrap_or(Json::Null);
        if extraction.batch.to_json() != expected_batch {
            failures.push(format!(
                "{}: batch\n got {batch}\n expected {}",
                file.display(),
                case.batch
            ));
        }
        if valid != case.valid.trim() {
            failures.push(format!("{}: valid is {valid}", file.display()));
        }
        if diagnostics.trim() != case.diagnostics.trim() {
            failures.push(format!(
                "{}: diagnostics\n got\n{diagnostics}\n expected\n{}",
                file.display(),
                case.diagnostics
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Past the first hundred invalid instructions the extractor does not build their messages (the
/// summary counts them): every listed one still has its message, and the summary counts the rest.
#[test]
fn many_invalid_instructions_keep_the_first_messages_and_count_the_rest() {
    use statecraft_translators::DiagnosticKind;
    let units: Vec<String> = (0..130)
        .map(|i| format!(r#"{{"op":"frob{i}","path":["a"],"value":1}}"#))
        .collect();
    let text = format!("[{}]", units.join(","));
    let extraction = extract(&text, &ExtractOptions::default());
    let invalid: Vec<_> = extraction
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::InvalidInstruction)
        .collect();
    assert_eq!(invalid.len(), 100);
    for (i, diagnostic) in invalid.iter().enumerate() {
        assert!(
            diagnostic.message.contains(&format!("\"frob{i}\"")),
            "{i}: {}",
            diagnostic.message
        );
    }
    let summary: Vec<_> = extraction
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::DiagnosticsElided)
        .collect();
    assert_eq!(summary.len(), 1);
    assert!(
        summary[0]
            .message
            .starts_with("and 30 more invalid_instruction diagnostics"),
        "{}",
        summary[0].message
    );
    let first_left_out = text.find("frob100").expect("the 101st instruction");
    assert!(summary[0].span.contains(&first_left_out));
    assert!(!extraction.valid);
}

/// A value nested beyond what the parser builds makes its own instruction invalid, and only that one,
/// wherever it sits among instructions that each carry a repair: each instruction looks for such a
/// value inside itself, not in the rest of the block.
#[test]
fn values_too_deep_are_refused_at_their_own_instruction_among_repaired_ones() {
    use statecraft_translators::DiagnosticKind;
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let units: Vec<String> = (0..40)
        .map(|i| {
            let value = if i % 7 == 3 {
                deep.clone()
            } else {
                format!("'v{i}'")
            };
            format!("{{'op': 'assign', 'path': ['n{i}'], 'value': {value},}}")
        })
        .collect();
    let text = format!("```json\n[\n{}\n]\n```", units.join(",\n"));
    let extraction = extract(&text, &ExtractOptions::default());
    let deep_at: Vec<usize> = text
        .match_indices(&"[".repeat(300))
        .map(|(at, _)| at)
        .collect();
    let refused: Vec<_> = extraction
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::InvalidInstruction)
        .collect();
    assert_eq!(
        refused.len(),
        deep_at.len(),
        "{:#?}",
        extraction.diagnostics
    );
    for (diagnostic, &at) in refused.iter().zip(&deep_at) {
        // The skipped value starts where the parser stopped building, 256 levels in.
        assert!(
            diagnostic.span.start > at && diagnostic.span.end <= at + deep.len(),
            "{diagnostic:?} is not inside the deep value at {at}"
        );
        assert!(
            diagnostic
                .message
                .starts_with("/value: the value nests more than 256"),
            "{}",
            diagnostic.message
        );
    }
    assert!(!extraction.valid);
    // Every other instruction decoded, in order.
    let decoded: Vec<String> = extraction
        .batch
        .instructions
        .iter()
        .map(|instruction| instruction.path.to_pointer())
        .collect();
    let expected: Vec<String> = (0..40)
        .filter(|i| i % 7 != 3)
        .map(|i| format!("/n{i}"))
        .collect();
    assert_eq!(decoded, expected);
}
