//! The extraction inputs the benches share: a valid JSON batch and broken, model-style replies of a
//! given size, deterministic. `extract.rs` times them with criterion; `tests/examples/
//! instruction_counts.rs` counts the instructions of one extraction for the check in `.ci/run`.

/// A valid JSON batch of about `size` bytes.
pub fn valid_batch(size: usize) -> String {
    let mut text = String::from("[");
    let mut n = 0usize;
    while text.len() < size {
        if n > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#"{{"op": "assign", "path": ["characters", "npc{n}", "hp"], "value": {}, "old": {}, "reason": "took a hit from the goblin, \"ouch\""}}"#,
            n % 100,
            n % 100 + 5
        ));
        n += 1;
    }
    text.push(']');
    text
}

/// About `size` bytes of broken, model-style replies.
pub fn broken_output(size: usize) -> String {
    let mut text = String::new();
    let mut n = 0usize;
    while text.len() < size {
        text.push_str("<think>\nThe goblin hit for 20, so maybe {\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 60}?\n</think>\n");
        text.push_str("The goblin strikes! Use the {name} template for the log.\n\n```json\n[\n");
        text.push_str(&format!("  // the hit\n  {{'op': 'assign', 'path': 'player.hp', 'value': {}, reason: 'goblin hit',}},\n", n % 100));
        text.push_str("  {\"op\": \"push\" \"path\": [\"log\"], \"value\": \"Dear diary,\nthe “goblin” won't stop\", \"flag\": True}\n");
        text.push_str("  {\"op\": \"increment\", \"path\": \"inventory[0].count\", \"value\": 1} /* one more */\n]\n```\n");
        text.push_str(&format!(
            "<UpdateVariable type=\"x\">\n[{{\"op\": \"merge\", \"path\": [\"flags\"], \"value\": {{\"met_{n}\": true, notes: None}}}}]}}]\n</UpdateVariable>\nWhat next?\n\n"
        ));
        n += 1;
    }
    // The reply ends inside an instruction, as cut-off output does.
    text.push_str("```json\n[{\"op\": \"assign\", \"path\": [\"hp\"], \"value\": 8");
    text
}
