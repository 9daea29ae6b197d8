// The statecraft extension and server plugin in real SillyTavern (the version pinned in
// st/package-lock.json, installed from npm under target/ by install.js), in Debian's chromium driven
// by playwright-core, against a fake OpenAI-compatible model. Both are installed as a user does, from
// a URL that serves this working tree over git's smart HTTP: the plugin with SillyTavern's own
// `node plugins.js install URL` (and `enableServerPlugins: true`), the binary's folder only on PATH;
// the extension with "Install extension"; no drawer setting is touched, so every request goes through
// the plugin. Then every chat action is driven through SillyTavern's own buttons and commands, and
// after each one the game's state (read through the plugin's routes) must be the state the replies
// the chat shows give, and the prompt the model received must carry the state the reply builds on. Beyond the chat actions: an MVU card
// (mira.json) from import to its status bar, a refused reply, a deleted range, a branch and the way
// back, a group chat, a chat file of 300 long replies opened for the first time, the engine killed
// in a run of syncs, SillyTavern stopped with SIGINT and SIGTERM and started again, and how many
// prompt fetches each generation made (dry runs and quiet ones included). The drawer's "Test
// connection" must say the plugin is connected, name each problem of another server (down, origin not
// allowed, wrong or missing token) and of the plugin (no binary, a binary of another API version);
// the extension is turned off, on, updated to a new commit and deleted in SillyTavern's "Manage
// extensions"; and last, with user accounts on, two users cannot reach each other's games, and a
// request without SillyTavern's session or CSRF token is refused. SillyTavern runs from a copy of its
// folder on a data root, both the run's own. Screenshots go to $STATECRAFT_ARTIFACTS.

import { test, before, beforeEach, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawnSync } from "node:child_process";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { chromium } from "playwright-core";
import { Statecraft, sha256HexPlain } from "../../../clients/js/statecraft.js";
import { alive, binary, startServer } from "../../../clients/js/test/server.js";
import { PLUGIN_CONTENT_TYPE, PLUGIN_PATH } from "../../../clients/sillytavern/keeper.js";
import { startFakeModel } from "./fake-model.js";
import { snapshot, serveGit, commitOnto, head } from "./git-server.js";
import { installSillyTavern, installFolder, VERSION } from "./install.js";
import { createGroup, extensionDrawer, installPlugin, runFolders, selectCharacter, settled, sillyTavernSession, startSillyTavern, waitUntil } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");
const artifacts = process.env.STATECRAFT_ARTIFACTS || resolve(repository, "target/sillytavern-screenshots");

/** The statecraft API through the plugin, as SillyTavern's default user (`pluginApi`). */
let api;
/** This run's SillyTavern folders (`runFolders`) and the plugin's clone in its `plugins/`. */
let run;
let pluginFolder;
let model;
let git;
/** The folder of the bare repository the extension is installed from, and the repository itself. */
let gitRoot;
let bare;
let tavern;
let browser;
let page;
let shots = 0;
/** The test running, to say where a page error happened. */
let current = "before";
const pageErrors = [];
const checks = [];
/** For each fetch of the prompt (`POST /v1/games/{id}/prompt`, or the stateless `/v1/prompt`), how many generations the model had had by then. */
const promptFetches = [];
/** Every sync the page sent: the game, the body's size, and the request (for its answer). */
const syncs = [];
/** The URLs of the extension's own files the page fetched, in order. */
const extensionFiles = [];
/** Every generation SillyTavern started, dry runs included: `{type, dryRun}`. */
const generations = [];

const INITIAL = { hp: 100, gold: 0, torches: 3 };
const CHARACTER = {
  spec: "chara_card_v2",
  spec_version: "2.0",
  data: {
    name: "Warden",
    description: "The warden of a cave, who keeps score.",
    personality: "terse",
    scenario: "A cave.",
    first_mes: "You wake up in a cave. _.set('gold', 5);//a coin purse",
    mes_example: "",
    creator_notes: "",
    system_prompt: "",
    post_history_instructions: "",
    alternate_greetings: [],
    tags: [],
    creator: "statecraft tests",
    character_version: "1",
    extensions: { statecraft: { state: INITIAL } },
  },
};

before(async () => {
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  const serverSource = installSillyTavern({ log: (line) => process.stderr.write(`${line}\n`) });
  model = await startFakeModel();
  gitRoot = mkdtempSync(join(tmpdir(), "statecraft-git-"));
  bare = snapshot(repository, gitRoot, "statecraft");
  git = await serveGit(gitRoot);
  run = runFolders(installFolder(), serverSource);
  // The plugin as a user installs it: SillyTavern's own installer, from the repository's URL.
  pluginFolder = await installPlugin(run.serverFolder, `${git.url}/statecraft.git`);
  tavern = await startTavern({
    settings: (settings) => {
      settings.firstRun = false;
      settings.main_api = "openai";
      settings.power_user.auto_connect = true;
      Object.assign(settings.oai_settings, {
        chat_completion_source: "custom",
        custom_url: model.url,
        custom_model: "fake-model",
        stream_openai: false,
      });
    },
  });
  api = await pluginApi();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [...(process.getuid?.() === 0 ? ["--no-sandbox"] : []), "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-gpu"],
  });
  const browserContext = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  // Nothing leaves the machine: every request to anywhere but loopback is refused.
  await browserContext.route((url) => url.hostname !== "127.0.0.1", (route) => route.abort());
  page = await browserContext.newPage();
  watchRequests();
  // Every generation SillyTavern starts, on every page load: dry runs are not real generations.
  await page.exposeFunction("statecraftTestGeneration", (type, dryRun) => generations.push({ type, dryRun }));
  // Every toast shown, kept after it fades: `globalThis.statecraftTestToasts`.
  await page.addInitScript(() => {
    globalThis.statecraftTestToasts = [];
    new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node.classList?.contains("toast")) globalThis.statecraftTestToasts.push({ kind: node.className, text: node.textContent });
        }
      }
    }).observe(document, { childList: true, subtree: true });
  });
  await page.addInitScript(() => {
    const wait = setInterval(() => {
      let context;
      try {
        context = globalThis.SillyTavern?.getContext?.();
      } catch {
        return; // SillyTavern's modules are still being evaluated.
      }
      if (!context?.eventSource || !context.eventTypes) return;
      clearInterval(wait);
      // APP_READY fires again for a listener added after it: SillyTavern has loaded its extensions.
      context.eventSource.on(context.eventTypes.APP_READY, () => {
        globalThis.statecraftTestReady = true;
      });
      context.eventSource.on(context.eventTypes.GENERATION_STARTED, (type, _options, dryRun) => globalThis.statecraftTestGeneration(type ?? "normal", Boolean(dryRun)));
    }, 10);
  });
  page.on("pageerror", (error) => {
    // SillyTavern 1.19's own: after a group is made it waits a second for `[grid="ID"]` in the
    // character list to highlight it, but the list marks groups with `data-grid`, so the wait always
    // times out, unhandled. Nothing of the extension's.
    if (current.startsWith("a group chat") && error.message === "Timed out waiting for condition to be true") return;
    pageErrors.push(new Error(`${error.message} (during "${current}")`));
  });
  page.on("console", (message) => {
    if (message.type() === "error" && /statecraft/i.test(message.text())) pageErrors.push(new Error(message.text()));
  });
  await openSillyTavern();
});

beforeEach((context) => {
  current = context.name;
});

after(async () => {
  if (page && tavern) await shot("last").catch(() => {});
  await browser?.close();
  await tavern?.stop();
  if (run) rmSync(run.run, { recursive: true, force: true });
  await git?.close();
  if (gitRoot) rmSync(gitRoot, { recursive: true, force: true });
  await model?.close();
  const failed = checks.filter((check) => !check.ok);
  process.stderr.write(`${checks.length} checks, ${failed.length} failed${failed.length ? `: ${failed.map((check) => check.name).join("; ")}` : ""}\n`);
});

/**
 * The environment SillyTavern runs in: the statecraft binary's folder on PATH, and no STATECRAFT_BIN
 * (the plugin finds the binary on PATH, as after `cargo install`); `change(env)` edits it.
 */
function tavernEnv(change = () => {}) {
  const env = { ...process.env, PATH: `${dirname(binary())}:${process.env.PATH}` };
  delete env.STATECRAFT_BIN;
  change(env);
  return env;
}

/**
 * Starts SillyTavern from this run's folders with server plugins on (again on the same port and data
 * root, when it ran before). `options` go to `startSillyTavern` (`accounts`, `settings`, `env`).
 */
function startTavern(options = {}) {
  return startSillyTavern({ serverFolder: run.serverFolder, dataRoot: run.dataRoot, port: tavern?.port, plugins: true, env: tavernEnv(), ...options });
}

/**
 * The statecraft API through the plugin's routes, from Node, in a session of SillyTavern's (`handle`
 * signed in when accounts are on): what the page reaches, with the same cookies and CSRF token.
 */
async function pluginApi({ handle, password } = {}) {
  const session = await sillyTavernSession(tavern.url, { handle, password });
  const client = new Statecraft(`${tavern.url}${PLUGIN_PATH}`, {
    fetch: (url, init) => session.fetch(url.slice(tavern.url.length), init),
    headers: { "content-type": PLUGIN_CONTENT_TYPE },
  });
  client.session = session;
  return client;
}

/** The PID of the engine the plugin runs now, from what it said in SillyTavern's console. */
function enginePid() {
  const said = [...tavern.log().matchAll(/statecraft: the engine runs(?: again)? \(pid (\d+)/g)];
  return said.length ? Number(said.at(-1)[1]) : null;
}

/**
 * Counts the page's calls to statecraft (the plugin's routes): prompt fetches (by the generation they
 * belong to) and syncs; and keeps the extension's files the page fetched from SillyTavern.
 */
function watchRequests() {
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith(`/scripts/extensions/third-party/${EXTENSION}/`)) extensionFiles.push(url.pathname);
    if (!url.pathname.startsWith(`${PLUGIN_PATH}/`) || request.method() !== "POST") return;
    const path = url.pathname.slice(PLUGIN_PATH.length);
    // The generation a prompt belongs to is the next one the model gets.
    if (path === "/v1/prompt" || /^\/v1\/games\/[^/]+\/prompt$/.test(path)) promptFetches.push(model.requests.length);
    const sync = /^\/v1\/games\/([^/]+)\/sync$/.exec(path);
    if (sync) syncs.push({ game: decodeURIComponent(sync[1]), bytes: request.postDataBuffer()?.length ?? 0, request });
  });
}

async function openSillyTavern() {
  await page.goto(tavern.url);
  await pageReady();
}

/** Waits until SillyTavern has loaded (its APP_READY event, after its extensions). */
async function pageReady() {
  await page.waitForFunction(() => globalThis.statecraftTestReady && document.querySelector("#extensionsMenuButton"), null, { timeout: 120000 });
  await page.locator("#send_textarea").waitFor();
}

async function shot(name) {
  await page.screenshot({ path: join(artifacts, `${String(++shots).padStart(2, "0")}-${name}.png`) });
}

/**
 * Waits for SillyTavern to finish what an action started: the generation it asked the model for
 * (`generations`: how many requests the model must have had by then), then for the extension to have
 * synced what the chat shows.
 */
const settle = (generations = 0) => settled(page, model, generations);

/** The model's replies the chat shows, read from SillyTavern's own chat. */
function shownReplies() {
  return page.evaluate(() =>
    SillyTavern.getContext()
      .chat.filter((message) => !message.is_user && !(message.extra && message.extra.type))
      .map((message) => message.mes),
  );
}

/**
 * The state a list of replies gives, by this test's own reading of the commands it writes: each
 * reply all or nothing (the Warden's game is `strict`), an increment by something other than a
 * number refusing its reply.
 */
function fold(replies, initial = INITIAL) {
  let state = structuredClone(initial);
  for (const reply of replies) {
    const next = structuredClone(state);
    let refused = false;
    for (const match of reply.matchAll(/_\.(set|add)\('(\w+)',\s*(-?\d+)\);/g)) {
      const [, command, key, number] = match;
      next[key] = command === "set" ? Number(number) : next[key] + Number(number);
    }
    for (const match of reply.matchAll(/```json\n([\s\S]*?)\n```/g)) {
      for (const op of JSON.parse(match[1])) {
        const key = op.path[0];
        if (op.op === "increment" && typeof op.value !== "number") refused = true;
        else next[key] = op.op === "increment" ? next[key] + op.value : op.value;
      }
    }
    if (!refused) state = next;
  }
  return state;
}

/** The chat's game, from the chat's metadata. */
function gameId() {
  return page.evaluate(() => SillyTavern.getContext().chatMetadata.statecraft?.game);
}

function check(name, fn) {
  return (async () => {
    try {
      await fn();
      checks.push({ name, ok: true });
    } catch (error) {
      checks.push({ name, ok: false });
      error.message = `${name}: ${error.message}`;
      throw error;
    }
  })();
}

/** After an action: the game's state is what the shown replies give. */
async function stateMatchesChat(action, initial = INITIAL) {
  await check(`${action}: state`, async () => {
    const replies = await shownReplies();
    const { state } = await api.getGame(await gameId());
    const shown = replies.length > 6 ? `${replies.length} replies` : JSON.stringify(replies);
    assert.deepEqual(state, fold(replies, initial), `after ${action}, for the shown replies ${shown}`);
  });
  await shot(action.replace(/[^a-z0-9]+/gi, "-"));
}

/** The state the last generation's prompt carried. */
function promptState(request = model.requests.at(-1)) {
  const text = request.messages.map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content))).join("\n");
  const found = [...text.matchAll(/Current state:\n```json\n([\s\S]*?)\n```/g)];
  return found.length === 0 ? null : JSON.parse(found.at(-1)[1]);
}

/**
 * After a continue of the reply whose text was `shorter`: the reply's whole text made one step, on
 * the same parent as the shorter text's step, so its commands applied once.
 */
async function continuedOnce(action, shorter) {
  await check(`${action}: applied once`, async () => {
    const whole = (await shownReplies()).at(-1);
    assert.ok(whole.startsWith(shorter) && whole.length > shorter.length, `the reply grew: ${JSON.stringify(whole)}`);
    const log = await api.log(await gameId());
    const byKey = (text) => log.steps.find((step) => step.key === sha256HexPlain(text));
    const [before, after] = [byKey(shorter), byKey(whole)];
    assert.ok(before && after, "both texts made their step");
    assert.equal(after.parent, before.parent, "the whole text applies on the shorter text's parent");
    assert.equal(log.current, after.id);
  });
}

async function promptCarries(action, replies, request = model.requests.at(-1)) {
  await check(`${action}: prompt`, async () => {
    assert.deepEqual(promptState(request), fold(replies), `the prompt of ${action} carries the state of ${JSON.stringify(replies)}`);
  });
}

/** The text of everything a generation's prompt carried. */
function promptText(request = model.requests.at(-1)) {
  return request.messages.map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content))).join("\n");
}

/** The name SillyTavern knows the installed extension by (the clone's folder, from the URL's last segment). */
const EXTENSION = "statecraft";

/**
 * Opens "Manage extensions" (the Extensions panel's button `#extensions_details`) and waits until the
 * dialog has asked the server for each installed extension's version (it shows the update button of
 * those that have one then). → the statecraft block's locator.
 */
async function manageExtensions() {
  if (!(await page.locator("#rm_extensions_block.openDrawer").count())) await page.click("#extensions-settings-button .drawer-toggle");
  await page.click("#extensions_details");
  await page.locator(".popup .extensions_info").waitFor();
  await page.waitForFunction(() => document.querySelectorAll(".extensions_info").length === 1 && !document.querySelector(".extensions_info .fa-spinner"), null, { timeout: 60000 });
  return page.locator(`.extensions_info .extension_block[data-name="/${EXTENSION}"]`);
}

/**
 * Closes "Manage extensions" with Escape. With `reload` (an extension was turned on or off in it),
 * SillyTavern reloads the page as the dialog closes: this waits for the page to be ready again.
 */
async function closeManageExtensions({ reload = false } = {}) {
  const loaded = reload ? page.waitForEvent("load", { timeout: 60000 }) : null;
  await page.keyboard.press("Escape");
  if (loaded) {
    await loaded;
    await pageReady();
  } else {
    await page.locator(".popup .extensions_info").waitFor({ state: "detached" });
  }
}

/** What SillyTavern's server says of the installed extension's clone (`/api/extensions/version`). */
function extensionVersion() {
  return page.evaluate(async (name) => {
    const response = await fetch("/api/extensions/version", {
      method: "POST",
      headers: SillyTavern.getContext().getRequestHeaders(),
      body: JSON.stringify({ extensionName: name, global: false }),
    });
    if (!response.ok) throw new Error(`/api/extensions/version answered ${response.status}: ${await response.text()}`);
    return response.json();
  }, EXTENSION);
}

/** Whether the extension runs in the page: its drawer, its live objects. */
function extensionRuns() {
  return page.evaluate(() => ({ drawer: document.querySelectorAll(".statecraft-settings").length, live: Boolean(globalThis.statecraftExtension) }));
}

/** Opens the character list in the right panel. */
async function characterList() {
  if (!(await page.locator("#right-nav-panel.openDrawer").count())) await page.click("#rightNavDrawerIcon");
  await page.click("#rm_button_characters");
}

/** Imports a character card as a user does (the import button of the character list). */
async function importCharacter(name, card) {
  await characterList();
  await page.setInputFiles("#character_import_file", { name: `${name}.json`, mimeType: "application/json", buffer: Buffer.from(JSON.stringify(card)) });
  await page.locator(`.character_select:has-text('${name}')`).first().waitFor();
}

/** Opens a chat of the open character from "Manage chat files". */
async function openChatFile(name) {
  await page.click("#options_button");
  await page.click("#option_select_chat");
  await page.locator(`.select_chat_block:has-text('${name}')`).first().click();
  await chatLoaded(name);
}

/** Waits until SillyTavern has loaded the chat named `name` (its messages and metadata). */
async function chatLoaded(name) {
  await page.waitForFunction(
    (chat) => {
      const context = SillyTavern.getContext();
      return String(context.chatId).startsWith(chat) && context.chat.length > 0 && context.chatMetadata.integrity;
    },
    name,
    { timeout: 60000 },
  );
}

/** The chat's id as SillyTavern names it (its file name). */
function chatId() {
  return page.evaluate(() => SillyTavern.getContext().chatId);
}

/** The text of a toast of `kind` (success, warning, error) matching `pattern`, shown since the page loaded, waited for. */
async function toastText(kind, pattern) {
  const found = await page.waitForFunction(
    ({ kind, source }) => globalThis.statecraftTestToasts.findLast((toast) => toast.kind.includes(`toast-${kind}`) && new RegExp(source).test(toast.text))?.text,
    { kind, source: pattern.source },
    { timeout: 30000 },
  );
  return found.jsonValue();
}

/** Runs an action that makes one generation, and waits for it and the sync after it. */
async function generating(action) {
  const expected = model.requests.length + 1;
  await action();
  await settle(expected);
}

function send(text) {
  return generating(async () => {
    await page.fill("#send_textarea", text);
    await page.click("#send_but");
  });
}

async function slash(command) {
  await page.fill("#send_textarea", command);
  await page.click("#send_but");
  await settle();
}

function option(id) {
  return generating(async () => {
    await page.click("#options_button");
    await page.click(`#${id}`);
  });
}

/** The Mira card's state after its greeting, as MVU builds it from its [InitVar] entry for `user`. */
function miraAfterGreeting(user) {
  return { Mira: { hp: [100, "0-100"], mood: "curious", friend: user }, bag: { potion: { count: 2 } } };
}

/**
 * What an MVU status bar shows for a message: it reads the message's variables for the swipe shown
 * (`chat[id].variables[swipe_id]`, where MVU writes them and JS-Slash-Runner's
 * `getVariables({type: "message"})` reads them), `stat_data` for values and `display_data` for
 * what changed.
 */
function statusBar(messageId) {
  return page.evaluate((id) => {
    const message = SillyTavern.getContext().chat.at(id);
    const variables = message.variables?.[message.swipe_id ?? 0];
    return variables ? { stat_data: variables.stat_data, display_data: variables.display_data, delta_data: variables.delta_data } : null;
  }, messageId);
}

test("the extension installs from its repository URL and shows in Manage extensions", async () => {
  await page.click("#extensions-settings-button .drawer-toggle");
  await page.click("#third_party_extension_button");
  await page.fill(".popup .popup-input", `${git.url}/statecraft.git`);
  await shot("install-dialog");
  await page.click(".popup .popup-button-ok");
  // SillyTavern asks once whether to trust a third-party extension.
  await page.locator(".popup:has-text('Install a third-party extension?') .popup-button-ok").click();
  await page.locator("#statecraft_url").waitFor({ state: "attached", timeout: 60000 });
  await shot("installed");
  const block = await manageExtensions();
  await check("Manage extensions: listed, enabled, up to date, with a delete button", async () => {
    assert.equal(await block.locator(".extension_name").textContent(), "statecraft");
    // The manifest's version, then the clone's branch and commit.
    const version = JSON.parse(readFileSync(join(repository, "manifest.json"), "utf8")).version;
    assert.equal(await block.locator(".extension_version").textContent(), `${version} (main-${head(bare).slice(0, 7)})`);
    assert.ok(await block.locator(".extension_toggle input.toggle_disable").isChecked(), "the toggle shows it enabled");
    assert.ok(await block.locator(".btn_delete").isVisible());
    assert.ok(await block.locator(".btn_update").isHidden(), "no update offered for the fresh clone");
    const clone = await extensionVersion();
    assert.equal(clone.isUpToDate, true);
    assert.equal(clone.currentBranchName, "main");
    assert.equal(clone.currentCommitHash, head(bare));
  });
  await shot("manage-extensions");
  await closeManageExtensions();
});

/** Presses "Test connection" and reads the verdict the drawer shows. → `{ok, text}`. */
async function pressTest() {
  await page.evaluate(() => document.querySelector("#statecraft_test_result").classList.remove("ok", "bad"));
  await page.click("#statecraft_test");
  await page.waitForFunction(() => /\b(ok|bad)\b/.test(document.querySelector("#statecraft_test_result").className), null, { timeout: 30000 });
  return page.evaluate(() => {
    const result = document.querySelector("#statecraft_test_result");
    return { ok: result.classList.contains("ok"), text: result.textContent };
  });
}

/**
 * Types another server's URL and token into the drawer as a user does, presses "Test connection"
 * and reads the verdict it shows. → `{ok, text}`.
 */
async function testConnection(url, token = "") {
  for (const [field, value] of [["#statecraft_url", url], ["#statecraft_token", token]]) {
    await page.fill(field, value);
    await page.locator(field).dispatchEvent("change");
  }
  return pressTest();
}

/** The plugin's verdict in the drawer, once the drawer has asked it. */
async function pluginConnection() {
  await page.waitForFunction(() => !/connecting/.test(document.querySelector("#statecraft_connection").textContent), null, { timeout: 30000 });
  return page.textContent("#statecraft_connection");
}

test("the drawer connects through the plugin with nothing set, and names each problem of another server", async () => {
  await page.locator(".statecraft-settings .inline-drawer-toggle").click();
  await check("plugin: connected with no setting touched, no server fields shown", async () => {
    assert.equal(await pluginConnection(), "connected through SillyTavern's server plugin");
    assert.equal(await page.locator("#statecraft_url").isVisible(), false);
    assert.equal(await page.locator("#statecraft_token").isVisible(), false);
    const { ok, text } = await pressTest();
    assert.equal(ok, true, text);
    assert.match(text, /^connected through SillyTavern's server plugin \(statecraft \d+\.\d+\.\d+\S*, 0 games\)$/);
  });
  await shot("test-connection-plugin");

  // Another server: the fields show once asked for.
  await page.locator("#statecraft_another").check();
  await page.locator("#statecraft_url").waitFor({ state: "visible" });
  // The exact flag to add: SillyTavern's origin as the browser shows it.
  const allow = `statecraft serve --allow-origin ${tavern.url}`;
  await check("test connection: nothing answers", async () => {
    const { ok, text } = await testConnection("http://127.0.0.1:9");
    assert.equal(ok, false);
    assert.equal(text, `nothing answers at http://127.0.0.1:9: start the server (${allow})`);
  });
  await shot("test-connection-down");

  // A server that allows another origin (localhost for 127.0.0.1, the mismatch users meet): the
  // browser hides its refusal as a network error, the drawer still names it.
  const elsewhere = await startServer(["--allow-origin", tavern.url.replace("127.0.0.1", "localhost")]);
  try {
    await check("test connection: the origin is not allowed, with the exact --allow-origin", async () => {
      const { ok, text } = await testConnection(elsewhere.url);
      assert.equal(ok, false);
      assert.equal(text, `the server at ${elsewhere.url} answers, but refuses this page's origin: start it with ${allow}`);
    });
    await shot("test-connection-origin");
  } finally {
    await elsewhere.stop();
  }

  // A server started with a token: a wrong one, none, the right one.
  const guarded = await startServer(["--allow-origin", tavern.url, "--token", "the-right-token"]);
  try {
    await check("test connection: a wrong token", async () => {
      const { ok, text } = await testConnection(guarded.url, "a-wrong-token");
      assert.equal(ok, false);
      assert.equal(text, "the server refused the token: paste the one it was started with (--token)");
    });
    await shot("test-connection-bad-token");
    await check("test connection: no token for a server that needs one", async () => {
      const { ok, text } = await testConnection(guarded.url, "");
      assert.equal(ok, false);
      assert.equal(text, "the server needs a token (it was started with --token): paste it in the Token field");
    });
    await check("test connection: the right token", async () => {
      const { ok, text } = await testConnection(guarded.url, "the-right-token");
      assert.equal(ok, true, text);
      assert.equal(text, `connected to ${guarded.url} (0 games)`);
    });
  } finally {
    await guarded.stop();
  }

  // Back to the plugin: the other server is forgotten.
  await page.locator("#statecraft_another").uncheck();
  await check("back to the plugin: connected, the other server forgotten", async () => {
    assert.equal(await page.locator("#statecraft_url").isVisible(), false);
    assert.equal(await pluginConnection(), "connected through SillyTavern's server plugin");
    assert.equal(await page.evaluate(() => SillyTavern.getContext().extensionSettings.statecraft.url), "");
    assert.equal((await pressTest()).ok, true);
  });
  await page.click("#extensions-settings-button .drawer-toggle");
});

test("every chat action keeps the game on what the chat shows", async () => {
  // A character whose card carries the initial state, imported as a user imports one.
  await page.click("#rightNavDrawerIcon");
  await page.setInputFiles("#character_import_file", { name: "warden.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(CHARACTER)) });
  await page.locator(".character_select:has-text('Warden')").first().waitFor();
  await selectCharacter(page, "Warden");
  await page.locator("#chat .mes[mesid='0']").waitFor();
  await settle();
  await stateMatchesChat("open the greeting");

  model.next("You find a chest. _.add('gold', 10);//loot");
  await send("I look around.");
  await promptCarries("send", ["You wake up in a cave. _.set('gold', 5);//a coin purse"]);
  await stateMatchesChat("send");
  const greeting = (await shownReplies())[0];

  model.next("A bat bites you.\n```json\n[{\"op\": \"increment\", \"path\": [\"hp\"], \"value\": -10}]\n```");
  await send("I open the chest.");
  await stateMatchesChat("second reply");
  const afterTwo = await shownReplies();

  // What the chat shows of it: the commands hidden on display only, a badge, MVU's variables.
  await check("update commands hidden on display, kept in the text", async () => {
    const shown = await page.textContent("#chat .last_mes .mes_text");
    assert.match(shown, /A bat bites you/);
    assert.doesNotMatch(shown, /increment|_\.add/);
    assert.match(afterTwo.at(-1), /increment/);
    const first = await page.textContent("#chat .mes[mesid='2'] .mes_text");
    assert.doesNotMatch(first, /_\.add/);
  });
  await check("badge and MVU variables on the last reply", async () => {
    await page.locator("#chat .last_mes .statecraft-badge").waitFor();
    assert.equal(await page.textContent("#chat .last_mes .statecraft-badge"), "Δ 1");
    const variables = await page.evaluate(() => {
      const message = SillyTavern.getContext().chat.at(-1);
      return message.variables?.[message.swipe_id ?? 0];
    });
    const { state } = await api.getGame(await gameId());
    assert.deepEqual(variables.stat_data, state);
    // MVU's own text: `old->new (reason)`, with the space kept when there is no reason.
    const view = await api.mvuView(await gameId());
    assert.deepEqual(variables.delta_data, view.delta_data);
    assert.deepEqual(variables.delta_data, { hp: "100->90 " });
    assert.equal(variables.display_data.hp, "100->90 ");
  });
  await check("/state and /state PATH", async () => {
    await page.fill("#send_textarea", "/state hp | /setvar key=seen");
    await page.click("#send_but");
    await page.waitForFunction(() => SillyTavern.getContext().variables.local.get("seen") !== "", null, { timeout: 10000 });
    assert.equal(String(await page.evaluate(() => SillyTavern.getContext().variables.local.get("seen"))), "90");
    await page.locator(".toast:has-text('statecraft: hp')").waitFor();
  });
  await shot("badge-and-state-command");

  // A new swipe of the last reply: the prompt carries the state before it.
  model.next("A spider bites you. _.add('hp', -30);");
  await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  await promptCarries("swipe (new)", afterTwo.slice(0, -1));
  await stateMatchesChat("swipe (new)");

  await page.locator("#chat .last_mes .swipe_left").click();
  await settle();
  await stateMatchesChat("swipe back");
  await page.locator("#chat .last_mes .swipe_right").click();
  await settle();
  await stateMatchesChat("swipe forward (seen)");

  // Delete the shown swipe (the spider): the bat is shown again.
  await slash("/delswipe");
  await stateMatchesChat("delete swipe");

  // Regenerate: SillyTavern removes the reply and asks anew; the prompt builds on the state before it.
  model.next("Nothing happens. _.set('torches', 2);");
  await option("option_regenerate");
  await promptCarries("regenerate", [greeting, afterTwo[1]]);
  await stateMatchesChat("regenerate");

  // Continue: the last reply grows. The model writes after the reply's commands, so the prompt
  // carries the whole shown chat's state, the reply being continued included; once it ends, the
  // reply's whole text is that reply, applied once (a step beside the shorter text's, on its parent).
  const beforeContinue = await shownReplies();
  model.next(" A draught blows. _.add('torches', -1);");
  await option("option_continue");
  await promptCarries("continue", beforeContinue);
  await stateMatchesChat("continue");
  await continuedOnce("continue", beforeContinue.at(-1));

  // Impersonate writes the user's message: no reply, no new step.
  model.next("I light a torch.");
  await option("option_impersonate");
  await check("impersonate: nothing applied", async () => {
    assert.equal(await page.inputValue("#send_textarea"), "I light a torch.");
  });
  await page.fill("#send_textarea", "");
  await stateMatchesChat("impersonate");

  // Edit an earlier reply (the first one): everything after it builds on the new text.
  const first = page.locator("#chat .mes[mesid='2']");
  await first.locator(".mes_edit").dispatchEvent("click");
  await page.locator("#curEditTextarea").fill("You find a chest. _.add('gold', 100);//a big one");
  await first.locator(".mes_edit_done").dispatchEvent("click");
  await settle();
  await stateMatchesChat("edit an earlier reply");

  // Hide a reply from the model: its changes stand.
  await slash("/hide 2");
  await stateMatchesChat("hide a reply");
  await slash("/unhide 2");

  // Delete a message in the middle (the first reply).
  await slash("/cut 2");
  await stateMatchesChat("delete a middle message");

  // Rename the chat: same game, same state, nothing applied again.
  const game = await gameId();
  const before = await api.log(game);
  await slash("/renamechat The cave");
  await stateMatchesChat("rename");
  await check("rename: same game, no new steps", async () => {
    assert.equal(await gameId(), game);
    assert.equal((await api.log(game)).steps.length, before.steps.length);
  });

  // Reload the page and open the character's chat again: the chat syncs as keys alone, and nothing
  // is applied.
  const syncsBeforeReload = syncs.length;
  await page.reload();
  await page.waitForFunction(() => globalThis.statecraftExtension, null, { timeout: 120000 });
  await page.click("#rightNavDrawerIcon");
  await selectCharacter(page, "Warden");
  await page.waitForFunction((id) => SillyTavern.getContext().chatMetadata.statecraft?.game === id, game, { timeout: 30000 });
  await settle();
  await stateMatchesChat("reopen");
  await check("reopen: no new steps, and every reply went as its key", async () => {
    assert.equal((await api.log(game)).steps.length, before.steps.length);
    const sent = syncs.slice(syncsBeforeReload).filter((sync) => sync.game === game);
    assert.ok(sent.length >= 1, "the chat synced");
    for (const sync of sent) {
      const { replies } = JSON.parse(sync.request.postData());
      assert.ok(replies.length > 0 && replies.every((reply) => /^[0-9a-f]{64}$/.test(reply)), sync.request.postData().slice(0, 200));
      assert.equal((await sync.request.response())?.status(), 200);
    }
  });

  // Streaming on: a new reply arrives in pieces and is applied once, whole.
  await page.evaluate(() => {
    SillyTavern.getContext().chatCompletionSettings.stream_openai = true;
  });
  model.next("You hear water. _.add('gold', 1);");
  await send("I listen.");
  await stateMatchesChat("send (streaming)");
  model.next("A rat steals a coin. _.add('gold', -1);");
  await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  await stateMatchesChat("swipe (streaming)");
  const beforeStreamedContinue = await shownReplies();
  model.next(" It drops a torch. _.add('torches', 1);");
  await option("option_continue");
  await promptCarries("continue (streaming)", beforeStreamedContinue);
  await stateMatchesChat("continue (streaming)");
  await continuedOnce("continue (streaming)", beforeStreamedContinue.at(-1));
  await page.evaluate(() => {
    SillyTavern.getContext().chatCompletionSettings.stream_openai = false;
  });

  // Close the chat: no game for the chat-less screen, no state in its prompts.
  const games = (await api.listGames({ limit: 100 })).games.length;
  await slash("/closechat");
  await check("close: no game made", async () => {
    assert.equal((await api.listGames({ limit: 100 })).games.length, games);
  });
  await shot("closed");
});

test("the chat file SillyTavern saved, imported with its card, ends on the extension's game", async () => {
  // The Warden's card carries statecraft's own settings (its state) and no [InitVar] entry.
  await characterList();
  await selectCharacter(page, "Warden");
  await page.waitForFunction(() => SillyTavern.getContext().chatMetadata.statecraft?.game, null, { timeout: 30000 });
  await settle();
  const game = await gameId();
  const id = await chatId();
  await page.evaluate(() => SillyTavern.getContext().saveChat());
  const folder = mkdtempSync(join(tmpdir(), "statecraft-import-"));
  try {
    writeFileSync(join(folder, "warden.json"), JSON.stringify(CHARACTER));
    const chatFile = join(tavern.userFolder, "chats", "Warden", `${id}.jsonl`);
    const run = (args) => {
      const result = spawnSync(binary(), args, { cwd: folder, encoding: "utf8" });
      assert.equal(result.status, 0, `statecraft ${args.join(" ")}: ${result.stderr}`);
      return result.stdout;
    };
    await check("import-chat --card: the saved chat ends on the live game's state", async () => {
      run(["import-chat", chatFile, "--save", "warden.save", "--card", "warden.json"]);
      const imported = JSON.parse(run(["show", "--save", "warden.save"]));
      assert.deepEqual(imported, (await api.getGame(game)).state);
      const card = JSON.parse(run(["card", "warden.json"]));
      assert.deepEqual(card.state, INITIAL, "the card's settings give the extension's initial state");
    });
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test("an MVU card runs unchanged: its game from its [InitVar] entries, MVU's rules, its status bar", async () => {
  const card = JSON.parse(readFileSync(join(here, "mira.json"), "utf8"));
  await importCharacter("Mira", card);
  await selectCharacter(page, "Mira");
  // SillyTavern offers to import the card's world book: a user says yes. (1.19 saves the link with
  // the card's next save; until then the extension reads the book embedded in the card, the same
  // entries.)
  await page.locator(".popup:has-text('embedded World/Lorebook') .popup-button-ok").click();
  await toastText("success", /imported and linked/);
  await page.locator("#WorldInfo.openDrawer").waitFor({ timeout: 10000 }).catch(() => {});
  if (await page.locator("#WorldInfo.openDrawer").count()) await page.click("#WIDrawerIcon");
  await page.locator("#chat .mes[mesid='0']").waitFor();
  await settle();
  const user = await page.evaluate(() => SillyTavern.getContext().name1);
  const game = await gameId();
  await check("mvu card: the game starts from the card's [InitVar] entry, the greeting applied", async () => {
    assert.match(game, /^st-Mira-/);
    assert.deepEqual((await api.getGame(game)).state, miraAfterGreeting(user));
    const source = await page.evaluate(() => globalThis.statecraftExtension.source());
    assert.equal(source.character, "Mira");
    assert.match(source.from, /\[InitVar\] entries/);
  });
  await shot("mvu-card-greeting");

  // A reply under MVU's rules: a pair's value set (its old value checked against element 0), a path
  // the state does not have skipped, an object added under a template.
  model.next("Mira casts a spark and winces.\n_.set('Mira.hp', 100, 85);//the spark's backlash\n_.set('Mira.mana', 5);//no such stat\n_.insert('bag', 'ember', {});//a find");
  await send("Show me a spell.");
  const afterSpark = { Mira: { hp: [85, "0-100"], mood: "curious", friend: user }, bag: { potion: { count: 2 }, ember: { count: 1 } } };
  await check("mvu card: _.set applies under MVU's rules", async () => {
    assert.deepEqual((await api.getGame(game)).state, afterSpark);
  });
  await check("mvu card: the prompt carries the card's state", async () => {
    assert.deepEqual(promptState(), miraAfterGreeting(user));
  });
  await check("mvu card: the status bar reads stat_data and display_data on the message", async () => {
    const bar = await statusBar(-1);
    const view = await api.mvuView(game);
    assert.deepEqual(bar, { stat_data: view.stat_data, display_data: view.display_data, delta_data: view.delta_data });
    assert.deepEqual(bar.stat_data, afterSpark);
    assert.equal(bar.display_data.Mira.hp, "100->85 (the spark's backlash)");
    assert.equal(bar.display_data.Mira.mood, "curious");
    assert.deepEqual(Object.keys(bar.delta_data).sort(), ["Mira", "bag"]);
  });
  await shot("mvu-card-reply");

  // A new swipe: built on the greeting's state; a wrong old value only warns, as in MVU.
  model.next("Mira trips on a root. _.set('Mira.hp', 70, 60);//a fall");
  await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  const afterFall = { Mira: { hp: [60, "0-100"], mood: "curious", friend: user }, bag: { potion: { count: 2 } } };
  await check("mvu card: a new swipe builds on the greeting's state and applies", async () => {
    assert.deepEqual(promptState(), miraAfterGreeting(user));
    assert.deepEqual((await api.getGame(game)).state, afterFall);
    const bar = await statusBar(-1);
    assert.deepEqual(bar.stat_data, afterFall);
    assert.equal(bar.display_data.Mira.hp, "100->60 (a fall)");
  });
  await page.locator("#chat .last_mes .swipe_left").click();
  await settle();
  await check("mvu card: swiped back, the status bar reads that swipe's variables", async () => {
    assert.deepEqual((await api.getGame(game)).state, afterSpark);
    assert.equal((await statusBar(-1)).display_data.Mira.hp, "100->85 (the spark's backlash)");
    const both = await page.evaluate(() => SillyTavern.getContext().chat.at(-1).variables.map((swipe) => swipe.stat_data.Mira.hp[0]));
    assert.deepEqual(both, [85, 60], "each swipe keeps its own variables");
  });
  await shot("mvu-card-swipe-back");
});

test("a changed card is offered to the chat in progress, before anything changes, and taken as one step", async () => {
  await characterList();
  await selectCharacter(page, "Mira");
  await page.waitForFunction(() => SillyTavern.getContext().chatMetadata.statecraft?.game?.startsWith("st-Mira-"), null, { timeout: 30000 });
  await settle();
  const game = await gameId();
  const before = (await api.getGame(game)).state;
  const steps = (await api.log(game)).steps.length;
  // The card's author adds a stat and a list to the [InitVar] entry of the card's world book (the
  // book SillyTavern imported from the card; its link is saved with the card first, as the card's
  // next save would).
  await page.evaluate(async () => {
    const ctx = SillyTavern.getContext();
    const character = ctx.characters[ctx.characterId];
    const name = character.data.extensions?.world || character.data.character_book.name;
    if (character.data.extensions?.world !== name) await ctx.writeExtensionField(ctx.characterId, "world", name);
    const book = structuredClone(await ctx.loadWorldInfo(name));
    const entry = Object.values(book.entries).find((each) => /\[initvar\]/i.test(each.comment));
    entry.content = entry.content.replace("  mood: calm\n", "  mood: calm\n  mana: 10\n").replace("bag:", "quests: []\nbag:");
    await ctx.saveWorldInfo(name, book, true);
  });
  await extensionDrawer(page, true);
  try {
    await cardUpdateInTheDrawer(game, before, steps);
  } finally {
    await extensionDrawer(page, false);
  }
  // The next reply builds on the new card: its new stat is there to change.
  model.next("Mira studies her spellbook. _.set('Mira.mana', 10, 8);//practice");
  await send("Study with me.");
  await check("card update: the next reply builds on it", async () => {
    assert.equal((await api.getGame(game)).state.Mira.mana, 8);
    assert.equal(promptState().Mira.mana, 10, "the prompt carried the new stat");
  });
});

/** The drawer's offer of the changed card, checked, then taken. */
async function cardUpdateInTheDrawer(game, before, steps) {
  await check("card update: offered with what it adds, nothing changed yet", async () => {
    await page.locator("#statecraft_card_update").waitFor({ state: "visible", timeout: 30000 });
    assert.match(await page.textContent("#statecraft_card_changes"), /adds Mira\.mana, quests/);
    assert.deepEqual((await api.getGame(game)).state, before);
    assert.equal((await api.log(game)).steps.length, steps);
  });
  await page.locator("#statecraft_card_update").scrollIntoViewIfNeeded();
  await shot("card-update-offered");
  await page.click("#statecraft_card_take");
  await page.locator("#statecraft_card_update_result", { hasText: "updated" }).waitFor();
  const updated = { ...before, Mira: { ...before.Mira, mana: 10 }, quests: [] };
  await check("card update: one step on the last reply, every value kept, the status bar follows", async () => {
    assert.deepEqual((await api.getGame(game)).state, updated);
    const log = await api.log(game);
    const step = log.steps.find((each) => each.id === log.current);
    assert.equal(step.label, "card update");
    assert.equal(await page.isHidden("#statecraft_card_update"), true, "offered no more");
    await page.waitForFunction((mana) => SillyTavern.getContext().chat.at(-1).variables?.[SillyTavern.getContext().chat.at(-1).swipe_id ?? 0]?.stat_data?.Mira?.mana === mana, 10, { timeout: 10000 });
  });
  await shot("card-update-taken");
}

test("a refused reply, a deleted range, a branch and the way back", async () => {
  await characterList();
  await selectCharacter(page, "Warden");
  await page.waitForFunction(() => SillyTavern.getContext().chatMetadata.statecraft?.game, null, { timeout: 30000 });
  await settle();
  await stateMatchesChat("open the Warden's chat again");
  const game = await gameId();
  model.next("A rat runs past. _.add('gold', 2);", "You step on a loose stone.\n```json\n[{\"op\": \"increment\", \"path\": [\"hp\"], \"value\": \"lots\"}]\n```");
  await send("I walk on.");
  await send("I keep walking.");

  // A reply whose update is refused: the state stays, a toast says what the model is told.
  await check("refused: a toast with the model's feedback, the state unchanged", async () => {
    const log = await api.log(game);
    const refusal = log.steps.find((step) => step.id === log.current).refusal;
    assert.ok(refusal, "the current step is the refused reply's");
    const text = await toastText("warning", /update was refused/);
    assert.ok(text.includes(refusal.split("\n")[0].trim()), `the toast ${JSON.stringify(text)} shows the feedback ${JSON.stringify(refusal)}`);
    await page.locator("#chat .last_mes .statecraft-badge.refused").waitFor();
  });
  await stateMatchesChat("refused reply");
  model.next("The cave narrows. _.add('torches', -1);");
  await send("I squeeze through.");
  await check("refused: the next prompt carries the feedback", async () => {
    const log = await api.log(game);
    const refusal = log.steps.find((step) => step.refusal).refusal;
    assert.ok(promptText().includes(refusal.trim()), "the model is told why its update was refused");
  });
  await stateMatchesChat("after the refused reply");

  // Delete a range of messages: the replies after it build on the state before it.
  const count = await page.evaluate(() => SillyTavern.getContext().chat.length);
  assert.ok(count > 6, `${count} messages`);
  await slash("/cut 2-4");
  await stateMatchesChat("delete a range (/cut 2-4)");

  // Branch from a message in the middle: the branch is a new chat sharing the game.
  const games = (await api.listGames({ limit: 1000 })).games.length;
  const original = await chatId();
  const originalReplies = await shownReplies();
  const at = await page.evaluate(() => SillyTavern.getContext().chat.findLastIndex((message, index, chat) => !message.is_user && index < chat.length - 2));
  await page.locator(`#chat .mes[mesid='${at}'] .mes_create_branch`).dispatchEvent("click");
  await page.waitForFunction((chat) => SillyTavern.getContext().chatId && SillyTavern.getContext().chatId !== chat, original, { timeout: 30000 });
  await settle();
  await check("branch: the branch shares the game", async () => {
    assert.equal((await api.listGames({ limit: 1000 })).games.length, games, "no game made for the branch");
    assert.match(await chatId(), /Branch/);
    assert.equal(await gameId(), game);
    assert.ok((await shownReplies()).length < originalReplies.length);
  });
  await stateMatchesChat("branch");
  model.next("In this branch you find a map. _.set('gold', 77);");
  await send("I search the floor.");
  await promptCarries("send in the branch", (await shownReplies()).slice(0, -1));
  await stateMatchesChat("send in the branch");
  const branch = await chatId();

  // Back to the original chat: its own path, the branch's reply not in it.
  await page.click("#options_button");
  await page.click("#option_back_to_main");
  await page.waitForFunction((chat) => SillyTavern.getContext().chatId === chat, original, { timeout: 30000 });
  await settle();
  await check("back from the branch: the original chat and game", async () => {
    assert.deepEqual(await shownReplies(), originalReplies);
    assert.equal(await gameId(), game);
  });
  await stateMatchesChat("back to the original chat");
  await openChatFile(branch);
  await settle();
  await stateMatchesChat("the branch again");
});

test("a group chat: replies from two characters change one game", async () => {
  const scout = structuredClone(CHARACTER);
  Object.assign(scout.data, { name: "Scout", description: "A scout who maps caves.", first_mes: "Scout whistles from a ledge.", extensions: {} });
  await importCharacter("Scout", scout);
  await characterList();
  const games = (await api.listGames({ limit: 1000 })).games.length;
  // The Scout speaks first, then the Warden.
  await createGroup(page, "Cave party", ["Warden", "Scout"]);
  await page.waitForFunction(() => SillyTavern.getContext().groupId && SillyTavern.getContext().chatMetadata.statecraft?.game, null, { timeout: 30000 });
  await settle();
  await check("group: one game for the group chat, from the first member whose card has a state (the Warden's)", async () => {
    const game = await gameId();
    assert.match(game, /^st-/);
    const members = await page.evaluate(() => {
      const context = SillyTavern.getContext();
      return context.groups.find((group) => group.id === context.groupId).members.map((avatar) => context.characters.find((character) => character.avatar === avatar).name);
    });
    assert.deepEqual(members, ["Scout", "Warden"]);
    assert.equal((await api.listGames({ limit: 1000 })).games.length, games + 1, "one game made, while the greetings arrived too");
    const source = await page.evaluate(() => globalThis.statecraftExtension.source());
    assert.equal(source.character, "Warden", "the Scout's card has no state of its own");
  });
  await stateMatchesChat("group: the greetings");
  const before = model.requests.length;
  model.next("Scout points at a crack. _.add('torches', 1);", "The Warden counts coins. _.add('gold', 3);");
  await generating(async () => {
    await page.fill("#send_textarea", "What now?");
    await page.click("#send_but");
  });
  await settle(before + 2);
  const replies = await shownReplies();
  await check("group: both characters replied", async () => {
    const names = await page.evaluate(() => SillyTavern.getContext().chat.filter((message) => !message.is_user).map((message) => message.name));
    assert.deepEqual(names.slice(-2), ["Scout", "Warden"]);
  });
  await promptCarries("group: the first member's prompt", replies.slice(0, -2), model.requests[before]);
  await promptCarries("group: the second member's prompt builds on the first's reply", replies.slice(0, -1), model.requests[before + 1]);
  await stateMatchesChat("group: two replies");
  model.next("The Warden finds a second torch. _.add('torches', 1);");
  await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  await stateMatchesChat("group: a swipe of the last member's reply");
});

test("a chat with hundreds of long replies, opened for the first time", async () => {
  // A chat file written into SillyTavern's data folder, as one copied from another machine: 300
  // replies of about 15 KB (4.6 MB of text, past the server's 4 MiB body limit).
  const padding = "The torchlight flickers on the wet stone of the long tunnel. ".repeat(250);
  const lines = [{ user_name: "User", character_name: "Warden", create_date: "2026-01-01@10h00m00s", chat_metadata: {} }];
  const when = "2026-01-01T10:00:00.000Z";
  lines.push({ name: "Warden", is_user: false, is_system: false, send_date: when, mes: CHARACTER.data.first_mes, swipes: [CHARACTER.data.first_mes], swipe_id: 0, extra: {} });
  for (let turn = 1; turn < 300; turn += 1) {
    const update = turn % 50 === 0 ? `_.set('hp', ${100 - turn / 10});` : "_.add('gold', 1);";
    const mes = `Turn ${turn}. ${padding}${update}`;
    lines.push({ name: "User", is_user: true, is_system: false, send_date: when, mes: `On, ${turn}.`, extra: {} });
    lines.push({ name: "Warden", is_user: false, is_system: false, send_date: when, mes, swipes: [mes], swipe_id: 0, extra: {} });
  }
  writeFileSync(join(tavern.userFolder, "chats", "Warden", "Long tunnel.jsonl"), `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  await characterList();
  await selectCharacter(page, "Warden");
  await page.waitForFunction(() => SillyTavern.getContext().characterId !== undefined && !SillyTavern.getContext().groupId, null, { timeout: 30000 });
  const before = syncs.length;
  await openChatFile("Long tunnel");
  await settle();
  const game = await gameId();
  await check("long chat: 300 replies shown", async () => {
    assert.equal((await shownReplies()).length, 300);
  });
  await stateMatchesChat("long chat: the first sync");
  await check("long chat: the first sync sent its texts with the card, in parts under the body limit, each answered", async () => {
    // A chat new to statecraft (no game in its metadata): its game is made by the first part, so the
    // texts go at once, with no request of keys before them.
    const sent = syncs.slice(before).filter((sync) => sync.game === game);
    assert.ok(sent[0].bytes > 100000, `the first sync: ${sent[0].bytes} bytes`);
    assert.ok(JSON.parse(sent[0].request.postData() ?? "{}").create, "the card goes with the first part");
    const texts = sent.filter((sync) => sync.bytes > 100000);
    assert.ok(texts.length >= 2, `${texts.length} syncs with texts: ${sent.map((sync) => sync.bytes).join(", ")}`);
    for (const sync of sent) {
      assert.ok(sync.bytes <= 3 * 1024 * 1024, `a sync of ${sync.bytes} bytes`);
      assert.equal((await sync.request.response())?.status(), 200);
    }
    assert.equal((await api.getGame(game)).step, (await api.log(game)).current);
  });
  model.next("The tunnel ends. _.add('gold', 5);");
  await send("I reach the end.");
  await stateMatchesChat("long chat: a new reply");
  await check("long chat: a reply after it sends keys, not texts", async () => {
    const last = syncs.filter((sync) => sync.game === game).at(-1);
    assert.ok(last.bytes < 60000, `${last.bytes} bytes`);
  });
});

test("the engine killed in a run of syncs: started again, nothing acknowledged lost, the page recovers by itself", async () => {
  const first = enginePid();
  assert.ok(first && alive(first), "the plugin said in the console which engine it runs");
  // A run of syncs on a game of its own, a reply more each time, the engine killed in the middle.
  const replies = [];
  const acknowledged = [];
  for (let turn = 0; turn < 30; turn += 1) {
    replies.push(`Burst ${turn}. _.add('n', 1);`);
    if (turn === 10) process.kill(first, "SIGKILL");
    try {
      await api.sync("burst", replies, { create: { state: { n: 0 } } });
      acknowledged.push(replies.length);
    } catch (error) {
      assert.ok([502, 503].includes(error.status), `${error.status} ${error.kind}: ${error.message}`);
      assert.ok(["engine_stopped", "starting"].includes(error.kind), error.kind);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  assert.ok(await waitUntil(() => enginePid() !== first, 30000), "timed out waiting for the engine to start again");
  await check("killed: started again, every acknowledged sync there, none applied twice", async () => {
    assert.ok(alive(enginePid()));
    assert.match(tavern.log(), /statecraft: the engine was killed \(SIGKILL\); starting it again in/);
    assert.ok(acknowledged.length >= 10 && acknowledged.length < 30, `${acknowledged.length} syncs acknowledged`);
    const after = await api.sync("burst", replies);
    assert.deepEqual(after.state, { n: 30 }, "each reply applied exactly once");
    assert.equal((await api.log("burst")).steps.length, 30);
  });

  // The page: the engine killed just as the next message's generation asks for its state (the
  // page's first sync after the send), so that the plugin cannot have started it again yet.
  const game = await gameId();
  const second = enginePid();
  let killedAt = null;
  await page.route(
    `**${PLUGIN_PATH}/v1/games/*/sync`,
    async (route) => {
      process.kill(second, "SIGKILL");
      killedAt = model.requests.length;
      await route.continue();
    },
    { times: 1 },
  );
  model.next("Water drips. _.add('gold', 1);");
  await send("I wait.");
  assert.equal(killedAt, model.requests.length - 1, "killed before the generation's request to the model");
  await check("engine down: the prompt carries no state, a toast says why", async () => {
    assert.equal(promptState(), null, "never a stale state");
    await toastText("error", /the state is not in this prompt: statecraft \(server plugin\)/);
  });
  await shot("engine-down");
  // No user action: the extension tries again until the engine is back.
  await check("engine back: the chat resyncs by itself and a toast says so", async () => {
    const caughtUp = async () => isDeepStrictEqual((await api.getGame(game)).state, fold(await shownReplies()));
    assert.ok(await waitUntil(caughtUp, 30000), "timed out waiting for the game to catch up with the chat");
    await toastText("success", /connected again/);
    assert.notEqual(enginePid(), second);
  });
  await stateMatchesChat("engine back");
  model.next("Water pours. _.add('gold', 2);");
  await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  await promptCarries("engine back: the swipe's prompt", (await shownReplies()).slice(0, -1));
  await stateMatchesChat("engine back: swipe");
});

test("dry runs and quiet generations fetch no prompt; a real generation at most one", async () => {
  // A dry run as SillyTavern makes one (the prompt manager counting tokens).
  const fetched = promptFetches.length;
  const dry = generations.filter((generation) => generation.dryRun).length;
  await page.evaluate(() => SillyTavern.getContext().generate("normal", {}, true));
  await check("a dry run fetches no prompt", async () => {
    assert.ok(generations.filter((generation) => generation.dryRun).length > dry, "the dry run ran");
    assert.equal(promptFetches.length, fetched);
  });
  // A quiet generation (`/gen`, a summary, another extension's background call): no state unless asked for.
  let generation = model.requests.length;
  model.next("A quiet answer.");
  await slash("/gen Say something");
  await settle(generation + 1);
  await check("a quiet generation: no prompt fetched, no state in it", async () => {
    assert.equal(promptFetches.filter((at) => at === generation).length, 0);
    assert.equal(promptState(model.requests[generation]), null);
  });
  await extensionDrawer(page, true);
  await page.locator("#statecraft_quiet").check();
  await extensionDrawer(page, false);
  generation = model.requests.length;
  model.next("A quiet answer with the state.");
  await slash("/gen Say something");
  await settle(generation + 1);
  await check("a quiet generation with the setting on: one prompt, the state in it", async () => {
    assert.equal(promptFetches.filter((at) => at === generation).length, 1);
    assert.deepEqual(promptState(model.requests[generation]), fold(await shownReplies()));
  });
  await check("every generation of the run fetched at most one prompt", async () => {
    const per = model.requests.map((_, index) => promptFetches.filter((at) => at === index).length);
    assert.ok(per.every((count) => count <= 1), `prompt fetches per generation: ${per.join(" ")}`);
    assert.equal(promptFetches.filter((at) => at >= model.requests.length).length, 0, "no fetch without a generation");
    const real = generations.filter((started) => !started.dryRun).length;
    process.stderr.write(`${model.requests.length} generations (${real} real starts, ${generations.length - real} dry runs): ${promptFetches.length} prompt fetches\n`);
  });
});

/** Every game the plugin's default user has, with its state and step. */
async function everyGame(client = api) {
  const games = [];
  for await (const listing of client.allGames()) {
    const { state, step } = await client.getGame(listing.id);
    games.push({ id: listing.id, state, step });
  }
  return games;
}

test("SillyTavern stopped with SIGINT and with SIGTERM: no statecraft left, nothing lost, the same games after", async () => {
  for (const signal of ["SIGINT", "SIGTERM"]) {
    const before = await everyGame();
    assert.ok(before.length >= 4, `${before.length} games`);
    const engine = enginePid();
    const { code } = await tavern.stop({ signal });
    await check(`${signal}: SillyTavern stopped its engine, and waited for it`, async () => {
      assert.equal(code, 0, "SillyTavern ran its exit hooks and exited");
      assert.equal(alive(engine), false, `the engine (pid ${engine}) is gone`);
      assert.equal(alive(tavern.pid), false);
    });
    tavern = await startTavern();
    api = await pluginApi();
    await check(`${signal}: started again, the same games`, async () => {
      assert.deepEqual(await everyGame(), before);
      assert.notEqual(enginePid(), engine);
    });
  }
  await openSillyTavern();
  await openWarden();
  await settle();
  await stateMatchesChat("SillyTavern started again");
});

/** Restarts SillyTavern with `options` (see `startTavern`) and opens the page again. */
async function restartTavern(options = {}) {
  await tavern.stop();
  tavern = await startTavern(options);
  api = await pluginApi();
  await openSillyTavern();
}

test("no binary, and a binary of another API version: the drawer and the console say what to do", async () => {
  const install = `cargo install --locked --force --git ${git.url}/statecraft.git statecraft`;
  const old = join(mkdtempSync(join(tmpdir(), "statecraft-old-")), "statecraft");
  writeFileSync(old, "#!/bin/sh\necho 'statecraft 0.0.9'\n");
  chmodSync(old, 0o755);
  const cases = [
    ["no binary", (env) => (env.PATH = "/usr/bin:/bin"), /^the server plugin: the statecraft binary is missing \(looked in .*\)\. Install it with `(.*)` \(or unpack a release archive into (.*)\), then press Test connection$/],
    ["a binary too old", (env) => (env.STATECRAFT_BIN = old), /^the server plugin: .* is statecraft 0\.0\.9, HTTP API older than 1, and this plugin needs HTTP API 1\. Update the binary with `(.*)` \(or unpack a release archive into (.*)\), then press Test connection$/],
  ];
  try {
    for (const [name, change, pattern] of cases) {
      await restartTavern({ env: tavernEnv(change) });
      await extensionDrawer(page, true);
      await check(`${name}: the drawer says what is wrong and the command that fixes it`, async () => {
        const shown = await pluginConnection();
        const match = pattern.exec(shown);
        assert.ok(match, shown);
        assert.equal(match[1], install);
        assert.equal(match[2], join(pluginFolder, "bin"));
        const { ok, text } = await pressTest();
        assert.equal(ok, false);
        assert.equal(text, shown);
        assert.ok(tavern.log().includes(shown.replace("the server plugin: ", "statecraft: ").split(". ")[0]), "SillyTavern's console says it too");
      });
      await shot(`plugin-${name.replace(/ /g, "-")}`);
      await extensionDrawer(page, false);
    }
  } finally {
    // Whatever happened above, the tests after this one get SillyTavern with the binary again.
    rmSync(join(old, ".."), { recursive: true, force: true });
    await restartTavern();
  }
  await extensionDrawer(page, true);
  await check("binary back: connected", async () => {
    assert.equal(await pluginConnection(), "connected through SillyTavern's server plugin");
  });
  await extensionDrawer(page, false);
  await openWarden();
  await settle();
});

/** Opens the Warden's last chat (after a reload nothing is open) and waits for it. */
async function openWarden() {
  await characterList();
  await selectCharacter(page, "Warden");
  await page.waitForFunction(() => SillyTavern.getContext().characterId !== undefined && SillyTavern.getContext().chat.length > 0 && SillyTavern.getContext().chatMetadata.integrity, null, { timeout: 60000 });
}

test("Manage extensions: disabled there, it does not run; enabled again, it catches up", async () => {
  // A short chat of the Warden's, so that the reloads below reopen that one (SillyTavern opens a
  // character's last chat) rather than the long one.
  await openChatFile("The cave");
  await settle();
  let block = await manageExtensions();
  // SillyTavern saves the change at once and reloads the page when the dialog closes.
  let saved = page.waitForResponse((response) => response.url().endsWith("/api/settings/save"));
  await block.locator(".extension_toggle input.toggle_disable").click();
  await saved;
  await shot("manage-extensions-disabled");
  let loaded = extensionFiles.length;
  await closeManageExtensions({ reload: true });
  await page.waitForTimeout(1000);
  await check("disabled: not loaded after the reload (no drawer, no code fetched)", async () => {
    assert.deepEqual(await extensionRuns(), { drawer: 0, live: false });
    // SillyTavern still reads a disabled extension's manifest, to list it.
    const fetched = extensionFiles.slice(loaded);
    assert.deepEqual(fetched.filter((path) => !path.endsWith("/manifest.json")), [], "no code of the extension was fetched");
    assert.ok(fetched.length > 0, "its manifest was read");
    const settings = JSON.parse(readFileSync(join(tavern.userFolder, "settings.json"), "utf8"));
    assert.ok(settings.extension_settings.disabledExtensions.includes(`third-party/${EXTENSION}`));
  });
  await openWarden();
  const game = await gameId();
  const steps = (await api.log(game)).steps.length;
  const syncsBefore = syncs.length;
  const fetchesBefore = promptFetches.length;
  model.next("While nobody keeps score, a coin rolls in. _.add('gold', 4);");
  await generating(async () => {
    await page.fill("#send_textarea", "I wait in the dark.");
    await page.click("#send_but");
  });
  await check("disabled: a new reply is neither synced nor given the state", async () => {
    assert.equal(syncs.length, syncsBefore, "no sync");
    assert.equal(promptFetches.length, fetchesBefore, "no prompt fetched");
    assert.equal(promptState(), null);
    assert.equal((await api.log(game)).steps.length, steps, "the game did not move");
  });
  await shot("disabled-reply");

  block = await manageExtensions();
  await check("disabled: Manage extensions shows it off", async () => {
    assert.equal(await block.locator(".extension_toggle input").isChecked(), false);
    assert.equal(await block.locator(".extension_disabled").count(), 1);
  });
  saved = page.waitForResponse((response) => response.url().endsWith("/api/settings/save"));
  await block.locator(".extension_toggle input.toggle_enable").click();
  await saved;
  loaded = extensionFiles.length;
  await closeManageExtensions({ reload: true });
  await page.waitForFunction(() => globalThis.statecraftExtension, null, { timeout: 30000 });
  await check("enabled again: loaded after the reload", async () => {
    assert.deepEqual(await extensionRuns(), { drawer: 1, live: true });
    assert.ok(extensionFiles.slice(loaded).some((url) => url.endsWith("/clients/sillytavern/index.js")));
  });
  await openWarden();
  await settle();
  await stateMatchesChat("enabled again: the reply made while it was off is applied");
});

test("Manage extensions: an update pushed to the repository is offered there and runs", async () => {
  const clone = join(tavern.userFolder, "extensions", EXTENSION);
  const marker = `an update made at ${new Date().toISOString()}`;
  // A new version pushed to the repository the extension was cloned from: a new manifest version
  // and a line of code that says it ran.
  const commit = commitOnto(
    bare,
    ["manifest.json", "clients/sillytavern/index.js"],
    (path, text) =>
      path === "manifest.json"
        ? `${JSON.stringify({ ...JSON.parse(text), version: "0.1.1-test" }, null, 4)}\n`
        : `${text}\nglobalThis.statecraftTestUpdate = ${JSON.stringify(marker)};\n`,
    "the next version",
  );
  const block = await manageExtensions();
  await check("update: /api/extensions/version sees it, the dialog offers it", async () => {
    assert.equal((await extensionVersion()).isUpToDate, false);
    assert.ok(await block.locator(".btn_update").isVisible(), "the update button shows");
    assert.equal(await block.locator(".extension_name.update_available").count(), 1);
  });
  await shot("manage-extensions-update-available");
  const dialog = await page.locator(".popup:has(.extensions_info)").getAttribute("data-id");
  await block.locator(".btn_update").click();
  await check("update: SillyTavern pulls it", async () => {
    const text = await toastText("success", /updated to/);
    assert.match(text, new RegExp(commit.slice(0, 7)));
    const version = await extensionVersion();
    assert.equal(version.isUpToDate, true);
    assert.equal(version.currentCommitHash, commit);
    assert.equal(JSON.parse(readFileSync(join(clone, "manifest.json"), "utf8")).version, "0.1.1-test");
  });
  // SillyTavern closes the dialog and opens it anew after an update, and asks for a reload to run the
  // new code.
  await page.waitForFunction(
    (old) => {
      const dialogs = [...document.querySelectorAll(".popup:has(.extensions_info)")];
      return dialogs.length === 1 && dialogs[0].dataset.id !== old && !dialogs[0].querySelector(".fa-spinner");
    },
    dialog,
    { timeout: 60000 },
  );
  await closeManageExtensions();
  await page.reload();
  await pageReady();
  await page.waitForFunction(() => globalThis.statecraftExtension, null, { timeout: 30000 });
  await check("update: after the reload the new code runs", async () => {
    assert.equal(await page.evaluate(() => globalThis.statecraftTestUpdate), marker);
    assert.deepEqual(await extensionRuns(), { drawer: 1, live: true });
    const updated = await manageExtensions();
    assert.equal(await updated.locator(".extension_version").textContent(), `0.1.1-test (main-${commit.slice(0, 7)})`);
    assert.ok(await updated.locator(".btn_update").isHidden(), "no update offered any more");
    await closeManageExtensions();
  });
  await openWarden();
  await settle();
  model.next("The new version counts a torch. _.add('torches', 1);");
  await send("I light another torch.");
  await stateMatchesChat("update: a reply after the update");
});

test("Manage extensions: deleted there, its folder, settings and code are gone", async () => {
  const clone = join(tavern.userFolder, "extensions", EXTENSION);
  assert.ok(existsSync(join(clone, "manifest.json")));
  const block = await manageExtensions();
  const deleted = page.waitForResponse((response) => response.url().endsWith("/api/extensions/delete"));
  // SillyTavern reloads the page a second after the deletion.
  const reloaded = page.waitForEvent("load", { timeout: 60000 });
  await block.locator(".btn_delete").click();
  const confirm = page.locator(`.popup:has-text('Are you sure you want to delete /${EXTENSION}?')`);
  await shot("manage-extensions-delete");
  await confirm.locator(".popup-button-ok").click();
  const answer = await deleted;
  const loaded = extensionFiles.length;
  await reloaded;
  await pageReady();
  await page.waitForTimeout(1000);
  await check("delete: the clone is removed", async () => {
    assert.equal(answer.status(), 200);
    assert.equal(existsSync(clone), false, `${clone} is gone`);
  });
  await check("delete: the extension's settings and regex are removed (its delete hook)", async () => {
    const settings = JSON.parse(readFileSync(join(tavern.userFolder, "settings.json"), "utf8")).extension_settings;
    assert.equal(settings.statecraft, undefined);
    assert.deepEqual((settings.regex ?? []).filter((script) => script.id === "statecraft-hide-update-commands"), []);
  });
  await check("delete: not loaded after the reload, not listed in Manage extensions", async () => {
    assert.deepEqual(await extensionRuns(), { drawer: 0, live: false });
    assert.deepEqual(extensionFiles.slice(loaded), [], "no file of the extension was fetched");
    await manageExtensions();
    assert.equal(await page.locator(`.extensions_info .extension_block[data-name="/${EXTENSION}"]`).count(), 0);
    await closeManageExtensions();
  });
  await shot("deleted");
});

test("a request without SillyTavern's session or CSRF token is refused before it reaches statecraft", async () => {
  const games = (await everyGame()).length;
  const post = (session, options) =>
    session.fetch(`${PLUGIN_PATH}/v1/games`, { method: "POST", headers: { "content-type": PLUGIN_CONTENT_TYPE }, body: JSON.stringify({ state: { forged: true } }), ...options });
  await check("csrf: a POST without the token, or with another session's, is refused", async () => {
    assert.equal((await post(api.session, { csrf: false })).status, 403);
    const other = await sillyTavernSession(tavern.url);
    const forged = await api.session.fetch(`${PLUGIN_PATH}/v1/games`, {
      method: "POST",
      csrf: false,
      headers: { "content-type": PLUGIN_CONTENT_TYPE, "x-csrf-token": other.token === api.session.token ? "x" : other.token },
      body: JSON.stringify({ state: { forged: true } }),
    });
    assert.equal(forged.status, 403);
    assert.equal((await everyGame()).length, games, "no game was made");
    assert.equal((await post(api.session)).status, 201, "with its own token the same request passes");
  });
});

test("with user accounts on, each user's games are that user's alone", async () => {
  await tavern.stop();
  tavern = await startTavern({ accounts: true });
  const admin = await pluginApi({ handle: "default-user" });
  const made = await admin.session.fetch("/api/users/create", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle: "rival", name: "Rival", password: "rival-pass" }),
  });
  assert.ok(made.ok, `${made.status} ${await made.text()}`);
  const rival = await pluginApi({ handle: "rival", password: "rival-pass" });
  const mine = await everyGame(admin);
  assert.ok(mine.length >= 4, `${mine.length} games`);
  await check("accounts: no session, no games", async () => {
    const anonymous = await fetch(`${tavern.url}${PLUGIN_PATH}/v1/games`);
    assert.equal(anonymous.status, 403);
  });
  await check("accounts: another user lists none of them and reaches none by id", async () => {
    assert.deepEqual((await rival.listGames({ limit: 1000 })).games, []);
    for (const { id } of mine) {
      for (const [what, call] of [
        ["read", () => rival.getGame(id)],
        ["read at a step", () => rival.stateAt(id, { step: 0 })],
        ["log", () => rival.log(id)],
        ["apply", () => rival.apply(id, { batch: [{ op: "assign", path: ["x"], value: 1 }] })],
        ["sync", () => rival.sync(id, ["_.set('gold', 1000);"])],
        ["undo", () => rival.undo(id)],
        ["delete", () => rival.deleteGame(id)],
      ]) {
        await assert.rejects(call(), (error) => error.status === 404 && error.kind === "unknown_game", `${what} ${id}`);
      }
    }
    // The same id is the other user's own game, not a way into this one's.
    const [first] = mine;
    const own = await rival.sync(first.id, ["_.set('hp', 1);"], { create: { state: { hp: 50 } } });
    assert.deepEqual(own.state, { hp: 1 });
    assert.deepEqual(await everyGame(admin), mine, "the first user's games are as they were");
    await admin.createGame({ id: "only-mine", state: { secret: 1 } });
    await assert.rejects(rival.getGame("only-mine"), (error) => error.status === 404);
    assert.deepEqual((await rival.listGames()).games.map((game) => game.id), [first.id]);
  });
});

test("nothing went wrong in the page", () => {
  assert.deepEqual(pageErrors.map((error) => error.message), []);
  process.stderr.write(`SillyTavern ${VERSION}: ${checks.length} checks, ${model.requests.length} generations\n`);
});
