use statecraft_translators::{ExtractOptions, extract};
include!("/tmp/bo.rs");
fn main() {
    let text = broken_output(1 << 20);
    let mut best = std::time::Duration::MAX;
    let mut all = Vec::new();
    for _ in 0..60 {
        let t = std::time::Instant::now();
        std::hint::black_box(extract(
            std::hint::black_box(&text),
            &ExtractOptions::default(),
        ));
        let e = t.elapsed();
        all.push(e);
        best = best.min(e);
    }
    all.sort();
    let mb = text.len() as f64 / (1 << 20) as f64;
    println!(
        "min {:?} ({:.1} MiB/s) median {:?} ({:.1} MiB/s)",
        best,
        mb / best.as_secs_f64(),
        all[30],
        mb / all[30].as_secs_f64()
    );
}
