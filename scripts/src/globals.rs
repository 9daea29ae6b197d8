//! The globals the script contract adds to Luau's safe libraries: `on`, `watch`, `before`, `after`,
//! `array` and `null`.
//!
//! Scripts register their callbacks, watchers and hooks while they load, and only then; each
//! registration is checked as it is made (a name, a function, a description, a path) and remembers
//! the `file.lua:line` it was made at. This module must not run a registered function: `handlers.rs`
//! calls them.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Function, Lua, Table, Value as LuaValue};
use statecraft_engine::{CallbackSignature, Path};

use crate::convert::{path_from_lua, type_name};
use crate::describe;
use crate::error::raised;

/// A registered callback.
pub(crate) struct Registered {
    pub(crate) function: Function,
    /// `file.lua:line` of its definition.
    pub(crate) origin: String,
}

/// A registered watcher.
pub(crate) struct Watcher {
    pub(crate) path: Path,
    /// The path as the script wrote it, for messages.
    pub(crate) spelled: String,
    pub(crate) function: Function,
    pub(crate) origin: String,
}

/// What scripts register while they load.
#[derive(Default)]
pub(crate) struct Registrations {
    pub(crate) open: bool,
    pub(crate) handlers: Vec<(String, Registered)>,
    /// What each handler says about itself, in registration order.
    pub(crate) signatures: Vec<CallbackSignature>,
    pub(crate) watchers: Vec<Watcher>,
    /// `before` hooks, in registration order (file-name order, then call order).
    pub(crate) befores: Vec<Registered>,
    /// `after` hooks, in registration order.
    pub(crate) afters: Vec<Registered>,
}

/// Installs `on`, `watch`, `before`, `after`, `array` and `null`.
pub(crate) fn install(
    lua: &Lua,
    registrations: &Rc<RefCell<Registrations>>,
    array_marker: &Table,
) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.raw_set("on", on(lua, registrations)?)?;
    globals.raw_set("watch", watch(lua, registrations)?)?;
    for (global, after) in [("before", false), ("after", true)] {
        globals.raw_set(global, hook(lua, registrations, global, after)?)?;
    }
    globals.raw_set("array", array(lua, array_marker)?)?;
    globals.raw_set("null", LuaValue::NULL)?;
    Ok(())
}

/// `on(name, function, description)`: a callback handler, with what it says about itself.
fn on(lua: &Lua, registrations: &Rc<RefCell<Registrations>>) -> mlua::Result<Function> {
    let shared = Rc::clone(registrations);
    lua.create_function(
        move |lua, (name, function, description): (LuaValue, LuaValue, LuaValue)| {
            let mut registered = shared.borrow_mut();
            if !registered.open {
                return Err(raised(
                    lua,
                    "on: handlers can only be registered while the scripts load",
                ));
            }
            let LuaValue::String(name) = name else {
                return Err(raised(
                    lua,
                    &format!(
                        "on: the handler name must be a string, not a {}",
                        type_name(&name)
                    ),
                ));
            };
            let name = name
                .to_str()
                .map_err(|_| raised(lua, "on: the handler name is not valid utf-8"))?
                .to_owned();
            if name.is_empty() {
                return Err(raised(lua, "on: the handler name is empty"));
            }
            let LuaValue::Function(function) = function else {
                return Err(raised(
                    lua,
                    &format!(
                        "on: the handler must be a function, not a {}",
                        type_name(&function)
                    ),
                ));
            };
            if let Some((_, earlier)) = registered.handlers.iter().find(|(known, _)| *known == name)
            {
                return Err(raised(
                    lua,
                    &format!("on: \"{name}\" is already registered at {}", earlier.origin),
                ));
            }
            let signature = describe::signature(&name, description).map_err(|reason| {
                raised(lua, &format!("on: the description of \"{name}\": {reason}"))
            })?;
            let origin = origin(&function);
            registered.signatures.push(signature);
            registered
                .handlers
                .push((name, Registered { function, origin }));
            Ok(())
        },
    )
}

/// `watch(path, function)`: a watcher of the changes under `path`.
fn watch(lua: &Lua, registrations: &Rc<RefCell<Registrations>>) -> mlua::Result<Function> {
    let shared = Rc::clone(registrations);
    lua.create_function(move |lua, (path, function): (LuaValue, LuaValue)| {
        let mut registered = shared.borrow_mut();
        if !registered.open {
            return Err(raised(
                lua,
                "watch: watchers can only be registered while the scripts load",
            ));
        }
        let spelled = match &path {
            LuaValue::String(text) => text.to_string_lossy(),
            _ => String::new(),
        };
        let path = path_from_lua(&path).map_err(|e| raised(lua, &format!("watch: {e}")))?;
        let spelled = if spelled.is_empty() {
            path.to_pointer()
        } else {
            spelled
        };
        let LuaValue::Function(function) = function else {
            return Err(raised(
                lua,
                &format!(
                    "watch: the watcher must be a function, not a {}",
                    type_name(&function)
                ),
            ));
        };
        let origin = origin(&function);
        registered.watchers.push(Watcher {
            path,
            spelled,
            function,
            origin,
        });
        Ok(())
    })
}

/// `before(function)` or `after(function)` (`global`): a hook of every batch.
fn hook(
    lua: &Lua,
    registrations: &Rc<RefCell<Registrations>>,
    global: &'static str,
    after: bool,
) -> mlua::Result<Function> {
    let shared = Rc::clone(registrations);
    lua.create_function(move |lua, function: LuaValue| {
        let mut registered = shared.borrow_mut();
        if !registered.open {
            return Err(raised(
                lua,
                &format!("{global}: hooks can only be registered while the scripts load"),
            ));
        }
        let LuaValue::Function(function) = function else {
            return Err(raised(
                lua,
                &format!(
                    "{global}: the hook must be a function, not a {}",
                    type_name(&function)
                ),
            ));
        };
        let origin = origin(&function);
        let hook = Registered { function, origin };
        if after {
            registered.afters.push(hook);
        } else {
            registered.befores.push(hook);
        }
        Ok(())
    })
}

/// `array(t)`: marks a table (a new one without `t`) as a list, even when empty.
fn array(lua: &Lua, array_marker: &Table) -> mlua::Result<Function> {
    let marker = array_marker.clone();
    lua.create_function(move |lua, table: Option<Table>| {
        let table = match table {
            Some(table) => table,
            None => lua.create_table()?,
        };
        // Read-only tables (the libraries) and tables with a metatable of their own are refused:
        // marking them would change what a script does not own or lose its behaviour.
        if table.is_readonly() {
            return Err(raised(lua, "array: the table is read-only"));
        }
        match table.metatable() {
            Some(meta) if meta.to_pointer() != marker.to_pointer() => {
                return Err(raised(lua, "array: the table already has a metatable"));
            }
            _ => table.set_metatable(Some(marker.clone()))?,
        }
        Ok(table)
    })
}

/// `file.lua:line` where a function was defined.
fn origin(function: &Function) -> String {
    let info = function.info();
    let file = info.short_src.unwrap_or_else(|| "?".to_owned());
    match info.line_defined {
        Some(line) => format!("{file}:{line}"),
        None => file,
    }
}
