//! docs/codes.md is written from the code, so it cannot drift from it: every error code of the
//! engine (`ErrorKind::ALL`), every diagnostic code of the text layer (`DiagnosticKind::all`, with
//! its advice for a model), every limit of `Limits` and `HistoryLimits` with its default, and every
//! policy with its values and default. What each one means is its doc comment, read from the source
//! file as rustdoc reads it, so the page and the code's documentation are one text.
//!
//! The test fails when the page differs from what the code says; `UPDATE_EXPECT=1 cargo test -p
//! statecraft-tests --test codes` rewrites it (review the diff).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use statecraft_engine::{ErrorKind, HistoryLimits, Limits, Policies};
use statecraft_translators::DiagnosticKind;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is in the workspace")
        .to_path_buf()
}

fn source(relative: &str) -> String {
    std::fs::read_to_string(workspace().join(relative))
        .unwrap_or_else(|error| panic!("cannot read {relative}: {error}"))
}

/// The doc comment of each member of `kind name { ... }` in `text` (an enum's variants or a
/// struct's fields), in order, as (member name, doc text joined into one line).
fn member_docs(text: &str, opening: &str) -> Vec<(String, String)> {
    let start = text
        .find(opening)
        .unwrap_or_else(|| panic!("`{opening}` is not in the source"));
    let mut members = Vec::new();
    let mut doc: Vec<&str> = Vec::new();
    for line in text[start..].lines().skip(1) {
        let line = line.trim();
        if line == "}" {
            break;
        }
        if let Some(comment) = line.strip_prefix("///") {
            doc.push(comment.trim());
        } else if line.starts_with("#[") || line.is_empty() {
            // Attributes (`#[default]`) sit between a member's doc and the member.
        } else {
            let name: String = line
                .trim_start_matches("pub ")
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            members.push((name, plain(&doc.join(" "))));
            doc.clear();
        }
    }
    members
}

/// The doc comment of the item opened by `opening` (the lines right above it, attributes skipped).
fn item_doc(text: &str, opening: &str) -> String {
    let start = text
        .find(opening)
        .unwrap_or_else(|| panic!("`{opening}` is not in the source"));
    let mut doc: Vec<&str> = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .skip_while(|line| line.starts_with("#["))
        .take_while(|line| line.starts_with("///"))
        .map(|line| line.trim_start_matches("///").trim())
        .collect();
    doc.reverse();
    plain(&doc.join(" "))
}

/// Doc-comment markup that reads badly in a table: intra-doc links, and the pipe of a cell.
fn plain(doc: &str) -> String {
    doc.replace("[`", "`")
        .replace("`]", "`")
        .replace('|', "\\|")
}

fn doc_of<'a>(docs: &'a [(String, String)], name: &str) -> &'a str {
    docs.iter()
        .find(|(member, _)| member == name)
        .map(|(_, doc)| doc.as_str())
        .unwrap_or_else(|| panic!("{name} has no doc comment in the source"))
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (index, c) in name.chars().enumerate() {
        if c.is_uppercase() && index > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A default as people read it: sizes in bytes also in KiB or MiB, counts with separators.
fn readable(name: &str, debug: &str) -> String {
    let Ok(number) = debug.parse::<u64>() else {
        return format!("`{debug}`");
    };
    let is_size = name.contains("bytes") || name.contains("memory") || name.contains("text");
    if is_size && number >= 1 << 20 && number % (1 << 20) == 0 {
        format!("{} MiB", number >> 20)
    } else if is_size && number >= 1 << 10 && number % (1 << 10) == 0 {
        format!("{} KiB", number >> 10)
    } else {
        let digits = number.to_string();
        let mut grouped = String::new();
        for (index, digit) in digits.chars().enumerate() {
            if index > 0 && (digits.len() - index) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(digit);
        }
        grouped
    }
}

/// Each field of a struct's pretty `Debug` output with its value: `max_steps: 10000,`.
fn debug_fields(pretty: &str) -> Vec<(String, String)> {
    pretty
        .lines()
        .filter_map(|line| {
            let (name, value) = line.trim().split_once(": ")?;
            Some((name.to_owned(), value.trim_end_matches(',').to_owned()))
        })
        .collect()
}

fn limits_rows(page: &mut String, pretty: &str, docs: &[(String, String)], owner: &str) {
    for (name, value) in debug_fields(pretty) {
        // A limit's doc names its error by the Rust variant; the page names the code users see.
        let mut doc = doc_of(docs, &name).to_owned();
        for kind in ErrorKind::ALL {
            doc = doc.replace(&format!("`{kind:?}`"), &format!("`{}`", kind.code()));
        }
        writeln!(
            page,
            "| `{owner}.{name}` | {} | {doc} |",
            readable(&name, &value)
        )
        .unwrap();
    }
}

fn page() -> String {
    let errors = source("engine/src/error.rs");
    let diagnostics = source("translators/src/diagnostic.rs");
    let repairs = source("translators/src/repair.rs");
    let limits = source("engine/src/limits.rs");
    let history = source("engine/src/history.rs");

    let mut page = String::from(
        "# Codes, limits and policies\n\n\
         Every code a batch error or a diagnostic carries in JSON output (`kind`), every limit with its\n\
         default and every policy with its values. This page is written from the code's own\n\
         documentation by `tests/tests/codes.rs` and checked on every test run, so it is never out of\n\
         date; to change a line, change the doc comment it comes from and run\n\
         `UPDATE_EXPECT=1 cargo test -p statecraft-tests --test codes`. The HTTP API's error kinds are\n\
         in [http.md](http.md#errors), a condition's in [state-view.md](state-view.md#conditions).\n\n",
    );

    page.push_str(
        "## Batch errors\n\n\
         Why the engine refused a batch, in `errors[].kind` (one error per problem, each with the\n\
         instruction's index and a JSON Pointer; see [instructions.md](instructions.md)).\n\n\
         | code | meaning |\n|---|---|\n",
    );
    let error_docs = member_docs(&errors, "pub enum ErrorKind {");
    for kind in ErrorKind::ALL {
        let doc = doc_of(&error_docs, &format!("{kind:?}"));
        writeln!(page, "| `{}` | {doc} |", kind.code()).unwrap();
    }

    page.push_str(
        "\n## Diagnostics\n\n\
         What the lenient layer noticed in a reply, in `diagnostics[].kind`, with the exact bytes (see\n\
         [lenient-layer.md](lenient-layer.md#diagnostics)). The advice is what feedback tells a model;\n\
         a repair without advice is summed up by the strict form to prefer.\n\n\
         | code | meaning | advice for a model |\n|---|---|---|\n",
    );
    let diagnostic_docs = member_docs(&diagnostics, "pub enum DiagnosticKind {");
    let repair_docs = member_docs(&repairs, "pub enum RepairKind {");
    for kind in DiagnosticKind::all() {
        let debug = format!("{kind:?}");
        let doc = match debug.strip_prefix("Repair(") {
            Some(repair) => doc_of(&repair_docs, repair.trim_end_matches(')')),
            None => doc_of(&diagnostic_docs, &debug),
        };
        let advice = match (kind.advice(), kind.preferred_form()) {
            (Some(advice), _) => plain(advice),
            (None, Some(form)) => format!("prefer {}", plain(form)),
            (None, None) => String::new(),
        };
        writeln!(page, "| `{}` | {doc} | {advice} |", kind.code()).unwrap();
    }

    page.push_str(
        "\n## Limits\n\n\
         A store's `Limits` bound what one batch may do, each with its own error code above; its\n\
         `HistoryLimits` bound what the history keeps (trimming, see [timeline.md](timeline.md)).\n\
         `statecraft serve` may set its own, stricter values: see [http.md](http.md).\n\n\
         | limit | default | meaning |\n|---|---|---|\n",
    );
    let limit_docs = member_docs(&limits, "pub struct Limits {");
    limits_rows(
        &mut page,
        &format!("{:#?}", Limits::default()),
        &limit_docs,
        "Limits",
    );
    let history_docs = member_docs(&history, "pub struct HistoryLimits {");
    limits_rows(
        &mut page,
        &format!("{:#?}", HistoryLimits::default()),
        &history_docs,
        "HistoryLimits",
    );

    page.push_str(
        "\n## Policies\n\n\
         How a store treats soft failures, set per store and overridable per batch (see\n\
         [instructions.md](instructions.md#policies)).\n\n\
         | policy | default | values | governs |\n|---|---|---|---|\n",
    );
    let defaults = serde_json::to_value(Policies::default()).expect("policies serialize");
    let policy_fields = {
        let start = limits
            .find("pub struct Policies {")
            .expect("Policies in limits.rs");
        let end = start + limits[start..].find("\n}").expect("the end of Policies");
        limits[start..end]
            .lines()
            .filter_map(|line| line.trim().strip_prefix("pub "))
            .filter_map(|field| field.trim_end_matches(',').split_once(": "))
            .map(|(name, ty)| (name.to_owned(), ty.to_owned()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        policy_fields.len(),
        defaults.as_object().map_or(0, |map| map.len()),
        "every field of Policies is read from limits.rs"
    );
    for (name, ty) in policy_fields {
        let opening = format!("pub enum {ty} {{");
        let values: Vec<String> = member_docs(&limits, &opening)
            .into_iter()
            .map(|(variant, doc)| format!("`{}`: {doc}", snake_case(&variant)))
            .collect();
        let default = defaults[&name].as_str().expect("a policy is a string");
        writeln!(
            page,
            "| `{name}` | `{default}` | {} | {} |",
            values.join("<br>"),
            item_doc(&limits, &opening)
        )
        .unwrap();
    }
    page
}

#[test]
fn docs_codes_is_written_from_the_code() {
    let path = workspace().join("docs/codes.md");
    let expected = page();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &expected).expect("write docs/codes.md");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/codes.md differs from what the code says: run \
         `UPDATE_EXPECT=1 cargo test -p statecraft-tests --test codes` and review the diff"
    );
}
