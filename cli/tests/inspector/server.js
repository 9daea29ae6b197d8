// Starts a real `statecraft serve` for the browser test, on a free loopback port and a fresh SQLite
// file, and stops it (SIGTERM) afterwards. The binary is $STATECRAFT_BIN, or the workspace's debug build.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

const here = dirname(fileURLToPath(import.meta.url));

function binary() {
  const path = process.env.STATECRAFT_BIN || resolve(here, "../../../target/debug/statecraft");
  if (!existsSync(path)) {
    throw new Error(`no statecraft binary at ${path}: build it (cargo build -p statecraft) or set STATECRAFT_BIN`);
  }
  return path;
}

/** A running server: `{url, stop()}`. */
export async function startServer(args = []) {
  const dir = mkdtempSync(join(tmpdir(), "statecraft-inspector-"));
  const child = spawn(
    binary(),
    ["serve", "--listen", "127.0.0.1:0", "--db", `sqlite:${join(dir, "games.db")}`, "--log-level", "warn", ...args],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${stderr}`)), 20000);
    lines.once("line", (line) => {
      clearTimeout(timer);
      const match = /^listening on (http:\/\/\S+)$/.exec(line.trim());
      if (match) resolveUrl(match[1]);
      else reject(new Error(`unexpected first line ${JSON.stringify(line)}: ${stderr}`));
    });
    child.once("exit", (code) => reject(new Error(`the server exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((done) => child.once("exit", done));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
