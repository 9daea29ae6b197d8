//! Attaching a scripts folder's Lua handlers to a store, and reading what they say about themselves.
//!
//! The Lua host is `statecraft_scripts`, the only crate that links Lua; this module only asks it for the
//! handlers of a folder (every `*.lua` file, in file-name order) and hands them to the store builder,
//! or hands their signatures to the prompt kit. Scripts load under the limits the store will enforce,
//! so a script's top-level code meets the same bounds as its handlers. It must not run scripts itself.

use std::path::Path;

use anyhow::{Context, Result};
use statecraft_engine::{CallbackSignature, StoreBuilder};
use statecraft_scripts::LuaHandlers;

/// Adds the handlers of the scripts in `folder` to `builder`. A script that fails to load is a usage
/// error naming the file and line, because no batch could run correctly without it.
pub(crate) fn attach(builder: StoreBuilder, folder: &Path) -> Result<StoreBuilder> {
    let handlers = LuaHandlers::load_dir(folder, builder.configured_limits())
        .with_context(|| format!("cannot load the scripts folder {}", folder.display()))?;
    Ok(builder.handler(handlers))
}

/// The signatures of the handlers in `folder` (none without a folder), for the prompt kit. A script
/// that fails to load, or describes a handler wrongly, is a usage error naming the file and line.
pub(crate) fn signatures(folder: Option<&Path>) -> Result<Vec<CallbackSignature>> {
    let Some(folder) = folder else {
        return Ok(Vec::new());
    };
    let limits = statecraft_engine::Limits::default();
    let handlers = LuaHandlers::load_dir(folder, &limits)
        .with_context(|| format!("cannot load the scripts folder {}", folder.display()))?;
    Ok(handlers.signatures().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use statecraft_engine::{Limits, Store, Value};

    #[test]
    fn scripts_load_under_the_limits_the_store_will_enforce() {
        let folder = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(
            folder.path().join("busy.lua"),
            "local n = 0\nfor i = 1, 100000 do n = n + i end\n",
        )
        .expect("the script is written");
        let roomy = Store::builder(Value::Null);
        assert!(attach(roomy, folder.path()).is_ok());
        let tight = Store::builder(Value::Null).limits(Limits {
            max_callback_steps: 100,
            ..Limits::default()
        });
        let error = attach(tight, folder.path()).expect_err("the loop exceeds 100 steps");
        assert!(
            format!("{error:#}").contains("busy.lua"),
            "the error names the script: {error:#}"
        );
    }
}
