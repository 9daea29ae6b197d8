// The state the model sees, in real SillyTavern (the version pinned in st/package-lock.json, from
// npm under target/), in Debian's chromium driven by playwright-core, against a fake OpenAI-compatible
// model that keeps every prompt. The plugin and the extension are installed as a user does (from a
// URL serving this working tree); then: the prompt the model receives holds the budgeted view the
// drawer asked for, measured by SillyTavern's tokenizer beside the estimate; `{{state::hp}}` in a
// card's description, and MVU's `{{get_message_variable::stat_data...}}` in an MVU card's, expand to
// the value at the step the reply builds on, a swipe of an earlier reply included; a world-info
// entry with a condition (written from the drawer, or in its title) is in the model's prompt exactly
// when the state satisfies it, its keywords no longer deciding, and a swipe that changes the value
// switches it off again; a bad condition is shown with its bytes pointed at. Last, the drawer
// measures the views of this repository's examples. Screenshots go to $STATECRAFT_ARTIFACTS.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { pointAt } from "../../../clients/sillytavern/view.js";
import { startFakeModel } from "./fake-model.js";
import { extensionDrawer, selectCharacter, settled, startTavernWithPlugin } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");
const artifacts = process.env.STATECRAFT_ARTIFACTS || resolve(repository, "target/sillytavern-view-screenshots");

let api;
/** SillyTavern with the plugin (`startTavernWithPlugin`), and the parts of it the tests use. */
let stack;
let model;
let git;
let tavern;
let browser;
let page;
let shots = 0;
const pageErrors = [];
/** What the drawer measured for each example, for the closing summary. */
const measured = [];

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
  await page.addInitScript(() => {
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
    }, 10);
  });
  page.on("pageerror", (error) => pageErrors.push(error));
  page.on("console", (message) => {
    if (message.type() === "error" && /statecraft/i.test(message.text())) pageErrors.push(new Error(message.text()));
  });
  await page.goto(tavern.url);
  await pageReady();
  // The extension, as a user installs it.
  await page.click("#extensions-settings-button .drawer-toggle");
  await page.click("#third_party_extension_button");
  await page.fill(".popup .popup-input", `${git.url}/statecraft.git`);
  await page.click(".popup .popup-button-ok");
  await page.locator(".popup:has-text('Install a third-party extension?') .popup-button-ok").click();
  await page.locator("#statecraft_budget").waitFor({ state: "attached", timeout: 60000 });
  await page.click("#extensions-settings-button .drawer-toggle");
});

after(async () => {
  if (page) await shot("last").catch(() => {});
  await browser?.close();
  await stack?.stop();
  await model?.close();
  for (const line of measured) process.stderr.write(`${line}\n`);
});

async function pageReady() {
  await page.waitForFunction(() => globalThis.statecraftTestReady && document.querySelector("#extensionsMenuButton"), null, { timeout: 120000 });
  await page.locator("#send_textarea").waitFor();
}

async function shot(name) {
  await page.screenshot({ path: join(artifacts, `${String(++shots).padStart(2, "0")}-${name}.png`) });
}

const settle = (generations = 0) => settled(page, model, generations);

/** Runs an action that makes one generation answered by `reply`; → the prompt the model received, as text. */
async function generation(reply, action) {
  const expected = model.requests.length + 1;
  model.next(reply);
  await action();
  await settle(expected);
  const request = model.requests[expected - 1];
  return request.messages.map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content))).join("\n");
}

function send(text, reply) {
  return generation(reply, async () => {
    await page.fill("#send_textarea", text);
    await page.click("#send_but");
  });
}

function swipe(reply) {
  return generation(reply, () => page.locator("#chat .last_mes .swipe_right").click());
}

async function importCharacter(name, card) {
  if (!(await page.locator("#right-nav-panel.openDrawer").count())) await page.click("#rightNavDrawerIcon");
  await page.click("#rm_button_characters");
  await page.setInputFiles("#character_import_file", { name: `${name}.json`, mimeType: "application/json", buffer: Buffer.from(JSON.stringify(card)) });
  await page.locator(`.character_select:has-text('${name}')`).first().waitFor();
}

async function openCharacter(name) {
  if (!(await page.locator("#right-nav-panel.openDrawer").count())) await page.click("#rightNavDrawerIcon");
  await page.click("#rm_button_characters");
  await selectCharacter(page, name);
  await page.waitForFunction((prefix) => String(SillyTavern.getContext().chatMetadata.statecraft?.game ?? "").startsWith(prefix), `st-${name}`, { timeout: 30000 });
  await page.locator("#chat .mes[mesid='0']").waitFor();
  await settle();
}

async function setDrawer(budget, format) {
  await extensionDrawer(page, true);
  await page.fill("#statecraft_budget", String(budget));
  await page.locator("#statecraft_budget").dispatchEvent("change");
  await page.selectOption("#statecraft_format", format);
  await extensionDrawer(page, false);
}

function gameId() {
  return page.evaluate(() => SillyTavern.getContext().chatMetadata.statecraft?.game);
}

/** The view the extension put in the last prompt (or measured last), as the page holds it. */
async function lastView() {
  // SillyTavern's count comes after the view (the prompt does not wait for it).
  await page.waitForFunction(() => Number.isInteger(globalThis.statecraftExtension.view().lastView?.tavernTokens), null, { timeout: 15000 });
  return page.evaluate(() => {
    const view = globalThis.statecraftExtension.view().lastView;
    return view && { text: view.text, state: view.state, step: view.step, tokens: view.tokens, elided: view.elided, tavernTokens: view.tavernTokens, tokenizer: view.tokenizer, budget: view.budget, format: view.format };
  });
}

/** A state worth a budget: a few stats and a long list of places the model rarely needs. */
const KEEPER_STATE = {
  hp: 100,
  gold: 3,
  name: "Keeper",
  places: Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`hall_${index}`, { description: `A long hall of grey stone, number ${index}, with torches on its walls.`, visited: false }])),
};

const KEEPER = {
  spec: "chara_card_v2",
  spec_version: "2.0",
  data: {
    name: "Keeper",
    description: "The keeper of the halls. HP now: {{state::hp}}. Gold: {{state::/gold}}. Nothing: [{{state::no.such.path}}].",
    personality: "",
    scenario: "",
    first_mes: "The keeper waits.",
    mes_example: "",
    creator_notes: "",
    system_prompt: "",
    post_history_instructions: "",
    alternate_greetings: [],
    tags: [],
    creator: "statecraft tests",
    character_version: "1",
    extensions: { statecraft: { state: KEEPER_STATE } },
  },
};

test("the prompt holds the budgeted view, measured by SillyTavern's tokenizer beside the estimate", async () => {
  await importCharacter("Keeper", KEEPER);
  await openCharacter("Keeper");
  await setDrawer(120, "compact");
  const before = (await api.getGame(await gameId())).step;
  const prompt = await send("I walk into hall_7.", "You see the hall. _.set('hp', 70);");
  const view = await lastView();
  assert.equal(view.step, before, "the view of the step the reply builds on (the greeting's)");
  assert.equal(view.format, "compact");
  assert.ok(prompt.includes(view.text), "the prompt carries the view's text");
  assert.ok(view.tokens.state <= 120, `the view within the budget: ${view.tokens.state}`);
  assert.ok(view.tokens.full_state > 120, `the whole state is larger: ${view.tokens.full_state}`);
  assert.ok(view.elided.length > 0, "what did not fit is named as left out");
  assert.ok(view.state.includes("hall_7"), "what the message mentions ranks first");
  assert.ok(Number.isInteger(view.tavernTokens) && view.tavernTokens > 0, `SillyTavern's count: ${view.tavernTokens}`);
  // The same view, asked from Node with the same step, budget and format, by the game's own endpoint.
  await extensionDrawer(page, true);
  const size = page.locator("#statecraft_view_size");
  assert.equal(await size.getAttribute("data-estimate"), String(view.tokens.state));
  assert.equal(await size.getAttribute("data-tavern"), String(view.tavernTokens));
  assert.match(await size.textContent(), /by SillyTavern.s tokenizer/);
  await size.scrollIntoViewIfNeeded();
  await shot("keeper-budgeted-view");
  await extensionDrawer(page, false);
  assert.ok(prompt.includes("HP now: 100. Gold: 3. Nothing: []."), "the card's macros expanded on the greeting's state");

  // Whole state, JSON: the prompt carries the state as before.
  await setDrawer(0, "json");
  const whole = await send("And then?", "You rest. _.set('hp', 95);");
  const full = await lastView();
  assert.equal(full.elided.length, 0);
  assert.equal(full.tokens.state, full.tokens.full_state);
  const { state } = await api.stateAt(await gameId(), { step: full.step });
  const blocks = [...whole.matchAll(/Current state:\n```json\n([\s\S]*?)\n```/g)];
  assert.equal(blocks.length, 1, "one state");
  assert.deepEqual(JSON.parse(blocks[0][1]), state, "the whole state, as JSON");
  assert.ok(whole.includes("HP now: 70."), "the card's macro: the state after the first reply");
});

test("{{state::hp}} in a card's description reads the step a swipe of an earlier reply builds on", async () => {
  // The state is 95 after the last reply; its swipe builds on the reply before it (70).
  const swiped = await swipe("The keeper frowns. _.set('hp', 50);");
  assert.ok(swiped.includes("HP now: 70."), "the swipe's prompt reads 70, not the 95 the chat showed");
  assert.ok(!swiped.includes("HP now: 95."));
  const next = await send("Onwards.", "Quiet.");
  assert.ok(next.includes("HP now: 50."), "the next reply reads the swipe's state");
  // A swipe that lowers it, and another: each reads the 50 the replaced reply built on, not the 10.
  const lowered = await swipe("Ouch. _.set('hp', 10);");
  assert.ok(lowered.includes("HP now: 50."));
  assert.equal((await api.getGame(await gameId())).state.hp, 10);
  const again = await swipe("Still.");
  assert.ok(again.includes("HP now: 50."), "a swipe reads the state before the reply it replaces");
  assert.ok(!again.includes("HP now: 10."));
  await shot("keeper-swipes");
});

test("an MVU card: {{get_message_variable::stat_data...}} and {{state::...}} read the state a swipe builds on", async () => {
  const card = JSON.parse(readFileSync(join(here, "mira.json"), "utf8"));
  card.data.description += " Health {{get_message_variable::stat_data.Mira.hp[0]}}; mood {{state::Mira.mood}}.";
  card.data.character_book.entries.push({
    id: 2,
    keys: [],
    content: "Mira is furious.",
    comment: "Mira angry [state: Mira.mood == 'angry']",
    enabled: true,
    insertion_order: 2,
    extensions: {},
  });
  await importCharacter("Mira", card);
  await selectCharacter(page, "Mira");
  await page.locator(".popup:has-text('embedded World/Lorebook') .popup-button-ok").click();
  await page.locator("#WorldInfo.openDrawer").waitFor({ timeout: 10000 }).catch(() => {});
  if (await page.locator("#WorldInfo.openDrawer").count()) await page.click("#WIDrawerIcon");
  await page.waitForFunction(() => String(SillyTavern.getContext().chatMetadata.statecraft?.game ?? "").startsWith("st-Mira"), null, { timeout: 30000 });
  // SillyTavern 1.19 imports the book at once but saves its link to the card with the card's next
  // save (any edit of it): saved here as that save does, so the book is the character's for the scan.
  await page.waitForFunction(() => SillyTavern.getContext().getWorldInfoNames().includes("Mira's book"), null, { timeout: 30000 });
  await page.evaluate(() => {
    const context = SillyTavern.getContext();
    return context.writeExtensionField(context.characterId, "world", "Mira's book");
  });
  await settle();
  const first = await send("Show me a spell.", "A spark. _.set('Mira.hp', 100, 85);");
  assert.ok(first.includes("Health 100; mood curious."), "the greeting's state");
  const second = await send("Again.", "A fall. _.set('Mira.hp', 85, 40);");
  assert.ok(second.includes("Health 85; mood curious."));
  const swiped = await swipe("A stumble. _.set('Mira.hp', 85, 80);");
  assert.ok(swiped.includes("Health 85; mood curious."), "the swipe reads the state before the reply it replaces");
  assert.ok(!swiped.includes("Health 40"));
  const registered = await page.evaluate(() => SillyTavern.getContext().macros.registry.hasMacro("get_message_variable"));
  assert.equal(registered, true, "MVU's macro is there for an MVU card");
  await shot("mira-mvu-macro");
});

/** The world SillyTavern imported Mira's book as, and the uid of its entry titled `title`. */
async function miraEntry(title) {
  return page.evaluate(async (title) => {
    const context = SillyTavern.getContext();
    const world = context.characters[context.characterId].data.extensions.world;
    if (world !== "Mira's book") throw new Error(`Mira's world is ${world}`);
    const data = await context.loadWorldInfo(world);
    const entry = Object.values(data.entries).find((one) => String(one.comment).startsWith(title));
    return { world, uid: entry.uid };
  }, title);
}

test("a world-info entry with a condition is in the prompt exactly when the state satisfies it", async () => {
  const spellbook = "Mira's spellbook holds three spells.";
  const { world, uid } = await miraEntry("the spellbook");
  await extensionDrawer(page, true);
  await page.selectOption("#statecraft_wi_world", world);
  await page.waitForFunction((uid) => document.querySelector(`#statecraft_wi_entry option[value="${uid}"]`), String(uid));
  await page.selectOption("#statecraft_wi_entry", String(uid));
  // A condition the engine cannot read: shown with its bytes pointed at, not saved.
  const bad = "Mira.hp[0] <> 50";
  await page.fill("#statecraft_wi_condition", bad);
  await page.click("#statecraft_wi_save");
  await page.waitForFunction(() => document.querySelector("#statecraft_wi_result").classList.contains("bad"), null, { timeout: 15000 });
  const game = await gameId();
  const { results } = await api.request("POST", `/v1/games/${encodeURIComponent(game)}/evaluate`, { conditions: [bad] });
  assert.ok(results[0].error, "the engine refuses it");
  assert.equal(await page.textContent("#statecraft_wi_result"), pointAt(bad, results[0].error));
  await shot("wi-bad-condition");
  const good = "Mira.hp[0] < 50";
  await page.fill("#statecraft_wi_condition", good);
  await page.click("#statecraft_wi_save");
  await page.waitForFunction(() => document.querySelector("#statecraft_wi_result").classList.contains("ok"), null, { timeout: 15000 });
  assert.match(await page.textContent("#statecraft_wi_result"), /^saved \(on the chat's state now it does not hold\)$/);
  const stored = await page.evaluate(async ({ world, uid }) => (await SillyTavern.getContext().loadWorldInfo(world)).entries[uid].extensions.statecraft, { world, uid });
  assert.deepEqual(stored, { condition: good });
  await extensionDrawer(page, false);

  // The chat stands at 80 (the swipe): the entry stays out though its keyword is in the message.
  const out = await send("Read the spellbook.", "She drops. _.set('Mira.hp', 80, 30);");
  assert.ok(!out.includes(spellbook), "a condition that does not hold keeps the entry out, its keyword notwithstanding");
  const active = await page.evaluate(() => globalThis.statecraftExtension.view().activation);
  assert.deepEqual(active.entries.find((entry) => entry.uid === uid), { world, uid, name: "the spellbook", condition: good, from: "extensions", holds: false, error: null });
  // At 30 it holds: the entry is in, with no keyword in sight.
  const inside = await send("Rest.", "She rests. _.set('Mira.hp', 30, 25);");
  assert.ok(inside.includes(spellbook), "the condition holds: the entry is in the prompt");
  assert.ok(!inside.includes("Mira is furious."), "the title's condition does not hold yet");
  await extensionDrawer(page, true);
  assert.match(await page.textContent("#statecraft_wi_active"), /✓ in the prompt: .*the spellbook, because Mira\.hp\[0\] < 50 holds/);
  assert.match(await page.textContent("#statecraft_wi_active"), /– left out: .*Mira angry, because Mira\.mood == 'angry' does not hold/);
  await shot("wi-activated");
  await extensionDrawer(page, false);
  // A swipe of that reply builds on 30 too; it heals her and angers her.
  const swiped = await swipe("She drinks a potion, cross. _.set('Mira.hp', 30, 90);_.set('Mira.mood', 'curious', 'angry');");
  assert.ok(swiped.includes(spellbook), "the swipe builds on 30");
  // The next reply builds on the swipe's 90: switched off; the title's condition now holds.
  const after = await send("How are you?", "Better.");
  assert.ok(!after.includes(spellbook), "the swipe changed the value: the entry is out again");
  assert.ok(after.includes("Mira is furious."), "the condition in the entry's title holds");
  await shot("wi-switched-off");
});

test("the drawer measures the views of this repository's examples", async () => {
  for (const example of ["fantasy", "romance"]) {
    const state = JSON.parse(readFileSync(join(repository, "examples", example, "state.json"), "utf8"));
    const schema = JSON.parse(readFileSync(join(repository, "examples", example, "schema.json"), "utf8"));
    const name = `Ex${example}`;
    await importCharacter(name, { ...KEEPER, data: { ...KEEPER.data, name, description: "", extensions: { statecraft: { state, schema } } } });
    await openCharacter(name);
    let half = 0;
    for (const [wanted, format] of [[0, "json"], [0, "compact"], ["half", "compact"]]) {
      // Half of the whole compact view: a budget that leaves things out.
      const budget = wanted === "half" ? half : wanted;
      await setDrawer(budget, format);
      await extensionDrawer(page, true);
      await page.evaluate(() => {
        globalThis.statecraftExtension.view().lastView = null;
      });
      await page.click("#statecraft_measure");
      await page.waitForFunction(({ budget, format }) => {
        const view = globalThis.statecraftExtension.view().lastView;
        return view && view.budget === budget && view.format === format && Number.isInteger(view.tavernTokens);
      }, { budget, format }, { timeout: 15000 });
      const view = await lastView();
      assert.ok(view.tavernTokens > 0);
      if (budget) assert.ok(view.tokens.state <= budget);
      half = Math.floor(view.tokens.full_state / 2);
      measured.push(`${example} ${format} budget ${budget || "none"}: SillyTavern (${view.tokenizer}) ${view.tavernTokens}, estimate ${view.tokens.state}, whole state ${view.tokens.full_state}`);
      await extensionDrawer(page, false);
    }
  }
  // And Mira's, where the chat is now.
  await openCharacter("Mira");
  await setDrawer(0, "json");
  await extensionDrawer(page, true);
  await page.evaluate(() => {
    globalThis.statecraftExtension.view().lastView = null;
  });
  await page.click("#statecraft_measure");
  await page.waitForFunction(() => Number.isInteger(globalThis.statecraftExtension.view().lastView?.tavernTokens), null, { timeout: 15000 });
  const mira = await lastView();
  measured.push(`mira json budget none: SillyTavern (${mira.tokenizer}) ${mira.tavernTokens}, estimate ${mira.tokens.state}, whole state ${mira.tokens.full_state}`);
  await extensionDrawer(page, false);
});

test("nothing went wrong in the page", () => {
  assert.deepEqual(pageErrors.map((error) => error.message), []);
});
