// What the SillyTavern server plugin costs, measured in real SillyTavern (BENCHMARKS.md, "The
// SillyTavern plugin"): the time from SillyTavern's start to the plugin's first healthy answer, and
// the time of a sync through the plugin's routes against the same sync sent straight to a
// `statecraft serve` of the same binary, in the same run, alternating; and where a small request's
// overhead goes: SillyTavern's cheapest route behind its session against the plugin's health route
// and the engine's own. Run by hand, never in CI:
//
//   cargo build --release -p statecraft
//   STATECRAFT_BIN=target/release/statecraft node cli/tests/sillytavern/plugin-bench.js
//
// Everything listens on 127.0.0.1 and stops by itself.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Statecraft } from "../../../clients/js/statecraft.js";
import { binary, startServer } from "../../../clients/js/test/server.js";
import { PLUGIN_CONTENT_TYPE, PLUGIN_PATH } from "../../../clients/sillytavern/keeper.js";
import { snapshot, serveGit } from "./git-server.js";
import { installPlugin, runFolders, sillyTavernSession, startSillyTavern } from "./harness.js";
import { installFolder, installSillyTavern } from "./install.js";

const here = dirname(fileURLToPath(import.meta.url));
const STARTS = 5;
const REPLIES = 200;
const ROUNDS = 400;
// The longest wait for one request, and for SillyTavern's first answer after a start (the first
// start compiles its front end).
const REQUEST_MS = 10_000;
const START_MS = 300_000;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const quantile = (values, q) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))];
const ms = (value) => `${value.toFixed(2)} ms`;

const gitRoot = mkdtempSync(join(tmpdir(), "statecraft-bench-git-"));
const git = await serveGit(gitRoot);
snapshot(resolve(here, "../../.."), gitRoot, "statecraft");
const run = runFolders(installFolder(), installSillyTavern());
await installPlugin(run.serverFolder, `${git.url}/statecraft.git`);
const env = { ...process.env, PATH: `${dirname(binary())}:${process.env.PATH}` };
delete env.STATECRAFT_BIN;

let tavern = null;
/**
 * Starts SillyTavern and times it from the start of its process to the first 200 of `path`, the
 * plugin's health route (plugins on) or SillyTavern's own `/version` (the baseline, plugins off).
 */
async function timedStart(plugins, path) {
  const began = performance.now();
  tavern = await startSillyTavern({ serverFolder: run.serverFolder, dataRoot: run.dataRoot, port: tavern?.port, plugins, env });
  for (;;) {
    // Each request and the whole wait are bounded: a connection that stalls is given up and tried
    // again, and a SillyTavern that never answers ends the bench (which stops it) instead of hanging.
    const answer = await fetch(`${tavern.url}${path}`, { signal: AbortSignal.timeout(REQUEST_MS) }).catch(() => null);
    if (answer?.ok) break;
    if (performance.now() - began > START_MS) throw new Error(`SillyTavern did not answer ${path} within ${START_MS / 1000} s`);
    await new Promise((done) => setTimeout(done, 10));
  }
  return performance.now() - began;
}

try {
  // The first start compiles SillyTavern's front end (webpack) for this folder: not counted.
  await timedStart(false, "/version");
  await tavern.stop();
  const starts = [];
  const baseline = [];
  for (let round = 0; round < STARTS; round += 1) {
    baseline.push(await timedStart(false, "/version"));
    await tavern.stop();
    starts.push(await timedStart(true, `${PLUGIN_PATH}/v1/health`));
    if (round < STARTS - 1) await tavern.stop();
  }

  // The steady state of a chat: each sync sends every reply the game has as its key, and the new
  // one's text; the same chat through the plugin and straight to a server of the same binary.
  const session = await sillyTavernSession(tavern.url);
  const viaPlugin = new Statecraft(`${tavern.url}${PLUGIN_PATH}`, {
    fetch: (url, init) => session.fetch(url.slice(tavern.url.length), init),
    headers: { "content-type": PLUGIN_CONTENT_TYPE },
  });
  const direct = await startServer();
  const straight = new Statecraft(direct.url);
  const replies = Array.from({ length: REPLIES }, (_, turn) => `Turn ${turn}. ${"The tunnel goes on. ".repeat(100)}_.add('gold', 1);`);
  const clients = [
    ["plugin", viaPlugin, []],
    ["direct", straight, []],
  ];
  for (const [, client] of clients) await client.sync("bench", replies, { create: { state: { gold: 0 } }, signal: AbortSignal.timeout(START_MS) });
  for (let round = 0; round < ROUNDS; round += 1) {
    const next = [...replies, `Round ${round}. _.add('gold', 1);`];
    // Alternating which goes first, so that drift of the machine hits both alike.
    const order = round % 2 === 0 ? clients : [...clients].reverse();
    for (const [, client, times] of order) {
      const began = performance.now();
      await client.sync("bench", next, { signal: AbortSignal.timeout(REQUEST_MS) });
      times.push(performance.now() - began);
    }
  }
  // Small requests, alternating: what SillyTavern's own handling costs (its session, CSRF and user
  // middleware) against what the plugin's hop to the engine adds.
  const small = [
    ["SillyTavern's GET /csrf-token", (init) => session.fetch("/csrf-token", init), []],
    ["the plugin's GET /v1/health", (init) => session.fetch(`${PLUGIN_PATH}/v1/health`, init), []],
    ["the engine's GET /v1/health, straight", (init) => fetch(`${direct.url}/v1/health`, init), []],
  ];
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [, send, times] of round % 2 === 0 ? small : [...small].reverse()) {
      const began = performance.now();
      const answer = await send({ signal: AbortSignal.timeout(REQUEST_MS) });
      await answer.arrayBuffer();
      if (!answer.ok) throw new Error(`a small request answered ${answer.status}`);
      times.push(performance.now() - began);
    }
  }
  await direct.stop();
  const [plugin, straightTimes] = [clients[0][2], clients[1][2]];
  const overhead = plugin.map((time, index) => time - straightTimes[index]);
  console.log(`SillyTavern's start to the plugin's first healthy answer, ${STARTS} starts: median ${ms(median(starts))} (each ${starts.map((time) => time.toFixed(0)).join(", ")} ms)`);
  console.log(`SillyTavern's start without plugins to its first answer (/version): median ${ms(median(baseline))} (each ${baseline.map((time) => time.toFixed(0)).join(", ")} ms)`);
  console.log(`sync of a ${REPLIES + 1}-reply chat (keys and one new text), ${ROUNDS} rounds each, alternating:`);
  console.log(`  through the plugin: median ${ms(median(plugin))}, p99 ${ms(quantile(plugin, 0.99))}`);
  console.log(`  straight to statecraft serve: median ${ms(median(straightTimes))}, p99 ${ms(quantile(straightTimes, 0.99))}`);
  console.log(`  the plugin's overhead per sync: median ${ms(median(overhead))}`);
  console.log(`small requests, ${ROUNDS} rounds each, alternating:`);
  for (const [what, , times] of small) console.log(`  ${what}: median ${ms(median(times))}, p99 ${ms(quantile(times, 0.99))}`);
} finally {
  await tavern?.stop();
  await git.close();
  rmSync(gitRoot, { recursive: true, force: true });
  rmSync(run.run, { recursive: true, force: true });
}
