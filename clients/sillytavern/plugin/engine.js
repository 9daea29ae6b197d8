// The engine the plugin runs: `statecraft serve` as a child process of SillyTavern's server. This
// module finds the binary (STATECRAFT_BIN, then bin/ in the plugin's folder, then PATH), checks that
// it speaks the plugin's API version, starts it on a loopback port and a token of its own choosing
// with its database under SillyTavern's data root, waits until it is healthy, starts it again with
// growing pauses when it dies, and stops it (SIGTERM, then waits) when SillyTavern stops. What is
// wrong at any moment is `engine.problem`: the error the routes answer and the drawer shows, with
// the command that fixes it. It must not know HTTP routes (proxy.js) or SillyTavern (index.js).

import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdirSync, readFileSync, statSync } from "node:fs";
import { request } from "node:http";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";

/** The HTTP API version this plugin speaks: the binary must say the same (`statecraft --version`). */
export const API_VERSION = 1;

/** The largest request body the engine takes, and how long a request may take in it. */
export const MAX_BODY_BYTES = 4 << 20;
export const REQUEST_TIMEOUT_MS = 30000;

/** Pauses before starting a dead engine again; the last repeats. */
const RESTART_PAUSES_MS = [500, 1000, 2000, 5000, 10000, 30000];
/** An engine that ran healthy this long has its pauses start over when it dies. */
const HEALTHY_RUN_MS = 60000;
/** Deaths in a row, none after a healthy run, after which the engine counts as crashing. */
const CRASHES = 3;
/** How long a stopping engine may take to finish what it acknowledged before it is killed. */
const STOP_WAIT_MS = 20000;
/** How often a missing or mismatched binary is looked for again, when something asks. */
const RECHECK_MS = 5000;

/**
 * Where the binary is: `{path, from}` for the first of `STATECRAFT_BIN`, `bin/` inside the plugin's
 * folder and `PATH` that names one, or `{path: null, looked}` with the places looked at. A
 * `STATECRAFT_BIN` that names no file is not passed over: the user said where it is.
 */
export function findBinary({ pluginFolder, env = process.env, platform = process.platform }) {
  const file = platform === "win32" ? "statecraft.exe" : "statecraft";
  const looked = [];
  if (env.STATECRAFT_BIN) {
    looked.push(`STATECRAFT_BIN (${env.STATECRAFT_BIN})`);
    return runnable(env.STATECRAFT_BIN, platform) ? { path: env.STATECRAFT_BIN, from: "STATECRAFT_BIN" } : { path: null, looked };
  }
  const own = join(pluginFolder, "bin", file);
  looked.push(own);
  if (runnable(own, platform)) return { path: own, from: "the plugin's bin folder" };
  for (const folder of String(env.PATH ?? env.Path ?? "").split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, file);
    if (runnable(candidate, platform)) return { path: candidate, from: "PATH" };
  }
  looked.push("every folder on PATH");
  return { path: null, looked };
}

function runnable(path, platform) {
  try {
    if (!statSync(path).isFile()) return false;
    if (platform !== "win32") accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `statecraft 0.1.0 (HTTP API 1)` → `{version, api}`; `api` is null for a binary older than the API version. */
export function readVersion(text) {
  const match = /^statecraft (\S+)(?: \(HTTP API (\d+)\))?/.exec(String(text).trim());
  if (!match) return null;
  return { version: match[1], api: match[2] === undefined ? null : Number(match[2]) };
}

/** The URL the plugin was installed from (its clone's `origin`), for the commands the messages give. */
export function repositoryUrl(pluginFolder) {
  try {
    const config = readFileSync(join(pluginFolder, ".git", "config"), "utf8");
    const origin = /\[remote "origin"\][^[]*?\burl\s*=\s*(\S+)/.exec(config);
    if (origin) return origin[1];
  } catch {
    // Not a clone (copied by hand): the messages name the repository generically.
  }
  return "<the statecraft repository's URL>";
}

/** An error the plugin answers while the engine cannot: `{kind, message, fix}`. */
function problem(kind, message, fix = "") {
  return { kind, message: fix ? `${message}. ${fix}` : message, fix };
}

/**
 * One engine. `start()` begins (it never throws: what goes wrong is `problem`); `ready()` resolves
 * once it is healthy or has a problem that needs the user; `stop()` ends it and resolves when it has
 * exited. `log(line)` is SillyTavern's console.
 */
export class Engine {
  #child = null;
  #token = randomBytes(32).toString("hex");
  #restart = null;
  #pauses = 0;
  #deaths = 0;
  #startedAt = 0;
  #stderr = [];
  #checked = 0;
  #stopping = false;
  #waiters = [];

  constructor({ pluginFolder, dataRoot, env = process.env, log = (line) => console.log(line), platform = process.platform }) {
    this.pluginFolder = pluginFolder;
    this.database = join(dataRoot, "_statecraft", "games.db");
    this.env = env;
    this.log = log;
    this.platform = platform;
    /** `http://127.0.0.1:PORT` while the engine runs. */
    this.url = null;
    /** What keeps the engine from answering now (`{kind, message, fix}`), or null when it runs. */
    this.problem = problem("starting", "statecraft is starting");
    /** The binary in use: `{path, from, version}`. */
    this.binary = null;
    /** How many times the engine was started, for tests and the console. */
    this.starts = 0;
  }

  /** The header the engine's requests need. */
  get authorization() {
    return `Bearer ${this.#token}`;
  }

  /** The running child's PID, or null. */
  get pid() {
    return this.#child?.pid ?? null;
  }

  start() {
    this.#stopping = false;
    this.#launch();
  }

  /** Resolves once the engine is healthy, or has a problem that waiting will not mend. */
  ready() {
    if (this.problem === null || !["starting", "crashing"].includes(this.problem.kind)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * Called when a request finds the engine unusable: a missing or mismatched binary is looked for
   * again (at most every few seconds), so that installing it needs no restart of SillyTavern.
   */
  recheck() {
    if (!this.problem || !["binary_missing", "binary_mismatch"].includes(this.problem.kind)) return;
    if (Date.now() - this.#checked < RECHECK_MS || this.#child || this.#stopping) return;
    this.#launch();
  }

  async stop() {
    this.#stopping = true;
    clearTimeout(this.#restart);
    this.#restart = null;
    const child = this.#child;
    if (!child) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    // SIGTERM on Unix; on Windows there is no SIGTERM, so the closed pipe asks (--stop-on-stdin-close).
    child.stdin?.end();
    if (this.platform !== "win32") child.kill("SIGTERM");
    const timer = setTimeout(() => {
      this.log(`statecraft: the engine (pid ${child.pid}) did not stop within ${STOP_WAIT_MS / 1000} s; killing it`);
      child.kill("SIGKILL");
    }, STOP_WAIT_MS);
    await exited;
    clearTimeout(timer);
  }

  async #launch() {
    this.#checked = Date.now();
    const found = findBinary({ pluginFolder: this.pluginFolder, env: this.env, platform: this.platform });
    const repository = repositoryUrl(this.pluginFolder);
    const install = `cargo install --locked --force --git ${repository} statecraft`;
    const unpack = `or unpack a release archive into ${join(this.pluginFolder, "bin")}`;
    if (!found.path) {
      return this.#settle(
        problem("binary_missing", `the statecraft binary is missing (looked in ${found.looked.join(", ")})`, `Install it with \`${install}\` (${unpack}), then press Test connection`),
      );
    }
    let reported;
    try {
      reported = await versionOf(found.path);
    } catch (error) {
      return this.#settle(problem("binary_mismatch", `${found.path} does not run (${error.message})`, `Install statecraft with \`${install}\` (${unpack})`));
    }
    if (this.#stopping) return;
    const version = readVersion(reported);
    if (!version || version.api !== API_VERSION) {
      const said = version ? `statecraft ${version.version}, HTTP API ${version.api ?? "older than 1"}` : JSON.stringify(reported.trim().slice(0, 80));
      const fix =
        version && version.api !== null && version.api > API_VERSION
          ? "The binary is newer than this plugin: update the plugin (`node plugins.js update` in SillyTavern's folder) and the extension, then restart SillyTavern"
          : `Update the binary with \`${install}\` (${unpack}), then press Test connection`;
      return this.#settle(problem("binary_mismatch", `${found.path} is ${said}, and this plugin needs HTTP API ${API_VERSION}`, fix));
    }
    this.binary = { path: found.path, from: found.from, version: version.version };
    this.#spawn();
  }

  #spawn() {
    mkdirSync(join(this.database, ".."), { recursive: true });
    const args = [
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--db",
      `sqlite:${this.database}`,
      "--max-body",
      String(MAX_BODY_BYTES),
      "--request-timeout",
      String(REQUEST_TIMEOUT_MS / 1000),
      "--log-level",
      "warn",
      "--stop-on-stdin-close",
    ];
    this.starts += 1;
    this.#stderr = [];
    this.url = null;
    const env = { ...this.env, STATECRAFT_TOKEN: this.#token };
    // Its own process group on Unix: a Ctrl+C in SillyTavern's terminal reaches SillyTavern, whose
    // exit hook stops the engine in order, and not the engine behind its back.
    const child = spawn(this.binary.path, args, { env, stdio: ["pipe", "pipe", "pipe"], detached: this.platform !== "win32", windowsHide: true });
    this.#child = child;
    child.on("error", (error) => {
      this.#stderr.push(error.message);
      // A child that could not be started at all (the file went away, no permission) never exits.
      if (child.pid === undefined) this.#exited(child, null, null);
    });
    createInterface({ input: child.stderr }).on("line", (line) => {
      this.#stderr.push(line);
      if (this.#stderr.length > 20) this.#stderr.shift();
      this.log(`statecraft: ${line}`);
    });
    createInterface({ input: child.stdout }).once("line", (line) => {
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line.trim());
      if (match) this.#healthy(child, match[1]);
    });
    child.once("exit", (code, signal) => this.#exited(child, code, signal));
  }

  async #healthy(child, url) {
    try {
      const health = await getJson(`${url}/v1/health`, this.authorization);
      if (health.api !== API_VERSION) throw new Error(`it answered API ${health.api}`);
    } catch (error) {
      this.#stderr.push(`health check failed: ${error.message}`);
      child.kill("SIGKILL");
      return;
    }
    if (this.#child !== child) return;
    this.url = url;
    this.#startedAt = Date.now();
    if (this.#deaths > 0) this.log(`statecraft: the engine runs again (pid ${child.pid})`);
    else this.log(`statecraft: the engine runs (pid ${child.pid}, ${this.binary.path}, games in ${this.database})`);
    this.#settle(null);
  }

  #exited(child, code, signal) {
    if (this.#child !== child) return;
    this.#child = null;
    this.url = null;
    if (this.#stopping) {
      this.problem = problem("stopped", "statecraft has stopped with SillyTavern");
      return;
    }
    const ranHealthy = this.#startedAt && Date.now() - this.#startedAt >= HEALTHY_RUN_MS;
    if (ranHealthy) {
      this.#pauses = 0;
      this.#deaths = 0;
    }
    this.#startedAt = 0;
    this.#deaths += 1;
    const pause = RESTART_PAUSES_MS[Math.min(this.#pauses, RESTART_PAUSES_MS.length - 1)];
    this.#pauses += 1;
    const how = signal ? `was killed (${signal})` : code === null ? "could not be started" : `exited with code ${code}`;
    this.log(`statecraft: the engine ${how}; starting it again in ${pause / 1000} s`);
    const last = this.#stderr.slice(-3).join(" | ");
    this.#settle(
      this.#deaths >= CRASHES
        ? problem("crashing", `statecraft keeps stopping (${this.#deaths} times in a row; it ${how}${last ? `: ${last}` : ""})`, "SillyTavern's console shows its messages; the plugin keeps starting it again")
        : problem("starting", `statecraft ${how} and is starting again`),
    );
    this.#restart = setTimeout(() => {
      this.#restart = null;
      if (!this.#stopping) this.#spawn();
    }, pause);
  }

  #settle(found) {
    if (found && found.kind !== "starting" && found.kind !== "crashing" && this.problem?.message !== found.message) {
      this.log(`statecraft: ${found.message}`);
    }
    this.problem = found;
    if (found === null || found.kind !== "starting") {
      for (const resolve of this.#waiters.splice(0)) resolve();
    }
  }
}

function versionOf(path) {
  return new Promise((resolve, reject) => {
    execFile(path, ["--version"], { timeout: 10000, windowsHide: true }, (error, stdout) => (error ? reject(error) : resolve(String(stdout))));
  });
}

function getJson(url, authorization) {
  return new Promise((resolve, reject) => {
    const sent = request(url, { headers: { authorization }, timeout: 5000 }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => {
        text += chunk;
      });
      response.on("end", () => {
        if (response.statusCode !== 200) return reject(new Error(`it answered ${response.statusCode}`));
        try {
          resolve(JSON.parse(text));
        } catch (error) {
          reject(error);
        }
      });
    });
    sent.on("timeout", () => sent.destroy(new Error("no answer within 5 s")));
    sent.on("error", reject);
    sent.end();
  });
}
