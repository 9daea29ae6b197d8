// The statecraft extension in real SillyTavern (the version pinned in st/package-lock.json, installed
// from npm under target/ by install.js), in Debian's chromium driven by playwright-core, against a real
// `statecraft serve` and a fake OpenAI-compatible model. The extension is installed as a user does:
// "Install extension" with a URL that serves this working tree over git's smart HTTP. Then every chat
// action is driven through SillyTavern's own buttons and commands, and after each one the game's state
// (read over the HTTP API) must be the state the replies the chat shows give, and the prompt the
// model received must carry the state the reply builds on. Screenshots go to $STATECRAFT_ARTIFACTS.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { Statecraft } from "../../../clients/js/statecraft.js";
import { startServer } from "../../../clients/js/test/server.js";
import { startFakeModel } from "./fake-model.js";
import { snapshot, serveGit } from "./git-server.js";
import { installSillyTavern, installFolder, VERSION } from "./install.js";
import { startSillyTavern } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");
const artifacts = process.env.STATECRAFT_ARTIFACTS || resolve(repository, "target/sillytavern-screenshots");

let statecraft;
let api;
let model;
let git;
let tavern;
let browser;
let page;
let shots = 0;
const pageErrors = [];
const checks = [];

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
  const serverFolder = installSillyTavern({ log: (line) => process.stderr.write(`${line}\n`) });
  model = await startFakeModel();
  const gitRoot = join(installFolder(), "repositories");
  snapshot(repository, gitRoot, "statecraft");
  git = await serveGit(gitRoot);
  tavern = await startSillyTavern({
    serverFolder,
    dataRoot: join(installFolder(), "data"),
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
  // The two steps a user takes: the server allows SillyTavern's origin...
  statecraft = await startServer(["--allow-origin", tavern.url]);
  api = new Statecraft(statecraft.url);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [...(process.getuid?.() === 0 ? ["--no-sandbox"] : []), "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-gpu"],
  });
  const browserContext = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  // Nothing leaves the machine: every request to anywhere but loopback is refused.
  await browserContext.route((url) => url.hostname !== "127.0.0.1", (route) => route.abort());
  page = await browserContext.newPage();
  page.on("pageerror", (error) => pageErrors.push(error));
  page.on("console", (message) => {
    if (message.type() === "error" && /statecraft/i.test(message.text())) pageErrors.push(new Error(message.text()));
  });
  await openSillyTavern();
});

after(async () => {
  if (page && tavern) await shot("last").catch(() => {});
  await browser?.close();
  await tavern?.stop();
  await statecraft?.stop();
  await git?.close();
  await model?.close();
  const failed = checks.filter((check) => !check.ok);
  process.stderr.write(`${checks.length} checks, ${failed.length} failed${failed.length ? `: ${failed.map((check) => check.name).join("; ")}` : ""}\n`);
});

async function openSillyTavern() {
  await page.goto(tavern.url);
  await page.waitForFunction(() => globalThis.SillyTavern?.getContext && document.querySelector("#extensionsMenuButton"), null, { timeout: 120000 });
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
async function settle(generations = 0) {
  const deadline = Date.now() + 60000;
  while (model.requests.length < generations) {
    if (Date.now() > deadline) throw new Error(`the model got ${model.requests.length} requests, not ${generations}`);
    await new Promise((done) => setTimeout(done, 50));
  }
  await page.waitForFunction(() => !document.body.dataset.generating && getComputedStyle(document.querySelector("#mes_stop")).display === "none", null, { timeout: 60000 });
  await page.waitForTimeout(300);
  await page.evaluate(async () => {
    const keeper = globalThis.statecraftExtension?.keeper();
    await keeper?.sync();
  });
}

/** The model's replies the chat shows, read from SillyTavern's own chat. */
function shownReplies() {
  return page.evaluate(() =>
    SillyTavern.getContext()
      .chat.filter((message) => !message.is_user && !(message.extra && message.extra.type))
      .map((message) => message.mes),
  );
}

/** The state a list of replies gives, by this test's own reading of the commands it writes. */
function fold(replies) {
  const state = structuredClone(INITIAL);
  for (const reply of replies) {
    for (const match of reply.matchAll(/_\.(set|add)\('(\w+)',\s*(-?\d+)\);/g)) {
      const [, command, key, number] = match;
      state[key] = command === "set" ? Number(number) : state[key] + Number(number);
    }
    for (const match of reply.matchAll(/```json\n([\s\S]*?)\n```/g)) {
      for (const op of JSON.parse(match[1])) {
        const key = op.path[0];
        state[key] = op.op === "increment" ? state[key] + op.value : op.value;
      }
    }
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
async function stateMatchesChat(action) {
  await check(`${action}: state`, async () => {
    const replies = await shownReplies();
    const { state } = await api.getGame(await gameId());
    assert.deepEqual(state, fold(replies), `after ${action}, for the shown replies ${JSON.stringify(replies)}`);
  });
  await shot(action.replace(/[^a-z0-9]+/gi, "-"));
}

/** The state the last generation's prompt carried. */
function promptState(request = model.requests.at(-1)) {
  const text = request.messages.map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content))).join("\n");
  const found = [...text.matchAll(/Current state:\n```json\n([\s\S]*?)\n```/g)];
  return found.length === 0 ? null : JSON.parse(found.at(-1)[1]);
}

async function promptCarries(action, replies) {
  await check(`${action}: prompt`, async () => {
    assert.deepEqual(promptState(), fold(replies), `the prompt of ${action} carries the state of ${JSON.stringify(replies)}`);
  });
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
  await page.click("#manageExtensionsButton, .manage_extensions, #extensions_details");
  await page.locator(".extensions_info .extension_block:has-text('statecraft')").waitFor();
  await shot("manage-extensions");
  const block = page.locator(".extensions_info .extension_block:has-text('statecraft')");
  assert.ok(await block.locator(".btn_update, .btn_delete").count(), "it can be updated and deleted there");
  await page.keyboard.press("Escape");
  await page.locator(".popup:has(.extensions_info)").waitFor({ state: "detached" }).catch(() => {});
});

test("the settings drawer connects and names the real problem", async () => {
  await page.locator(".statecraft-settings .inline-drawer-toggle").click();
  await page.fill("#statecraft_url", "http://127.0.0.1:9");
  await page.locator("#statecraft_url").dispatchEvent("change");
  await page.click("#statecraft_test");
  await page.locator("#statecraft_test_result.bad").waitFor();
  assert.match(await page.textContent("#statecraft_test_result"), /nothing answers at http:\/\/127.0.0.1:9/);
  await shot("test-connection-down");
  await page.fill("#statecraft_url", statecraft.url);
  await page.locator("#statecraft_url").dispatchEvent("change");
  await page.click("#statecraft_test");
  await page.locator("#statecraft_test_result.ok").waitFor();
  assert.match(await page.textContent("#statecraft_test_result"), /connected/);
  await shot("test-connection-ok");
  await page.click("#extensions-settings-button .drawer-toggle");
});

test("every chat action keeps the game on what the chat shows", async () => {
  // A character whose card carries the initial state, imported as a user imports one.
  await page.click("#rightNavDrawerIcon");
  await page.setInputFiles("#character_import_file", { name: "warden.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(CHARACTER)) });
  await page.locator(".character_select:has-text('Warden')").first().waitFor();
  await page.locator(".character_select:has-text('Warden')").first().click();
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

  // Continue: the last reply grows; the prompt builds on the state before it.
  model.next(" A draught blows. _.add('torches', -1);");
  await option("option_continue");
  await promptCarries("continue", [greeting, afterTwo[1]]);
  await stateMatchesChat("continue");

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

  // Reload the page and open the character's chat again: the chat syncs and nothing is applied.
  await page.reload();
  await page.waitForFunction(() => globalThis.statecraftExtension, null, { timeout: 120000 });
  await page.click("#rightNavDrawerIcon");
  await page.locator(".character_select:has-text('Warden')").first().click();
  await page.waitForFunction((id) => SillyTavern.getContext().chatMetadata.statecraft?.game === id, game, { timeout: 30000 });
  await settle();
  await stateMatchesChat("reopen");
  await check("reopen: no new steps", async () => {
    assert.equal((await api.log(game)).steps.length, before.steps.length);
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

test("nothing went wrong in the page", () => {
  assert.deepEqual(pageErrors.map((error) => error.message), []);
  process.stderr.write(`SillyTavern ${VERSION}: ${checks.length} checks, ${model.requests.length} generations\n`);
});
