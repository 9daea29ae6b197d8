// State updates by a separate pass (clients/sillytavern/pass.js) in real SillyTavern (the version
// pinned in st/package-lock.json), in Debian's chromium, against the fake model (fake-model.js),
// with the plugin and the extension installed from a URL serving this working tree, as
// sillytavern.test.js installs them. The Warden's story replies are prose only; the pass asks for
// each reply's batch, constrained by structured output, by a function tool, and by the schema in the
// prompt, each in a chat of its own, through new messages, swipes, regenerations, continues, an edit
// of the update block, a deleted message and a branch. After every action: the game's state is the
// state the shown replies' blocks give, every reply a generation left has its block with the batch
// the fake model reads from its prose, exactly one pass request was made per new reply (two when
// refused), none for dry runs, quiet generations or impersonations, and the block is hidden in the
// display and present in the chat file SillyTavern saved. Then the same chat in reply mode and in
// pass mode: the requests and prompt tokens per reply, from the fake model's log. Last, a group
// chat, where SillyTavern shows a generation running from the first member's reply to the last's.
// STATECRAFT_PASS_CONSOLE=FILE keeps the page's console in FILE and prints each action's time.

import { test, before, beforeEach, after } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { readReply, startFakeModel } from "./fake-model.js";
import { createGroup, extensionDrawer, generationEnded, selectCharacter, startTavernWithPlugin, waitUntil } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");
const artifacts = process.env.STATECRAFT_ARTIFACTS || resolve(repository, "target/sillytavern-pass-screenshots");

let api;
/** SillyTavern with the plugin (`startTavernWithPlugin`), and the parts of it the tests use. */
let stack;
let model;
let git;
let tavern;
let browser;
let page;
let shots = 0;
let current = "before";
const pageErrors = [];
/** Every generation SillyTavern started, dry runs included: `{type, dryRun}`. */
const generations = [];

const INITIAL = { hp: 100, gold: 0, torches: 3 };
const SCHEMA = {
  type: "object",
  properties: {
    hp: { type: "integer", minimum: 0, maximum: 100 },
    gold: { type: "integer", minimum: 0 },
    torches: { type: "integer", minimum: 0 },
  },
  required: ["hp", "gold", "torches"],
  additionalProperties: false,
};
const CHARACTER = {
  spec: "chara_card_v2",
  spec_version: "2.0",
  data: {
    name: "Warden",
    description: "The warden of a cave, who keeps score.",
    personality: "terse",
    scenario: "A cave.",
    first_mes: "You wake up in a cave.",
    mes_example: "",
    creator_notes: "",
    system_prompt: "",
    post_history_instructions: "",
    alternate_greetings: [],
    tags: [],
    creator: "statecraft tests",
    character_version: "1",
    extensions: { statecraft: { state: INITIAL, schema: SCHEMA } },
  },
};

before(async () => {
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  model = await startFakeModel();
  stack = await startTavernWithPlugin({ repository, model: model.url });
  ({ git, tavern, api } = stack);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: [...(process.getuid?.() === 0 ? ["--no-sandbox"] : []), "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-gpu"],
  });
  const browserContext = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await browserContext.route((url) => url.hostname !== "127.0.0.1", (route) => route.abort());
  page = await browserContext.newPage();
  await page.exposeFunction("statecraftTestGeneration", (type, dryRun) => generations.push({ type, dryRun }));
  await page.addInitScript(() => {
    globalThis.statecraftTestToasts = [];
    new MutationObserver((records) => {
      for (const record of records) {
        for (const node of record.addedNodes) {
          if (node.classList?.contains("toast")) globalThis.statecraftTestToasts.push({ kind: node.className, text: node.textContent });
        }
      }
    }).observe(document, { childList: true, subtree: true });
    const wait = setInterval(() => {
      let context;
      try {
        context = globalThis.SillyTavern?.getContext?.();
      } catch {
        return;
      }
      if (!context?.eventSource || !context.eventTypes) return;
      clearInterval(wait);
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
  if (process.env.STATECRAFT_PASS_CONSOLE) page.on("console", (message) => appendFileSync(process.env.STATECRAFT_PASS_CONSOLE, `${message.type()}: ${message.text().slice(0, 500)}\n`));
  page.on("console", (message) => {
    if (message.type() === "error" && /statecraft/i.test(message.text())) pageErrors.push(new Error(message.text()));
  });
  await page.goto(tavern.url);
  await page.waitForFunction(() => globalThis.statecraftTestReady && document.querySelector("#extensionsMenuButton"), null, { timeout: 120000 });
  // The extension as a user installs it: "Install extension" with the repository's URL.
  await page.click("#extensions-settings-button .drawer-toggle");
  await page.click("#third_party_extension_button");
  await page.fill(".popup .popup-input", `${git.url}/statecraft.git`);
  await page.click(".popup .popup-button-ok");
  await page.locator(".popup:has-text('Install a third-party extension?') .popup-button-ok").click();
  await page.locator("#statecraft_pass_mode").waitFor({ state: "attached", timeout: 60000 });
  await page.click("#extensions-settings-button .drawer-toggle");
  await page.click("#rightNavDrawerIcon");
  await page.setInputFiles("#character_import_file", { name: "warden.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(CHARACTER)) });
  await page.locator(".character_select:has-text('Warden')").first().waitFor();
  await selectCharacter(page, "Warden");
  await page.locator("#chat .mes[mesid='0']").waitFor();
  await settle();
});

beforeEach((context) => {
  current = context.name;
});

after(async () => {
  if (page) await shot("last").catch(() => {});
  await browser?.close();
  await stack?.stop();
  await model?.close();
});

async function shot(name) {
  await page.screenshot({ path: join(artifacts, `${String(++shots).padStart(2, "0")}-${name.replace(/[^a-z0-9]+/gi, "-")}.png`) });
}

/**
 * Waits for what an action started: the model's story requests (`stories` more than `from` had),
 * the generation's end, every pass running, and the sync after them.
 */
async function settle({ from = model.requests.length, stories = 0 } = {}) {
  const storiesMade = () => model.requests.slice(from).filter((request) => request.kind === "story").length;
  if (!(await waitUntil(() => storiesMade() >= stories, 60000))) throw new Error(`the model got fewer than ${stories} story requests`);
  await generationEnded(page);
  // In pass mode the last reply's pass starts once SillyTavern tells the extension that the
  // generation ended, which can come well after the page looks idle (a streamed reply is saved
  // first): wait for the pass's first request, at most 2 s (a generation that left no new reply has
  // no pass).
  if (stories > 0 && (await page.evaluate(() => globalThis.statecraftExtension?.pass()?.mode())) === "pass") {
    const passAfterLastStory = () => {
      const made = model.requests.slice(from);
      return made.slice(made.findLastIndex((request) => request.kind === "story") + 1).some((request) => request.kind !== "story");
    };
    await waitUntil(passAfterLastStory, 2000);
  }
  await page.waitForFunction(() => !globalThis.statecraftExtension?.pass()?.running, null, { timeout: 60000 });
  await page.evaluate(() => globalThis.statecraftExtension?.keeper()?.sync());
}

/** Runs an action that makes one story generation; → the model's requests it made (story and pass). */
async function generating(action) {
  const from = model.requests.length;
  await action();
  await settle({ from, stories: 1 });
  return model.requests.slice(from);
}

function send(text) {
  return generating(async () => {
    await page.fill("#send_textarea", text);
    await page.click("#send_but");
  });
}

function option(id) {
  return generating(async () => {
    await page.click("#options_button");
    await page.click(`#${id}`);
  });
}

async function slash(command) {
  const from = model.requests.length;
  await page.fill("#send_textarea", command);
  await page.click("#send_but");
  await settle();
  return model.requests.slice(from);
}

/** The chat as SillyTavern holds it: `{mes, isUser}` of every message. */
function chat() {
  return page.evaluate(() => SillyTavern.getContext().chat.map((message) => ({ mes: message.mes, isUser: Boolean(message.is_user), note: Boolean(message.extra?.type) })));
}

function gameId() {
  return page.evaluate(() => SillyTavern.getContext().chatMetadata.statecraft?.game);
}

const BLOCK = /<statecraft>\n([\s\S]*?)\n<\/statecraft>/;

/** The batch in a reply's block, or null. */
function blockOf(text) {
  const found = BLOCK.exec(text);
  return found ? JSON.parse(found[1]).instructions : null;
}

function prose(text) {
  return text.replace(/\s*<statecraft>[\s\S]*?<\/statecraft>/g, "").trimEnd();
}

/** The state the shown replies' blocks give, by this test's own reading (a refused block changes nothing). */
function fold(replies) {
  let state = structuredClone(INITIAL);
  for (const reply of replies) {
    const batch = blockOf(reply) ?? [];
    // The reply mode's commands (the comparison of the two modes).
    for (const match of reply.matchAll(/_\.add\('(\w+)',\s*(-?\d+)\);/g)) batch.push({ op: "increment", path: [match[1]], value: Number(match[2]) });
    const next = structuredClone(state);
    for (const op of batch) {
      const key = op.path[0];
      next[key] = op.op === "increment" ? next[key] + op.value : op.value;
    }
    if (Object.entries(SCHEMA.properties).every(([key, rule]) => next[key] >= rule.minimum && (rule.maximum === undefined || next[key] <= rule.maximum))) state = next;
  }
  return state;
}

async function replies() {
  return (await chat()).filter((message) => !message.isUser && !message.note).map((message) => message.mes);
}

/** After an action: the game's state is what the shown replies' blocks give. */
let lastAt = Date.now();
async function stateMatchesChat(action) {
  if (process.env.STATECRAFT_PASS_CONSOLE) {
    process.stderr.write(`${action}: ${Date.now() - lastAt} ms\n`);
    lastAt = Date.now();
  }
  const shown = await replies();
  const { state } = await api.getGame(await gameId());
  assert.deepEqual(state, fold(shown), `after ${action}, for the shown replies ${JSON.stringify(shown)}`);
  await shot(action);
}

/**
 * After an action that made a new reply: `requests` were one story request and `passes` pass
 * requests of `kind`; the last reply's block holds what the fake model reads from its prose (or no
 * block when refused twice); the block is hidden in the display and in the saved chat file.
 */
async function passed(action, requests, kind, { passes = 1, refused = false } = {}) {
  const kinds = requests.map((request) => request.kind);
  const last = await page.evaluate(() => JSON.stringify(globalThis.statecraftExtension.pass().last));
  assert.deepEqual(kinds, ["story", ...Array(passes).fill(kind)], `${action}: the model's requests (the last pass: ${last})`);
  assert.deepEqual(requests.slice(1).map((request) => request.error ?? null), Array(passes).fill(null), `${action}: the pass carried the game's pass schema`);
  const reply = (await replies()).at(-1);
  if (refused) {
    assert.equal(blockOf(reply), null, `${action}: refused twice, no block`);
  } else {
    assert.deepEqual(blockOf(reply), readReply(prose(reply), { retry: passes > 1 }), `${action}: the block holds the batch the reply implies`);
    const shown = await page.textContent("#chat .last_mes .mes_text");
    assert.doesNotMatch(shown, /statecraft|instructions/, `${action}: the block is hidden in the display`);
    assert.ok(shown.includes(prose(reply).slice(0, 20)), `${action}: the prose is shown`);
    await savedChatHas(reply);
  }
  await stateMatchesChat(action);
}

/** The chat file SillyTavern saved (its JSONL) holds `text` as a message. */
async function savedChatHas(text) {
  const folder = join(tavern.userFolder, "chats", "Warden");
  let file;
  const saved = async () => {
    const id = await page.evaluate(() => SillyTavern.getContext().chatId);
    file = readdirSync(folder).find((name) => name === `${id}.jsonl`);
    const lines = file ? readFileSync(join(folder, file), "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)) : [];
    return lines.some((line) => line.mes === text);
  };
  assert.ok(await waitUntil(saved, 10000), `the saved chat ${file} has no message ${JSON.stringify(text)}`);
}

/** Sets the drawer's constraint and this chat's mode, as a user does. */
async function choose({ constraint, mode }) {
  await extensionDrawer(page, true);
  if (constraint) await page.selectOption("#statecraft_pass_constraint", constraint);
  if (mode) await page.selectOption("#statecraft_pass_mode", mode);
  await shot(`drawer-${constraint ?? ""}-${mode ?? ""}`);
  await extensionDrawer(page, false);
}

async function newChat() {
  const old = await page.evaluate(() => SillyTavern.getContext().chatId);
  await page.evaluate(() => SillyTavern.getContext().executeSlashCommandsWithOptions("/newchat"));
  await page.waitForFunction(
    (old) => {
      const ctx = SillyTavern.getContext();
      return ctx.chatId !== old && ctx.chatMetadata.integrity && ctx.chat.length === 1;
    },
    old,
    { timeout: 30000 },
  );
  await settle();
  await page.waitForFunction(() => SillyTavern.getContext().chatMetadata.statecraft?.game, null, { timeout: 30000 });
  await settle();
}

/** Every action of a chat whose updates come from a pass constrained by `kind`. */
async function everyAction(kind) {
  await newChat();
  await choose({ constraint: kind === "plain" ? "prompt" : kind, mode: "pass" });
  const schema = await api.request("GET", `/v1/games/${encodeURIComponent(await gameId())}/schema`);
  model.expectPassSchema(schema.pass);

  model.next("The warden nods. Aria finds 5 gold.");
  let requests = await send("I look around.");
  await passed(`${kind}: send`, requests, kind);
  const story = requests[0];
  assert.match(JSON.stringify(story.messages), /Current state/, `${kind}: the story prompt carries the state`);
  assert.doesNotMatch(JSON.stringify(story.messages), /Ops:|\\"op\\"|statecraft>/, `${kind}: the story prompt has no command rules, no update blocks`);

  model.next("A bat bites. Aria loses 10 hp.");
  requests = await send("I walk on.");
  await passed(`${kind}: second reply`, requests, kind);

  model.next("A spider bites. Aria loses 30 hp.");
  requests = await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  await passed(`${kind}: swipe (new)`, requests, kind);

  const from = model.requests.length;
  await page.locator("#chat .last_mes .swipe_left").click();
  await settle();
  assert.equal(model.requests.length, from, `${kind}: swiping back asks nothing`);
  await stateMatchesChat(`${kind}: swipe back`);

  model.next("Aria lights a torch.");
  requests = await option("option_regenerate");
  await passed(`${kind}: regenerate`, requests, kind);

  model.next(" Then she finds 2 gold.");
  requests = await option("option_continue");
  await passed(`${kind}: continue`, requests, kind);
  assert.deepEqual(blockOf((await replies()).at(-1)), readReply("Aria lights a torch. Then she finds 2 gold."), `${kind}: continue: one block for the whole reply`);

  model.next("It is a curse.");
  requests = await send("I touch the idol.");
  await passed(`${kind}: refused once`, requests, kind, { passes: 2 });

  model.next("It is a stubborn curse.");
  requests = await send("I touch it again.");
  await passed(`${kind}: refused twice`, requests, kind, { passes: 2, refused: true });
  const toast = await page.waitForFunction(() => globalThis.statecraftTestToasts.findLast((toast) => /left without an update/.test(toast.text))?.text, null, { timeout: 30000 });
  assert.match(await toast.jsonValue(), /refused twice/);
  await page.locator("#chat .last_mes .statecraft-pass-refused").waitFor({ timeout: 10000 });
  if (kind === "structured") {
    // The mark is the reply's own, saved with the chat: it is there again after a reload.
    const chatId = await page.evaluate(() => SillyTavern.getContext().chatId);
    await page.reload();
    await page.waitForFunction(() => globalThis.statecraftTestReady && globalThis.statecraftExtension, null, { timeout: 120000 });
    if (!(await page.locator("#right-nav-panel.openDrawer").count())) await page.click("#rightNavDrawerIcon");
    await page.click("#rm_button_characters");
    await selectCharacter(page, "Warden");
    await page.waitForFunction((chatId) => SillyTavern.getContext().chatId === chatId, chatId, { timeout: 30000 });
    await page.locator("#chat .last_mes .statecraft-pass-refused").waitFor({ timeout: 30000 });
    assert.equal(await page.locator("#chat .statecraft-pass-refused").count(), 1, `${kind}: after a reload, the one refused reply is marked`);
    await settle();
  }

  // Dry runs, quiet generations and impersonations: no pass.
  let before = model.requests.length;
  await page.evaluate(() => SillyTavern.getContext().generate("normal", {}, true));
  model.next("A quiet answer.");
  await page.fill("#send_textarea", "/gen Say something");
  await page.click("#send_but");
  await settle({ from: before, stories: 1 });
  model.next("I light a torch.");
  await page.click("#options_button");
  await page.click("#option_impersonate");
  await settle({ from: before, stories: 2 });
  assert.deepEqual(model.requests.slice(before).map((request) => request.kind), ["story", "story"], `${kind}: quiet and impersonate: no pass`);
  await page.fill("#send_textarea", "");
  await stateMatchesChat(`${kind}: dry run, quiet, impersonate`);

  // An edit of an earlier reply's block by hand: the state follows, nothing is asked.
  const at = await page.evaluate(() => SillyTavern.getContext().chat.findIndex((message) => /finds 5 gold/.test(message.mes)));
  before = model.requests.length;
  const edited = "The warden nods. Aria finds 5 gold.\n\n<statecraft>\n" + JSON.stringify({ instructions: [{ op: "increment", path: ["gold"], value: 50 }] }) + "\n</statecraft>";
  const message = page.locator(`#chat .mes[mesid='${at}']`);
  await message.locator(".mes_edit").dispatchEvent("click");
  await page.locator("#curEditTextarea").fill(edited);
  await message.locator(".mes_edit_done").dispatchEvent("click");
  await settle();
  assert.equal(model.requests.length, before, `${kind}: an edit asks nothing`);
  await stateMatchesChat(`${kind}: edit the update block`);

  // A deleted message in the middle.
  await slash(`/cut ${at}`);
  await stateMatchesChat(`${kind}: delete a message`);

  // A branch from the second reply: the branch's chat carries the blocks, and the game follows it.
  const original = await page.evaluate(() => SillyTavern.getContext().chatId);
  const branchAt = await page.evaluate(() => SillyTavern.getContext().chat.findIndex((message, index) => index > 0 && !message.is_user));
  await page.locator(`#chat .mes[mesid='${branchAt}'] .mes_create_branch`).dispatchEvent("click");
  await page.waitForFunction((chat) => SillyTavern.getContext().chatId && SillyTavern.getContext().chatId !== chat, original, { timeout: 30000 });
  await settle();
  await stateMatchesChat(`${kind}: branch`);
  model.next("In the branch Aria finds 7 gold.");
  requests = await send("I search the floor.");
  await passed(`${kind}: send in the branch`, requests, kind);
}

test("structured output: every chat action", async () => {
  await everyAction("structured");
});

test("a function tool: every chat action", async () => {
  await everyAction("tool");
});

test("the schema in the prompt, answers broken as models break JSON: every chat action", async () => {
  await everyAction("plain");
});

test("a streamed reply and a streamed swipe: one pass each, once the stream has ended", async () => {
  await newChat();
  await choose({ constraint: "structured", mode: "pass" });
  model.expectPassSchema((await api.request("GET", `/v1/games/${encodeURIComponent(await gameId())}/schema`)).pass);
  await page.evaluate(() => {
    SillyTavern.getContext().chatCompletionSettings.stream_openai = true;
  });
  try {
    model.next("The warden nods. Aria finds 5 gold.");
    let requests = await send("I look around.");
    assert.equal(requests[0].stream, true, "the story reply was streamed");
    await passed("streamed: send", requests, "structured");
    model.next("A spider bites. Aria loses 30 hp.");
    requests = await generating(() => page.locator("#chat .last_mes .swipe_right").click());
    assert.equal(requests[0].stream, true, "the swipe was streamed");
    await passed("streamed: swipe (new)", requests, "structured");
  } finally {
    await page.evaluate(() => {
      SillyTavern.getContext().chatCompletionSettings.stream_openai = false;
    });
  }
});

test("run the update again, a generation waiting for a pass, and the drawer's cost", async () => {
  await newChat();
  await choose({ constraint: "structured", mode: "pass" });
  model.expectPassSchema((await api.request("GET", `/v1/games/${encodeURIComponent(await gameId())}/schema`)).pass);
  model.next("Aria finds 3 gold.");
  await send("Hello.");
  // Run again: one more pass request, the same block, the state unchanged.
  const from = model.requests.length;
  await page.evaluate(async () => {
    const ctx = SillyTavern.getContext();
    await globalThis.statecraftExtension.pass().run(ctx.chat.length - 1);
  });
  await settle();
  assert.deepEqual(model.requests.slice(from).map((request) => [request.kind, request.error ?? null]), [["structured", null]]);
  await stateMatchesChat("run again");
  const status = await page.textContent("#statecraft_pass_status");
  assert.match(status, /prompt \d+ tokens, \d+\.\d s/, `the drawer shows the pass's cost: ${status}`);

  // A generation started while a pass runs waits for it.
  model.setPassDelay(1500);
  model.next("Aria finds 4 gold.", "Aria lights a torch.");
  const start = model.requests.length;
  await page.fill("#send_textarea", "Go on.");
  await page.click("#send_but");
  await page.waitForFunction(() => globalThis.statecraftExtension.pass().running, null, { timeout: 30000 });
  await page.evaluate(() => SillyTavern.getContext().executeSlashCommandsWithOptions("/trigger"));
  await settle({ from: start, stories: 2 });
  model.setPassDelay(0);
  const note = await page.evaluate(() => globalThis.statecraftExtension.pass().waitNote);
  assert.match(note, /waited \d+\.\d s for the update of reply/);
  await stateMatchesChat("a generation waited for the pass");
});

test("the same chat in reply mode and in pass mode: requests and prompt tokens per reply", async () => {
  await newChat();
  await choose({ constraint: "structured", mode: "reply" });
  const lines = [];
  const replyMode = ["You find a chest. _.add('gold', 10);", "A bat bites you. _.add('hp', -10);", "You light a torch. _.add('torches', -1);"];
  for (const [index, text] of replyMode.entries()) {
    model.next(text);
    const requests = await send(`Step ${index + 1}.`);
    assert.deepEqual(requests.map((request) => request.kind), ["story"], "reply mode: one request per reply");
    lines.push(`reply mode, reply ${index + 1}: 1 request, story prompt ~${requests[0].promptTokens} tokens`);
  }
  await choose({ mode: "pass" });
  model.expectPassSchema((await api.request("GET", `/v1/games/${encodeURIComponent(await gameId())}/schema`)).pass);
  const passMode = ["Aria finds 10 gold.", "A bat bites. Aria loses 10 hp.", "Aria lights a torch."];
  for (const [index, text] of passMode.entries()) {
    model.next(text);
    const requests = await send(`Step ${index + 4}.`);
    assert.deepEqual(requests.map((request) => [request.kind, request.error ?? null]), [["story", null], ["structured", null]], "pass mode: a story request and a pass");
    const tokens = await page.evaluate(() => globalThis.statecraftExtension.pass().last.tokens);
    lines.push(`pass mode, reply ${index + 4}: 2 requests, story prompt ~${requests[0].promptTokens} tokens, pass prompt ~${requests[1].promptTokens} tokens (SillyTavern's tokenizer: ${tokens})`);
  }
  await stateMatchesChat("reply mode then pass mode");
  process.stderr.write(`${lines.join("\n")}\n`);
});

test("a group chat: each member's reply gets its pass, and the next member's prompt carries the update", async () => {
  // SillyTavern shows a generation running from the first member's reply to the last one's: the
  // pass for the first reply must not wait for the page to go idle, nor the second member for it.
  if (!(await page.locator("#right-nav-panel.openDrawer").count())) await page.click("#rightNavDrawerIcon");
  await page.click("#rm_button_characters");
  const scout = structuredClone(CHARACTER);
  Object.assign(scout.data, { name: "Scout", description: "A scout who maps caves.", first_mes: "Scout whistles from a ledge.", extensions: {} });
  await page.setInputFiles("#character_import_file", { name: "scout.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(scout)) });
  await page.locator(".character_select:has-text('Scout')").first().waitFor();
  // The Scout speaks first, then the Warden.
  await createGroup(page, "Cave party", ["Warden", "Scout"]);
  await page.waitForFunction(() => SillyTavern.getContext().groupId && SillyTavern.getContext().chatMetadata.statecraft?.game, null, { timeout: 30000 });
  await settle();
  await choose({ constraint: "structured", mode: "pass" });
  model.expectPassSchema((await api.request("GET", `/v1/games/${encodeURIComponent(await gameId())}/schema`)).pass);

  await groupRound("group", "Scout finds 5 gold.", "The Warden nods. Aria loses 10 hp.", 5);

  model.next("The Warden sighs. Aria lights a torch.");
  const swiped = await generating(() => page.locator("#chat .last_mes .swipe_right").click());
  assert.deepEqual(swiped.map((request) => request.kind), ["story", "structured"], "a swipe of the last member's reply: one pass");
  await stateMatchesChat("group: a swipe of the last member's reply");

  // Streamed: SillyTavern shows each member's generation ended before it announces the reply, so
  // each pass starts at once, and the next member's generation waits for it.
  await page.evaluate(() => {
    SillyTavern.getContext().chatCompletionSettings.stream_openai = true;
  });
  try {
    const streamed = await groupRound("group, streamed", "Scout finds 7 gold.", "The Warden nods. Aria loses 20 hp.", 12);
    assert.deepEqual([streamed[0].stream, streamed[2].stream], [true, true], "both members' replies were streamed");
  } finally {
    await page.evaluate(() => {
      SillyTavern.getContext().chatCompletionSettings.stream_openai = false;
    });
  }
});

/**
 * One message in the group chat: the Scout's reply and then the Warden's, each followed by its pass,
 * the Warden's prompt showing the `gold` the Scout's update made; → the model's requests.
 */
async function groupRound(action, scoutReply, wardenReply, gold) {
  model.next(scoutReply, wardenReply);
  const from = model.requests.length;
  await page.fill("#send_textarea", "On we go.");
  await page.click("#send_but");
  await settle({ from, stories: 2 });
  const requests = model.requests.slice(from);
  assert.deepEqual(
    requests.map((request) => [request.kind, request.error ?? null]),
    [["story", null], ["structured", null], ["story", null], ["structured", null]],
    `${action}: a pass after each member's reply, before the next member's generation`,
  );
  const names = await page.evaluate(() => SillyTavern.getContext().chat.filter((message) => !message.is_user).map((message) => message.name));
  assert.deepEqual(names.slice(-2), ["Scout", "Warden"]);
  const wardenPrompt = requests[2].messages.map((message) => message.content).join("\n");
  assert.match(wardenPrompt, new RegExp(`"gold":\\s*${gold}\\b`), `${action}: the Warden's prompt carries the state the Scout's update made`);
  const note = await page.evaluate(() => globalThis.statecraftExtension.pass().waitNote);
  assert.match(note, /waited \d+\.\d s for the update of reply/);
  const shown = await replies();
  assert.deepEqual(blockOf(shown.at(-2)), readReply(scoutReply));
  assert.deepEqual(blockOf(shown.at(-1)), readReply(wardenReply));
  await stateMatchesChat(`${action}: two members' replies`);
  return requests;
}

test("nothing went wrong in the page", () => {
  assert.deepEqual(pageErrors.map((error) => error.message), []);
});
