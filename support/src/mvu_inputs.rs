//! The MVU inputs the benches share: realistic reply text, the same replies with expressions, the
//! dense worst case and the adversarial inputs, all deterministic. `mvu.rs` times them with criterion;
//! `mvu_instructions.rs` runs one translation of each for an instruction counter.

pub const MEGABYTE: usize = 1 << 20;

/// About `size` bytes of realistic MVU output, deterministic.
pub fn realistic(size: usize) -> String {
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
pub fn expressions(size: usize) -> String {
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
pub fn expressions_dense(size: usize) -> String {
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
pub fn adversarial(size: usize) -> Vec<(&'static str, String)> {
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
