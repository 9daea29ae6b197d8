// The pieces of the SillyTavern browser test: SillyTavern itself (installed from npm by install.js,
// its config switched off from everything that reaches outside the machine), started on a free port
// with a fresh user folder, and the page helpers that read SillyTavern's own chat.

import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync, readdirSync } from "node:fs";
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

/**
 * Starts SillyTavern from `serverFolder` with its data under `dataRoot`. The user folders are made
 * anew (the compiled front-end cache under `_cache` is kept between runs). `settings(json)` edits the
 * default user's settings.json before any page loads. → `{url, stop(), log(), dataRoot}`.
 */
export async function startSillyTavern({ serverFolder, dataRoot, settings }) {
  mkdirSync(dataRoot, { recursive: true });
  for (const entry of readdirSync(dataRoot)) {
    if (entry !== "_cache") rmSync(join(dataRoot, entry), { recursive: true, force: true });
  }
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
    },
  };
}
