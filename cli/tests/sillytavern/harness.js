// The pieces of the SillyTavern browser test: SillyTavern itself (installed from npm by install.js,
// its config switched off from everything that reaches outside the machine), started on a free port
// with a data root of the run's own, so that what one run does to it (an extension disabled or
// deleted, characters, chats, settings) never reaches the next.

import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync, readdirSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * SillyTavern's config for the test: loopback only, no browser launch, no update checks or
 * downloads (extensions, models, tokenizers, plugins), no access log.
 */
function config(dataRoot, port) {
  return `dataRoot: ${JSON.stringify(dataRoot)}
listen: false
port: ${port}
browserLaunch:
  enabled: false
whitelistMode: true
whitelist:
  - 127.0.0.1
  - ::1
extensions:
  enabled: true
  autoUpdate: false
  models:
    autoDownload: false
enableDownloadableTokenizers: false
enableServerPlugins: false
enableServerPluginsAutoUpdate: false
skipContentCheck: false
logging:
  enableAccessLog: false
  minLogLevel: 1
backups:
  chat:
    enabled: false
`;
}

/** Whether the process `pid` still runs. */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/**
 * This run's data root, `root/runs/PID`, made empty; the folders of earlier runs whose process has
 * ended (a run killed before it could remove its own) are removed. SillyTavern compiles its front-end
 * libraries with webpack into `DATA_ROOT/_webpack` (keyed by its version, which prunes stale ones; in a
 * container, into its own `dist/_webpack` instead); that folder is a link to `root/webpack`, shared by
 * the runs, so only the first one compiles.
 */
export function runDataRoot(root) {
  const runs = join(root, "runs");
  mkdirSync(runs, { recursive: true });
  for (const entry of readdirSync(runs)) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || !alive(pid)) rmSync(join(runs, entry), { recursive: true, force: true });
  }
  const dataRoot = join(runs, String(process.pid));
  mkdirSync(dataRoot);
  mkdirSync(join(root, "webpack"), { recursive: true });
  symlinkSync(join(root, "webpack"), join(dataRoot, "_webpack"), "dir");
  return dataRoot;
}

/**
 * Starts SillyTavern from `serverFolder` with its data under `dataRoot` (see `runDataRoot`; the
 * config goes there too). `settings(json)` edits the default user's settings.json before any page
 * loads. → `{url, stop(), log(), dataRoot, userFolder}`; `stop()` ends SillyTavern and removes the
 * data root.
 */
export async function startSillyTavern({ serverFolder, dataRoot, settings }) {
  const port = await freePort();
  const configPath = join(dataRoot, "config.yaml");
  writeFileSync(configPath, config(dataRoot, port));
  const child = spawn(process.execPath, ["server.js", "--configPath", configPath, "--port", String(port), "--listen", "false", "--browserLaunchEnabled", "false"], {
    cwd: serverFolder,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const url = `http://127.0.0.1:${port}`;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`SillyTavern did not start in 180 s:\n${output.slice(-3000)}`)), 180000);
    const check = setInterval(() => {
      if (output.includes("SillyTavern is listening")) {
        clearInterval(check);
        clearTimeout(timer);
        resolve();
      }
    }, 100);
    child.once("exit", (code) => {
      clearInterval(check);
      clearTimeout(timer);
      reject(new Error(`SillyTavern exited with ${code}:\n${output.slice(-3000)}`));
    });
  });
  const settingsPath = join(dataRoot, "default-user", "settings.json");
  if (settings && existsSync(settingsPath)) {
    const json = JSON.parse(readFileSync(settingsPath, "utf8"));
    settings(json);
    writeFileSync(settingsPath, JSON.stringify(json, null, 4));
  }
  return {
    url,
    dataRoot,
    userFolder: join(dataRoot, "default-user"),
    log: () => output,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      rmSync(dataRoot, { recursive: true, force: true });
    },
  };
}
