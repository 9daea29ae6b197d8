//! MVU text → instructions throughput, on a realistic corpus and on adversarial text.
//!
//! The realistic corpus (about 1 MB) mixes the shapes seen in real cards: `<UpdateVariable>` blocks
//! with an analysis section, `_.set` with two and three arguments and Chinese paths, `[0]` suffixes,
//! `_.add`, `_.insert` with object literals, `_.remove`, reasons, and prose. The expressions corpus
//! (about 1 MB) is the same replies where the values are math.js expressions, YAML values and YAML
//! single quotes, so most arguments go through the evaluator or the YAML reader; it must translate at
//! 100 MB/s or more. The dense expressions corpus is the worst case: nothing but such commands. The
//! adversarial inputs (`_.set(` with no closing parenthesis, quotes, `_.set('` unclosed, one command
//! whose argument is nested parentheses or an exponent tower) run at 1 MB and at 2 MB: linear means
//! twice the time at twice the size. The baseline in the same run is a plain `str::find` pass over
//! the same bytes, which bounds what any scanner can do.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use statecraft_translators::mvu::{self, MvuOptions};

const MEGABYTE: usize = 1 << 20;

/// About `size` bytes of realistic MVU output, deterministic.
fn realistic(size: usize) -> String {
    let names = ["悠纪", "暮莲", "理", "玩家", "慕心", "早川遥"];
    let mut text = String::with_capacity(size + 4096);
    let mut n = 0usize;
    while text.len() < size {
        let who = names[n % names.len()];
        text.push_str(
            "<UpdateVariable>\n<Analysis>\n- time passed: a few minutes, no dramatic update.\n",
        );
        text.push_str(&format!(
            "- {who}.好感度: Y, the conversation went well.\n</Analysis>\n"
        ));
        text.push_str(&format!(
            "_.set('{who}.好感度[0]', {}, {});//愉快的一次讨论，{who}觉得与你一起是开心的\n",
            n % 100,
            n % 100 + 2
        ));
        text.push_str(&format!("_.set('{who}.日程.周三.上午', \"空\", \"地点：data_center_zone.数据服务器室 行为：检查\");//规划日程\n"));
        text.push_str(&format!("_.add('{who}.金币', -{});\n", n % 50));
        text.push_str(&format!("_.insert('{who}.背包', {{\"name\": \"铜钥匙\", count: {}, tags: ['旧', \"小\"],}});//获得物品\n", n % 7));
        text.push_str(&format!(
            "_.set('当前时间', '2026-6-1 10:{:02}');\n",
            n % 60
        ));
        text.push_str(&format!("_.remove('{who}.着装', '粉色缎带');//脱下\n"));
        text.push_str("</UpdateVariable>\n他们继续聊天，窗外的雨声渐渐小了。\n\n");
        n += 1;
    }
    text
}

/// About `size` bytes of the same replies as [`realistic`], with the same prose and commands, where
/// the values are math.js expressions, YAML values and YAML single quotes, as MVU cards write them.
fn expressions(size: usize) -> String {
    let names = ["悠纪", "暮莲", "理", "玩家", "慕心", "早川遥"];
    let mut text = String::with_capacity(size + 4096);
    let mut n = 0usize;
    while text.len() < size {
        let who = names[n % names.len()];
        text.push_str(
            "<UpdateVariable>\n<Analysis>\n- time passed: a few minutes, no dramatic update.\n",
        );
        text.push_str(&format!(
            "- {who}.好感度: Y, the conversation went well.\n</Analysis>\n"
        ));
        text.push_str(&format!(
            "_.set('{who}.好感度[0]', {}, {} + 2 * sqrt(4) / 2);//愉快的一次讨论，{who}觉得与你一起是开心的\n",
            n % 100,
            n % 100
        ));
        text.push_str(&format!("_.set('{who}.日程.周三.上午', '空', '地点：data_center_zone.数据服务器室 行为：检查 it''s {n}');//规划日程\n"));
        text.push_str(&format!(
            "_.add('{who}.金币', -Math.floor({}.5 * 1.5) + log(10^3, 10));\n",
            n % 50
        ));
        text.push_str(&format!("_.insert('{who}.背包', {{name: 铜钥匙, count: {}, tags: [旧, 'it''s small'], found: True}});//获得物品\n", n % 7));
        text.push_str(&format!(
            "_.set('当前时间', '2026-6-1 10:{:02}');\n",
            n % 60
        ));
        text.push_str(&format!("_.remove('{who}.着装', '粉色缎带');//脱下\n"));
        text.push_str("</UpdateVariable>\n他们继续聊天，窗外的雨声渐渐小了。\n\n");
        n += 1;
    }
    text
}

/// About `size` bytes of nothing but commands whose values are expressions, YAML and YAML quotes:
/// the worst case for the value reader, with eight commands to a short block.
fn expressions_dense(size: usize) -> String {
    let names = ["悠纪", "暮莲", "理", "玩家", "慕心", "早川遥"];
    let mut text = String::with_capacity(size + 4096);
    let mut n = 0usize;
    while text.len() < size {
        let who = names[n % names.len()];
        text.push_str("<UpdateVariable>\n");
        text.push_str(&format!(
            "_.set('{who}.生命值', {}, {} - 15 * 2);//受到攻击\n",
            100 - n % 50,
            100 - n % 50
        ));
        text.push_str(&format!("_.add('{who}.分数', sqrt(16));\n"));
        text.push_str(&format!(
            "_.set('{who}.魔力', Math.floor({}.9) + math.pow(2, 3));//冥想\n",
            n % 10
        ));
        text.push_str(&format!(
            "_.set('世界.魔力浓度', 1000, log(10^3, 10) * sqrt(144) + {});\n",
            n % 7
        ));
        text.push_str(&format!("_.set('{who}.清醒', True);\n"));
        text.push_str(&format!(
            "_.set('{who}.标签', [勇敢, 'it''s fine', 好奇]);\n"
        ));
        text.push_str(&format!(
            "_.set('{who}.台词', 'C:\\存档\\{n}', 'it''s over');\n"
        ));
        text.push_str(&format!(
            "_.add('{who}.金币', round({n} / 3, 2) - cos(pi));\n"
        ));
        text.push_str("</UpdateVariable>\n");
        n += 1;
    }
    text
}

/// The adversarial inputs at about `size` bytes. Each must stay linear: twice the size, twice the time.
fn adversarial(size: usize) -> Vec<(&'static str, String)> {
    vec![
        ("unclosed_set", "_.set(".repeat(size / 6)),
        ("quotes", "'".repeat(size)),
        ("quoted_set", "_.set('".repeat(size / 7)),
        (
            "nested_parentheses_argument",
            format!(
                "_.set('v', {}1{});",
                "(".repeat(size / 2),
                ")".repeat(size / 2)
            ),
        ),
        (
            "exponent_tower_argument",
            format!("_.set('v', {}2);", "2^".repeat(size / 2)),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let options = MvuOptions::default();
    let inputs = [
        ("realistic_1mb", realistic(MEGABYTE)),
        ("expressions_1mb", expressions(MEGABYTE)),
        ("expressions_dense_1mb", expressions_dense(MEGABYTE)),
    ];
    let mut group = c.benchmark_group("mvu_translate");
    for (name, text) in &inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| mvu::from_text(black_box(text), &options))
        });
    }
    group.bench_function("baseline_find_1mb", |b| {
        b.iter(|| black_box(&inputs[0].1).matches("_.").count())
    });
    group.finish();
    let mut group = c.benchmark_group("mvu_adversarial");
    for (size, label) in [(MEGABYTE, "1mb"), (2 * MEGABYTE, "2mb")] {
        for (name, text) in adversarial(size) {
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(name, label), &text, |b, text| {
                b.iter(|| mvu::from_text(black_box(text), &options))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
