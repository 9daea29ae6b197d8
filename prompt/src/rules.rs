//! The rules text a front end puts in the system prompt, and the state payload that goes with it.
//!
//! This module owns the wording in each language and the choice of examples: one per op, drawn from
//! the real paths of the state (the first path, depth first, where the op is allowed), with values that
//! fit the schema. An op with no such path is left out, because an example the model cannot use costs
//! tokens and teaches nothing. It must not decide which ops a path allows ([`crate::spec`]
//! does) and must not run instructions.
//!
//! # Visibility
//!
//! A state schema hides a subtree from the model with the custom keyword
//! `"x-statecraft-visible": false` ([`VISIBLE_KEYWORD`]) on the subschema of that subtree (a property,
//! `items`, `additionalProperties`, or the target of a `$ref`). Hidden subtrees are left out of the
//! payload and of the examples; JSON Schema validators ignore unknown keywords, so the engine's schema
//! check is unaffected. The tailored schema and grammar still allow hidden paths: scripts and front
//! ends may keep writing them.

use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use statecraft_engine::{CallbackSignature, Op, Value};

use crate::spec::{InstructionSpec, MAX_DESCRIBED_SEGMENTS, Shape, ShapeId, Target};
use crate::view::{View, ViewFormat, ViewOptions, view};

/// The custom schema keyword that hides a subtree from the model when `false`.
pub const VISIBLE_KEYWORD: &str = "x-statecraft-visible";

/// The language of the rules text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// Simplified Chinese.
    Zh,
}

/// What a prompt is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// The story reply carries its own update: the rules for commands in the reply, and the state.
    #[default]
    Reply,
    /// A separate update pass: the rules for answering one `{"instructions": [...]}` object, the
    /// state and the reply whose changes are asked for.
    Pass,
    /// The state alone, without command rules: the story prompt of a chat whose updates come from
    /// a pass.
    State,
}

/// How a prompt is made beyond its state, schema and callbacks.
#[derive(Clone, Debug, Default)]
pub struct PromptOptions<'a> {
    /// The language of the rules.
    pub lang: Lang,
    /// What the prompt is for.
    pub mode: Mode,
    /// The view of the state: budget, format, recent paths and messages.
    pub view: ViewOptions<'a>,
    /// The reply whose update a pass asks for ([`Mode::Pass`]; ignored otherwise).
    pub reply: Option<&'a str>,
}

/// What to inject into the system prompt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prompt {
    /// The rules: format, ops with examples, wrapping (for [`Mode::State`], the state's heading).
    pub rules: String,
    /// The state as the model should see it (hidden subtrees removed), whole.
    pub state: Json,
    /// The state as the prompt shows it: within the budget, in the format asked for.
    pub view: View,
    /// The whole text to inject.
    text: String,
}

impl Prompt {
    /// The rules, the state view in a fenced block, the lines naming what it leaves out, and for a
    /// pass the reply: ready to inject.
    pub fn text(&self) -> String {
        self.text.clone()
    }

    /// [`Prompt::text`], borrowed.
    pub fn as_text(&self) -> &str {
        &self.text
    }
}

/// The words of one language.
struct Words {
    intro: &'static str,
    /// The intro when the state is written in the compact format.
    intro_compact: &'static str,
    shape: &'static str,
    /// A pass's intro and its instruction shape (no `reason`: the strict schema has none).
    pass_intro: &'static str,
    pass_shape: &'static str,
    /// The heading of the reply a pass reads, and the pass's last line.
    reply: &'static str,
    pass_end: &'static str,
    /// How the compact format reads.
    compact: &'static str,
    /// What the elision lines mean.
    elided: &'static str,
    ops: &'static str,
    state: &'static str,
    op: fn(Op) -> &'static str,
    /// The heading of the callbacks the host registered.
    callbacks: &'static str,
    /// How an argument that may be left out is marked.
    optional: &'static str,
    /// Punctuation between an op's name, its meaning and its example.
    colon: &'static str,
    stop: &'static str,
}

const EN: Words = Words {
    intro: "# State updates\nThe current state is below as JSON. When your reply changes it, end the reply with one ```json block holding a JSON array of instructions, applied in order; write [] if nothing changed. Nothing but JSON inside the block.",
    intro_compact: "# State updates\nThe current state is below. When your reply changes it, end the reply with one ```json block holding a JSON array of instructions, applied in order; write [] if nothing changed. Nothing but JSON inside the block.",
    shape: "Each instruction is {\"op\": …, \"path\": […], \"value\": …}, optionally with \"reason\": \"why\". \"path\" lists keys and array indexes (integers) from the top of the state. Use only paths that exist and keep each value's type.",
    pass_intro: "# State update\nBelow are the current state and a story reply. Write the changes the reply makes to the state: one JSON object {\"instructions\": [...]} whose list holds the instructions, applied in order, that bring the state up to date with what happened in the reply; {\"instructions\": []} if nothing changed. Answer with that object alone, nothing else.",
    pass_shape: "Each instruction is {\"op\": …, \"path\": […], \"value\": …}. \"path\" lists keys and array indexes (integers) from the top of the state. Use only paths that exist and keep each value's type.",
    reply: "The reply:",
    pass_end: "Answer now with the one JSON object {\"instructions\": [...]}.",
    compact: "The state is written one member per line as key: value, nested by indentation; \"- \" starts an array item; a string is quoted only where it could be misread.",
    elided: "Lines starting with … name parts of the state not shown here; they exist and can be changed.",
    ops: "Ops:",
    state: "Current state:",
    op: en_op,
    callbacks: "Callbacks run the game's own rules; call one with {\"op\": \"callback\", \"path\": [name], \"value\": [arguments]}:",
    optional: "optional",
    colon: ": ",
    stop: ". ",
};

const ZH: Words = Words {
    intro: "# 状态更新\n当前状态以 JSON 附在下方。回复若改变了状态，在回复末尾写一个 ```json 代码块，内含一个指令 JSON 数组，按顺序执行；没有变化就写 []。代码块内只写 JSON。",
    intro_compact: "# 状态更新\n当前状态附在下方。回复若改变了状态，在回复末尾写一个 ```json 代码块，内含一个指令 JSON 数组，按顺序执行；没有变化就写 []。代码块内只写 JSON。",
    shape: "每条指令形如 {\"op\": …, \"path\": […], \"value\": …}，可加 \"reason\": \"原因\"。\"path\" 从状态顶层起依次列出键名和数组下标（整数）。只用已有的路径，值的类型保持不变。",
    pass_intro: "# 状态更新\n下面是当前状态和一段故事回复。写出这段回复对状态造成的变化：一个 JSON 对象 {\"instructions\": [...]}，其中的列表按顺序列出让状态与回复中发生的事保持一致的指令；没有变化就写 {\"instructions\": []}。只回答这个对象，不写别的。",
    pass_shape: "每条指令形如 {\"op\": …, \"path\": […], \"value\": …}。\"path\" 从状态顶层起依次列出键名和数组下标（整数）。只用已有的路径，值的类型保持不变。",
    reply: "回复：",
    pass_end: "现在只回答这一个 JSON 对象 {\"instructions\": [...]}。",
    compact: "状态每行写一个成员，格式为 key: value，以缩进表示层级；以 \"- \" 开头的是数组项；字符串只在可能被误读时加引号。",
    elided: "以 … 开头的行指出此处未显示的部分；它们仍然存在，也可以修改。",
    ops: "操作：",
    state: "当前状态：",
    op: zh_op,
    callbacks: "回调执行游戏自带的规则，调用方式为 {\"op\": \"callback\", \"path\": [名称], \"value\": [参数]}：",
    optional: "可省略",
    colon: "：",
    stop: "。",
};

fn en_op(op: Op) -> &'static str {
    match op {
        Op::Assign => "set a value",
        Op::Increment => "add to a number (negative subtracts)",
        Op::Push => "append to an array",
        Op::Pop => "remove an array's last item",
        Op::Splice => "at index start, remove deleteCount items and insert items",
        Op::Delete => "remove a key or an array item",
        Op::Merge => "set several keys of an object at once",
        // Not taught by the rules (see TAUGHT): reading, callbacks (listed apart) and JSON Patch ops.
        Op::Get
        | Op::Callback
        | Op::Add
        | Op::Remove
        | Op::Replace
        | Op::Move
        | Op::Copy
        | Op::Test => "",
    }
}

fn zh_op(op: Op) -> &'static str {
    match op {
        Op::Assign => "设置值",
        Op::Increment => "给数字加上 value（负数即减）",
        Op::Push => "在数组末尾追加",
        Op::Pop => "删除数组最后一项",
        Op::Splice => "从下标 start 起删除 deleteCount 项并插入 items",
        Op::Delete => "删除一个键或数组项",
        Op::Merge => "一次设置对象的多个键",
        // Not taught by the rules (see TAUGHT): reading, callbacks (listed apart) and JSON Patch ops.
        Op::Get
        | Op::Callback
        | Op::Add
        | Op::Remove
        | Op::Replace
        | Op::Move
        | Op::Copy
        | Op::Test => "",
    }
}

/// The ops the rules teach, in the order they are listed.
const TAUGHT: [Op; 7] = [
    Op::Assign,
    Op::Increment,
    Op::Push,
    Op::Pop,
    Op::Splice,
    Op::Delete,
    Op::Merge,
];

/// The prompt for a state, typed by `schema` when given (otherwise by the state itself), listing
/// `callbacks` (the handlers the host registered, with what they say about themselves) after the ops:
/// [`prompt_with`] for a reply, the whole state in JSON.
///
/// Time: O(state + schema + callbacks).
pub fn prompt(
    state: &Value,
    schema: Option<&Json>,
    callbacks: &[CallbackSignature],
    lang: Lang,
) -> Prompt {
    prompt_with(
        state,
        schema,
        callbacks,
        &PromptOptions {
            lang,
            ..PromptOptions::default()
        },
    )
}

/// The prompt for a state in a [`Mode`], with its view of the state (see [`crate::view`]).
///
/// Time: O(state + schema + callbacks), plus the view's.
pub fn prompt_with(
    state: &Value,
    schema: Option<&Json>,
    callbacks: &[CallbackSignature],
    options: &PromptOptions<'_>,
) -> Prompt {
    let spec = match schema {
        Some(schema) => InstructionSpec::from_schema(Some(schema)),
        None => InstructionSpec::from_state(state),
    }
    .with_callbacks(callbacks);
    let visible = match schema {
        Some(schema) => visible_state(&state.to_json(), schema),
        None => state.to_json(),
    };
    let words = match options.lang {
        Lang::En => &EN,
        Lang::Zh => &ZH,
    };
    let compact = options.view.format == ViewFormat::Compact;
    let mut rules = String::new();
    match options.mode {
        Mode::State => {}
        Mode::Reply | Mode::Pass => {
            let (intro, shape) = match (options.mode, compact) {
                (Mode::Pass, _) => (words.pass_intro, words.pass_shape),
                (_, true) => (words.intro_compact, words.shape),
                (_, false) => (words.intro, words.shape),
            };
            rules = format!("{intro}\n{shape}\n{}\n", words.ops);
            for (op, example) in TAUGHT.into_iter().zip(examples(&spec, &visible)) {
                // The pass's strict schema has no merge (see `pass_schema`).
                if options.mode == Mode::Pass && op == Op::Merge {
                    continue;
                }
                if let Some(example) = example {
                    rules.push_str(&format!(
                        "- {}{}{}{}{example}\n",
                        op.name(),
                        words.colon,
                        (words.op)(op),
                        words.stop
                    ));
                }
            }
            if !callbacks.is_empty() {
                rules.push_str(words.callbacks);
                rules.push('\n');
                for callback in callbacks {
                    rules.push_str(&callback_line(&spec, callback, words));
                }
            }
        }
    }
    if compact {
        rules.push_str(words.compact);
        rules.push('\n');
    }
    rules.push_str(words.state);
    // The view reads the state as the model sees it: hidden subtrees are already out.
    let shown = view(&visible, schema, &options.view);
    let fence = if compact { "" } else { "json" };
    let mut text = format!("{rules}\n```{fence}\n{}\n```\n", shown.body());
    if shown.text.is_empty() {
        // Not even the line naming the state fitted the budget: the state is not shown at all.
        text = format!("{rules}\n");
    } else if !shown.elided.is_empty() {
        if shown.body().is_empty() {
            // Not even the top of the state fitted: the view is its one line.
            text = format!("{rules}\n{}\n", shown.text);
        } else {
            text.push_str(shown.notes());
            text.push('\n');
        }
        text.push_str(words.elided);
        text.push('\n');
    }
    if options.mode == Mode::Pass {
        text.push_str(&format!(
            "{}\n<reply>\n{}\n</reply>\n{}\n",
            words.reply,
            options.reply.unwrap_or_default(),
            words.pass_end
        ));
    }
    Prompt {
        rules,
        state: visible,
        view: shown,
        text,
    }
}

/// One callback: `- name(arg, opt?): doc. arg: doc (type); opt: doc (type, optional). {example}`.
/// Types are written in a notation both languages read (`integer >= 0`, `"a" | "b"`).
fn callback_line(spec: &InstructionSpec, callback: &CallbackSignature, words: &Words) -> String {
    let args = callback.args.as_deref();
    let names: Vec<String> = match args {
        None => vec!["...".to_owned()],
        Some(args) => args
            .iter()
            .map(|arg| format!("{}{}", arg.name, if arg.optional { "?" } else { "" }))
            .collect(),
    };
    let mut line = format!("- {}({})", callback.name, names.join(", "));
    let mut parts = Vec::new();
    if let Some(doc) = &callback.doc {
        parts.push(doc.clone());
    }
    let operand = spec
        .target_for(&[Json::String(callback.name.clone())])
        .and_then(|target| target.groups.iter().find(|g| g.ops == [Op::Callback]))
        .and_then(|group| group.operand);
    if let (Some(args), Some(Shape::Tuple { items, .. })) = (args, operand.map(|o| spec.shape(o))) {
        let described: Vec<String> = args
            .iter()
            .zip(items)
            .map(|(arg, shape)| {
                let mut kind = notation(spec, *shape);
                if arg.optional {
                    kind = format!("{kind}, {}", words.optional);
                }
                match &arg.doc {
                    Some(doc) => format!("{}{}{doc} ({kind})", arg.name, words.colon),
                    None => format!("{}{}{kind}", arg.name, words.colon),
                }
            })
            .collect();
        parts.push(described.join("; "));
    }
    if !parts.is_empty() {
        line.push_str(words.colon);
        line.push_str(&parts.join(words.stop));
    }
    line.push_str(words.stop);
    let mut instruction = Map::new();
    instruction.insert("op".into(), json!("callback"));
    instruction.insert("path".into(), json!([callback.name]));
    if let Some(operand) = operand {
        instruction.insert("value".into(), sample(spec, operand));
    }
    line.push_str(&canonical(&instruction));
    line.push('\n');
    line
}

/// A shape in a compact notation for argument lists: `integer >= 0`, `"a" | "b"`, `string`.
fn notation(spec: &InstructionSpec, shape: ShapeId) -> String {
    let range = |low: Option<String>, high: Option<String>, name: &str| match (low, high) {
        (Some(low), Some(high)) => format!("{name} {low}..{high}"),
        (Some(low), None) => format!("{name} >= {low}"),
        (None, Some(high)) => format!("{name} <= {high}"),
        (None, None) => name.to_owned(),
    };
    match spec.shape(shape) {
        Shape::Any => "any".into(),
        Shape::Null => "null".into(),
        Shape::Boolean => "boolean".into(),
        Shape::String => "string".into(),
        Shape::Integer { min, max } => range(
            min.map(|m| m.to_string()),
            max.map(|m| m.to_string()),
            "integer",
        ),
        Shape::Number { min, max, .. } => range(
            min.map(|m| m.to_string()),
            max.map(|m| m.to_string()),
            "number",
        ),
        Shape::Enum(options) => options
            .iter()
            .map(Json::to_string)
            .collect::<Vec<_>>()
            .join(" | "),
        Shape::Array { .. } | Shape::Tuple { .. } => "list".into(),
        Shape::Object { .. } => "object".into(),
        Shape::Union(options) => options
            .iter()
            .map(|o| notation(spec, *o))
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// The state without the subtrees the schema hides with [`VISIBLE_KEYWORD`].
///
/// Time: O(state).
pub fn visible_state(state: &Json, schema: &Json) -> Json {
    prune(state, Some(schema), schema, 0)
}

fn prune(value: &Json, schema: Option<&Json>, root: &Json, depth: usize) -> Json {
    // Past the depth any path could be declared at, nothing is pruned; this also bounds the recursion.
    if depth > 4 * MAX_DESCRIBED_SEGMENTS {
        return value.clone();
    }
    let schema = schema.map(|s| resolve(s, root));
    match value {
        Json::Object(map) => {
            let mut kept = Map::new();
            for (key, member) in map {
                let sub = schema.and_then(|s| {
                    s.get("properties")
                        .and_then(|p| p.get(key))
                        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                });
                if sub.is_some_and(|s| hidden(s, root)) {
                    continue;
                }
                kept.insert(key.clone(), prune(member, sub, root, depth + 1));
            }
            Json::Object(kept)
        }
        Json::Array(items) => {
            let sub = schema.and_then(|s| s.get("items"));
            if sub.is_some_and(|s| hidden(s, root)) {
                return Json::Array(Vec::new());
            }
            Json::Array(
                items
                    .iter()
                    .map(|item| prune(item, sub, root, depth + 1))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// Follows a chain of local `$ref`s (bounded, so a cycle of references ends).
pub(crate) fn resolve<'a>(mut schema: &'a Json, root: &'a Json) -> &'a Json {
    for _ in 0..16 {
        let target = schema
            .get("$ref")
            .and_then(Json::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| root.pointer(pointer));
        match target {
            Some(next) if schema.get(VISIBLE_KEYWORD).is_none() => schema = next,
            _ => break,
        }
    }
    schema
}

pub(crate) fn hidden(schema: &Json, root: &Json) -> bool {
    let is_false = |s: &Json| s.get(VISIBLE_KEYWORD) == Some(&Json::Bool(false));
    is_false(schema) || is_false(resolve(schema, root))
}

/// One example instruction for each op of [`TAUGHT`], in its order: among the visible paths that allow
/// the op, the one that teaches most (see [`rank`]), the first in state order on a tie.
///
/// Time: O(state nodes), with one target lookup per node.
fn examples(spec: &InstructionSpec, state: &Json) -> [Option<String>; TAUGHT.len()] {
    let mut best: [Option<(u8, String)>; TAUGHT.len()] = Default::default();
    walk(state, &mut Vec::new(), &mut |path, current| {
        // One lookup per node, and an example's text only when it would be the best so far: the
        // walk visits every node of the state, so what it does per node must stay small.
        let Some(target) = spec.target_for(path) else {
            return;
        };
        for (slot, op) in best.iter_mut().zip(TAUGHT) {
            let rank = rank(spec, target, current, path, op);
            if slot.as_ref().is_some_and(|(best, _)| *best <= rank) {
                continue;
            }
            if let Some(text) = example_at(spec, target, path, current, op) {
                *slot = Some((rank, text));
            }
        }
    });
    best.map(|slot| slot.map(|(_, text)| text))
}

/// Lower is a better example: a change to a leaf rather than a whole container, a scalar item rather
/// than an object (shorter), an array item or a leaf for `delete`, several members
/// for `merge` (that is what merge is for).
fn rank(spec: &InstructionSpec, target: &Target, current: &Json, path: &[Json], op: Op) -> u8 {
    let scalar = |v: &Json| !v.is_object() && !v.is_array();
    match op {
        Op::Assign => match (spec.shape(target.shape), current) {
            (_, Json::Object(_) | Json::Array(_)) => 9,
            (Shape::Enum(options), _) if options.len() > 1 => 0,
            (_, Json::Number(_)) => 1,
            (_, Json::Bool(_)) => 2,
            _ => 3,
        },
        Op::Push | Op::Pop | Op::Splice => {
            let first = current.as_array().and_then(|items| items.first());
            u8::from(!first.is_none_or(scalar))
        }
        // An array item first (it shows an integer index), then a leaf: deleting a whole subtree is
        // rarely what an example should suggest.
        Op::Delete if path.last().is_some_and(Json::is_number) => 0,
        Op::Delete => 1 + u8::from(!scalar(current)),
        Op::Merge => {
            let members = current
                .as_object()
                .map_or(0, |map| map.values().filter(|v| scalar(v)).count());
            match (path.is_empty(), members >= 2) {
                (false, true) => 0,
                (false, false) => 1,
                (true, _) => 2,
            }
        }
        Op::Increment
        | Op::Get
        | Op::Callback
        | Op::Add
        | Op::Remove
        | Op::Replace
        | Op::Move
        | Op::Copy
        | Op::Test => 0,
    }
}

/// The example for `op` at `path`, if the op is allowed there and has something to act on.
fn example_at(
    spec: &InstructionSpec,
    target: &Target,
    path: &[Json],
    current: &Json,
    op: Op,
) -> Option<String> {
    if path.is_empty() && op != Op::Merge {
        return None;
    }
    let group = target.groups.iter().find(|g| g.ops.contains(&op))?;
    let value = match (op, group.operand) {
        (_, None) => {
            // Pop needs something to remove.
            if op == Op::Pop && current.as_array().is_none_or(Vec::is_empty) {
                return None;
            }
            None
        }
        (Op::Assign, Some(shape)) => Some(assign_value(spec, shape, current)),
        (Op::Increment, Some(_)) => Some(json!(1)),
        (Op::Push, Some(shape)) => Some(
            current
                .as_array()
                .and_then(|items| items.first().cloned())
                .unwrap_or_else(|| sample(spec, shape)),
        ),
        (Op::Splice, Some(_)) => {
            let first = current.as_array()?.first()?.clone();
            Some(json!({"deleteCount": 1, "items": [first], "start": 0}))
        }
        (Op::Merge, Some(_)) => {
            let partial: Map<String, Json> = current
                .as_object()?
                .iter()
                .filter(|(_, m)| !m.is_object() && !m.is_array())
                .take(2)
                .map(|(k, m)| (k.clone(), m.clone()))
                .collect();
            if partial.is_empty() {
                return None;
            }
            Some(Json::Object(partial))
        }
        // The other ops have no example with a value: `pop` and `delete` take none, and the rest
        // are not taught.
        (
            Op::Pop
            | Op::Delete
            | Op::Get
            | Op::Callback
            | Op::Add
            | Op::Remove
            | Op::Replace
            | Op::Move
            | Op::Copy
            | Op::Test,
            Some(_),
        ) => None,
    };
    let mut instruction = Map::new();
    instruction.insert("op".into(), json!(op.name()));
    instruction.insert("path".into(), Json::Array(path.to_vec()));
    if let Some(value) = value {
        // An example must be one the language accepts, or it would teach a mistake.
        if !spec.accepts(&json!({"op": op.name(), "path": path, "value": value})) {
            return None;
        }
        instruction.insert("value".into(), value);
    }
    Some(canonical(&instruction))
}

/// An instruction's text with its members in the grammar's order (`op`, `path`, `value`, `old`,
/// `reason`), compact, so models see the order constrained decoding will ask of them.
pub(crate) fn canonical(instruction: &Map<String, Json>) -> String {
    let members: Vec<String> = ["op", "path", "value", "old", "reason", "metadata"]
        .iter()
        .filter_map(|key| Some(format!("\"{key}\":{}", instruction.get(*key)?)))
        .collect();
    format!("{{{}}}", members.join(","))
}

/// An assign example: another enum member when there is one, the other boolean, else the current
/// value when it is a scalar, else a sample of the shape.
fn assign_value(spec: &InstructionSpec, shape: ShapeId, current: &Json) -> Json {
    if let Shape::Enum(options) = spec.shape(shape) {
        if let Some(other) = options.iter().find(|o| *o != current) {
            return other.clone();
        }
    }
    if let Json::Bool(flag) = current {
        return json!(!flag);
    }
    if !current.is_object() && !current.is_array() && spec.shape_accepts(shape, current) {
        return current.clone();
    }
    sample(spec, shape)
}

/// A small value of a shape.
fn sample(spec: &InstructionSpec, shape: ShapeId) -> Json {
    match spec.shape(shape) {
        Shape::Any | Shape::Null => Json::Null,
        Shape::Boolean => json!(true),
        Shape::String => json!("text"),
        Shape::Integer { min, max } => json!(min.or(*max).unwrap_or(0)),
        Shape::Number { min, max, .. } => json!(min.or(*max).unwrap_or(0.0)),
        Shape::Enum(options) => options.first().cloned().unwrap_or(Json::Null),
        Shape::Array { .. } => json!([]),
        Shape::Object { .. } => json!({}),
        Shape::Union(options) => options
            .first()
            .map_or(Json::Null, |first| sample(spec, *first)),
        Shape::Tuple { items, required } => Json::Array(
            items[..*required]
                .iter()
                .map(|item| sample(spec, *item))
                .collect(),
        ),
    }
}

/// Visits every path of `value` depth first, parents before children.
fn walk(value: &Json, path: &mut Vec<Json>, visit: &mut dyn FnMut(&[Json], &Json)) {
    visit(path, value);
    // Targets end at `MAX_DESCRIBED_SEGMENTS`, so deeper paths can have no example.
    if path.len() >= MAX_DESCRIBED_SEGMENTS {
        return;
    }
    match value {
        Json::Object(map) => {
            for (key, member) in map {
                path.push(Json::String(key.clone()));
                walk(member, path, visit);
                path.pop();
            }
        }
        Json::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(json!(index));
                walk(item, path, visit);
                path.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_subtrees_leave_the_payload() {
        let schema = json!({
            "$defs": {"secret": {"type": "string", "x-statecraft-visible": false}},
            "properties": {
                "hp": {"type": "integer"},
                "notes": {"type": "object", "x-statecraft-visible": false},
                "plot": {"$ref": "#/$defs/secret"},
                "bag": {"type": "array", "items": {"type": "string"}}
            }
        });
        let state = json!({"hp": 3, "notes": {"a": 1}, "plot": "x", "bag": ["a"], "other": 1});
        assert_eq!(
            visible_state(&state, &schema),
            json!({"hp": 3, "bag": ["a"], "other": 1})
        );
    }

    #[test]
    fn examples_come_from_real_paths() {
        let state = Value::from_json(&json!({"player": {"hp": 30, "bag": ["rope"]}}));
        let rules = prompt(&state, None, &[], Lang::En).rules;
        assert!(
            rules.contains(r#"{"op":"push","path":["player","bag"],"value":"rope"}"#),
            "{rules}"
        );
        assert!(
            rules.contains(r#"{"op":"increment","path":["player","hp"],"value":1}"#),
            "{rules}"
        );
    }
}
