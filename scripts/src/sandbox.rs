//! Building a Luau VM that untrusted scripts cannot escape.
//!
//! Only the pure libraries are opened (base, coroutine, table, string, utf8, bit32, math, buffer).
//! Everything that reaches outside the VM or inspects it is removed before any script runs: module
//! loading, source loading, debugging, the garbage collector's controls, environment access and
//! printing (the host's standard output is not the script's to write). Luau's sandbox mode then makes
//! every library, every built-in metatable and the global table read-only, and gives scripts a
//! writable environment of their own. This module must not know about handlers.

use mlua::{Lua, LuaOptions, StdLib};

/// Globals removed before scripts run. `string.dump` does not exist in Luau; it is removed anyway in
/// case a future Luau adds it.
const REMOVED_GLOBALS: [&str; 14] = [
    "io",
    "os",
    "package",
    "require",
    "load",
    "loadstring",
    "dofile",
    "loadfile",
    "debug",
    "getfenv",
    "setfenv",
    "collectgarbage",
    "gcinfo",
    "print",
];

/// A VM with the safe libraries only. Call [`seal`] once the host's own globals are in place.
pub(crate) fn new_vm() -> mlua::Result<Lua> {
    let libs = StdLib::COROUTINE
        | StdLib::TABLE
        | StdLib::STRING
        | StdLib::UTF8
        | StdLib::BIT
        | StdLib::MATH
        | StdLib::BUFFER;
    let lua = Lua::new_with(libs, LuaOptions::new())?;
    let globals = lua.globals();
    for name in REMOVED_GLOBALS {
        globals.raw_set(name, mlua::Value::Nil)?;
    }
    let string: mlua::Table = globals.raw_get("string")?;
    string.raw_set("dump", mlua::Value::Nil)?;
    Ok(lua)
}

/// Makes libraries, metatables and globals read-only; scripts write to an environment of their own.
pub(crate) fn seal(lua: &Lua) -> mlua::Result<()> {
    lua.sandbox(true)
}
