#![allow(unsafe_code)]
use statecraft_translators::{ExtractOptions, extract};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static BIG: AtomicUsize = AtomicUsize::new(0);
static HIST: [AtomicUsize; 16] = [const { AtomicUsize::new(0) }; 16];
fn note(n: usize) {
    if n > 65536 {
        BIG.fetch_add(n, Ordering::Relaxed);
    }
    let b = (usize::BITS - n.leading_zeros()) as usize / 2;
    HIST[b.min(15)].fetch_add(n, Ordering::Relaxed);
}
struct Counting;
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(l.size(), Ordering::Relaxed);
        note(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(n, Ordering::Relaxed);
        note(n);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static A: Counting = Counting;
include!("/tmp/bo.rs");
fn main() {
    let text = broken_output(1 << 20);
    for h in &HIST {
        h.store(0, Ordering::Relaxed);
    }
    BIG.store(0, Ordering::Relaxed);
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
    for (i, h) in HIST.iter().enumerate() {
        println!("<2^{} {}", 2 * i, h.load(Ordering::Relaxed));
    }
    println!(
        "big {} instruction size {} diag size {}",
        BIG.load(Ordering::Relaxed),
        std::mem::size_of::<statecraft_engine::Instruction>(),
        std::mem::size_of::<statecraft_translators::Diagnostic>()
    );
}
