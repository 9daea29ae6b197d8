//! One table per MVU rule: command text in, canonical instructions and diagnostic kinds out.

use std::collections::BTreeMap;

use rstest::rstest;
use serde_json::{Value as Json, json};
use statecraft_engine::{Batch, OldMismatch, Value};
use statecraft_translators::mvu::{self, MvuOptions, MvuTranslation, Unrunnable};
use statecraft_translators::{ExtractOptions, Severity, extract};

fn check_with(
    text: &str,
    options: &MvuOptions,
    instructions: Json,
    kinds: &[&str],
) -> MvuTranslation {
    let translation = mvu::from_text(text, options);
    let batch = Batch::new(translation.instructions.clone());
    assert_eq!(batch.to_json(), instructions, "instructions of {text:?}");
    let found: Vec<&str> = translation
        .diagnostics
        .iter()
        .map(|d| d.kind.code())
        .collect();
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
#[case::prose_only("nothing to see here, _. or _.foo(1);", json!([]), &["mvu_no_commands"])]
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
#[case::math_call("sqrt(16)", json!(4), &["mvu_arithmetic"])]
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
            "bag": ["rope", "lamp"], "obj": {"k": 1}, "n": 5, "nums": [10, 30], "pair": [10, "desc"], "list": [[1, "x"]]
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
#[case::remove_index_out_of_range("_.remove('bag', 2);", json!([]), &["mvu_missing_target"])]
#[case::remove_number_is_never_a_value("_.remove('nums', 30);", json!([]), &["mvu_missing_target"])]
#[case::strict_reads_a_number_on_an_object_as_its_key("_.remove('obj', 1);", json!([]), &["mvu_missing_target"])]
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
    let translation = mvu::from_text(text, &MvuOptions::default());
    let spans: Vec<_> = translation
        .diagnostics
        .iter()
        .map(|d| (d.span.clone(), d.line, d.column, d.severity))
        .collect();
    assert_eq!(
        spans,
        [
            (14..27, 2, 3, Severity::Warning),
            (28..45, 3, 1, Severity::Warning)
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
    let (written, diagnostics) = mvu::to_text(&batch);
    assert_eq!(written, text);
    let found: Vec<&str> = diagnostics.iter().map(|d| d.kind.code()).collect();
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
    let (text, _) = mvu::to_text(&batch);
    let read = mvu::from_text(&text, &MvuOptions::default());
    assert_eq!(read.instructions, batch.instructions);
}

#[test]
fn columns_count_characters_and_lines_count_every_break() {
    let text = "悠纪说：_.set('a', 1)\n\n好_.add('b', 'x');\n_.set('c', 2);";
    let translation = mvu::from_text(text, &MvuOptions::default());
    let places: Vec<_> = translation
        .diagnostics
        .iter()
        .map(|d| (d.kind.code(), d.line, d.column))
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

/// MVU reads what JSON and JavaScript refuse as YAML (docs/mvu.md); YAML's block structure in prose is
/// MVU's accident and stays text.
#[rstest]
#[case::capital_true("True", json!(true), &["mvu_yaml_value"])]
#[case::upper_false("FALSE", json!(false), &["mvu_yaml_value"])]
#[case::tilde_null("~", json!(null), &["mvu_yaml_value"])]
#[case::bare_words_in_brackets("[x, y]", json!(["x", "y"]), &["mvu_yaml_value"])]
#[case::mixed_flow_sequence("[x, 'y z', \"w\"]", json!(["x", "y z", "w"]), &["mvu_yaml_value"])]
#[case::flow_mapping("{hp: full, tags: [a, b]}", json!({"hp": "full", "tags": ["a", "b"]}), &["mvu_yaml_value"])]
#[case::python_true_in_object("{\"a\": True}", json!({"a": true}), &["mvu_yaml_value"])]
#[case::doubled_quote_in_array("['it''s']", json!(["it's"]), &["mvu_yaml_value"])]
#[case::octal("0o17", json!(15), &["mvu_arithmetic"])]
#[case::mapping_line_kept("状态: 良好", json!("状态: 良好"), &["mvu_yaml_difference"])]
#[case::comment_kept("第 #1 名", json!("第 #1 名"), &["mvu_yaml_difference"])]
#[case::sequence_line_kept("- item", json!("- item"), &["mvu_yaml_difference"])]
#[case::yes_is_text("yes", json!("yes"), &["mvu_bare_text"])]
fn yaml_fallback(#[case] literal: &str, #[case] value: Json, #[case] kinds: &[&str]) {
    check(
        &format!("_.set('v', {literal});"),
        json!([{"op": "assign", "path": ["v"], "value": value}]),
        kinds,
    );
}

/// Top-level quoted arguments as MVU reads them: single quotes are YAML's, escapes apply only inside
/// JSON-like arrays and objects.
#[rstest]
#[case::doubled_single_quote("'it''s a string'", json!("it's a string"))]
#[case::backslashes_kept(r"'C:\Users\name'", json!(r"C:\Users\name"))]
#[case::backslash_n_kept(r"'a\nb'", json!(r"a\nb"))]
#[case::double_quotes_are_json(r#""C:\\Users""#, json!(r"C:\Users"))]
#[case::double_quotes_then_yaml(r#""tab\there \x41""#, json!("tab\there A"))]
#[case::escapes_inside_arrays(r#"['a\nb', "c\td"]"#, json!(["a\nb", "c\td"]))]
#[case::escapes_inside_objects(r"{path: 'C:\\dir'}", json!({"path": "C:\\dir"}))]
#[case::single_quotes_fold_lines("'one\n   two'", json!("one two"))]
fn quoting(#[case] literal: &str, #[case] value: Json) {
    check(
        &format!("_.set('v', {literal});"),
        json!([{"op": "assign", "path": ["v"], "value": value}]),
        &[],
    );
}

#[test]
fn doubled_quotes_on_a_double_quoted_path() {
    check(
        "_.set(\"a\", 'it''s');",
        json!([{"op": "assign", "path": ["a"], "value": "it's"}]),
        &[],
    );
}

#[test]
fn escaped_quotes_around_a_path_are_read_as_mvu_reads_them() {
    check(
        r#"_.set(\"a.b\", 1);"#,
        json!([{"op": "assign", "path": ["a", "b"], "value": 1}]),
        &[],
    );
    check(
        r#"_.set(\"悠纪.好感度\", 33, 35);//聊天"#,
        json!([{"op": "assign", "path": ["悠纪", "好感度"], "value": 35, "old": 33, "reason": "聊天"}]),
        &[],
    );
}

/// The math.js subset is evaluated as math.js computes it and rounded as MVU rounds (12 significant
/// digits); everything beyond it stays text with a warning, never executed.
#[rstest]
#[case::floor_and_pow("Math.floor(3.9) + math.pow(2, 3)", json!(11))]
#[case::log_with_base("log(10^3, 10) * sqrt(144)", json!(36))]
#[case::cosine_of_pi("cos(pi) + 2", json!(1))]
#[case::square_root("sqrt(16)", json!(4))]
#[case::third("1/3", json!(0.333333333333))]
#[case::power_binds_tighter_than_minus("-2^2", json!(-4))]
#[case::mathjs_modulo("-7 % 3", json!(2))]
#[case::mathjs_round_half_away("round(-2.5)", json!(-3))]
#[case::javascript_round_half_up("Math.round(-2.5)", json!(-2))]
#[case::decimal_rounding("round(2.675, 2)", json!(2.68))]
#[case::mathjs_floor_tolerance("floor(2.9999999999999996)", json!(3))]
#[case::trunc("trunc(-3.7)", json!(-3))]
#[case::constants("Math.PI * e", json!(8.53973422267))]
#[case::min_max("max(1, 5, 3) - min(4, 2)", json!(3))]
fn math_subset(#[case] literal: &str, #[case] value: Json) {
    check(
        &format!("_.set('v', {literal});"),
        json!([{"op": "assign", "path": ["v"], "value": value}]),
        &["mvu_arithmetic"],
    );
}

#[rstest]
#[case::complex_result("sqrt(-4)")]
#[case::complex_numbers("(2 + 3i) * (1 - 2i)")]
#[case::matrices("[1, 2; 3, 4] * [5; 6]")]
#[case::statistics("mean(1, 2, 3)")]
#[case::derivative("derivative('x^2', 'x')")]
#[case::parse_and_evaluate("evaluate('1 + 1')")]
#[case::assignment("x = 5")]
#[case::implicit_multiplication("2pi")]
#[case::range("10:30")]
#[case::method_call("math.complex(2, 3).add(1)")]
#[case::javascript_outside("Math.random()")]
#[case::not_finite("1 / 0")]
#[case::too_deep(
    "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))"
)]
fn math_outside_the_subset_stays_text(#[case] literal: &str) {
    check(
        &format!("_.set('v', {literal});"),
        json!([{"op": "assign", "path": ["v"], "value": literal}]),
        &["mvu_expression_kept_as_text"],
    );
}

#[test]
fn units_and_unknown_names_are_text_as_in_mvu() {
    check(
        "_.set('v', 5 cm);",
        json!([{"op": "assign", "path": ["v"], "value": "5 cm"}]),
        &["mvu_bare_text"],
    );
}

/// Text MVU would not run is skipped with a warning and the rest applies (`skip`, the default), or
/// is an error that makes the reply invalid (`reject`).
#[rstest]
#[case::no_semicolon("_.set('hero.hp', 10, 4)\n_.set('hero.mp', 5, 3);", &["mvu_missing_semicolon"])]
#[case::space_before_semicolon("_.set('a', 1) ;\n_.set('hero.mp', 5, 3);", &["mvu_missing_semicolon"])]
#[case::extra_add_argument("_.add('a', 5, 6);\n_.set('hero.mp', 5, 3);", &["mvu_wrong_argument_count"])]
#[case::add_with_two_deltas("_.add('path', 10, 20);\n_.set('hero.mp', 5, 3);", &["mvu_wrong_argument_count"])]
#[case::set_without_value("_.set('name');\n_.set('hero.mp', 5, 3);", &["mvu_wrong_argument_count"])]
#[case::add_without_semicolon("_.add('path', 5)\n_.set('hero.mp', 5, 3);", &["mvu_missing_semicolon"])]
#[case::cut_off_at_the_end("_.set('hero.mp', 5, 3);\n_.set('name'", &["mvu_unclosed_command"])]
#[case::cut_off_inside_a_value("_.set('hero.mp', 5, 3);\n_.set('bag', ['rope', 'la", &["mvu_unclosed_command"])]
fn unrunnable_text(#[case] text: &str, #[case] kinds: &[&str]) {
    let valid = json!([{"op": "assign", "path": ["hero", "mp"], "value": 3, "old": 5}]);
    let skipped = check_with(text, &MvuOptions::default(), valid.clone(), kinds);
    assert!(
        skipped
            .diagnostics
            .iter()
            .all(|d| d.severity == Severity::Warning),
        "{:#?}",
        skipped.diagnostics
    );
    let strict = MvuOptions {
        unrunnable: Unrunnable::Reject,
        ..MvuOptions::default()
    };
    let rejected = check_with(text, &strict, valid, kinds);
    assert!(
        rejected
            .diagnostics
            .iter()
            .all(|d| d.severity == Severity::Error),
        "{:#?}",
        rejected.diagnostics
    );

    // Through the extractor, `skip` keeps the reply valid and `reject` makes it invalid.
    let lenient = extract(text, &ExtractOptions::default());
    assert!(lenient.valid, "{:#?}", lenient.diagnostics);
    assert_eq!(lenient.batch.len(), 1);
    let strict = ExtractOptions {
        mvu: strict,
        ..ExtractOptions::default()
    };
    assert!(!extract(text, &strict).valid);
}

/// `<JSONPatch>` blocks inside MVU text are read by the extractor's reader, in text order with the
/// commands around them.
#[rstest]
#[case::replace(r#"<JSONPatch>[{"op": "replace", "path": "/hp", "value": 5}]</JSONPatch>"#)]
#[case::add_and_remove(r#"<JSONPatch>[{"op": "add", "path": "/bag/0", "value": "rope"}, {"op": "remove", "path": "/old"}]</JSONPatch>"#)]
#[case::delta(r#"<JSONPatch>[{"op": "delta", "path": "/gold", "value": -5}]</JSONPatch>"#)]
#[case::insert_at_the_end(
    r#"<JSONPatch>[{"op": "insert", "path": "/bag/-", "value": "x"}]</JSONPatch>"#
)]
#[case::pointer_without_slash(
    r#"<JSONPatch>[{"op": "replace", "path": "hp", "value": 5}]</JSONPatch>"#
)]
#[case::dotted_keys(r#"<JSONPatch>[{"op": "replace", "path": "/a.b/c", "value": 1}]</JSONPatch>"#)]
#[case::control_characters(
    "<JSONPatch>[{\"op\": \"replace\", \"path\": \"/note\", \"value\": \"two\nlines\ttab\"}]</JSONPatch>"
)]
#[case::nested_tags(r#"<JSONPatch><JSONPatch>[{"op": "replace", "path": "/hp", "value": 5}]</JSONPatch></JSONPatch>"#)]
#[case::tag_case_mismatch(
    r#"<JsonPatch>[{"op": "replace", "path": "/hp", "value": 5}]</JSONPATCH>"#
)]
#[case::snake_case_tag(
    r#"<json_patch>[{"op": "replace", "path": "/hp", "value": 5}]</json_patch>"#
)]
#[case::unclosed(r#"<JSONPatch>[{"op": "replace", "path": "/hp", "value": 5}]"#)]
#[case::fenced(
    "<JSONPatch>\n```json\n[{\"op\": \"replace\", \"path\": \"/hp\", \"value\": 5}]\n```\n</JSONPatch>"
)]
fn json_patch_blocks_read_as_extract_reads_them(#[case] block: &str) {
    let text = format!("_.set('before', 1);\n{block}\n_.set('after', 2);");
    let translation = mvu::from_text(&text, &MvuOptions::default());
    let extraction = extract(block, &ExtractOptions::default());
    assert!(!extraction.batch.is_empty(), "{block}");
    let mut expected = vec![json!({"op": "assign", "path": ["before"], "value": 1})];
    expected.extend(
        extraction
            .batch
            .instructions
            .iter()
            .map(statecraft_engine::Instruction::to_json),
    );
    expected.push(json!({"op": "assign", "path": ["after"], "value": 2}));
    assert_eq!(
        Batch::new(translation.instructions).to_json(),
        Json::Array(expected),
        "{text}"
    );
}

#[rstest]
#[case::empty_patch("<JSONPatch>[]</JSONPatch>")]
#[case::prose("The hero rests by the fire.")]
#[case::not_a_patch("<JSONPatch>the model wrote prose here</JSONPatch>")]
fn an_empty_result_from_text_always_says_why(#[case] text: &str) {
    let translation = mvu::from_text(text, &MvuOptions::default());
    assert!(translation.instructions.is_empty());
    assert!(
        translation
            .diagnostics
            .iter()
            .any(|d| d.severity >= Severity::Warning),
        "{:#?}",
        translation.diagnostics
    );
}
