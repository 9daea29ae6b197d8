//! The JavaScript client's TypeScript types (`clients/js/statecraft.d.ts`): `tsc --noEmit --strict`
//! over a usage file that calls every method and narrows errors on their kind
//! (`clients/js/typecheck/`, TypeScript pinned in its `package-lock.json`), and the error kinds of
//! the types, of the server (`server/src/error.rs`) and of docs/http.md, which must be the same.
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

#[test]
fn the_typescript_types_pass_tsc_strict_over_the_usage_file() {
    let folder = repository().join("clients/js/typecheck");
    let tsc = folder.join("node_modules/typescript/bin/tsc");
    let node = Command::new("node").arg("--version").output();
    let missing = match node.ok().filter(|output| output.status.success()) {
        None => Some("node is not installed".to_owned()),
        Some(_) if !tsc.exists() => {
            Some("typescript is not installed (npm ci in clients/js/typecheck)".to_owned())
        }
        Some(_) => None,
    };
    if let Some(missing) = missing {
        let message = format!("{missing}; skipping the check of the client's TypeScript types");
        assert!(
            std::env::var_os("CI").is_none(),
            "{message} (a failure under CI)"
        );
        // Written to the handle itself: the harness captures `eprintln!` in a passing test, so the
        // skip would go unseen.
        let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
        return;
    }
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
