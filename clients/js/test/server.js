// Starts a real `statecraft serve` for the tests, on a free loopback port and a fresh SQLite file,
// and stops it (SIGTERM) afterwards. The binary is $STATECRAFT_BIN, or the workspace's debug build.
// `alive` tells whether a process (such a server, or one a test started) still runs.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));

export function binary() {
  // Absolute, so that a relative STATECRAFT_BIN names the same file for a process started elsewhere
  // (SillyTavern finds the plugin's binary on PATH, from its own folder).
  const path = resolve(process.env.STATECRAFT_BIN || resolve(here, "../../../target/debug/statecraft"));
  if (!existsSync(path)) {
    throw new Error(`no statecraft binary at ${path}: build it (cargo build -p statecraft) or set STATECRAFT_BIN`);
  }
  return path;
}

/**
 * A running server: `{url, stop(), restart()}`. `restart()` stops it (SIGTERM) and starts it again
 * on the same address and database, as a server that went down and came back.
 */
export async function startServer(args = []) {
  const dir = mkdtempSync(join(tmpdir(), "statecraft-js-"));
  let child;
  const launch = async (listen) => {
    child = spawn(
      binary(),
      ["serve", "--listen", listen, "--db", `sqlite:${join(dir, "games.db")}`, "--log-level", "warn", ...args],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (chunk) => { stderr += chunk; });
    const lines = createInterface({ input: child.stdout });
    return new Promise((resolveUrl, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start: ${stderr}`)), 20000);
      lines.once("line", (line) => {
        clearTimeout(timer);
        const match = /^listening on (http:\/\/\S+)$/.exec(line.trim());
        if (match) resolveUrl(match[1]);
        else reject(new Error(`unexpected first line ${JSON.stringify(line)}: ${stderr}`));
      });
      child.once("exit", (code) => reject(new Error(`the server exited with ${code}: ${stderr}`)));
    });
  };
  const halt = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
    }
  };
  const url = await launch("127.0.0.1:0");
  return {
    url,
    /** Stops the server; `start()` brings it back on the same address and database. */
    halt,
    start: () => launch(new URL(url).host),
    async restart() {
      await halt();
      return launch(new URL(url).host);
    },
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether the process `pid` still runs (one of another user's answers EPERM, and runs too). */
export function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}
