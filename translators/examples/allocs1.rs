#![allow(unsafe_code)]
use statecraft_translators::{ExtractOptions, extract};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
static COUNT: AtomicUsize = AtomicUsize::new(0);
struct Counting;
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;
fn count(label: &str, text: &str) {
    let o = ExtractOptions::default();
    let c0 = COUNT.load(Ordering::Relaxed);
    let e = extract(text, &o);
    let c1 = COUNT.load(Ordering::Relaxed);
    println!("{:4} {label} (diags {})", c1 - c0, e.diagnostics.len());
}
fn main() {
    count("empty", "");
    count("prose", "hello there");
    count(
        "think",
        "<think>\nThe goblin hit for 20, so maybe {\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 60}?\n</think>\n",
    );
    count(
        "name",
        "The goblin strikes! Use the {name} template for the log.\n\n",
    );
    count(
        "valid1",
        r#"[{"op": "assign", "path": ["hp"], "value": 1}]"#,
    );
    count(
        "valid1 reason",
        r#"[{"op": "assign", "path": ["hp"], "value": 1, "reason": "x"}]"#,
    );
    count(
        "valid2",
        r#"[{"op": "assign", "path": ["hp"], "value": 1},{"op": "assign", "path": ["hp"], "value": 1}]"#,
    );
    count(
        "strpath",
        r#"[{"op": "assign", "path": "player.hp", "value": 1}]"#,
    );
    count(
        "quotes",
        r#"[{'op': 'assign', 'path': ['hp'], 'value': 1}]"#,
    );
    count(
        "fence",
        "```json\n[{\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 1}]\n```",
    );
    count(
        "unknown",
        r#"[{"op": "assign", "path": ["hp"], "value": 1, "flag": true}]"#,
    );
    count(
        "strvalue",
        r#"[{"op": "assign", "path": ["hp"], "value": "abc"}]"#,
    );
    count(
        "merge",
        r#"[{"op": "merge", "path": ["flags"], "value": {"a": true, "b": null}}]"#,
    );
}
