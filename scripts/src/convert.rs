//! Values crossing the boundary between Lua and the engine.
//!
//! Lua tables become JSON arrays or objects by their keys: keys `1..n` make a list, string keys an
//! object, anything else is refused with the place and the reason. Cycles, functions, userdata,
//! threads, NaN and infinities are refused too, as is nesting deeper than `Limits::max_value_depth`.
//! Every conversion out of Lua is charged against a byte budget, because what it produces lives in
//! Rust memory, outside the VM's memory limit. Going into Lua, arrays carry a shared marker metatable
//! so that an empty list read by a script and written back stays a list. This module never calls a
//! metamethod: it reads tables raw, so a script's `__index` or `__pairs` cannot run during conversion.

use std::ffi::c_void;
use std::fmt;

use mlua::{Lua, Table, Value as LuaValue};
use serde_json::{Map, Number, Value as Json};
use statecraft_engine::{Instruction, Key, Path, Segment, Value, escape_pointer_token, parse_path};

/// Integers beyond this magnitude cannot be told from their neighbours as Lua doubles.
const EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;
/// A rough cost, in bytes, of one converted node, so that a table of empty tables is not free.
const NODE_COST: usize = 32;

/// Why a Lua value could not cross into the engine, and where inside it.
#[derive(Debug)]
pub(crate) struct ConvertError {
    /// Segments from the innermost outwards (they are pushed while the recursion unwinds).
    trail: Vec<String>,
    problem: String,
}

impl ConvertError {
    fn new(problem: impl Into<String>) -> ConvertError {
        ConvertError {
            trail: Vec::new(),
            problem: problem.into(),
        }
    }

    fn inside(mut self, segment: String) -> ConvertError {
        self.trail.push(segment);
        self
    }
}

impl fmt::Display for ConvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.trail.is_empty() {
            return f.write_str(&self.problem);
        }
        f.write_str("at ")?;
        for segment in self.trail.iter().rev() {
            write!(f, "/{segment}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// Converts Lua values to JSON under a depth limit and a byte budget shared by one handler call.
#[derive(Debug)]
pub(crate) struct Outbound {
    /// The marker metatable of lists (see the module docs).
    array_marker: *const c_void,
    max_depth: usize,
    /// Bytes still allowed in this call.
    pub(crate) bytes_left: usize,
    /// The budget at the start of the call, for messages.
    pub(crate) bytes_limit: usize,
    ancestors: Vec<*const c_void>,
}

impl Outbound {
    /// A converter for one call.
    pub(crate) fn new(array_marker: &Table, max_depth: usize, bytes: usize) -> Outbound {
        Outbound {
            array_marker: array_marker.to_pointer(),
            max_depth,
            bytes_left: bytes,
            bytes_limit: bytes,
            ancestors: Vec::new(),
        }
    }

    fn charge(&mut self, bytes: usize) -> Result<(), ConvertError> {
        match self.bytes_left.checked_sub(bytes) {
            Some(left) => {
                self.bytes_left = left;
                Ok(())
            }
            None => Err(ConvertError::new(format!(
                "the values this call produced exceed the memory limit of {} bytes",
                self.bytes_limit
            ))),
        }
    }

    /// Converts one value; `depth` is how many containers enclose it.
    pub(crate) fn convert(&mut self, value: &LuaValue, depth: usize) -> Result<Json, ConvertError> {
        self.charge(NODE_COST)?;
        match value {
            LuaValue::Nil => Ok(Json::Null),
            LuaValue::LightUserData(data) if data.0.is_null() => Ok(Json::Null),
            LuaValue::Boolean(b) => Ok(Json::Bool(*b)),
            LuaValue::Integer(i) => Ok(Json::Number(Number::from(*i))),
            LuaValue::Number(n) => number_to_json(*n).map(Json::Number),
            LuaValue::String(s) => {
                let bytes = s.as_bytes();
                self.charge(bytes.len())?;
                match std::str::from_utf8(&bytes) {
                    Ok(text) => Ok(Json::String(text.to_owned())),
                    Err(_) => Err(ConvertError::new("a string that is not valid utf-8")),
                }
            }
            LuaValue::Table(table) => self.table_to_json(table, depth),
            other => Err(ConvertError::new(format!(
                "a {} cannot be converted to a value",
                type_name(other)
            ))),
        }
    }

    fn table_to_json(&mut self, table: &Table, depth: usize) -> Result<Json, ConvertError> {
        if depth + 1 > self.max_depth {
            return Err(ConvertError::new(format!(
                "tables nest deeper than the limit of {} levels",
                self.max_depth
            )));
        }
        let pointer = table.to_pointer();
        if self.ancestors.contains(&pointer) {
            return Err(ConvertError::new("a cyclic table (it contains itself)"));
        }
        let marked = table
            .metatable()
            .is_some_and(|meta| meta.to_pointer() == self.array_marker);
        let len = table.raw_len();
        let mut entries: Vec<(LuaValue, LuaValue)> = Vec::new();
        let mut budget_error = None;
        let walked = table.for_each::<LuaValue, LuaValue>(|key, value| {
            if let Err(error) = self.charge(NODE_COST) {
                budget_error = Some(error);
                return Err(mlua::Error::runtime("budget"));
            }
            entries.push((key, value));
            Ok(())
        });
        if let Some(error) = budget_error {
            return Err(error);
        }
        walked
            .map_err(|error| ConvertError::new(format!("the table could not be read: {error}")))?;
        let mut string_keys = 0usize;
        let mut index_keys = 0usize;
        for (key, _) in &entries {
            match key {
                LuaValue::String(_) => string_keys += 1,
                other if list_index(other, len).is_some() => index_keys += 1,
                other => {
                    return Err(ConvertError::new(format!(
                        "a table key {} is neither a string nor a list position 1..{len}",
                        describe_key(other)
                    )));
                }
            }
        }
        self.ancestors.push(pointer);
        let result = if index_keys > 0 || (marked && string_keys == 0) {
            if string_keys > 0 {
                Err(ConvertError::new(
                    "a table mixes list items (keys 1..n) and string keys",
                ))
            } else {
                self.list_to_json(entries, len, depth)
            }
        } else if marked {
            Err(ConvertError::new(
                "a table marked as a list has string keys",
            ))
        } else {
            self.object_to_json(entries, depth)
        };
        self.ancestors.pop();
        result
    }

    fn list_to_json(
        &mut self,
        entries: Vec<(LuaValue, LuaValue)>,
        len: usize,
        depth: usize,
    ) -> Result<Json, ConvertError> {
        if entries.len() != len {
            return Err(ConvertError::new("a list with holes (nil between items)"));
        }
        let mut slots: Vec<Option<LuaValue>> = vec![None; len];
        for (key, value) in entries {
            if let Some(index) = list_index(&key, len) {
                slots[index - 1] = Some(value);
            }
        }
        let mut items = Vec::with_capacity(len);
        for (index, slot) in slots.into_iter().enumerate() {
            let Some(value) = slot else {
                return Err(ConvertError::new("a list with holes (nil between items)"));
            };
            // Positions are reported 0-based, like every path the engine prints.
            items.push(
                self.convert(&value, depth + 1)
                    .map_err(|error| error.inside(index.to_string()))?,
            );
        }
        Ok(Json::Array(items))
    }

    fn object_to_json(
        &mut self,
        entries: Vec<(LuaValue, LuaValue)>,
        depth: usize,
    ) -> Result<Json, ConvertError> {
        let mut map = Map::new();
        for (key, value) in entries {
            let LuaValue::String(key) = key else { continue };
            let key_bytes = key.as_bytes();
            self.charge(key_bytes.len())?;
            let Ok(key) = std::str::from_utf8(&key_bytes).map(str::to_owned) else {
                return Err(ConvertError::new("a table key that is not valid utf-8"));
            };
            let converted = self
                .convert(&value, depth + 1)
                .map_err(|error| error.inside(escape_pointer_token(&key).into_owned()))?;
            map.insert(key, converted);
        }
        Ok(Json::Object(map))
    }
}

/// The 1-based list position a key names in a table of raw length `len`.
fn list_index(key: &LuaValue, len: usize) -> Option<usize> {
    let index = match key {
        LuaValue::Integer(i) => usize::try_from(*i).ok()?,
        LuaValue::Number(n) if n.fract() == 0.0 && *n >= 1.0 && *n <= EXACT_INTEGER => *n as usize,
        _ => return None,
    };
    (1..=len).contains(&index).then_some(index)
}

fn describe_key(key: &LuaValue) -> String {
    match key {
        LuaValue::Integer(i) => i.to_string(),
        LuaValue::Number(n) => n.to_string(),
        LuaValue::Boolean(b) => b.to_string(),
        other => format!("of type {}", type_name(other)),
    }
}

/// A Lua number as JSON: integral values within the exact range become integers, since Lua cannot
/// tell `5` from `5.0` and state written by people uses integers; NaN and infinities are refused.
pub(crate) fn number_to_json(n: f64) -> Result<Number, ConvertError> {
    if !n.is_finite() {
        return Err(ConvertError::new(format!(
            "the number {n} is not finite (json has no nan or infinity)"
        )));
    }
    if n.fract() == 0.0 && n.abs() <= EXACT_INTEGER {
        return Ok(Number::from(n as i64));
    }
    Number::from_f64(n)
        .ok_or_else(|| ConvertError::new(format!("the number {n} cannot be represented")))
}

/// The member names of instruction tables, made once per VM: a string kept as a handle is pushed by
/// reference, while a `&str` is hashed and looked up in the VM's string table on every use.
#[derive(Debug)]
pub(crate) struct MemberNames {
    pub(crate) op: mlua::LuaString,
    pub(crate) path: mlua::LuaString,
    pub(crate) from: mlua::LuaString,
    pub(crate) value: mlua::LuaString,
    pub(crate) old: mlua::LuaString,
    pub(crate) metadata: mlua::LuaString,
    pub(crate) reason: mlua::LuaString,
    pub(crate) span: mlua::LuaString,
}

impl MemberNames {
    pub(crate) fn new(lua: &Lua) -> mlua::Result<MemberNames> {
        Ok(MemberNames {
            op: lua.create_string("op")?,
            path: lua.create_string("path")?,
            from: lua.create_string("from")?,
            value: lua.create_string("value")?,
            old: lua.create_string("old")?,
            metadata: lua.create_string("metadata")?,
            reason: lua.create_string("reason")?,
            span: lua.create_string("span")?,
        })
    }
}

/// Whether `table`, an instruction table a script returned, still holds exactly `instruction` as
/// [`Inbound::instruction`] built it (plus a `span` member when `with_span`): then decoding it again
/// would give `instruction` back, and the caller may reuse it. Any doubt (a string path, an integer
/// where a float was, a member more or less, a metatable) answers `false` and the table is decoded.
/// Reads raw, like [`Outbound`].
pub(crate) fn holds_instruction(
    table: &Table,
    instruction: &Instruction,
    array_marker: &Table,
    names: &MemberNames,
    with_span: bool,
) -> bool {
    let marker = array_marker.to_pointer();
    let members = 2
        + usize::from(with_span)
        + usize::from(instruction.from.is_some())
        + usize::from(instruction.value.is_some())
        + usize::from(instruction.old.is_some())
        + usize::from(instruction.reason.is_some())
        + usize::from(instruction.metadata.is_some());
    let field = |key: &mlua::LuaString| table.raw_get::<LuaValue>(key).unwrap_or(LuaValue::Nil);
    let same_value = |key: &mlua::LuaString, value: &Option<Value>| match value {
        Some(value) => holds_value(&field(key), value, marker),
        None => true,
    };
    table.metatable().is_none()
        && count_pairs(table) == Some(members)
        && matches!(field(&names.op), LuaValue::String(op) if op.as_bytes() == instruction.op.name().as_bytes())
        && holds_path(&field(&names.path), &instruction.path, marker)
        && instruction
            .from
            .as_ref()
            .is_none_or(|from| holds_path(&field(&names.from), from, marker))
        && same_value(&names.value, &instruction.value)
        && same_value(&names.old, &instruction.old)
        && same_value(&names.metadata, &instruction.metadata)
        && instruction.reason.as_ref().is_none_or(|reason| {
            matches!(field(&names.reason), LuaValue::String(text) if text.as_bytes() == reason.as_bytes())
        })
}

/// How many members a table has, read raw (`None` if it cannot be read). Keys and values are read
/// as booleans, which takes no handle on them.
pub(crate) fn count_pairs(table: &Table) -> Option<usize> {
    let mut count = 0;
    table
        .for_each::<bool, bool>(|_, _| {
            count += 1;
            Ok(())
        })
        .ok()?;
    Some(count)
}

/// Whether `value` is a marked list of exactly `len` items.
fn is_list(value: &LuaValue, len: usize, marker: *const c_void) -> Option<&Table> {
    let LuaValue::Table(table) = value else {
        return None;
    };
    let marked = table
        .metatable()
        .is_some_and(|meta| meta.to_pointer() == marker);
    (marked && table.raw_len() == len && count_pairs(table) == Some(len)).then_some(table)
}

/// Whether `value` is the list [`Inbound::path`] makes of `path`.
fn holds_path(value: &LuaValue, path: &Path, marker: *const c_void) -> bool {
    let Some(table) = is_list(value, path.len(), marker) else {
        return false;
    };
    path.segments().iter().enumerate().all(|(i, segment)| {
        match (segment, table.raw_get::<LuaValue>(i + 1)) {
            (Segment::Key(key), Ok(LuaValue::String(text))) => text.as_bytes() == key.as_bytes(),
            (Segment::Index(index), Ok(LuaValue::Number(n))) => n == *index as f64,
            (Segment::Index(index), Ok(LuaValue::Integer(n))) => {
                usize::try_from(n).is_ok_and(|n| n == *index)
            }
            _ => false,
        }
    })
}

/// Whether `lua` converts back (see [`Outbound`]) to exactly `value`.
fn holds_value(lua: &LuaValue, value: &Value, marker: *const c_void) -> bool {
    match (value, lua) {
        (Value::Null, LuaValue::LightUserData(data)) => data.0.is_null(),
        (Value::Bool(a), LuaValue::Boolean(b)) => a == b,
        (Value::Number(a), LuaValue::Number(b)) => {
            number_to_json(*b).is_ok_and(|b| *a == statecraft_engine::Number::from(b))
        }
        (Value::Number(a), LuaValue::Integer(b)) => *a == statecraft_engine::Number::from(*b),
        (Value::String(a), LuaValue::String(b)) => b.as_bytes() == a.as_bytes(),
        (Value::Array(items), _) => is_list(lua, items.len(), marker).is_some_and(|table| {
            items.into_iter().enumerate().all(|(i, item)| {
                table
                    .raw_get::<LuaValue>(i + 1)
                    .is_ok_and(|got| holds_value(&got, item, marker))
            })
        }),
        (Value::Object(map), LuaValue::Table(table)) => {
            table.metatable().is_none()
                && count_pairs(table) == Some(map.len())
                && map.iter().all(|(key, item)| {
                    table
                        .raw_get::<LuaValue>(key.as_str())
                        .is_ok_and(|got| holds_value(&got, item, marker))
                })
        }
        _ => false,
    }
}

/// A short type name for messages.
pub(crate) fn type_name(value: &LuaValue) -> &'static str {
    match value {
        LuaValue::Function(_) => "function",
        LuaValue::Thread(_) => "coroutine",
        LuaValue::UserData(_) | LuaValue::LightUserData(_) => "userdata",
        LuaValue::Vector(_) => "vector",
        LuaValue::Buffer(_) => "buffer",
        LuaValue::Error(_) => "error",
        other => other.type_name(),
    }
}

/// Converts engine values into Lua values (copies). `null` nested in a container becomes the `null`
/// sentinel so that keys and positions survive; a top-level `null` becomes `nil`.
#[derive(Debug)]
pub(crate) struct Inbound<'a> {
    pub(crate) lua: &'a Lua,
    pub(crate) array_marker: &'a Table,
}

impl Inbound<'_> {
    /// A top-level value (absent or `null` → `nil`).
    pub(crate) fn top(&self, value: Option<&Value>) -> mlua::Result<LuaValue> {
        match value {
            None | Some(Value::Null) => Ok(LuaValue::Nil),
            Some(value) => self.nested(value),
        }
    }

    /// A value inside a container.
    pub(crate) fn nested(&self, value: &Value) -> mlua::Result<LuaValue> {
        Ok(match value {
            Value::Null => LuaValue::NULL,
            Value::Bool(b) => LuaValue::Boolean(*b),
            Value::Number(n) => LuaValue::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => LuaValue::String(self.lua.create_string(s.as_bytes())?),
            Value::Array(items) => {
                let table = self.lua.create_table_with_capacity(items.len(), 0)?;
                for (i, item) in items.iter().enumerate() {
                    self.set(&table, i + 1, item)?;
                }
                table.set_metatable(Some(self.array_marker.clone()))?;
                LuaValue::Table(table)
            }
            Value::Object(map) => {
                let table = self.lua.create_table_with_capacity(0, map.len())?;
                for (key, item) in map {
                    self.set(&table, key.as_str(), item)?;
                }
                LuaValue::Table(table)
            }
        })
    }

    /// Sets `table[key]` to a copy of `item`. Strings are pushed straight onto the stack: making each
    /// one a handle first (as [`Inbound::nested`] must) costs a slot and its release.
    fn set(&self, table: &Table, key: impl mlua::IntoLua, item: &Value) -> mlua::Result<()> {
        match item {
            Value::String(text) => table.raw_set(key, &**text),
            other => table.raw_set(key, self.nested(other)?),
        }
    }

    /// An instruction as the table a script sees: its canonical JSON form (`Instruction::to_json`,
    /// paths as lists) built directly, without going through JSON.
    pub(crate) fn instruction(
        &self,
        instruction: &Instruction,
        names: &MemberNames,
    ) -> mlua::Result<Table> {
        let table = self.lua.create_table_with_capacity(0, 8)?;
        table.raw_set(&names.op, instruction.op.name())?;
        table.raw_set(&names.path, self.path(&instruction.path)?)?;
        if let Some(from) = &instruction.from {
            table.raw_set(&names.from, self.path(from)?)?;
        }
        for (key, value) in [
            (&names.value, &instruction.value),
            (&names.old, &instruction.old),
            (&names.metadata, &instruction.metadata),
        ] {
            if let Some(value) = value {
                self.set(&table, key, value)?;
            }
        }
        if let Some(reason) = &instruction.reason {
            table.raw_set(&names.reason, reason.as_str())?;
        }
        Ok(table)
    }

    /// A path as a Lua list (indexes stay 0-based, as in instructions).
    pub(crate) fn path(&self, path: &Path) -> mlua::Result<LuaValue> {
        let table = self.lua.create_table_with_capacity(path.len(), 0)?;
        for (i, segment) in path.segments().iter().enumerate() {
            match segment {
                Segment::Key(key) => table.raw_set(i + 1, key.as_str())?,
                Segment::Index(index) => table.raw_set(i + 1, *index as f64)?,
            }
        }
        table.set_metatable(Some(self.array_marker.clone()))?;
        Ok(LuaValue::Table(table))
    }
}

/// Reads a path given by a script: `nil` (the root), a string in any spelling of docs/instructions.md read by the
/// engine's [`parse_path`] (`"player.hp"`, `"inventory[0].name"`, `"a['x.y']"`, `"/player/hp"`; `""`
/// is the root), or a list of strings and 0-based integers.
pub(crate) fn path_from_lua(value: &LuaValue) -> Result<Path, String> {
    match value {
        LuaValue::Nil => Ok(Path::root()),
        LuaValue::String(text) => {
            let text = text
                .to_str()
                .map_err(|_| "a path that is not valid utf-8".to_owned())?;
            spelled(&text)
        }
        LuaValue::Table(table) => {
            let len = table.raw_len();
            let mut segments = Vec::with_capacity(len);
            for i in 1..=len {
                let part: LuaValue = table.raw_get(i).map_err(|error| error.to_string())?;
                segments.push(match part {
                    LuaValue::String(key) => Segment::Key(Key::from(
                        &*key.to_str().map_err(|_| "a path segment that is not valid utf-8".to_owned())?,
                    )),
                    LuaValue::Integer(index) if index >= 0 => Segment::Index(index as usize),
                    LuaValue::Number(n) if n.fract() == 0.0 && (0.0..=EXACT_INTEGER).contains(&n) => {
                        Segment::Index(n as usize)
                    }
                    other => {
                        return Err(format!(
                            "path segment {} is a {}; segments are strings or non-negative integers",
                            i - 1,
                            type_name(&other)
                        ));
                    }
                });
            }
            Ok(Path::from(segments))
        }
        other => Err(format!(
            "a path must be a string or a list, not a {}",
            type_name(other)
        )),
    }
}

/// A string path in any spelling of docs/instructions.md, read by the same rules as everywhere else.
pub(crate) fn spelled(text: &str) -> Result<Path, String> {
    parse_path(text)
        .map(|(path, _)| path)
        .map_err(|error| error.to_string())
}
