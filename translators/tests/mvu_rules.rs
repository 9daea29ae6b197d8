//! One table per MVU rule: command text in, canonical instructions and diagnostic kinds out.

use std::collections::BTreeMap;

use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, OldMismatch, Value};
use statecraft_translators::{MvuOptions, MvuTranslation, Severity, to_mvu, translate};

fn check_with(
    text: &str,
    options: &MvuOptions,
    instructions: Json,
    kinds: &[&str],
) -> MvuTranslation {
    let translation = translate(text, options);
    let batch = Batch::new(translation.instructions.clone());
    assert_eq!(batch.to_json(), instructions, "instructions of {text:?}");
    let found: Vec<&str> = translation.diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(
        found, kinds,
        "diagnostics of {text:?}: {:#?}",
        translation.diagnostics
    );
    translation
}

fn check(text: &str, instructions: Json, kinds: &[&str]) {
    check_with(text, &MvuOptions::default(), instructions, kinds);
}

#[rstest]
#[case::three_args("_.set('悠纪.好感度', 33, 35);//愉快的讨论", json!([{"op": "assign", "path": ["悠纪", "好感度"], "value": 35, "old": 33, "reason": "愉快的讨论"}]), &[])]
#[case::two_args("_.set('a', 1);", json!([{"op": "assign", "path": ["a"], "value": 1}]), &[])]
#[case::extra_args_ignored_like_mvu("_.set('a', 1, 2, 3);", json!([{"op": "assign", "path": ["a"], "value": 2, "old": 1}]), &["mvu_extra_arguments"])]
#[case::one_arg_dropped("_.set('a');", json!([]), &["mvu_wrong_argument_count"])]
#[case::no_semicolon("_.set('a', 1)", json!([]), &["mvu_missing_semicolon"])]
#[case::space_before_semicolon("_.set('a', 1) ;", json!([]), &["mvu_missing_semicolon"])]
#[case::space_before_paren("_.set ('a', 1);", json!([]), &["mvu_space_before_paren"])]
#[case::unclosed_quote("_.set('a', 'oops);", json!([]), &["mvu_unclosed_command"])]
#[case::unclosed_then_valid("_.set('a', (1;\n_.set('b', 2);", json!([{"op": "assign", "path": ["b"], "value": 2}]), &["mvu_unclosed_command"])]
#[case::prose_only("nothing to see here, _. or _.foo(1);", json!([]), &[])]
#[case::prose_around("Some text\n_.set('a', 1, 2);\nMore text", json!([{"op": "assign", "path": ["a"], "value": 2, "old": 1}]), &[])]
#[case::parens_and_semicolons_in_strings("_.set('m', \"Hello (world); x\", [\"); inside\"]);", json!([{"op": "assign", "path": ["m"], "value": ["); inside"], "old": "Hello (world); x"}]), &[])]
#[case::nested_command_in_string("_.set('a', [\"_.set('b',null,'c');//x\"], []);//done", json!([{"op": "assign", "path": ["a"], "value": [], "old": ["_.set('b',null,'c');//x"], "reason": "done"}]), &[])]
fn set_commands(#[case] text: &str, #[case] expected: Json, #[case] kinds: &[&str]) {
    check(text, expected, kinds);
}

#[rstest]
#[case::same_line("_.set('a', 1);//why", json!([{"op": "assign", "path": ["a"], "value": 1, "reason": "why"}]), &[])]
#[case::spaced_and_trimmed("_.set('a', 1); //  why  ", json!([{"op": "assign", "path": ["a"], "value": 1, "reason": "why"}]), &[])]
#[case::next_line_quirk("_.set('a', 1);\n\n// later", json!([{"op": "assign", "path": ["a"], "value": 1, "reason": "later"}]), &["mvu_reason_on_next_line"])]
#[case::next_command_blocks_quirk("_.set('a', 1);\n_.set('b', 2);//b", json!([{"op": "assign", "path": ["a"], "value": 1}, {"op": "assign", "path": ["b"], "value": 2, "reason": "b"}]), &[])]
#[case::empty_comment("_.set('a', 1);//", json!([{"op": "assign", "path": ["a"], "value": 1}]), &[])]
#[case::crlf("_.set('a', 1);//why\r\n_.set('b', 2);", json!([{"op": "assign", "path": ["a"], "value": 1, "reason": "why"}, {"op": "assign", "path": ["b"], "value": 2}]), &[])]
fn reasons(#[case] text: &str, #[case] expected: Json, #[case] kinds: &[&str]) {
    check(text, expected, kinds);
}

#[rstest]
#[case::double_quotes("\"x\"", json!("x"), &[])]
#[case::mixed_quotes("'old\"value'", json!("old\"value"), &[])]
#[case::backticks("`Hello ${name}`", json!("Hello ${name}"), &[])]
#[case::escapes(r#""say \"hi\"\n\t\u00e9\x41\\""#, json!("say \"hi\"\n\té\u{41}\\"), &[])]
#[case::surrogate_pair(r#""\ud83d\ude00""#, json!("😀"), &[])]
#[case::json_object("{\"a\": [1, 2], \"b\": null}", json!({"a": [1, 2], "b": null}), &[])]
#[case::json5_object("{a: 'x', \"b\": [1, 2,], 好: true,}", json!({"a": "x", "b": [1, 2], "好": true}), &[])]
#[case::comment_inside("[1, /* two */ 2]", json!([1, 2]), &[])]
#[case::negative_float("-0.8", json!(-0.8), &[])]
#[case::plus_sign("+5", json!(5), &[])]
#[case::exponent("1e3", json!(1000.0), &[])]
#[case::negative_exponent("-2.5E-1", json!(-0.25), &[])]
#[case::hex("0x1F", json!(31), &[])]
#[case::negative_hex("-0x10", json!(-16), &[])]
#[case::big_integer("18446744073709551615", json!(18446744073709551615u64), &[])]
#[case::booleans_and_null("[true, false, null]", json!([true, false, null]), &[])]
#[case::undefined("undefined", json!(null), &["mvu_undefined"])]
#[case::arithmetic("10 + 2", json!(12), &["mvu_arithmetic"])]
#[case::arithmetic_float("1 / 4", json!(0.25), &["mvu_arithmetic"])]
#[case::date_accident("2024-01-01", json!("2024-01-01"), &["mvu_arithmetic_difference"])]
#[case::percent_accident("50%", json!("50%"), &["mvu_arithmetic_difference"])]
#[case::bare_text("hello_world", json!("hello_world"), &["mvu_bare_text"])]
#[case::bare_chinese("早餐时间", json!("早餐时间"), &["mvu_bare_text"])]
#[case::math_call("sqrt(16)", json!("sqrt(16)"), &["mvu_expression_kept_as_text"])]
#[case::broken_quotes("'derivative('x^3', 'x')'", json!("derivative('x^3', 'x')"), &["mvu_unbalanced_quotes"])]
#[case::quoted_arithmetic("'10 + 2'", json!("10 + 2"), &[])]
#[case::quoted_number("\"6\"", json!("6"), &[])]
fn values(#[case] literal: &str, #[case] value: Json, #[case] kinds: &[&str]) {
    check(
        &format!("_.set('v', {literal});"),
        json!([{"op": "assign", "path": ["v"], "value": value}]),
        kinds,
    );
}

#[rstest]
#[case::dotted("'a.b.c'", json!(["a", "b", "c"]))]
#[case::index("'列表[0].名字'", json!(["列表", 0, "名字"]))]
#[case::double_quoted_key("'a[\"x.y\"].b'", json!(["a", "x.y", "b"]))]
#[case::single_quoted_key("\"a['x.y']\"", json!(["a", "x.y"]))]
#[case::chinese("'悠纪.好感度'", json!(["悠纪", "好感度"]))]
#[case::vwd_suffix("'悠纪.好感度[0]'", json!(["悠纪", "好感度", 0]))]
#[case::root("''", json!([]))]
#[case::backtick_path("`a.b`", json!(["a", "b"]))]
fn paths(#[case] path: &str, #[case] expected: Json) {
    check(
        &format!("_.set({path}, 1);"),
        json!([{"op": "assign", "path": expected, "value": 1}]),
        &[],
    );
}

#[rstest]
#[case::pointer("_.set('/a/b', 1);", json!([{"op": "assign", "path": ["a", "b"], "value": 1}]), &["mvu_pointer_path"])]
#[case::unquoted("_.set(a.b, 1);", json!([{"op": "assign", "path": ["a", "b"], "value": 1}]), &["mvu_unquoted_path"])]
#[case::malformed("_.set('a[', 1);", json!([]), &["mvu_invalid_path"])]
fn path_problems(#[case] text: &str, #[case] expected: Json, #[case] kinds: &[&str]) {
    check(text, expected, kinds);
}

#[rstest]
#[case::increment("_.add('gold', -5);//buy", json!([{"op": "increment", "path": ["gold"], "value": -5, "reason": "buy"}]), &[])]
#[case::arithmetic_delta("_.add('score', 100 * 2 + 50);", json!([{"op": "increment", "path": ["score"], "value": 250}]), &["mvu_arithmetic"])]
#[case::three_args_dropped("_.add('gold', 1, 2);", json!([]), &["mvu_wrong_argument_count"])]
#[case::not_a_number("_.add('gold', 'x');", json!([]), &["mvu_add_not_a_number"])]
fn add_commands(#[case] text: &str, #[case] expected: Json, #[case] kinds: &[&str]) {
    check(text, expected, kinds);
}

#[rstest]
#[case::push("_.insert('bag', 'rope');", json!([{"op": "push", "path": ["bag"], "value": "rope"}]), &["mvu_guessed"])]
#[case::splice("_.insert('bag', 0, 'rope');", json!([{"op": "splice", "path": ["bag"], "value": {"start": 0, "deleteCount": 0, "items": ["rope"]}}]), &["mvu_guessed"])]
#[case::dash_pushes("_.assign('bag', '-', 'rope');", json!([{"op": "push", "path": ["bag"], "value": "rope"}]), &["mvu_guessed"])]
#[case::key("_.assign('obj', 'key', {\"x\": 1});", json!([{"op": "assign", "path": ["obj", "key"], "value": {"x": 1}}]), &["mvu_guessed"])]
#[case::delete_one_arg("_.remove('a.b');", json!([{"op": "delete", "path": ["a", "b"]}]), &[])]
#[case::delete_index("_.unset('list', 0);", json!([{"op": "delete", "path": ["list", 0]}]), &["mvu_guessed"])]
#[case::delete_key("_.delete('obj', 'k');", json!([{"op": "delete", "path": ["obj", "k"]}]), &["mvu_guessed"])]
#[case::remove_extra("_.remove('a', 1, 2);", json!([{"op": "delete", "path": ["a", 1]}]), &["mvu_extra_arguments", "mvu_guessed"])]
#[case::insert_one_arg_dropped("_.insert('bag');", json!([]), &["mvu_wrong_argument_count"])]
fn collection_commands_without_state(
    #[case] text: &str,
    #[case] expected: Json,
    #[case] kinds: &[&str],
) {
    check(text, expected, kinds);
}

fn with_state(pairs: bool) -> MvuOptions {
    MvuOptions {
        state: Some(Value::from_json(&json!({
            "bag": ["rope", "lamp"], "obj": {"k": 1}, "n": 5, "pair": [10, "desc"], "list": [[1, "x"]]
        }))),
        value_description_pairs: pairs,
        ..MvuOptions::default()
    }
}

#[rstest]
#[case::push("_.insert('bag', 'x');", json!([{"op": "push", "path": ["bag"], "value": "x"}]), &[])]
#[case::merge("_.assign('obj', {m: 2});", json!([{"op": "merge", "path": ["obj"], "value": {"m": 2}}]), &[])]
#[case::merge_non_object("_.insert('obj', 'x');", json!([]), &["mvu_insert_type"])]
#[case::into_scalar("_.insert('n', 1);", json!([]), &["mvu_insert_type"])]
#[case::into_scalar_key("_.insert('n', 'k', 1);", json!([]), &["mvu_insert_type"])]
#[case::missing_object_value("_.insert('new', {a: 1});", json!([{"op": "merge", "path": ["new"], "value": {"a": 1}}]), &[])]
#[case::missing_scalar_value("_.insert('new', 1);", json!([{"op": "push", "path": ["new"], "value": 1}]), &[])]
#[case::splice_at("_.insert('bag', 1, 'x');", json!([{"op": "splice", "path": ["bag"], "value": {"start": 1, "deleteCount": 0, "items": ["x"]}}]), &[])]
#[case::key_on_object("_.insert('obj', 'm', 2);", json!([{"op": "assign", "path": ["obj", "m"], "value": 2}]), &[])]
#[case::number_key_on_object("_.insert('obj', 3, 2);", json!([{"op": "assign", "path": ["obj", "3"], "value": 2}]), &[])]
#[case::key_on_missing("_.insert('new', 'm', 2);", json!([{"op": "assign", "path": ["new", "m"], "value": 2}]), &[])]
#[case::remove_by_value("_.remove('bag', 'lamp');", json!([{"op": "delete", "path": ["bag", 1]}]), &[])]
#[case::remove_by_index("_.remove('bag', 0);", json!([{"op": "delete", "path": ["bag", 0]}]), &[])]
#[case::remove_by_deep_value("_.remove('list', [1, 'x']);", json!([{"op": "delete", "path": ["list", 0]}]), &[])]
#[case::remove_absent_value("_.remove('bag', 'zzz');", json!([]), &["mvu_missing_target"])]
#[case::remove_key("_.unset('obj', 'k');", json!([{"op": "delete", "path": ["obj", "k"]}]), &[])]
#[case::remove_absent_key("_.unset('obj', 'zz');", json!([]), &["mvu_missing_target"])]
#[case::remove_missing_path("_.delete('missing');", json!([]), &["mvu_missing_target"])]
#[case::remove_from_scalar("_.delete('n', 0);", json!([]), &["mvu_missing_target"])]
#[case::pairs_off("_.set('pair', 10, 11);", json!([{"op": "assign", "path": ["pair"], "value": 11, "old": 10}]), &[])]
fn collection_commands_with_state(
    #[case] text: &str,
    #[case] expected: Json,
    #[case] kinds: &[&str],
) {
    check_with(text, &with_state(false), expected, kinds);
}

#[rstest]
#[case::set_element_zero("_.set('pair', 10, 11);", json!([{"op": "assign", "path": ["pair", 0], "value": 11, "old": 10}]))]
#[case::old_pair_unwrapped("_.set('pair', [10, 'desc'], 11);", json!([{"op": "assign", "path": ["pair", 0], "value": 11, "old": 10}]))]
#[case::add_element_zero("_.add('pair', 2);", json!([{"op": "increment", "path": ["pair", 0], "value": 2}]))]
#[case::array_value_replaces_pair("_.set('pair', [1, 'x']);", json!([{"op": "assign", "path": ["pair"], "value": [1, "x"]}]))]
#[case::not_a_pair("_.set('n', 6);", json!([{"op": "assign", "path": ["n"], "value": 6}]))]
fn value_description_pairs(#[case] text: &str, #[case] expected: Json) {
    check_with(text, &with_state(true), expected, &[]);
}

#[test]
fn macros_are_substituted_in_paths_values_and_reasons() {
    let options = MvuOptions {
        macros: BTreeMap::from([
            ("user".to_owned(), "Alice".to_owned()),
            ("char".to_owned(), "理".to_owned()),
        ]),
        ..MvuOptions::default()
    };
    check_with(
        "_.set('<user>.与{{char}}的关系', '{{user}} <unknown>', bare<user>);//<user>成为恋人",
        &options,
        json!([{"op": "assign", "path": ["Alice", "与理的关系"], "value": "bareAlice", "old": "Alice <unknown>", "reason": "Alice成为恋人"}]),
        &["mvu_bare_text"],
    );
}

#[test]
fn diagnostics_point_at_the_command() {
    let text = "prose first\n  _.set('a', 1)\n_.add('b', 1, 2);";
    let translation = translate(text, &MvuOptions::default());
    let spans: Vec<_> = translation
        .diagnostics
        .iter()
        .map(|d| (d.span.clone(), d.line, d.column, d.severity))
        .collect();
    assert_eq!(
        spans,
        [
            (14..27, 2, 3, Severity::Error),
            (28..45, 3, 1, Severity::Error)
        ]
    );
    assert!(
        translation.diagnostics[0].message.contains("no `;`"),
        "{}",
        translation.diagnostics[0].message
    );
}

#[test]
fn mvu_instructions_run_with_warn_on_old_mismatch() {
    assert_eq!(MvuTranslation::policies().old_mismatch, OldMismatch::Warn);
}

#[rstest]
#[case::set_with_old(json!([{"op": "assign", "path": ["a", "b"], "value": 2, "old": 1, "reason": "why"}]), "_.set('a.b', 1, 2);//why\n", &[])]
#[case::set_without_old(json!([{"op": "assign", "path": ["a", 0, "b"], "value": "x"}]), "_.set('a[0].b', \"x\");\n", &[])]
#[case::chinese_and_json(json!([{"op": "assign", "path": ["悠纪", "好感度"], "value": {"v": [1.5, null]}}]), "_.set('悠纪.好感度', {\"v\":[1.5,null]});\n", &[])]
#[case::increment(json!([{"op": "increment", "path": ["gold"], "value": -5}]), "_.add('gold', -5);\n", &[])]
#[case::delete(json!([{"op": "delete", "path": ["a"]}]), "_.remove('a');\n", &[])]
#[case::push(json!([{"op": "push", "path": ["bag"], "value": "rope"}]), "_.insert('bag', \"rope\");\n", &[])]
#[case::splice_one(json!([{"op": "splice", "path": ["bag"], "value": {"start": 2, "deleteCount": 0, "items": ["rope"]}}]), "_.insert('bag', 2, \"rope\");\n", &[])]
#[case::merge_is_lossy(json!([{"op": "merge", "path": ["obj"], "value": {"a": 1}}]), "_.insert('obj', {\"a\":1});\n", &["mvu_emit_lossy"])]
#[case::old_on_delete_is_lossy(json!([{"op": "delete", "path": ["a"], "old": 1}]), "_.remove('a');\n", &["mvu_emit_lossy"])]
#[case::multiline_reason(json!([{"op": "delete", "path": ["a"], "reason": "one\ntwo"}]), "_.remove('a');//one two\n", &["mvu_emit_lossy"])]
#[case::dotted_key(json!([{"op": "assign", "path": ["a.b"], "value": 1}]), "", &["mvu_emit_unsupported"])]
#[case::bracket_key(json!([{"op": "assign", "path": ["a[0]"], "value": 1}]), "", &["mvu_emit_unsupported"])]
#[case::quote_key(json!([{"op": "assign", "path": ["it's"], "value": 1}]), "", &["mvu_emit_unsupported"])]
#[case::empty_key(json!([{"op": "assign", "path": ["a", ""], "value": 1}]), "", &["mvu_emit_unsupported"])]
#[case::pop(json!([{"op": "pop", "path": ["bag"]}]), "", &["mvu_emit_unsupported"])]
#[case::splice_delete(json!([{"op": "splice", "path": ["bag"], "value": {"start": 0, "deleteCount": 1}}]), "", &["mvu_emit_unsupported"])]
#[case::callback(json!([{"op": "callback", "path": ["levelUp"]}]), "", &["mvu_emit_unsupported"])]
fn emitting_mvu(#[case] batch: Json, #[case] text: &str, #[case] kinds: &[&str]) {
    let batch = Batch::from_json(&batch).unwrap();
    let (written, diagnostics) = to_mvu(&batch);
    assert_eq!(written, text);
    let found: Vec<&str> = diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(found, kinds);
    assert!(
        diagnostics
            .iter()
            .all(|d| d.message.starts_with("instruction 0: "))
    );
}

#[test]
fn emitted_text_reads_back_to_the_same_batch() {
    let batch = Batch::from_json(&json!([
        {"op": "assign", "path": ["a", "b"], "value": 2, "old": 1, "reason": "why"},
        {"op": "increment", "path": ["gold"], "value": 1.5},
        {"op": "push", "path": ["bag"], "value": {"name": "铜钥匙", "tags": ["'", "\"", "`", "\\", "//", ");"]}},
        {"op": "splice", "path": ["bag"], "value": {"start": 0, "deleteCount": 0, "items": [[1, "x"]]}},
        {"op": "delete", "path": ["bag", 0]}
    ]))
    .unwrap();
    let (text, _) = to_mvu(&batch);
    let read = translate(&text, &MvuOptions::default());
    assert_eq!(read.instructions, batch.instructions);
}

#[test]
fn columns_count_characters_and_lines_count_every_break() {
    let text = "悠纪说：_.set('a', 1)\n\n好_.add('b', 'x');\n_.set('c', 2);";
    let translation = translate(text, &MvuOptions::default());
    let places: Vec<_> = translation
        .diagnostics
        .iter()
        .map(|d| (d.kind, d.line, d.column))
        .collect();
    assert_eq!(
        places,
        [
            ("mvu_missing_semicolon", 1, 5),
            ("mvu_add_not_a_number", 3, 2)
        ]
    );
    for diagnostic in &translation.diagnostics {
        assert_eq!(
            (diagnostic.line, diagnostic.column),
            statecraft_translators::line_column(text, diagnostic.span.start)
        );
    }
}
