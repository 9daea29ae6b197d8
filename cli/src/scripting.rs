//! Attaching a scripts folder's Lua handlers to a store.
//!
//! The Lua host is `statecraft_scripts`, the only crate that links Lua; this module only asks it for the
//! handlers of a folder (every `*.lua` file, in file-name order) and hands them to the store builder,
//! with the same limits the store enforces. It must not run scripts itself.

use std::path::Path;

use anyhow::{Context, Result};
use statecraft_engine::StoreBuilder;
use statecraft_scripts::LuaHandlers;

/// Adds the handlers of the scripts in `folder` to `builder`. A script that fails to load is a usage
/// error naming the file and line, because no batch could run correctly without it.
pub(crate) fn attach(builder: StoreBuilder, folder: &Path) -> Result<StoreBuilder> {
    let limits = statecraft_engine::Limits::default();
    let handlers = LuaHandlers::load_dir(folder, &limits)
        .with_context(|| format!("cannot load the scripts folder {}", folder.display()))?;
    Ok(builder.handler(handlers))
}
