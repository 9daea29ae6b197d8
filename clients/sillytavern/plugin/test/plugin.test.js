// The server plugin without SillyTavern: where it finds the binary, how it checks the binary's API
// version, the engine it runs (the real `statecraft serve`: started, killed and started again, stopped
// with nothing left behind), and its routes (paths, owners, bodies passed byte for byte, bodies over
// the limit, answers' headers), also against a stand-in engine that answers slowly or dies in the
// middle of a request. The routes are mounted as SillyTavern mounts them: a router at
// /api/plugins/statecraft whose requests carry the signed-in user. Real SillyTavern runs the plugin in
// cli/tests/sillytavern.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, copyFileSync, existsSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { alive, binary } from "../../../js/test/server.js";
import { API_VERSION, Engine, findBinary, readVersion } from "../engine.js";
import { init } from "../index.js";
import { forward } from "../proxy.js";

const scratch = mkdtempSync(join(tmpdir(), "statecraft-plugin-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let folders = 0;
function folder(name) {
  const path = join(scratch, `${name}-${(folders += 1)}`);
  mkdirSync(path, { recursive: true });
  return path;
}

function executable(path, text = "#!/bin/sh\nexit 0\n") {
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

async function until(condition, what, ms = 20000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The plugin mounted as SillyTavern mounts it, on a loopback port: `{url, engine, close()}`. The
 * user of a request is its `x-test-user` header (SillyTavern's session in real life).
 */
async function mount({ env = { ...process.env, STATECRAFT_BIN: binary() }, pluginFolder = folder("plugin") } = {}) {
  let handler = null;
  const logs = [];
  const router = { use: (fn) => (handler = fn) };
  const engine = await init(router, { dataRoot: folder("data"), env, pluginFolder, log: (line) => logs.push(line) });
  const base = "/api/plugins/statecraft";
  const server = createServer((req, res) => {
    if (!req.url.startsWith(base)) return res.writeHead(404).end();
    req.originalUrl = req.url;
    req.baseUrl = base;
    req.url = req.url.slice(base.length) || "/";
    const user = req.headers["x-test-user"];
    if (user) req.user = { profile: { handle: user } };
    handler(req, res, () => res.writeHead(404).end());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}${base}`,
    engine,
    logs,
    async close() {
      await engine.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A request: `{status, headers, text, json}`. */
function send(url, { method = "GET", user = "alice", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const all = { ...(user ? { "x-test-user": user } : {}), ...headers };
    if (body !== undefined && all["content-type"] === undefined) all["content-type"] = "application/vnd.statecraft+json";
    const sent = request(url, { method, headers: all }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json = null;
        try {
          json = JSON.parse(text);
        } catch {
          json = null;
        }
        resolve({ status: response.statusCode, headers: response.headers, text, json });
      });
    });
    sent.on("error", reject);
    if (body !== undefined) sent.write(body);
    sent.end();
  });
}

test("the binary is found in STATECRAFT_BIN, then the plugin's bin/, then PATH", () => {
  const plugin = folder("plugin");
  const onPath = folder("path");
  const elsewhere = folder("elsewhere");
  const pathBinary = executable(join(onPath, "statecraft"));
  const env = { PATH: [folder("empty"), onPath].join(":") };
  assert.deepEqual(findBinary({ pluginFolder: plugin, env, platform: "linux" }), { path: pathBinary, from: "PATH" });
  mkdirSync(join(plugin, "bin"));
  const own = executable(join(plugin, "bin", "statecraft"));
  assert.deepEqual(findBinary({ pluginFolder: plugin, env, platform: "linux" }), { path: own, from: "the plugin's bin folder" });
  const named = executable(join(elsewhere, "my-statecraft"));
  assert.deepEqual(findBinary({ pluginFolder: plugin, env: { ...env, STATECRAFT_BIN: named }, platform: "linux" }), { path: named, from: "STATECRAFT_BIN" });
  // A STATECRAFT_BIN that names nothing is reported, not passed over for another binary.
  const wrong = findBinary({ pluginFolder: plugin, env: { ...env, STATECRAFT_BIN: join(elsewhere, "nothing") }, platform: "linux" });
  assert.equal(wrong.path, null);
  assert.match(wrong.looked.join(), /STATECRAFT_BIN/);
  // A file that may not be run is no binary.
  const plain = join(folder("plain"), "statecraft");
  writeFileSync(plain, "");
  chmodSync(plain, 0o644);
  assert.equal(findBinary({ pluginFolder: folder("none"), env: { PATH: join(plain, "..") }, platform: "linux" }).path, null);
});

test("versions are read from statecraft --version", () => {
  assert.deepEqual(readVersion("statecraft 0.1.0 (HTTP API 1)\n"), { version: "0.1.0", api: 1 });
  assert.deepEqual(readVersion("statecraft 0.0.9"), { version: "0.0.9", api: null });
  assert.equal(readVersion("python 3.11"), null);
  assert.equal(API_VERSION, 1);
});

test("a missing binary, and one of another API version, are problems that say what to do", async () => {
  const plugin = folder("plugin");
  const missing = await mount({ env: { PATH: folder("empty") }, pluginFolder: plugin });
  try {
    await missing.engine.ready();
    assert.equal(missing.engine.problem.kind, "binary_missing");
    assert.match(missing.engine.problem.message, /cargo install --locked --force --git .* statecraft/);
    assert.match(missing.engine.problem.message, new RegExp(`release archive into ${join(plugin, "bin")}`));
    const answer = await send(`${missing.url}/v1/health`);
    assert.equal(answer.status, 503);
    assert.equal(answer.json.error.kind, "binary_missing");
    assert.ok(missing.logs.some((line) => line.includes("binary is missing")), missing.logs.join("\n"));
    // Installed meanwhile (a release archive unpacked into bin/): found on the next request.
    mkdirSync(join(plugin, "bin"));
    copyFileSync(binary(), join(plugin, "bin", "statecraft"));
    chmodSync(join(plugin, "bin", "statecraft"), 0o755);
    await new Promise((resolve) => setTimeout(resolve, 5100));
    await send(`${missing.url}/v1/health`);
    await until(() => missing.engine.problem === null, "the engine from bin/");
    assert.equal(missing.engine.binary.from, "the plugin's bin folder");
    const health = await send(`${missing.url}/v1/health`);
    assert.equal(health.status, 200, health.text);
    assert.equal(health.json.api, API_VERSION);
  } finally {
    await missing.close();
  }
  for (const [said, pattern] of [
    ["statecraft 0.0.9", /HTTP API older than 1.*Update the binary with `cargo install/],
    ["statecraft 9.0.0 (HTTP API 99)", /HTTP API 99.*update the plugin \(`node plugins.js update`/],
    ["something else", /"something else".*Update the binary/],
  ]) {
    const other = executable(join(folder("other"), "statecraft"), `#!/bin/sh\necho "${said}"\n`);
    const mounted = await mount({ env: { STATECRAFT_BIN: other, PATH: "" } });
    try {
      await mounted.engine.ready();
      assert.equal(mounted.engine.problem.kind, "binary_mismatch", said);
      assert.match(mounted.engine.problem.message, pattern);
      assert.equal((await send(`${mounted.url}/v1/games`)).json.error.kind, "binary_mismatch");
    } finally {
      await mounted.close();
    }
  }
});

test("the engine: healthy, killed and started again with nothing acknowledged lost, stopped with nothing left", async () => {
  const mounted = await mount();
  try {
    await mounted.engine.ready();
    assert.equal(mounted.engine.problem, null);
    const first = mounted.engine.pid;
    const replies = [];
    for (let turn = 0; turn < 5; turn += 1) {
      replies.push({ text: `Turn ${turn}. _.set('hp', ${100 - turn});` });
      const synced = await send(`${mounted.url}/v1/games/chat-1/sync`, {
        method: "POST",
        body: JSON.stringify({ replies, create: { state: { hp: 0 } } }),
      });
      assert.equal(synced.status, 200, synced.text);
    }
    process.kill(first, "SIGKILL");
    const during = await send(`${mounted.url}/v1/games/chat-1`);
    assert.ok([502, 503].includes(during.status), `${during.status} ${during.text}`);
    assert.ok(["starting", "engine_stopped"].includes(during.json.error.kind), during.text);
    await until(() => mounted.engine.problem === null && mounted.engine.pid !== first, "the engine started again");
    assert.equal(mounted.engine.starts, 2);
    assert.ok(mounted.logs.some((line) => /was killed \(SIGKILL\); starting it again/.test(line)), mounted.logs.join("\n"));
    const game = await send(`${mounted.url}/v1/games/chat-1`);
    assert.deepEqual(game.json.state, { hp: 96 }, "every acknowledged sync is there");
    const pid = mounted.engine.pid;
    await mounted.engine.stop();
    assert.equal(alive(pid), false, "the engine's process is gone");
    assert.equal((await send(`${mounted.url}/v1/health`)).json.error.kind, "stopped");
  } finally {
    await mounted.close();
  }
});

test("routes: paths, owners, bodies byte for byte, limits and the answer's headers", async () => {
  const mounted = await mount();
  try {
    await mounted.engine.ready();
    const url = mounted.url;
    // A state with an integer past 2^53 and a float spelt with its zero: the engine gets the bytes.
    const body = '{"id": "big", "state": {"n": 12345678901234567890, "f": 1.0}}';
    const made = await send(`${url}/v1/games`, { method: "POST", body, headers: { "idempotency-key": "k1" } });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.headers["content-type"], "application/json");
    assert.ok(made.headers["x-request-id"]);
    assert.match((await send(`${url}/v1/games/big`)).text, /"f":1.0,"n":12345678901234567890/);
    const again = await send(`${url}/v1/games`, { method: "POST", body, headers: { "idempotency-key": "k1" } });
    assert.equal(again.text, made.text, "the idempotency key reaches the engine");
    // Members given twice are the engine's refusal, not lost on the way.
    const twice = await send(`${url}/v1/games`, { method: "POST", body: '{"state": {"a": 1, "a": 2}}' });
    assert.equal(twice.status, 400);
    assert.match(twice.json.error.message, /ambiguous/);
    // Owners: Bob sees none of Alice's games, by listing or by id.
    assert.deepEqual((await send(`${url}/v1/games`)).json.games.map((game) => game.id), ["big"]);
    assert.deepEqual((await send(`${url}/v1/games`, { user: "bob" })).json.games, []);
    assert.equal((await send(`${url}/v1/games/big`, { user: "bob" })).status, 404);
    assert.equal((await send(`${url}/v1/games/big`, { method: "DELETE", user: "bob" })).status, 404);
    assert.equal((await send(`${url}/v1/games/big`, { user: "" })).status, 403, "no user, no games");
    // A body SillyTavern would have read as JSON is refused with what to send instead.
    const parsed = await send(`${url}/v1/extract`, { method: "POST", body: '{"input": "x"}', headers: { "content-type": "application/json" } });
    assert.equal(parsed.status, 415);
    assert.match(parsed.json.error.message, /application\/vnd\.statecraft\+json/);
    // Bodies over the engine's limit: declared, or arriving in chunks without a length.
    const large = JSON.stringify({ input: "x".repeat(4 << 20) });
    const declared = await send(`${url}/v1/extract`, { method: "POST", body: large });
    assert.equal(declared.status, 413);
    assert.equal(declared.json.error.kind, "body_too_large");
    const chunked = await send(`${url}/v1/extract`, { method: "POST", body: large, headers: { "transfer-encoding": "chunked" } });
    assert.equal(chunked.status, 413);
    // The engine's own errors pass as they are; its inspector page too, with its headers.
    const unknown = await send(`${url}/v1/nowhere`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.kind, "not_found");
    const page = await send(`${url}/?game=big`);
    assert.equal(page.status, 200);
    assert.match(page.headers["content-type"], /text\/html/);
    assert.match(page.headers["content-security-policy"], /default-src 'none'/);
    const bare = await send(url);
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.location, "/api/plugins/statecraft/");
    const withQuery = await send(`${url}?game=big&step=0`);
    assert.equal(withQuery.headers.location, "/api/plugins/statecraft/?game=big&step=0");
  } finally {
    await mounted.close();
  }
});

test("an engine that answers slowly gets a timeout; one that dies mid-request gets engine_stopped", async () => {
  // A stand-in for the engine's port: it holds one request and drops another without a word.
  const held = [];
  const stand = createServer((req, res) => {
    req.resume();
    if (req.url === "/v1/slow") held.push(res);
    else if (req.url === "/v1/dies") req.socket.destroy();
    else res.writeHead(200, { "content-type": "application/json" }).end('{"ok": true}');
  });
  await new Promise((resolve) => stand.listen(0, "127.0.0.1", resolve));
  const engine = { url: `http://127.0.0.1:${stand.address().port}`, authorization: "Bearer t", problem: null };
  const proxy = createServer((req, res) => forward(req, res, { engine, owner: "alice", maxBodyBytes: 1024, timeoutMs: 500 }));
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${proxy.address().port}`;
  try {
    const slow = await send(`${url}/v1/slow`, { method: "POST", body: "{}" });
    assert.equal(slow.status, 504);
    assert.equal(slow.json.error.kind, "timeout");
    assert.match(slow.json.error.message, /whether this request was done is not known/);
    const dies = await send(`${url}/v1/dies`, { method: "POST", body: "{}" });
    assert.equal(dies.status, 502);
    assert.equal(dies.json.error.kind, "engine_stopped");
    assert.equal((await send(`${url}/v1/health`)).status, 200, "the proxy goes on");
  } finally {
    for (const res of held) res.destroy();
    stand.closeAllConnections();
    proxy.closeAllConnections();
    await new Promise((resolve) => stand.close(resolve));
    await new Promise((resolve) => proxy.close(resolve));
  }
});

test("the plugin's package is what SillyTavern's loader takes", async () => {
  const root = join(import.meta.dirname, "../../../..");
  const manifest = JSON.parse(await import("node:fs").then((fs) => fs.readFileSync(join(root, "package.json"), "utf8")));
  assert.ok(existsSync(join(root, manifest.main)), manifest.main);
  const plugin = await import(join(root, manifest.main));
  assert.equal(plugin.info.id, "statecraft");
  for (const field of ["id", "name", "description"]) assert.equal(typeof plugin.info[field], "string");
  assert.equal(typeof plugin.init, "function");
  assert.equal(typeof plugin.exit, "function");
  assert.equal(manifest.dependencies, undefined, "no package manager runs for plugins");
  // Node's standard library and the plugin's own modules only, in every file SillyTavern loads.
  const { readdirSync, readFileSync } = await import("node:fs");
  const folder = join(root, manifest.main, "..");
  const files = readdirSync(folder).filter((name) => name.endsWith(".js"));
  assert.ok(files.length >= 3, files.join());
  for (const name of files) {
    const text = readFileSync(join(folder, name), "utf8");
    for (const match of text.matchAll(/\bfrom\s+"([^"]+)"|\bimport\(\s*"([^"]+)"/g)) {
      const from = match[1] ?? match[2];
      assert.ok(from.startsWith("node:") || /^\.\/[a-z-]+\.js$/.test(from), `${name} imports ${from}`);
    }
  }
});

test("the extension's connection check through the plugin: connected, not loaded, no binary", async () => {
  const { Statecraft } = await import("../../../js/statecraft.js");
  const { testPlugin, describeError, PLUGIN_CONTENT_TYPE } = await import("../../keeper.js");
  const through = (url) =>
    new Statecraft(url, { headers: { "x-test-user": "alice", "content-type": PLUGIN_CONTENT_TYPE } });
  const mounted = await mount();
  try {
    await mounted.engine.ready();
    const connected = await testPlugin(through(mounted.url));
    assert.equal(connected.ok, true, connected.message);
    assert.match(connected.message, /^connected through SillyTavern's server plugin \(statecraft \d+\.\d+\.\d+\S*, 0 games\)$/);
  } finally {
    await mounted.close();
  }
  // SillyTavern without the plugin answers its routes with its own 404 page.
  const tavern = createServer((_req, res) => res.writeHead(404, { "content-type": "text/html" }).end("<pre>Cannot GET /api/plugins/statecraft/v1/health</pre>"));
  await new Promise((resolve) => tavern.listen(0, "127.0.0.1", resolve));
  try {
    const missing = await testPlugin(through(`http://127.0.0.1:${tavern.address().port}/api/plugins/statecraft`), { repository: "http://git.test/statecraft.git" });
    assert.equal(missing.problem, "plugin_missing");
    assert.match(missing.message, /`node plugins\.js install http:\/\/git\.test\/statecraft\.git`.*`enableServerPlugins: true`/);
  } finally {
    tavern.closeAllConnections();
    await new Promise((resolve) => tavern.close(resolve));
  }
  const noBinary = await mount({ env: { PATH: folder("empty") } });
  try {
    await noBinary.engine.ready();
    const verdict = await testPlugin(through(noBinary.url));
    assert.equal(verdict.problem, "binary_missing");
    assert.match(verdict.message, /^the server plugin: the statecraft binary is missing .*cargo install/);
    const error = await through(noBinary.url).health().catch((caught) => caught);
    assert.match(describeError(error, { plugin: true }), /^statecraft \(server plugin\): the statecraft binary is missing/);
  } finally {
    await noBinary.close();
  }
});
