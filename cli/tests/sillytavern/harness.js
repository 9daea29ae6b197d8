// The pieces of the SillyTavern browser test: SillyTavern itself (installed from npm by install.js,
// its config switched off from everything that reaches outside the machine), started on a free port
// from a copy of its folder and with a data root, both the run's own, so that what one run does to
// it (a plugin installed, an extension disabled or deleted, characters, chats, settings) never
// reaches the next; and a session with it from Node (cookies and CSRF token), to call its routes
// as a signed-in user does.

import { execFile, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, readdirSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { Statecraft } from "../../../clients/js/statecraft.js";
import { alive, binary } from "../../../clients/js/test/server.js";
import { PLUGIN_CONTENT_TYPE, PLUGIN_PATH } from "../../../clients/sillytavern/keeper.js";
import { snapshot, serveGit } from "./git-server.js";
import { installFolder, installSillyTavern } from "./install.js";

export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * SillyTavern's config for the test: loopback only, no browser launch, no update checks or
 * downloads (extensions, models, tokenizers, plugins), no access log; server plugins and user
 * accounts as `options` says.
 */
function config(dataRoot, port, { plugins = false, accounts = false } = {}) {
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
enableServerPlugins: ${plugins}
enableServerPluginsAutoUpdate: false
enableUserAccounts: ${accounts}
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
 * This run's folders under `root/runs/PID`, made empty; the folders of earlier runs whose process has
 * ended (a run killed before it could remove its own) are removed. `data` is SillyTavern's data
 * root; SillyTavern compiles its front-end libraries with webpack into `DATA_ROOT/_webpack` (keyed by
 * its version, which prunes stale ones; in a container, into its own `dist/_webpack` instead), a link
 * to `root/webpack` shared by the runs, so that only the first one compiles. `server` is a copy of
 * SillyTavern's folder `serverSource` (its dependencies stay in `root/node_modules`, which Node finds
 * from there), so that the server plugins installed into its `plugins/` are this run's alone.
 * → `{run, dataRoot, serverFolder}`.
 */
export function runFolders(root, serverSource) {
  const runs = join(root, "runs");
  mkdirSync(runs, { recursive: true });
  for (const entry of readdirSync(runs)) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || !alive(pid)) rmSync(join(runs, entry), { recursive: true, force: true });
  }
  const run = join(runs, String(process.pid));
  const dataRoot = join(run, "data");
  mkdirSync(dataRoot, { recursive: true });
  mkdirSync(join(root, "webpack"), { recursive: true });
  symlinkSync(join(root, "webpack"), join(dataRoot, "_webpack"), "dir");
  const serverFolder = join(run, "server");
  cpSync(serverSource, serverFolder, { recursive: true });
  return { run, dataRoot, serverFolder };
}

/**
 * Installs a server plugin with SillyTavern's own installer (`node plugins.js install URL`). → its
 * folder. Asynchronous: the git server the URL names may run in this very process.
 */
export async function installPlugin(serverFolder, url) {
  const output = await new Promise((resolve, reject) => {
    execFile(process.execPath, ["plugins.js", "install", url], { cwd: serverFolder, encoding: "utf8", timeout: 120000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`node plugins.js install ${url} failed: ${error.message}\n${stdout}${stderr}`)) : resolve(stdout + stderr),
    );
  });
  const name = url.replace(/\/+$/, "").split("/").pop().replace(/\.git$/, "");
  const folder = join(serverFolder, "plugins", name);
  if (!existsSync(join(folder, "package.json"))) throw new Error(`node plugins.js install ${url} did not install it:\n${output}`);
  return folder;
}

/**
 * Starts SillyTavern from `serverFolder` with its data under `dataRoot` (see `runFolders`; the
 * config goes there too), on `port` (a free one by default). `settings(json)` edits the default
 * user's settings.json before any page loads; `plugins` and `accounts` switch server plugins and
 * user accounts on; `env` is its environment. → `{url, port, pid, stop(), log(), dataRoot,
 * userFolder}`; `stop({signal})` ends SillyTavern with `signal` (SIGTERM by default), waits for it and
 * resolves with how it exited.
 */
export async function startSillyTavern({ serverFolder, dataRoot, settings, port, plugins = false, accounts = false, env = process.env }) {
  port ??= await freePort();
  const configPath = join(dataRoot, "config.yaml");
  writeFileSync(configPath, config(dataRoot, port, { plugins, accounts }));
  const child = spawn(process.execPath, ["server.js", "--configPath", configPath, "--port", String(port), "--listen", "false", "--browserLaunchEnabled", "false"], {
    cwd: serverFolder,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...env, NODE_ENV: "production" },
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
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
    port,
    pid: child.pid,
    dataRoot,
    userFolder: join(dataRoot, "default-user"),
    log: () => output,
    async stop({ signal = "SIGTERM" } = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const killer = setTimeout(() => child.kill("SIGKILL"), 60000);
        await exited;
        clearTimeout(killer);
      }
      return exited;
    },
  };
}

/**
 * A session with SillyTavern from Node, as a browser has one: its cookies and CSRF token, signed in
 * as `handle` when accounts are on. → `{fetch(path, init), token, handle}`; `fetch` sends the
 * session's cookies and, unless `csrf: false`, its CSRF token.
 */
export async function sillyTavernSession(url, { handle, password = "" } = {}) {
  const jar = new Map();
  let token = null;
  const call = async (path, { csrf = true, headers = {}, ...init } = {}) => {
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
    const all = { ...headers };
    if (cookie) all.cookie = cookie;
    if (csrf && token) all["x-csrf-token"] = token;
    const response = await fetch(`${url}${path}`, { ...init, headers: all, redirect: "manual" });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return response;
  };
  token = (await (await call("/csrf-token")).json()).token;
  if (handle) {
    const login = await call("/api/users/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ handle, password }) });
    if (!login.ok) throw new Error(`${handle} could not sign in: ${login.status} ${await login.text()}`);
  }
  return { fetch: call, token, handle };
}

/**
 * SillyTavern as a user sets it up for statecraft: the plugin installed with SillyTavern's own
 * installer from a loopback git URL serving `repository` (`git.url`, which the extension is installed
 * from too), the binary's folder only on PATH, plugins on, chat completions from `model` (the fake
 * model's URL); and `api`, the statecraft API through the plugin's routes as SillyTavern's default
 * user. `stop()` stops and removes all of it.
 */
export async function startTavernWithPlugin({ repository, model }) {
  const serverSource = installSillyTavern({ log: (line) => process.stderr.write(`${line}\n`) });
  const gitRoot = mkdtempSync(join(tmpdir(), "statecraft-git-"));
  snapshot(repository, gitRoot, "statecraft");
  const git = await serveGit(gitRoot);
  const run = runFolders(installFolder(), serverSource);
  let tavern = null;
  const stop = async () => {
    await tavern?.stop();
    rmSync(run.run, { recursive: true, force: true });
    await git.close();
    rmSync(gitRoot, { recursive: true, force: true });
  };
  try {
    await installPlugin(run.serverFolder, `${git.url}/statecraft.git`);
    const env = { ...process.env, PATH: `${dirname(binary())}:${process.env.PATH}` };
    delete env.STATECRAFT_BIN;
    tavern = await startSillyTavern({
      serverFolder: run.serverFolder,
      dataRoot: run.dataRoot,
      plugins: true,
      env,
      settings: (settings) => {
        settings.firstRun = false;
        settings.main_api = "openai";
        settings.power_user.auto_connect = true;
        Object.assign(settings.oai_settings, { chat_completion_source: "custom", custom_url: model, custom_model: "fake-model", stream_openai: false });
      },
    });
    const session = await sillyTavernSession(tavern.url);
    const api = new Statecraft(`${tavern.url}${PLUGIN_PATH}`, {
      fetch: (url, init) => session.fetch(url.slice(tavern.url.length), init),
      headers: { "content-type": PLUGIN_CONTENT_TYPE },
    });
    return { run, git, tavern, api, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Opens the character named `name` by clicking it in the character list (already open), as a user
 * does. SillyTavern ignores that click, with a toast, while the chat on screen is still being saved,
 * as it may be just after a reply: this waits for the save, and clicks again until the character is
 * the one selected.
 */
export async function selectCharacter(page, name) {
  const entry = page.locator(`.character_select:has-text('${name}')`).first();
  const deadline = Date.now() + 60000;
  for (;;) {
    await chatSaved(page, deadline, name);
    await entry.click();
    const selected = await page
      .waitForFunction((name) => {
        const context = SillyTavern.getContext();
        return context.characters[context.characterId]?.name === name;
      }, name, { timeout: 5000 })
      .then(() => true, () => false);
    if (selected) return;
    if (Date.now() > deadline) throw new Error(`clicking ${name} in the character list did not open it within 60 s`);
  }
}

/** Waits until SillyTavern is not saving the chat on screen (until `deadline`, or fails naming `what`). */
async function chatSaved(page, deadline, what) {
  const saved = async () => !(await page.evaluate(async () => (await import("/script.js")).isChatSaving));
  if (!(await waitUntil(saved, deadline - Date.now()))) {
    throw new Error(`SillyTavern was still saving the chat after 60 s; ${what} not opened`);
  }
}

/** Asks `condition()` (which may be async) every 50 ms until it holds; → whether it did within `ms`. */
export async function waitUntil(condition, ms) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 50));
  }
  return true;
}

/** Waits until the page shows no generation running, then 300 ms for what SillyTavern does after one. */
export async function generationEnded(page) {
  await page.waitForFunction(() => !document.body.dataset.generating && getComputedStyle(document.querySelector("#mes_stop")).display === "none", null, { timeout: 60000 });
  await page.waitForTimeout(300);
}

/**
 * Waits for the model to have had `generations` requests (at most 60 s), for SillyTavern to finish,
 * and for the extension's sync of what the chat shows.
 */
export async function settled(page, model, generations) {
  if (!(await waitUntil(() => model.requests.length >= generations, 60000))) {
    throw new Error(`the model got ${model.requests.length} requests, not ${generations}`);
  }
  await generationEnded(page);
  await page.evaluate(() => globalThis.statecraftExtension?.keeper()?.sync());
}

/**
 * Opens (or closes) the Extensions panel, with the statecraft drawer in it open, as a user does.
 * Whether the drawer is open is read off its icon: while the panel slides open, an open drawer's
 * content is not visible yet, and a click would close it. A click while the panel is still settling
 * (just after a page load) can be lost, so each click waits to see the drawer open, and clicks again
 * if it did not (then whatever its icon says).
 */
export async function extensionDrawer(page, open) {
  const panel = page.locator("#rm_extensions_block");
  if ((await panel.evaluate((element) => element.classList.contains("openDrawer"))) !== open) await page.click("#extensions-settings-button .drawer-toggle");
  if (!open) return;
  await panel.locator(".statecraft-settings").waitFor();
  const content = page.locator(".statecraft-settings .inline-drawer-content");
  for (let attempt = 0; attempt < 4 && !(await content.isVisible()); attempt += 1) {
    const closed = await page.locator(".statecraft-settings .inline-drawer-header .inline-drawer-icon.down").count();
    if (closed || attempt >= 2) await page.locator(".statecraft-settings .inline-drawer-toggle").click();
    await content.waitFor({ state: "visible", timeout: 5000 }).catch(() => {});
  }
  await content.waitFor({ state: "visible" });
}

/**
 * Makes a group chat named `name` of the characters named `members` and opens it, as a user does
 * from the character list (already open). Every member replies, in the group's order; SillyTavern
 * puts each member added first in that order, so the last of `members` speaks first.
 */
export async function createGroup(page, name, members) {
  await page.click("#rm_button_group_chats");
  await page.fill("#rm_group_chat_name", name);
  for (const member of members) {
    await page.locator(`#rm_group_add_members .group_member:has-text('${member}') [data-action="add"]`).first().click();
    await page.locator(`#rm_group_members .group_member:has-text('${member}')`).first().waitFor();
  }
  // The activation strategy "list": every member, in order.
  await page.selectOption("#rm_group_activation_strategy", "1");
  await page.click("#rm_group_submit");
  await chatSaved(page, Date.now() + 60000, name);
  await page.locator(`.group_select:has-text('${name}')`).first().click();
  await page.waitForFunction(() => SillyTavern.getContext().groupId, null, { timeout: 30000 });
}
