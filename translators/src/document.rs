//! The tree the repair parser builds: every node in one vector, strings borrowed from the text.
//!
//! A reply's JSON is read once and decoded once, so building a `serde_json::Value` in between (a map
//! node and an owned string for every key and string) was most of the lenient layer's time. A
//! [`Document`] keeps its nodes, array elements and object members in three vectors. A string that
//! needed no repair borrows the text it was read from; one that did is kept in the document's own
//! string buffer, so reading a block allocates nothing per value. The engine decodes instructions
//! straight from it through [`JsonTree`]; [`Document::to_json`] gives a `serde_json::Value` where one
//! is wanted.
//!
//! This module owns the tree and nothing else: what a value means is for the parser and the extractor.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Map, Number, Value as Json};
use statecraft_engine::{JsonTree, NodeKind, Path, Segment, unescape_pointer_token};

/// Where a node sits in its [`Document`].
pub type NodeId = u32;

/// One node. Containers hold a range of their document's `items` or `members`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Text<'a>),
    Array { start: u32, end: u32 },
    Object { start: u32, end: u32 },
}

/// A string of a document: a slice of the text, or a range of the document's own buffer (for
/// strings that were unescaped or repaired, and for keys and strings added after parsing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Text<'a> {
    Borrowed(&'a str),
    Kept { start: u32, end: u32 },
}

/// JSON values read from a text of lifetime `'a`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document<'a> {
    nodes: Vec<Node<'a>>,
    /// Each node's bytes in the text: where diagnostics about it point.
    spans: Vec<Range<usize>>,
    /// Array elements, each array's contiguous.
    items: Vec<NodeId>,
    /// Object members in text order, each object's contiguous; a key may repeat (the last one counts).
    members: Vec<(Text<'a>, NodeId)>,
    /// The strings that are not slices of the text, one after another.
    kept: String,
}

/// A node of a [`Document`], to read it (it implements the engine's [`JsonTree`]).
#[derive(Clone, Copy, Debug)]
pub struct NodeRef<'d, 'a> {
    document: &'d Document<'a>,
    id: NodeId,
}

impl<'a> Document<'a> {
    /// Reads node `id`.
    ///
    /// # Panics
    /// When `id` is not a node of this document.
    pub fn node(&self, id: NodeId) -> NodeRef<'_, 'a> {
        assert!((id as usize) < self.nodes.len(), "no node {id}");
        NodeRef { document: self, id }
    }

    /// Empties the document, keeping its vectors' capacity.
    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.spans.clear();
        self.items.clear();
        self.kept.clear();
        self.members.clear();
    }

    /// The node `id` as a `serde_json::Value` (a repeated key keeps its last value).
    pub fn to_json(&self, id: NodeId) -> Json {
        match &self.nodes[id as usize] {
            Node::Null => Json::Null,
            Node::Bool(b) => Json::Bool(*b),
            Node::Number(n) => Json::Number(n.clone()),
            Node::String(text) => Json::String(self.str(*text).to_owned()),
            Node::Array { start, end } => Json::Array(
                self.items[*start as usize..*end as usize]
                    .iter()
                    .map(|&item| self.to_json(item))
                    .collect(),
            ),
            Node::Object { start, end } => {
                let mut map = Map::new();
                for (key, value) in &self.members[*start as usize..*end as usize] {
                    map.insert(self.str(*key).to_owned(), self.to_json(*value));
                }
                Json::Object(map)
            }
        }
    }

    /// Adds a scalar node read from `span` of the text.
    pub(crate) fn push(&mut self, node: Node<'a>, span: Range<usize>) -> NodeId {
        debug_assert!(!matches!(node, Node::Array { .. } | Node::Object { .. }));
        self.add(node, span)
    }

    /// Adds an array of `items`, which are nodes of this document.
    pub(crate) fn push_array(
        &mut self,
        items: impl IntoIterator<Item = NodeId>,
        span: Range<usize>,
    ) -> NodeId {
        let start = index(self.items.len());
        self.items.extend(items);
        let end = index(self.items.len());
        self.add(Node::Array { start, end }, span)
    }

    /// Adds an object of `members`, whose values are nodes of this document.
    pub(crate) fn push_object(
        &mut self,
        members: impl IntoIterator<Item = (Text<'a>, NodeId)>,
        span: Range<usize>,
    ) -> NodeId {
        let start = index(self.members.len());
        self.members.extend(members);
        let end = index(self.members.len());
        self.add(Node::Object { start, end }, span)
    }

    /// Adds a copy of `json`, read from `span` of the text (every node of the copy points there).
    pub(crate) fn push_json(&mut self, json: &Json, span: Range<usize>) -> NodeId {
        match json {
            Json::Null => self.push(Node::Null, span),
            Json::Bool(b) => self.push(Node::Bool(*b), span),
            Json::Number(n) => self.push(Node::Number(n.clone()), span),
            Json::String(s) => {
                let text = self.keep(s);
                self.push(Node::String(text), span)
            }
            Json::Array(items) => {
                let items: Vec<NodeId> = items
                    .iter()
                    .map(|item| self.push_json(item, span.clone()))
                    .collect();
                self.push_array(items, span)
            }
            Json::Object(map) => {
                let members: Vec<(Text<'a>, NodeId)> = map
                    .iter()
                    .map(|(key, value)| (self.keep(key), self.push_json(value, span.clone())))
                    .collect();
                self.push_object(members, span)
            }
        }
    }

    /// Adds `path` in its canonical list form, read from `span` of the text.
    pub(crate) fn push_path(&mut self, path: &Path, span: Range<usize>) -> NodeId {
        let items: Vec<NodeId> = path
            .segments()
            .iter()
            .map(|segment| match segment {
                Segment::Key(key) => {
                    let text = self.keep(key);
                    self.push(Node::String(text), span.clone())
                }
                Segment::Index(index) => {
                    self.push(Node::Number(Number::from(*index)), span.clone())
                }
            })
            .collect();
        self.push_array(items, span)
    }

    /// Points the member `key` of object `object` (its last one, when repeated) at `value`.
    pub(crate) fn set_member(&mut self, object: NodeId, key: &str, value: NodeId) {
        if let Node::Object { start, end } = self.nodes[object as usize] {
            let members = &self.members[start as usize..end as usize];
            let found = members.iter().rposition(|(k, _)| self.str(*k) == key);
            if let Some(found) = found {
                self.members[start as usize + found].1 = value;
            }
        }
    }

    /// Keeps `text` in the document's buffer.
    pub(crate) fn keep(&mut self, text: &str) -> Text<'a> {
        let start = index(self.kept.len());
        self.kept.push_str(text);
        Text::Kept {
            start,
            end: index(self.kept.len()),
        }
    }

    /// The characters of a document string.
    fn str<'d>(&'d self, text: Text<'a>) -> &'d str {
        match text {
            Text::Borrowed(text) => text,
            Text::Kept { start, end } => &self.kept[start as usize..end as usize],
        }
    }

    fn add(&mut self, node: Node<'a>, span: Range<usize>) -> NodeId {
        self.nodes.push(node);
        self.spans.push(span);
        index(self.nodes.len() - 1)
    }
}

/// A position in one of the vectors as a `u32`. A document holds about as many nodes and kept bytes
/// as its text has bytes, so this only fails for a text of 4 GiB or more, which no reply is.
fn index(position: usize) -> u32 {
    u32::try_from(position).expect("a document holds fewer than 2^32 nodes")
}

impl<'d, 'a> NodeRef<'d, 'a> {
    /// The node's id in its document.
    pub fn id(self) -> NodeId {
        self.id
    }

    /// The bytes of the text the node was read from.
    pub fn span(self) -> Range<usize> {
        self.document.spans[self.id as usize].clone()
    }

    /// The node a JSON Pointer (`/value/items/2`) leads to from this one, or the deepest node on the
    /// way that exists.
    pub fn pointer_target(self, pointer: &str) -> NodeRef<'d, 'a> {
        self.follow(pointer.split('/').skip(1))
    }

    /// The node the pointer's reference tokens (still escaped) lead to, or the deepest on the way.
    fn follow<'p>(self, tokens: impl Iterator<Item = &'p str>) -> NodeRef<'d, 'a> {
        let mut node = self;
        for token in tokens {
            let Ok(token) = unescape_pointer_token(token) else {
                break;
            };
            let next = match node.kind() {
                NodeKind::Array => token.parse().ok().and_then(|i| node.item(i)),
                _ => node.get(&token),
            };
            match next {
                Some(next) => node = next,
                None => break,
            }
        }
        node
    }

    /// Element `index` of an array node, found in one step (`items().nth` walks the elements before).
    pub fn item(self, index: usize) -> Option<NodeRef<'d, 'a>> {
        match *self.node() {
            Node::Array { start, end } => {
                let at = (start as usize).checked_add(index)?;
                (at < end as usize).then(|| self.at(self.document.items[at]))
            }
            _ => None,
        }
    }

    fn node(self) -> &'d Node<'a> {
        &self.document.nodes[self.id as usize]
    }

    fn at(self, id: NodeId) -> NodeRef<'d, 'a> {
        NodeRef {
            document: self.document,
            id,
        }
    }
}

impl<'d, 'a: 'd> JsonTree<'d> for NodeRef<'d, 'a> {
    fn kind(self) -> NodeKind<'d> {
        match self.node() {
            Node::Null => NodeKind::Null,
            Node::Bool(b) => NodeKind::Bool(*b),
            Node::Number(n) => NodeKind::Number(n),
            Node::String(text) => NodeKind::String(self.document.str(*text)),
            Node::Array { .. } => NodeKind::Array,
            Node::Object { .. } => NodeKind::Object,
        }
    }

    fn items(self) -> impl Iterator<Item = Self> + 'd {
        let ids: &'d [NodeId] = match *self.node() {
            Node::Array { start, end } => &self.document.items[start as usize..end as usize],
            _ => &[],
        };
        ids.iter().map(move |&id| self.at(id))
    }

    fn members(self) -> impl Iterator<Item = (&'d str, Self)> + 'd {
        let document = self.document;
        let members: &'d [(Text<'a>, NodeId)] = match *self.node() {
            Node::Object { start, end } => &self.document.members[start as usize..end as usize],
            _ => &[],
        };
        members
            .iter()
            .map(move |(key, id)| (document.str(*key), self.at(*id)))
    }

    fn get(self, key: &str) -> Option<Self> {
        self.members()
            .filter(|(k, _)| *k == key)
            .last()
            .map(|(_, node)| node)
    }
}

/// Resolves many JSON Pointers from one node, as [`NodeRef::pointer_target`] does each: the place of
/// every problem an instruction (or a patch operation) has. [`JsonTree::get`] looks at every member,
/// so a diagnostic for each of thousands of unknown members, placed by `pointer_target`, walked every
/// member thousands of times. Past a few pointers, the node's members are indexed by key once.
pub(crate) struct PointerTargets<'d, 'a> {
    node: NodeRef<'d, 'a>,
    /// How many pointers were resolved without the index.
    unindexed: usize,
    /// The last member of each key (the one that counts), once built.
    index: Option<HashMap<&'d str, NodeRef<'d, 'a>>>,
}

impl<'d, 'a: 'd> PointerTargets<'d, 'a> {
    /// Pointers resolved one by one before the members are indexed: most instructions have a problem
    /// or two, and indexing costs about what a few walks over the members do.
    const UNINDEXED: usize = 8;

    pub(crate) fn new(node: NodeRef<'d, 'a>) -> PointerTargets<'d, 'a> {
        PointerTargets {
            node,
            unindexed: 0,
            index: None,
        }
    }

    /// The node `pointer` leads to from this one, or the deepest node on the way that exists: always
    /// what [`NodeRef::pointer_target`] gives.
    pub(crate) fn target(&mut self, pointer: &str) -> NodeRef<'d, 'a> {
        let node = self.node;
        if self.index.is_none() && self.unindexed < Self::UNINDEXED
            || node.kind() != NodeKind::Object
        {
            self.unindexed += 1;
            return node.pointer_target(pointer);
        }
        let mut tokens = pointer.split('/').skip(1);
        let Some(first) = tokens.next() else {
            return node;
        };
        let Ok(key) = unescape_pointer_token(first) else {
            return node;
        };
        let index = self.index.get_or_insert_with(|| {
            // Later members overwrite earlier ones: a repeated key reads its last value, as `get` does.
            node.members().collect()
        });
        match index.get(&*key) {
            Some(member) => member.follow(tokens),
            None => node,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use statecraft_engine::{Value, path};

    fn sample() -> (Document<'static>, NodeId) {
        let mut document = Document::default();
        let json = json!({"op": "assign", "path": "a.b", "value": [1, {"x": null}]});
        let root = document.push_json(&json, 0..1);
        (document, root)
    }

    #[test]
    fn reads_like_the_json_it_holds() {
        let (document, root) = sample();
        let node = document.node(root);
        assert_eq!(node.kind(), NodeKind::Object);
        assert_eq!(
            node.get("op").map(JsonTree::kind),
            Some(NodeKind::String("assign"))
        );
        assert!(node.get("nope").is_none());
        let value = node.get("value").expect("value");
        assert_eq!(value.items().count(), 2);
        assert_eq!(
            Value::from_json(value),
            Value::from_json(&json!([1, {"x": null}]))
        );
        assert_eq!(
            document.to_json(root),
            json!({"op": "assign", "path": "a.b", "value": [1, {"x": null}]})
        );
    }

    #[test]
    fn a_repeated_key_reads_its_last_value() {
        let mut document = Document::default();
        let first = document.push(Node::Number(1.into()), 5..6);
        let second = document.push(Node::Number(2.into()), 12..13);
        let a = Text::Borrowed("a");
        let object = document.push_object([(a, first), (a, second)], 0..14);
        let node = document.node(object);
        assert_eq!(node.members().count(), 2);
        assert_eq!(node.get("a").map(NodeRef::id), Some(second));
        assert_eq!(node.pointer_target("/a").span(), 12..13);
        assert_eq!(node.pointer_target("/b/c").span(), 0..14);
        assert_eq!(document.to_json(object), json!({"a": 2}));
    }

    #[test]
    fn a_member_can_be_pointed_at_a_new_node() {
        let (mut document, root) = sample();
        let path = document.push_path(&path!["a", 0], 3..7);
        document.set_member(root, "path", path);
        assert_eq!(document.to_json(root)["path"], json!(["a", 0]));
        assert_eq!(document.node(root).pointer_target("/path/1").span(), 3..7);
    }

    #[test]
    fn pointer_targets_agree_with_pointer_target() {
        let mut document = Document::default();
        let json = json!({"op": "assign", "value": [10, {"x": [1, 2, 3]}], "a/b": 1, "m~n": 2});
        let mut root = document.push_json(&json, 0..1);
        // Thirty members, one key repeated (its last value counts), to use the index.
        let mut members: Vec<(Text<'static>, NodeId)> = Vec::new();
        for i in 0..30u32 {
            let key = document.keep(&format!("k{}", i % 25));
            let value = document.push(Node::Number(i.into()), i as usize..i as usize + 1);
            members.push((key, value));
        }
        let object = document.node(root);
        let copied: Vec<(Text<'static>, NodeId)> = match document.nodes[object.id() as usize] {
            Node::Object { start, end } => document.members[start as usize..end as usize].to_vec(),
            _ => Vec::new(),
        };
        root = document.push_object(copied.into_iter().chain(members), 0..100);
        let pointers = [
            "",
            "/op",
            "/value",
            "/value/0",
            "/value/1/x/2",
            "/value/1/x/9",
            "/value/7",
            "/value/-",
            "/a~1b",
            "/m~0n",
            "/k3",
            "/k24",
            "/k29",
            "/nope",
            "/nope/deeper",
            "/~2",
            "op",
            "//",
        ];
        let node = document.node(root);
        let mut targets = PointerTargets::new(node);
        // Twice over, so that the second round goes through the index.
        for pointer in pointers.iter().chain(&pointers) {
            assert_eq!(
                targets.target(pointer).id(),
                node.pointer_target(pointer).id(),
                "{pointer}"
            );
        }
        assert_eq!(node.pointer_target("/k3").span(), 28..29);
        // On an array the pointers are resolved one by one.
        let array = node.get("value").expect("value");
        let mut targets = PointerTargets::new(array);
        for pointer in ["/0", "/1/x/1", "/5", ""].iter().cycle().take(40) {
            assert_eq!(
                targets.target(pointer).id(),
                array.pointer_target(pointer).id()
            );
        }
        assert_eq!(
            array.item(1).map(NodeRef::id),
            array.items().nth(1).map(NodeRef::id)
        );
        assert!(array.item(2).is_none() && node.item(0).is_none());
    }
}
