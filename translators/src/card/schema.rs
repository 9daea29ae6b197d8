//! MVU's automatic schema: what MVU makes of the structure markers in a card's InitVar state (MVU's
//! `generateSchema` and `cleanUpMetadata`), in MVU's own shape, so that a host can hand it to MVU's
//! tools as well as enforce it. `$meta` on an object (`extensible`, `recursiveExtensible`,
//! `required`, `template`), an array element that holds only `$meta`, and the string
//! `$__META_EXTENSIBLE__$` in an array are read and removed from the state; every object and array
//! of the state gets a node saying whether it is open to new members or elements, which keys are
//! required, and what template new values take. This module must not enforce the schema: the engine
//! does, under the `mvu` profile.

use serde_json::{Map, Value as Json, json};

/// MVU's marker that opens an array to new elements.
pub(crate) const EXTENSIBLE_MARKER: &str = "$__META_EXTENSIBLE__$";

/// The root options MVU reads from `$meta` at the top of the state.
const ROOT_OPTIONS: [&str; 3] = ["strictTemplate", "concatTemplateArray", "strictSet"];

/// Builds the schema of `state` and removes every marker from it, as MVU does when a card's
/// variables are first initialised.
/// Time: O(n) in the size of the state.
pub(crate) fn generate_and_clean(state: &mut Json) -> Json {
    let root_options: Vec<(&str, Json)> = state
        .get("$meta")
        .and_then(Json::as_object)
        .map(|meta| {
            ROOT_OPTIONS
                .iter()
                .filter_map(|option| meta.get(*option).map(|value| (*option, value.clone())))
                .collect()
        })
        .unwrap_or_default();
    let mut schema = node(state, false);
    if let Json::Object(fields) = &mut schema {
        for (option, value) in root_options {
            fields.insert(option.to_owned(), value);
        }
    }
    schema
}

/// MVU's `generateSchema` for one value (with no earlier schema), removing the markers it reads.
fn node(data: &mut Json, parent_recursive: bool) -> Json {
    match data {
        Json::Array(items) => {
            let mut extensible = false;
            let mut template = None;
            // An element holding only `$meta` describes the array and is removed.
            if let Some(index) = items.iter().position(is_meta_element) {
                let element = items.remove(index);
                if let Some(meta) = element.get("$meta") {
                    if let Some(value) = meta.get("extensible") {
                        extensible = value == &Json::Bool(true);
                    }
                    template = meta.get("template").cloned();
                }
            }
            if items.iter().any(|item| item == EXTENSIBLE_MARKER) {
                extensible = true;
            }
            // MVU removes the first marker and the first `$meta` element here and every other one
            // when it cleans the state; removing them all first gives the same state.
            items.retain(|item| item != EXTENSIBLE_MARKER && !is_meta_element(item));
            let element_type = match items.first_mut() {
                Some(first) => node(first, parent_recursive),
                None => json!({"type": "any"}),
            };
            // The rest of the elements are cleaned as MVU's cleanUpMetadata does.
            for item in items.iter_mut().skip(1) {
                clean(item);
            }
            let mut schema = json!({
                "type": "array",
                "extensible": extensible || parent_recursive,
                "recursiveExtensible": parent_recursive,
                "elementType": element_type,
            });
            if let Some(template) = template {
                schema["template"] = template;
            }
            schema
        }
        Json::Object(fields) => {
            let meta = fields.remove("$meta");
            let meta_flag = |name: &str| {
                meta.as_ref()
                    .and_then(|meta| meta.get(name))
                    .is_some_and(|value| value == &Json::Bool(true))
            };
            let recursive = parent_recursive || meta_flag("recursiveExtensible");
            let extensible = meta_flag("extensible") || recursive;
            let required: Vec<&str> = meta
                .as_ref()
                .and_then(|meta| meta.get("required"))
                .and_then(Json::as_array)
                .map(|keys| keys.iter().filter_map(Json::as_str).collect())
                .unwrap_or_default();
            let child_recursive = extensible && recursive;
            let mut properties = Map::new();
            for (key, value) in fields.iter_mut() {
                let mut child = node(value, child_recursive);
                let is_required = !extensible || required.contains(&key.as_str());
                child["required"] = Json::Bool(is_required);
                properties.insert(key.clone(), child);
            }
            let mut schema = json!({
                "type": "object",
                "properties": properties,
                "extensible": extensible,
                "recursiveExtensible": recursive,
            });
            if let Some(template) = meta.as_ref().and_then(|meta| meta.get("template")) {
                schema["template"] = template.clone();
            }
            schema
        }
        Json::String(_) => json!({"type": "string"}),
        Json::Number(_) => json!({"type": "number"}),
        Json::Bool(_) => json!({"type": "boolean"}),
        Json::Null => json!({"type": "any"}),
    }
}

fn is_meta_element(item: &Json) -> bool {
    item.as_object()
        .is_some_and(|fields| fields.len() == 1 && fields.contains_key("$meta"))
}

/// MVU's `cleanUpMetadata`: every marker removed, nothing read.
fn clean(data: &mut Json) {
    match data {
        Json::Array(items) => {
            items.retain(|item| item != EXTENSIBLE_MARKER && !is_meta_element(item));
            items.iter_mut().for_each(clean);
        }
        Json::Object(fields) => {
            fields.remove("$meta");
            fields.values_mut().for_each(clean);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_become_the_schema_and_leave_the_state() {
        let mut state = json!({
            "$meta": {"strictSet": true},
            "player": {"hp": 100, "bag": ["rope", "$__META_EXTENSIBLE__$"]},
            "npcs": {
                "$meta": {"extensible": true, "required": ["alice"], "template": {"mood": "calm"}},
                "alice": {"mood": "happy"}
            },
            "log": [{"$meta": {"extensible": true, "template": {"day": 1}}}, {"day": 0, "$meta": {"x": 1}}]
        });
        let schema = generate_and_clean(&mut state);
        assert_eq!(
            state,
            json!({"player": {"hp": 100, "bag": ["rope"]}, "npcs": {"alice": {"mood": "happy"}}, "log": [{"day": 0}]})
        );
        assert_eq!(schema["strictSet"], true);
        assert_eq!(schema["extensible"], false);
        let player = &schema["properties"]["player"];
        assert_eq!(player["required"], true);
        assert_eq!(player["extensible"], false);
        assert_eq!(player["properties"]["bag"]["extensible"], true);
        assert_eq!(
            player["properties"]["bag"]["elementType"],
            json!({"type": "string"})
        );
        let npcs = &schema["properties"]["npcs"];
        assert_eq!(npcs["extensible"], true);
        assert_eq!(npcs["template"], json!({"mood": "calm"}));
        assert_eq!(
            npcs["properties"]["alice"]["required"], true,
            "listed in required"
        );
        assert_eq!(
            npcs["properties"]["alice"]["properties"]["mood"]["required"],
            true
        );
        let log = &schema["properties"]["log"];
        assert_eq!(log["extensible"], true);
        assert_eq!(log["template"], json!({"day": 1}));
    }

    #[test]
    fn recursive_extensible_opens_every_container_below() {
        let mut state = json!({"world": {"$meta": {"recursiveExtensible": true}, "towns": {"a": {"pop": 1}}, "list": [1]}});
        let schema = generate_and_clean(&mut state);
        let world = &schema["properties"]["world"];
        assert_eq!(world["extensible"], true);
        assert_eq!(world["properties"]["towns"]["extensible"], true);
        assert_eq!(
            world["properties"]["towns"]["properties"]["a"]["extensible"],
            true
        );
        assert_eq!(
            world["properties"]["towns"]["properties"]["a"]["properties"]["pop"]["required"],
            false
        );
        assert_eq!(world["properties"]["list"]["extensible"], true);
    }
}
