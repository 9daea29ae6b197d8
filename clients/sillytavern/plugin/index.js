// statecraft's SillyTavern server plugin: the root package.json's `main`, loaded by SillyTavern's
// plugin loader (`enableServerPlugins: true` in its config.yaml) from the repository cloned into
// its `plugins/` folder by `node plugins.js install URL`. It runs the statecraft engine as a child
// process (engine.js) and answers the HTTP API under /api/plugins/statecraft (proxy.js): SillyTavern's
// own routes, behind its session and CSRF checks, so the page needs no CORS, no address and no
// token, and with user accounts on every user's games are that user's own (the `Statecraft-Owner`
// header, set here from SillyTavern's user). Node's standard library only: the loader runs no
// package manager. clients/sillytavern/README.md says how it is installed and what it answers.

import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Engine, MAX_BODY_BYTES, REQUEST_TIMEOUT_MS } from "./engine.js";
import { forward, sendError } from "./proxy.js";

export const info = {
  id: "statecraft",
  name: "statecraft",
  description: "Runs the statecraft engine for the statecraft extension: each chat's game state, atomic and undoable, as SillyTavern's own routes.",
};

/** The repository's root: the plugin's folder, where `bin/` holds an unpacked release binary. */
const pluginFolder = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

let engine = null;

/**
 * Routes for the engine. `options` is for tests (the data root, the environment, the console):
 * SillyTavern calls it with the router alone.
 */
export async function init(router, options = {}) {
  const dataRoot = options.dataRoot ?? globalThis.DATA_ROOT ?? join(process.cwd(), "data");
  engine = new Engine({ pluginFolder: options.pluginFolder ?? pluginFolder, dataRoot, env: options.env ?? process.env, log: options.log });
  engine.start();
  router.use((req, res) => {
    // `/api/plugins/statecraft` itself is the inspector page, whose relative links need the slash.
    const url = String(req.originalUrl ?? "");
    const at = url.includes("?") ? url.indexOf("?") : url.length;
    if (req.baseUrl && url.slice(0, at) === req.baseUrl) {
      res.writeHead(308, { location: `${req.baseUrl}/${url.slice(at)}` });
      return res.end();
    }
    const owner = req.user?.profile?.handle;
    if (!owner) return sendError(res, 403, "forbidden", "no SillyTavern user is signed in");
    forward(req, res, { engine, owner, maxBodyBytes: MAX_BODY_BYTES, timeoutMs: REQUEST_TIMEOUT_MS + 5000 });
  });
  return engine;
}

/** SillyTavern is stopping: the engine finishes what it acknowledged and stops. */
export async function exit() {
  await engine?.stop();
}
