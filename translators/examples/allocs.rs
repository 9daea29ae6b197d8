#![allow(unsafe_code)]
use statecraft_translators::{ExtractOptions, extract};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
struct Counting;
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(l.size(), Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(n, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;
include!("/tmp/bo.rs");
fn main() {
    let text = broken_output(1 << 20);
    let c0 = COUNT.load(Ordering::Relaxed);
    let b0 = BYTES.load(Ordering::Relaxed);
    let e = extract(&text, &ExtractOptions::default());
    let c1 = COUNT.load(Ordering::Relaxed);
    let b1 = BYTES.load(Ordering::Relaxed);
    println!(
        "allocs {} bytes {} ; instructions {} diags {}",
        c1 - c0,
        b1 - b0,
        e.batch.len(),
        e.diagnostics.len()
    );
}
