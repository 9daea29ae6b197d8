//! The state as the model sees it, within a token budget (docs/state-view.md).
//!
//! This module owns what of the state a prompt shows and how it is written: two formats, pretty JSON
//! and a compact `key: value` rendering of the same data, and, under a budget, the choice of what to
//! show. Every part of the state is a node (a member, an item, a scalar); nodes are ranked, first by
//! tier:
//!
//! 0. subtrees whose subschema says `"x-statecraft-always": true` ([`ALWAYS_KEYWORD`]);
//! 1. the subtrees at the paths the caller says changed recently (for a path that no longer exists,
//!    the nearest container that does, on its own);
//! 2. the subtrees whose key, or whose string value, the recent messages mention (a case-insensitive
//!    occurrence not touching an ASCII letter or digit on either side);
//! 3. everything else,
//!
//! then by depth (shallow first), then in the state's own order. Nodes are taken in that order while
//! the text stays within the budget by [`estimate_tokens`]: a node with members is tried with its whole
//! subtree, and otherwise comes in only as the parent of a member that fits; a node brings its parents
//! with it, and an array item the items before it (so that an item's place in the array is its index).
//! A node that does not fit is skipped and the next one tried. A container left with none of its
//! members shown (an array item before a shown one) is then named as left out rather than shown empty
//! where that keeps within the budget. What is left out is named after the rendering, one line
//! per left-out member (`… /npcs/Mira: 120 tokens not shown`), or one line per container when more
//! than [`ELIDE_EACH`] of its members are left out (`… /log: 40 of 42 items, 800 tokens not shown`;
//! the top level of the state is named `top`).
//! When not even the top of the state and its line fit, the view is the one line
//! `… the state: N tokens not shown`, or nothing when that line does not fit either.
//!
//! Subtrees hidden with `"x-statecraft-visible": false` are never shown and never named. The choice
//! depends on nothing but the state, the schema, the recent paths, the messages and the budget, so the
//! same inputs give the same text. It must not run instructions: commands to elided paths still apply,
//! as the engine sees the whole state.
//!
//! # Compact format
//!
//! One member per line, indented two spaces per level: `key: value` for a scalar, `key:` followed by
//! its members for a container, `key: {}` or `key: []` for an empty one (or one whose members are all
//! left out), and `- value` / `-` for array items. Scalars are JSON (`30`, `true`, `null`); a string is
//! written bare unless it could be read as something else (empty, spaces at either end, a control
//! character, JSON text such as `12` or `true`, or a first character among `"`, `{`, `[`, `-`, `…`),
//! in which case it is a JSON string. A key is bare unless it is empty, holds `:` or a control
//! character, has spaces at either end or starts with `"`, `-` or `…`; then it is a JSON string.
//!
//! Time: O(state nodes × depth) to rank and choose, plus O(state strings × message text) to find
//! mentions.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value as Json;
use statecraft_engine::{Path, Segment, StepId, Store, escape_pointer_token};

use crate::rules::{hidden, resolve};
use crate::tokens::estimate_tokens;

/// The custom schema keyword that puts a subtree first in every budgeted view when `true`.
pub const ALWAYS_KEYWORD: &str = "x-statecraft-always";

/// How many left-out members of one container are named one by one; more make one line.
pub const ELIDE_EACH: usize = 1;

/// How many steps, the one a view shows and those above it on its path, give the recent changes a
/// view ranks after the always-shown subtrees ([`recent_changes`]).
pub const RECENT_STEPS: usize = 3;

/// The paths the change logs of `step` and of the steps above it on its path changed ([`RECENT_STEPS`]
/// steps in all), newest first (none at the root, which is not a step).
///
/// Time: O(those changes).
pub fn recent_changes(store: &Store, step: StepId) -> Vec<Path> {
    let mut recent = Vec::new();
    let mut at = step;
    for _ in 0..RECENT_STEPS {
        let Some(info) = store.step(at) else {
            break;
        };
        recent.extend(info.changes.iter().map(|change| change.path.clone()));
        at = info.parent;
    }
    recent
}

/// A mention of at most this many bytes is looked for in the messages; longer strings are not.
const MENTION_MAX: usize = 200;

/// How the state is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViewFormat {
    /// Pretty JSON, two spaces per level (as `serde_json::to_string_pretty` writes it).
    #[default]
    Json,
    /// `key: value` lines (see the module's doc).
    Compact,
}

/// What the view is asked for.
#[derive(Clone, Debug, Default)]
pub struct ViewOptions<'a> {
    /// The most tokens the view may take, by [`estimate_tokens`]; `None` shows everything.
    pub budget: Option<usize>,
    /// The format.
    pub format: ViewFormat,
    /// Paths changed in the last steps (from the history's change logs), ranked after the
    /// always-shown ones.
    pub recent: &'a [Path],
    /// The recent messages, oldest first: what they mention ranks next.
    pub messages: &'a [String],
}

/// A part of the state the view leaves out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Elided {
    /// The JSON Pointer of the left-out member, or of the container whose members are left out
    /// together when `members` is given.
    pub path: String,
    /// Its size in tokens when shown, by [`estimate_tokens`].
    pub tokens: usize,
    /// How many members of the container at `path` are left out, when they are named together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<usize>,
}

/// The rendered view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct View {
    /// The state as shown: the rendering, then one line per elision (see [`View::body`]).
    pub text: String,
    /// The length of the rendering in `text`, in bytes; the elision lines follow it.
    pub body_len: usize,
    /// The estimate of `text`.
    pub tokens: usize,
    /// The estimate of the whole (visible) state in the same format.
    pub full_tokens: usize,
    /// What is left out, in the order of its lines.
    pub elided: Vec<Elided>,
}

impl View {
    /// The rendering without the elision lines.
    pub fn body(&self) -> &str {
        &self.text[..self.body_len]
    }

    /// The elision lines, each ending in a line break (empty when nothing is left out).
    pub fn notes(&self) -> &str {
        self.text[self.body_len..].trim_start_matches('\n')
    }
}

#[derive(Clone, Debug)]
enum Key {
    Root,
    Member(String),
    Item(usize),
}

struct Node<'a> {
    key: Key,
    parent: usize,
    depth: usize,
    /// One past the last descendant, in pre-order.
    end: usize,
    value: &'a Json,
    children: usize,
    tier: u8,
    /// Tokens of the node's own lines (with their line breaks), an upper bound.
    own: usize,
    /// Tokens of its whole subtree shown.
    full: usize,
    /// Tokens of its JSON Pointer.
    pointer: usize,
    /// Tokens of the line naming it as left out.
    line: usize,
}

/// What is left out of an included container, kept as members are taken in.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    count: usize,
    full: usize,
    lines: usize,
}

/// The view of `state` (a state as JSON) under `schema`'s visibility and always-shown marks.
///
/// Time: see the module's doc.
pub fn view(state: &Json, schema: Option<&Json>, options: &ViewOptions<'_>) -> View {
    let mut builder = Builder {
        nodes: Vec::new(),
        format: options.format,
        haystack: options
            .messages
            .iter()
            .map(|m| m.to_lowercase())
            .collect::<Vec<_>>()
            .join("\n"),
        root_schema: schema,
    };
    let trie = Trie::of(options.recent);
    builder.build(state, Key::Root, usize::MAX, 0, schema, Some(&trie), 3);
    let nodes = builder.nodes;
    let full_text = render(&nodes, None, options.format);
    let full_tokens = estimate_tokens(&full_text);
    let budget = match options.budget {
        Some(budget) if budget < full_tokens => Some(budget),
        _ => None,
    };
    let Some(budget) = budget else {
        return View {
            body_len: full_text.len(),
            tokens: full_tokens,
            text: full_text,
            full_tokens,
            elided: Vec::new(),
        };
    };
    let included = choose(&nodes, budget);
    if !included[0] {
        let line = format!("… the state: {full_tokens} tokens not shown");
        let text = if estimate_tokens(&line) <= budget {
            line
        } else {
            String::new()
        };
        return View {
            tokens: estimate_tokens(&text),
            text,
            body_len: 0,
            full_tokens,
            elided: vec![Elided {
                path: String::new(),
                tokens: full_tokens,
                members: None,
            }],
        };
    }
    let chosen = written(&nodes, &included, options.format, full_tokens);
    // A container whose members are all left out says less as a left-out member of its parent
    // than as `{}` with a line of its own: it goes, when that keeps within the budget (it nearly
    // always saves tokens).
    let mut emptied = included.clone();
    for index in (1..nodes.len()).rev() {
        let node = &nodes[index];
        if !emptied[index] || node.children == 0 {
            continue;
        }
        let mut child = index + 1;
        let mut any = false;
        while child < node.end && !any {
            any = emptied[child];
            child = nodes[child].end;
        }
        if !any {
            emptied[index] = false;
        }
    }
    if emptied != included && emptied[0] {
        let lean = written(&nodes, &emptied, options.format, full_tokens);
        if lean.tokens <= budget && lean.tokens <= chosen.tokens {
            return lean;
        }
    }
    chosen
}

/// The view that shows the nodes `included` shows, with its elision lines.
fn written(nodes: &[Node<'_>], included: &[bool], format: ViewFormat, full_tokens: usize) -> View {
    let mut text = render(nodes, Some(included), format);
    let body_len = text.len();
    let elided = elisions(nodes, included);
    for (_, line) in &elided {
        text.push('\n');
        text.push_str(line);
    }
    View {
        tokens: estimate_tokens(&text),
        text,
        body_len,
        full_tokens,
        elided: elided.into_iter().map(|(e, _)| e).collect(),
    }
}

/// The recent paths as a tree of segments.
#[derive(Default)]
struct Trie {
    end: bool,
    children: BTreeMap<String, Trie>,
}

impl Trie {
    fn of(paths: &[Path]) -> Trie {
        let mut root = Trie::default();
        for path in paths {
            let mut at = &mut root;
            for segment in path.segments() {
                let key = match segment {
                    Segment::Key(key) => key.to_string(),
                    Segment::Index(index) => index.to_string(),
                };
                at = at.children.entry(key).or_default();
            }
            at.end = true;
        }
        root
    }
}

struct Builder<'a> {
    nodes: Vec<Node<'a>>,
    format: ViewFormat,
    haystack: String,
    root_schema: Option<&'a Json>,
}

impl<'a> Builder<'a> {
    /// Adds the node of `value` and its subtree in pre-order; `inherited` is the tier its parent
    /// passes down (3 for none).
    #[allow(clippy::too_many_arguments)]
    fn build(
        &mut self,
        value: &'a Json,
        key: Key,
        parent: usize,
        depth: usize,
        schema: Option<&'a Json>,
        trie: Option<&Trie>,
        inherited: u8,
    ) {
        let schema = schema.map(|s| match self.root_schema {
            Some(root) => resolve(s, root),
            None => s,
        });
        let mut tier = inherited;
        if schema.is_some_and(|s| s.get(ALWAYS_KEYWORD) == Some(&Json::Bool(true))) {
            tier = 0;
        }
        if trie.is_some_and(|t| t.end) {
            tier = tier.min(1);
        }
        let mut own_tier = tier;
        if tier > 2 && self.mentioned(&key, value) {
            tier = 2;
        }
        // A recent path that ends below this node but no longer exists: this node, on its own.
        if let Some(trie) = trie {
            let gone = trie.children.keys().any(|k| match value {
                Json::Object(map) => !map.contains_key(k),
                Json::Array(items) => k.parse::<usize>().map_or(true, |i| i >= items.len()),
                _ => true,
            });
            if gone {
                own_tier = own_tier.min(1);
            }
        }
        own_tier = own_tier.min(tier);
        let index = self.nodes.len();
        let pointer = match (&key, parent) {
            (Key::Root, _) => 0,
            (Key::Member(name), p) => {
                self.nodes[p].pointer + 1 + estimate_tokens(&escape_pointer_token(name))
            }
            (Key::Item(i), p) => self.nodes[p].pointer + 1 + estimate_tokens(&i.to_string()),
        };
        let own = own_cost(self.format, &key, depth, value);
        self.nodes.push(Node {
            key,
            parent,
            depth,
            end: index + 1,
            value,
            children: 0,
            tier: own_tier,
            own,
            full: own,
            pointer,
            line: 0,
        });
        match value {
            Json::Object(map) => {
                for (name, member) in map {
                    let sub = schema.and_then(|s| {
                        s.get("properties")
                            .and_then(|p| p.get(name))
                            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                    });
                    if let (Some(sub), Some(root)) = (sub, self.root_schema) {
                        if hidden(sub, root) {
                            continue;
                        }
                    }
                    let child = self.nodes.len();
                    self.build(
                        member,
                        Key::Member(name.clone()),
                        index,
                        depth + 1,
                        sub,
                        trie.and_then(|t| t.children.get(name)),
                        tier,
                    );
                    self.adopt(index, child);
                }
            }
            Json::Array(items) => {
                let sub = schema.and_then(|s| s.get("items"));
                let shown = match (sub, self.root_schema) {
                    (Some(sub), Some(root)) => !hidden(sub, root),
                    _ => true,
                };
                if shown {
                    for (i, item) in items.iter().enumerate() {
                        let child = self.nodes.len();
                        self.build(
                            item,
                            Key::Item(i),
                            index,
                            depth + 1,
                            sub,
                            trie.and_then(|t| t.children.get(&i.to_string())),
                            tier,
                        );
                        self.adopt(index, child);
                    }
                }
            }
            _ => {}
        }
        let end = self.nodes.len();
        let node = &mut self.nodes[index];
        node.end = end;
        let full = node.full;
        node.line = elision_line_tokens(node.pointer, full, None);
        // A container with members takes their lines instead of its `{}` line.
        if node.children > 0 {
            node.full = full - node.own + container_lines(self.format, &node.key, depth, value);
        }
    }

    fn adopt(&mut self, parent: usize, child: usize) {
        let full = self.nodes[child].full;
        let node = &mut self.nodes[parent];
        node.children += 1;
        node.full += full;
    }

    fn mentioned(&self, key: &Key, value: &Json) -> bool {
        if self.haystack.is_empty() {
            return false;
        }
        let key_mentioned = match key {
            Key::Member(name) => mentions(&self.haystack, name),
            _ => false,
        };
        key_mentioned
            || value
                .as_str()
                .is_some_and(|text| mentions(&self.haystack, text))
    }
}

/// Whether `haystack` (lowercased) holds `needle` case-insensitively, with no ASCII letter or digit
/// touching it on either side.
fn mentions(haystack: &str, needle: &str) -> bool {
    let needle = needle.trim();
    if needle.chars().count() < 2 || needle.len() > MENTION_MAX {
        return false;
    }
    let needle = needle.to_lowercase();
    let bytes = haystack.as_bytes();
    let mut from = 0;
    while let Some(at) = haystack[from..].find(&needle) {
        let start = from + at;
        let end = start + needle.len();
        let before = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after = end >= bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if before && after {
            return true;
        }
        from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

fn indent(format: ViewFormat, depth: usize) -> String {
    let levels = match format {
        ViewFormat::Json => depth,
        ViewFormat::Compact => depth.saturating_sub(1),
    };
    " ".repeat(2 * levels)
}

/// The text before a node's value on its line: its indentation and key (`"hp": `, `hp: `, `- `).
fn prefix(format: ViewFormat, key: &Key, depth: usize) -> String {
    let mut text = indent(format, depth);
    match (format, key) {
        (_, Key::Root) => {}
        (ViewFormat::Json, Key::Member(name)) => {
            text.push_str(&Json::String(name.clone()).to_string());
            text.push_str(": ");
        }
        (ViewFormat::Json, Key::Item(_)) => {}
        (ViewFormat::Compact, Key::Member(name)) => {
            text.push_str(&compact_key(name));
            text.push_str(": ");
        }
        (ViewFormat::Compact, Key::Item(_)) => text.push_str("- "),
    }
    text
}

/// A node's own lines when its members are not shown: an upper bound of what it adds to the text
/// (a trailing comma counted always, a container's opening and closing lines).
fn own_cost(format: ViewFormat, key: &Key, depth: usize, value: &Json) -> usize {
    match value {
        Json::Object(_) | Json::Array(_) => match format {
            ViewFormat::Json => container_lines(format, key, depth, value),
            ViewFormat::Compact => {
                estimate_tokens(&prefix(format, key, depth)) + estimate_tokens("{}") + 1
            }
        },
        scalar => {
            let mut line = prefix(format, key, depth);
            match format {
                ViewFormat::Json => {
                    line.push_str(&scalar.to_string());
                    line.push(',');
                }
                ViewFormat::Compact => line.push_str(&compact_scalar(scalar)),
            }
            estimate_tokens(&line) + 1
        }
    }
}

/// A container's lines around its members (JSON: `"key": {` and `},`; compact: `key:`).
fn container_lines(format: ViewFormat, key: &Key, depth: usize, value: &Json) -> usize {
    let (open, close) = if value.is_array() {
        ("[", "],")
    } else {
        ("{", "},")
    };
    match format {
        ViewFormat::Json => {
            estimate_tokens(&prefix(format, key, depth))
                + estimate_tokens(open)
                + estimate_tokens(&indent(format, depth))
                + estimate_tokens(close)
                + 2
        }
        ViewFormat::Compact => match key {
            Key::Root => 0,
            _ => estimate_tokens(prefix(format, key, depth).trim_end()) + 1,
        },
    }
}

/// The tokens of an elision line for a pointer of `pointer` tokens (with its line break).
fn elision_line_tokens(
    pointer: usize,
    tokens: usize,
    members: Option<(usize, usize, bool)>,
) -> usize {
    // The template's "/" stands for the pointer, whose tokens are added instead.
    let template = elision_text("/", tokens, members);
    estimate_tokens(&template) - 1 + pointer + 1
}

fn elision_text(pointer: &str, tokens: usize, members: Option<(usize, usize, bool)>) -> String {
    match members {
        None => format!("… {pointer}: {tokens} tokens not shown"),
        Some((count, of, array)) => format!(
            "… {pointer}: {count} of {of} {}, {tokens} tokens not shown",
            if array { "items" } else { "members" }
        ),
    }
}

/// A container's elision lines' tokens for what is left out of it.
fn elision_cost(node: &Node<'_>, left: Counters) -> usize {
    match left.count {
        0 => 0,
        n if n <= ELIDE_EACH => left.lines,
        n => elision_line_tokens(
            node.pointer,
            left.full,
            Some((n, node.children, node.value.is_array())),
        ),
    }
}

/// Which nodes the view shows within `budget`: see the module's doc.
fn choose(nodes: &[Node<'_>], budget: usize) -> Vec<bool> {
    choose_counting(nodes, budget).0
}

/// [`choose`], and how many nodes it looked at.
fn choose_counting(nodes: &[Node<'_>], budget: usize) -> (Vec<bool>, usize) {
    let mut chooser = Chooser::new(nodes);
    if nodes.is_empty() {
        return (chooser.included, 0);
    }
    // Tier, then depth, then pre-order: a counting sort, stable.
    let depth = nodes.iter().map(|n| n.depth).max().unwrap_or(0) + 1;
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); 4 * depth];
    for (index, node) in nodes.iter().enumerate() {
        buckets[usize::from(node.tier) * depth + node.depth].push(index);
    }
    for index in buckets.into_iter().flatten() {
        if chooser.included[index] {
            continue;
        }
        // A container is tried whole, and only whole: shown empty it would tell less than the line
        // naming it, so it comes in alone only as the parent of a member that fits.
        if nodes[index].end > index + 1 {
            if let Some(take) = chooser.needs(index, true) {
                chooser.take(&take, budget);
            }
            continue;
        }
        let Some(take) = chooser.needs(index, false) else {
            continue;
        };
        if !chooser.take(&take, budget) {
            let node = &nodes[index];
            if let Key::Item(i) = node.key {
                if chooser.included[node.parent] {
                    let blocked = &mut chooser.blocked[node.parent];
                    *blocked = (*blocked).min(i);
                }
            }
        }
    }
    (chooser.included, chooser.work + nodes.len())
}

/// The state of a choice in progress.
struct Chooser<'n, 'a> {
    nodes: &'n [Node<'a>],
    included: Vec<bool>,
    /// What each included container leaves out.
    left: Vec<Counters>,
    /// What each container would leave out with none of its members shown.
    all: Vec<Counters>,
    /// How many of an included array's items are shown (always its first ones).
    prefix: Vec<usize>,
    /// The first of an array's items not shown yet, when some are.
    next_item: Vec<usize>,
    /// An included array's first item index known not to fit on its own.
    blocked: Vec<usize>,
    /// The tokens of what is taken so far, with its elision lines.
    total: usize,
    /// Nodes looked at, for the tests of the cost's growth.
    work: usize,
}

impl<'n, 'a> Chooser<'n, 'a> {
    fn new(nodes: &'n [Node<'a>]) -> Self {
        let mut all = vec![Counters::default(); nodes.len()];
        for node in nodes.iter().skip(1) {
            let counters = &mut all[node.parent];
            counters.count += 1;
            counters.full += node.full;
            counters.lines += node.line;
        }
        Chooser {
            nodes,
            included: vec![false; nodes.len()],
            left: vec![Counters::default(); nodes.len()],
            all,
            prefix: vec![0; nodes.len()],
            next_item: vec![0; nodes.len()],
            blocked: vec![usize::MAX; nodes.len()],
            total: 0,
            work: 0,
        }
    }

    /// The nodes showing `index` needs, parents first: its parents not shown yet, the items before
    /// each array item among them, and with `subtree` its descendants. `None` when an item among
    /// them is known not to fit.
    fn needs(&mut self, index: usize, subtree: bool) -> Option<Vec<usize>> {
        let nodes = self.nodes;
        let mut chain = Vec::new();
        let mut at = index;
        loop {
            chain.push(at);
            let parent = nodes[at].parent;
            if parent == usize::MAX || self.included[parent] {
                break;
            }
            at = parent;
        }
        chain.reverse();
        let mut take = Vec::new();
        for node in chain {
            if let Key::Item(i) = nodes[node].key {
                let parent = nodes[node].parent;
                let start = if self.included[parent] {
                    if i >= self.blocked[parent] {
                        return None;
                    }
                    self.prefix[parent]
                } else {
                    0
                };
                let mut sibling = if start == 0 {
                    parent + 1
                } else {
                    self.next_item[parent]
                };
                for _ in start..i {
                    take.push(sibling);
                    sibling = nodes[sibling].end;
                }
            }
            take.push(node);
        }
        if subtree {
            take.extend(index + 1..nodes[index].end);
        }
        self.work += take.len();
        Some(take)
    }

    /// Takes `take` (in pre-order, parents before members) when the text stays within `budget`.
    fn take(&mut self, take: &[usize], budget: usize) -> bool {
        let nodes = self.nodes;
        let mut touched: Vec<(usize, Counters)> = Vec::new();
        let mut slots: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        let mut delta = 0usize;
        let mut freed = 0usize;
        for &node in take {
            delta += nodes[node].own;
            if nodes[node].children > 0 {
                slots.insert(node, touched.len());
                touched.push((node, self.all[node]));
            }
            let parent = nodes[node].parent;
            if parent == usize::MAX {
                continue;
            }
            let slot = *slots.entry(parent).or_insert_with(|| {
                touched.push((parent, self.left[parent]));
                freed += elision_cost(&nodes[parent], self.left[parent]);
                touched.len() - 1
            });
            let counters = &mut touched[slot].1;
            counters.count -= 1;
            counters.full -= nodes[node].full;
            counters.lines -= nodes[node].line;
        }
        let added: usize = touched
            .iter()
            .map(|(node, counters)| elision_cost(&nodes[*node], *counters))
            .sum();
        let after = (self.total + delta + added).saturating_sub(freed);
        if after > budget {
            return false;
        }
        self.total = after;
        for &node in take {
            self.included[node] = true;
            if let Key::Item(_) = nodes[node].key {
                let parent = nodes[node].parent;
                self.prefix[parent] += 1;
                self.next_item[parent] = nodes[node].end;
            }
        }
        for (node, counters) in touched {
            self.left[node] = counters;
        }
        true
    }
}

/// The text of the nodes `included` shows (all of them for `None`).
fn render(nodes: &[Node<'_>], included: Option<&[bool]>, format: ViewFormat) -> String {
    let mut out = String::new();
    if nodes.is_empty() {
        return out;
    }
    let mut lines = Vec::new();
    render_node(nodes, included, format, 0, false, &mut lines);
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

fn shown(included: Option<&[bool]>, index: usize) -> bool {
    included.is_none_or(|included| included[index])
}

fn render_node(
    nodes: &[Node<'_>],
    included: Option<&[bool]>,
    format: ViewFormat,
    index: usize,
    comma: bool,
    lines: &mut Vec<String>,
) {
    let node = &nodes[index];
    let comma = if comma && format == ViewFormat::Json {
        ","
    } else {
        ""
    };
    let mut children = Vec::new();
    let mut child = index + 1;
    while child < node.end {
        if shown(included, child) {
            children.push(child);
        }
        child = nodes[child].end;
    }
    let start = prefix(format, &node.key, node.depth);
    match node.value {
        Json::Object(_) | Json::Array(_) => {
            let (open, close) = if node.value.is_array() {
                ("[", "]")
            } else {
                ("{", "}")
            };
            if children.is_empty() {
                lines.push(format!("{start}{open}{close}{comma}"));
                return;
            }
            match format {
                ViewFormat::Json => lines.push(format!("{start}{open}")),
                ViewFormat::Compact => {
                    if !matches!(node.key, Key::Root) {
                        lines.push(start.trim_end().to_owned());
                    }
                }
            }
            let last = children.len() - 1;
            for (i, child) in children.into_iter().enumerate() {
                render_node(nodes, included, format, child, i < last, lines);
            }
            if format == ViewFormat::Json {
                lines.push(format!("{}{close}{comma}", indent(format, node.depth)));
            }
        }
        scalar => {
            let value = match format {
                ViewFormat::Json => scalar.to_string(),
                ViewFormat::Compact => compact_scalar(scalar),
            };
            lines.push(format!("{start}{value}{comma}"));
        }
    }
}

/// The left-out parts and their lines, containers in pre-order.
fn elisions(nodes: &[Node<'_>], included: &[bool]) -> Vec<(Elided, String)> {
    let mut out = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        if !included[index] || node.children == 0 {
            continue;
        }
        let mut left = Vec::new();
        let mut child = index + 1;
        while child < node.end {
            if !included[child] {
                left.push(child);
            }
            child = nodes[child].end;
        }
        if left.is_empty() {
            continue;
        }
        if left.len() <= ELIDE_EACH {
            for child in left {
                let path = pointer(nodes, child);
                let tokens = nodes[child].full;
                out.push((
                    Elided {
                        path: path.clone(),
                        tokens,
                        members: None,
                    },
                    elision_text(&path, tokens, None),
                ));
            }
        } else {
            let path = pointer(nodes, index);
            let tokens = left.iter().map(|c| nodes[*c].full).sum();
            let line = elision_text(
                if path.is_empty() { "top" } else { &path },
                tokens,
                Some((left.len(), node.children, node.value.is_array())),
            );
            out.push((
                Elided {
                    path,
                    tokens,
                    members: Some(left.len()),
                },
                line,
            ));
        }
    }
    out
}

fn pointer(nodes: &[Node<'_>], mut index: usize) -> String {
    let mut segments = Vec::new();
    while index != usize::MAX {
        match &nodes[index].key {
            Key::Root => {}
            Key::Member(name) => segments.push(escape_pointer_token(name).into_owned()),
            Key::Item(i) => segments.push(i.to_string()),
        }
        index = nodes[index].parent;
    }
    segments.reverse();
    segments.iter().map(|s| format!("/{s}")).collect()
}

/// A key in the compact format: bare unless it could be misread.
fn compact_key(key: &str) -> String {
    let plain = !key.is_empty()
        && key.trim() == key
        && !key.contains(':')
        && !key.chars().any(char::is_control)
        && !key.starts_with(['"', '-', '…']);
    if plain {
        key.to_owned()
    } else {
        Json::String(key.to_owned()).to_string()
    }
}

/// A scalar in the compact format: JSON, a string bare unless it could be misread.
fn compact_scalar(value: &Json) -> String {
    match value {
        Json::String(text) => {
            let plain = !text.is_empty()
                && text.trim() == text
                && !text.chars().any(char::is_control)
                && !text.starts_with(['"', '{', '[', '-', '…'])
                && serde_json::from_str::<Json>(text).is_err();
            if plain {
                text.clone()
            } else {
                value.to_string()
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Json {
        json!({
            "player": {"hp": 30, "name": "Ann", "bag": ["rope", "torch"]},
            "npcs": {"Mira": {"mood": "calm", "trust": 4}, "Bob": {"mood": "angry"}},
            "log": ["a", "b", "c", "d", "e"]
        })
    }

    #[test]
    fn the_whole_state_is_pretty_json() {
        let state = sample();
        let made = view(&state, None, &ViewOptions::default());
        assert_eq!(made.text, serde_json::to_string_pretty(&state).unwrap());
        assert!(made.elided.is_empty());
        assert_eq!(made.tokens, made.full_tokens);
    }

    #[test]
    fn the_compact_format() {
        let state =
            json!({"a": {"b": [1, {"c": "x y"}, []], "e": {}}, "s": "12", "t": "-x", "k:": null});
        let made = view(
            &state,
            None,
            &ViewOptions {
                format: ViewFormat::Compact,
                ..ViewOptions::default()
            },
        );
        assert_eq!(
            made.text,
            "a:\n  b:\n    - 1\n    -\n      c: x y\n    - []\n  e: {}\n\"k:\": null\ns: \"12\"\nt: \"-x\""
        );
    }

    #[test]
    fn within_the_budget_with_named_elisions() {
        let state = sample();
        let full = view(&state, None, &ViewOptions::default()).full_tokens;
        for budget in 0..=full + 5 {
            let made = view(
                &state,
                None,
                &ViewOptions {
                    budget: Some(budget),
                    ..ViewOptions::default()
                },
            );
            assert!(
                made.tokens <= budget,
                "{budget}: {}\n{}",
                made.tokens,
                made.text
            );
            if budget >= full {
                assert!(made.elided.is_empty(), "{budget}: {}", made.text);
            }
        }
    }

    #[test]
    fn always_then_recent_then_mentioned() {
        let mut state = sample();
        state["npcs"]["Bob"]["notes"] = json!("a long story about the old mill ".repeat(4));
        let schema = json!({"properties": {"log": {"x-statecraft-always": true}}});
        let recent = [Path::from_pointer("/player/hp").unwrap()];
        let messages = ["Mira smiles.".to_owned()];
        let made = view(
            &state,
            Some(&schema),
            &ViewOptions {
                budget: Some(165),
                recent: &recent,
                messages: &messages,
                ..ViewOptions::default()
            },
        );
        assert!(made.body().contains("\"e\""), "{}", made.text);
        assert!(made.body().contains("\"hp\": 30"), "{}", made.text);
        assert!(made.body().contains("\"Mira\""), "{}", made.text);
        assert!(!made.body().contains("\"Bob\""), "{}", made.text);
        assert!(made.notes().contains("/npcs/Bob"), "{}", made.text);
    }

    #[test]
    fn array_items_keep_their_indexes() {
        let state = json!({"log": ["a", "b", "c", "Mira", "e"]});
        let messages = ["mira".to_owned()];
        let made = view(
            &state,
            None,
            &ViewOptions {
                budget: Some(60),
                messages: &messages,
                ..ViewOptions::default()
            },
        );
        assert!(made.body().contains("\"Mira\""), "{}", made.text);
        assert!(made.body().contains("\"a\""), "{}", made.text);
    }

    #[test]
    fn mentions_need_word_edges() {
        assert!(mentions("the hp drops", "HP"));
        assert!(!mentions("chips", "hp"));
        assert!(mentions("她的好感度上升", "好感度"));
        assert!(!mentions("anything", "a"));
    }

    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            (-1000i64..1000).prop_map(|n| json!(n)),
            "[a-zA-Z好 :\\-\"]{0,12}".prop_map(Json::String),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                prop::collection::btree_map("[a-zA-Z:\\- ]{0,6}", inner, 0..6)
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
            ]
        })
    }

    fn nodes_of<'a>(
        state: &'a Json,
        schema: Option<&'a Json>,
        format: ViewFormat,
    ) -> Vec<Node<'a>> {
        let mut builder = Builder {
            nodes: Vec::new(),
            format,
            haystack: String::new(),
            root_schema: schema,
        };
        builder.build(state, Key::Root, usize::MAX, 0, schema, None, 3);
        builder.nodes
    }

    proptest! {
        #[test]
        fn never_over_the_budget_and_the_same_every_time(
            state in arb_json(),
            budget in 0usize..400,
            compact in any::<bool>(),
            words in "[a-z ]{0,20}",
        ) {
            let format = if compact { ViewFormat::Compact } else { ViewFormat::Json };
            let messages = [words];
            let options = ViewOptions { budget: Some(budget), format, messages: &messages, ..ViewOptions::default() };
            let made = view(&state, None, &options);
            prop_assert!(made.tokens <= budget, "{} > {budget}\n{}", made.tokens, made.text);
            prop_assert_eq!(made.tokens, estimate_tokens(&made.text));
            prop_assert_eq!(&made, &view(&state, None, &options));
            if !made.elided.is_empty() {
                prop_assert!(made.full_tokens > budget);
            }
            // Without a budget, JSON is the state's own pretty text.
            if format == ViewFormat::Json {
                let whole = view(&state, None, &ViewOptions::default());
                prop_assert_eq!(whole.text, serde_json::to_string_pretty(&state).unwrap());
            }
        }

        #[test]
        fn the_always_shown_subtree_is_there_when_it_fits(
            keep in arb_json(),
            others in prop::collection::btree_map("[a-z]{1,6}", arb_json(), 0..8),
            slack in 0usize..50,
            compact in any::<bool>(),
        ) {
            let format = if compact { ViewFormat::Compact } else { ViewFormat::Json };
            let mut map: serde_json::Map<String, Json> = others.into_iter().collect();
            map.insert("keep".into(), keep.clone());
            let state = Json::Object(map);
            let schema = json!({"properties": {"keep": {"x-statecraft-always": true}}});
            let nodes = nodes_of(&state, Some(&schema), format);
            let keep_node = (1..nodes.len()).find(|i| matches!(&nodes[*i].key, Key::Member(k) if k == "keep") && nodes[*i].parent == 0).unwrap();
            // The root, the kept subtree whole, and the lines naming the root's other members.
            let mut rest = Counters::default();
            let mut child = 1;
            while child < nodes.len() {
                if child != keep_node {
                    rest.count += 1;
                    rest.full += nodes[child].full;
                    rest.lines += nodes[child].line;
                }
                child = nodes[child].end;
            }
            // Each node's own lines bound what it adds (see `own_cost`).
            let subtree: usize = (keep_node..nodes[keep_node].end).map(|i| nodes[i].own).sum();
            let need = nodes[0].own + subtree + elision_cost(&nodes[0], rest);
            let budget = need + slack;
            let made = view(&state, Some(&schema), &ViewOptions { budget: Some(budget), format, ..ViewOptions::default() });
            let alone = view(&json!({"keep": keep}), None, &ViewOptions { format, ..ViewOptions::default() });
            // The kept subtree's text, as the whole view of it alone writes it (past its first line).
            let kept: Vec<&str> = alone.text.lines().collect();
            let body = made.body();
            let inner = match format {
                ViewFormat::Json => &kept[1..kept.len() - 1],
                ViewFormat::Compact => &kept[..],
            };
            for line in inner {
                let line = line.trim_end_matches(',');
                prop_assert!(body.contains(line), "{line:?} missing from\n{}", made.text);
            }
        }
    }

    /// The chooser's work on `state` with a budget of `percent` of its whole size.
    fn work(state: &Json, percent: usize, messages: &[String]) -> usize {
        let mut builder = Builder {
            nodes: Vec::new(),
            format: ViewFormat::Json,
            haystack: messages.join("\n").to_lowercase(),
            root_schema: None,
        };
        builder.build(state, Key::Root, usize::MAX, 0, None, None, 3);
        let budget = builder.nodes[0].full * percent / 100;
        choose_counting(&builder.nodes, budget).1
    }

    #[test]
    fn the_work_grows_linearly() {
        // Wide objects, a long array whose late items are mentioned, and nested records: twice the
        // state is at most a little more than twice the work.
        let wide = |n: usize| {
            Json::Object(
                (0..n)
                    .map(|i| (format!("k{i}"), json!({"a": i, "b": [i, i]})))
                    .collect(),
            )
        };
        let long = |n: usize| json!({"log": (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>()});
        let messages: Vec<String> = (0..64).map(|i| format!("w{}", 4000 + i)).collect();
        for (name, make) in [("wide", &wide as &dyn Fn(usize) -> Json), ("long", &long)] {
            for budget in [1, 10, 50, 90] {
                let small = work(&make(2000), budget, &messages);
                let large = work(&make(4000), budget, &messages);
                assert!(
                    large <= small * 5 / 2,
                    "{name} at {budget}: {small} then {large}"
                );
            }
        }
    }
}
