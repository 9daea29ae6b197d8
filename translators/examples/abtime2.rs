use statecraft_translators::{ExtractOptions, extract, parse_value};
include!("/tmp/bo.rs");
fn main() {
    let text = broken_output(1 << 20);
    let (mut ex, mut dr, mut pa) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..60 {
        let t = std::time::Instant::now();
        let e = std::hint::black_box(extract(
            std::hint::black_box(&text),
            &ExtractOptions::default(),
        ));
        let t1 = t.elapsed();
        drop(e);
        let t2 = t.elapsed();
        ex.push(t1);
        dr.push(t2 - t1);
        // parse only the JSON blocks: approximate by parsing from each '[' after a fence/tag
        let t = std::time::Instant::now();
        let mut n = 0;
        let mut pos = 0;
        while let Some(i) = text[pos..].find("```json\n[") {
            let p = parse_value(&text, pos + i + 8);
            n += p.span.end;
            pos = pos + i + 8 + 1;
        }
        std::hint::black_box(n);
        pa.push(t.elapsed());
    }
    ex.sort();
    dr.sort();
    pa.sort();
    println!(
        "extract median {:?} min {:?}; drop median {:?}; fence-block parse median {:?}",
        ex[30], ex[0], dr[30], pa[30]
    );
}
