//! The JavaScript client's TypeScript types (`clients/js/statecraft.d.ts`): `tsc --noEmit --strict`
//! over a usage file that calls every method and narrows errors on their kind
//! (`clients/js/typecheck/`, TypeScript pinned in its `package-lock.json`), and the error kinds of
//! the types, of the server (`server/src/error.rs`) and of docs/http.md, which must be the same; and
//! every golden answer of the server (`server/tests/wire/`) against the type it names.
//! Without Node.js or `npm ci` in that folder the tsc test says so in `cargo test`'s output and
//! skips; under CI (which installs both) that is a failure.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repository().join(path))
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The double-quoted strings in `text`, in order.
fn quoted(text: &str) -> Vec<&str> {
    text.split('"').skip(1).step_by(2).collect()
}

/// The text of `source` from `start` up to the first `end` after it.
fn between<'a>(source: &'a str, start: &str, end: &str, file: &str) -> &'a str {
    let from = source
        .find(start)
        .unwrap_or_else(|| panic!("{file} has no `{start}`"));
    let rest = &source[from..];
    let to = rest
        .find(end)
        .unwrap_or_else(|| panic!("{file}: `{start}` has no `{end}` after it"));
    &rest[..to]
}

#[test]
fn the_error_kind_union_is_the_servers_list_of_kinds() {
    let error_rs = read("server/src/error.rs");
    let code = between(
        &error_rs,
        "pub fn code(self)",
        "\n    }\n",
        "server/src/error.rs",
    );
    let server: BTreeSet<&str> = quoted(code).into_iter().collect();
    assert!(
        server.contains("unknown_game") && server.len() >= 10,
        "the kinds read from Kind::code: {server:?}"
    );
    let types = read("clients/js/statecraft.d.ts");
    let union = between(
        &types,
        "export type ServerErrorKind =",
        ";",
        "clients/js/statecraft.d.ts",
    );
    let typed: BTreeSet<&str> = quoted(union).into_iter().collect();
    assert_eq!(
        typed, server,
        "ServerErrorKind in clients/js/statecraft.d.ts must list exactly the kinds of Kind::code in \
         server/src/error.rs (add a new kind to the union, and to the switch of \
         clients/js/typecheck/usage.ts)"
    );
    let docs = read("docs/http.md");
    let table = between(&docs, "| status | kinds |", "\n\n", "docs/http.md");
    let undocumented: Vec<&&str> = server
        .iter()
        .filter(|kind| !table.contains(&format!("`{kind}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "docs/http.md's table of errors lacks {undocumented:?}"
    );
}

/// tsc, pinned in `clients/js/typecheck`; `None` (said, and a failure under CI) when Node.js or the
/// package is missing.
fn typescript_compiler() -> Option<PathBuf> {
    let folder = repository().join("clients/js/typecheck");
    let tsc = folder.join("node_modules/typescript/bin/tsc");
    let node = Command::new("node").arg("--version").output();
    let missing = match node.ok().filter(|output| output.status.success()) {
        None => "node is not installed".to_owned(),
        Some(_) if !tsc.exists() => {
            "typescript is not installed (npm ci in clients/js/typecheck)".to_owned()
        }
        Some(_) => return Some(tsc),
    };
    let message = format!("{missing}; skipping the check of the client's TypeScript types");
    assert!(
        std::env::var_os("CI").is_none(),
        "{message} (a failure under CI)"
    );
    // Written to the handle itself: the harness captures `eprintln!` in a passing test, so the skip
    // would go unseen.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
    None
}

#[test]
fn the_typescript_types_pass_tsc_strict_over_the_usage_file() {
    let Some(tsc) = typescript_compiler() else {
        return;
    };
    let folder = repository().join("clients/js/typecheck");
    let run = Command::new("node")
        .arg(&tsc)
        .args(["--noEmit", "--strict", "-p", "."])
        .current_dir(&folder)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "tsc --noEmit --strict found type errors in clients/js/typecheck:\n{stdout}\n{stderr}"
    );
}

/// The golden answers of `server/tests/wire/` as one TypeScript file: each body a constant of the
/// `statecraft.d.ts` type its file names. As object literals, they get tsc's excess-property check
/// too, so a member the server sends and the types lack fails as surely as one they promise and the
/// server leaves out.
fn golden_answers_as_typescript(types: &Path) -> String {
    let folder = repository().join("server/tests/wire");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 20,
        "server/tests/wire holds {} golden answers",
        names.len()
    );
    let mut typescript = format!(
        "// Written by cli/tests/js_types.rs from server/tests/wire/*.json.\nimport type * as T from {};\n",
        serde_json::to_string(&types.display().to_string()).expect("a string")
    );
    for path in names {
        let text = std::fs::read_to_string(&path).expect("a golden file");
        let golden: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let type_name = golden["typescript"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no \"typescript\" type name", path.display()));
        let constant = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .expect("a file name");
        typescript.push_str(&format!(
            "export const golden_{constant}: T.{type_name} = {};\n",
            serde_json::to_string_pretty(&golden["body"]).expect("JSON")
        ));
    }
    typescript
}

#[test]
fn every_golden_answer_of_the_server_has_the_type_the_client_declares() {
    let Some(tsc) = typescript_compiler() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let types = repository()
        .join("clients/js/statecraft.js")
        .canonicalize()
        .expect("clients/js/statecraft.js");
    std::fs::write(
        dir.path().join("answers.ts"),
        golden_answers_as_typescript(&types),
    )
    .expect("answers.ts is written");
    std::fs::write(dir.path().join("package.json"), r#"{"type": "module"}"#).expect("written");
    let config = serde_json::json!({
        "extends": repository().join("clients/js/typecheck/tsconfig.json").canonicalize().expect("tsconfig.json"),
        "files": ["answers.ts"],
    });
    std::fs::write(dir.path().join("tsconfig.json"), config.to_string()).expect("written");
    let run = Command::new("node")
        .arg(&tsc)
        .args(["--noEmit", "--strict", "-p", "."])
        .current_dir(dir.path())
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the server's golden answers (server/tests/wire) do not fit clients/js/statecraft.d.ts:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
}
