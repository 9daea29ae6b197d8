//! Read-only JSON trees that instructions are decoded from.
//!
//! The decoder reads instructions through [`JsonTree`] so that it does not care where the JSON lives:
//! in a `serde_json::Value`, or in a translator's own tree whose strings borrow the model's text. This
//! module owns the trait; the reads over it live with what they read into ([`crate::Value::from_json`],
//! [`crate::json_depth`], the path and instruction decoders).

use serde_json::Number;

/// What a JSON node is, with its scalar content.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodeKind<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(&'a Number),
    /// A string.
    String(&'a str),
    /// An array: read its elements with [`JsonTree::items`].
    Array,
    /// An object: read its members with [`JsonTree::members`] and [`JsonTree::get`].
    Object,
}

/// A node of a read-only JSON tree, cheap to copy (a reference or an index).
pub trait JsonTree<'a>: Copy + 'a {
    /// What this node is.
    fn kind(self) -> NodeKind<'a>;

    /// The elements of an array, in order; nothing for any other node.
    fn items(self) -> impl Iterator<Item = Self> + 'a;

    /// The members of an object, in order; nothing for any other node. A tree may hold a key twice;
    /// [`JsonTree::get`] then reads the last one.
    fn members(self) -> impl Iterator<Item = (&'a str, Self)> + 'a;

    /// The object member named `key` (the last one when it repeats); `None` for any other node.
    fn get(self, key: &str) -> Option<Self>;
}

impl<'a> JsonTree<'a> for &'a serde_json::Value {
    fn kind(self) -> NodeKind<'a> {
        match self {
            serde_json::Value::Null => NodeKind::Null,
            serde_json::Value::Bool(b) => NodeKind::Bool(*b),
            serde_json::Value::Number(n) => NodeKind::Number(n),
            serde_json::Value::String(s) => NodeKind::String(s),
            serde_json::Value::Array(_) => NodeKind::Array,
            serde_json::Value::Object(_) => NodeKind::Object,
        }
    }

    fn items(self) -> impl Iterator<Item = Self> + 'a {
        self.as_array().into_iter().flatten()
    }

    fn members(self) -> impl Iterator<Item = (&'a str, Self)> + 'a {
        self.as_object()
            .into_iter()
            .flat_map(|map| map.iter().map(|(key, value)| (key.as_str(), value)))
    }

    fn get(self, key: &str) -> Option<Self> {
        self.as_object().and_then(|map| map.get(key))
    }
}

/// "a string", "an object", …: a node's type for error messages.
pub(crate) fn type_name<'a>(node: impl JsonTree<'a>) -> &'static str {
    match node.kind() {
        NodeKind::Null => "null",
        NodeKind::Bool(_) => "a boolean",
        NodeKind::Number(_) => "a number",
        NodeKind::String(_) => "a string",
        NodeKind::Array => "an array",
        NodeKind::Object => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serde_json_reads_as_a_tree() {
        let json = json!({"op": "assign", "path": ["a", 1]});
        let keys: Vec<&str> = (&json).members().map(|(key, _)| key).collect();
        assert_eq!(keys, ["op", "path"]);
        assert_eq!(
            JsonTree::get(&json, "op").map(JsonTree::kind),
            Some(NodeKind::String("assign"))
        );
        assert_eq!(JsonTree::get(&json, "nope"), None);
        assert_eq!((&json["path"]).items().count(), 2);
        assert_eq!((&json["path"]).members().count(), 0);
        assert_eq!(JsonTree::get(&json["path"], "a"), None);
        assert_eq!(type_name(&json["path"][1]), "a number");
    }
}
