// The inspector page in a real browser (Debian's chromium, driven by playwright-core) against a real
// `statecraft serve` with a token and a fresh SQLite database. Every check reads the DOM; the
// screenshots of each view are artifacts for people, under $STATECRAFT_ARTIFACTS (in target/).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, readFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
// The JavaScript client's test helper starts the real server; both tests share it.
import { startServer } from "../../../clients/js/test/server.js";

const here = dirname(fileURLToPath(import.meta.url));
const artifacts = process.env.STATECRAFT_ARTIFACTS || resolve(here, "../../../target/inspector-screenshots");
const TOKEN = "inspector-test-token";

let server;
let browser;
let page;
let shots = 0;
const pageErrors = [];

before(async () => {
  rmSync(artifacts, { recursive: true, force: true });
  mkdirSync(artifacts, { recursive: true });
  server = await startServer(["--token", TOKEN]);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    // Chromium's sandbox refuses to run as root (CI containers); the rest keeps it off the network,
    // which it would otherwise try at start (updates, sync) on a machine that has none.
    args: [
      ...(process.getuid?.() === 0 ? ["--no-sandbox"] : []),
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-gpu",
    ],
  });
  page = await openPage();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A fresh tab (its own sessionStorage), past the token question, with the games listed. */
async function openPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const tab = await context.newPage();
  tab.on("pageerror", (error) => pageErrors.push(error));
  tab.on("dialog", (dialog) => dialog.accept());
  await tab.goto(server.url);
  // The page itself loads without the token; the API's 401 makes it ask, once.
  await tab.locator("#token-dialog").waitFor({ state: "visible" });
  await shot(tab, "token");
  await tab.fill("#token-dialog input", TOKEN);
  await tab.click("#token-dialog button");
  await tab.locator("body[data-ready=true]").waitFor();
  assert.equal(await tab.evaluate(() => sessionStorage.getItem("statecraft.token")), TOKEN);
  return tab;
}

async function shot(tab, name, locator) {
  const path = join(artifacts, `${String(++shots).padStart(2, "0")}-${name}.png`);
  await (locator ? tab.locator(locator).screenshot({ path }) : tab.screenshot({ path, fullPage: true }));
}

async function status(tab, pattern) {
  await tab.waitForFunction((source) => new RegExp(source).test(document.getElementById("status").textContent), pattern.source);
}

/** Dry-runs a reply, then applies it for real; returns the dry run's verdict text. */
async function tryAndApply(reply, { label, at, shotName } = {}) {
  const before = await page.locator("#timeline-graph .step.current").getAttribute("data-label");
  await page.fill("#reply", reply);
  await page.fill("#reply-label", label ?? "");
  await page.fill("#reply-at", at ?? "");
  await page.click("#try-form button[type=submit]");
  await page.locator("#try-outcome .verdict:not(.committed)").waitFor();
  const verdict = await page.textContent("#try-outcome .verdict");
  const wouldBe = await page.locator("#try-outcome table.changes tr.change").count();
  assert.equal(verdict, `would commit: ${wouldBe} change${wouldBe === 1 ? "" : "s"}`, "the would-be changes are listed");
  assert.equal(await page.locator("#timeline-graph .step.current").getAttribute("data-label"), before, "a dry run moves nothing");
  if (shotName) await shot(page, shotName, "#try");
  await page.click("#try-outcome .apply-for-real");
  await page.locator("#try-outcome .verdict.committed").waitFor();
  await page.locator(`#timeline-graph .step.current[data-label="${label}"]`).waitFor();
  return verdict;
}

const treeValue = (tab, pointer) => tab.textContent(`#state-tree .node[data-pointer="${pointer}"] .value`);

const schema = {
  type: "object",
  properties: {
    hp: { type: "integer", minimum: 0, description: "hit points, 0 to 100" },
    gold: { type: "integer", minimum: 0 },
    bag: { type: "object", description: "everything carried" },
  },
};

test("the page creates, lists and deletes games", async () => {
  const bag = Object.fromEntries(Array.from({ length: 10000 }, (_, index) => [`item${index}`, index]));
  await page.click("#create summary");
  await page.fill("#create-form [name=id]", "quest");
  await page.fill("#create-form [name=state]", JSON.stringify({ hp: 10, gold: 5, bag }));
  await page.fill("#create-form [name=schema]", JSON.stringify(schema));
  await page.click("#create-form button[type=submit]");
  await page.locator("#game-list li[data-id=quest]").waitFor();
  await page.locator("#timeline-graph .step.current[data-step='0']").waitFor();

  await page.fill("#create-form [name=id]", "scratch");
  await page.fill("#create-form [name=state]", "{not json");
  await page.click("#create-form button[type=submit]");
  assert.match(await page.textContent("#create-error"), /not JSON/);
  await page.fill("#create-form [name=state]", "{}");
  await page.fill("#create-form [name=schema]", "");
  await page.click("#create-form button[type=submit]");
  await page.locator("#game-list li[data-id=scratch]").waitFor();
  await shot(page, "games");
  await page.click("#delete-game");
  await status(page, /deleted scratch/);
  assert.equal(await page.locator("#game-list li[data-id=scratch]").count(), 0, "the list is reloaded before the status says so");
  await page.click("#game-list li[data-id=quest] .open-game");
  await page.locator("#timeline-graph .step.current[data-step='0']").waitFor();
});

test("the state tree folds, shows types, pointers and descriptions, and stays small for 10,000 keys", async () => {
  const hp = page.locator('#state-tree .node[data-pointer="/hp"]');
  assert.equal(await hp.locator(".type").textContent(), "number");
  assert.equal(await treeValue(page, "/hp"), "10");
  assert.match(await hp.getAttribute("title"), /hit points/);
  await hp.click();
  assert.equal(await page.inputValue("#pointer"), "/hp");
  assert.match(await page.textContent("#node-description"), /hit points, 0 to 100/);
  assert.equal(await page.isEnabled("#plot-pointer"), true);

  const bag = page.locator('#state-tree .node[data-pointer="/bag"]');
  assert.equal(await bag.locator(".type").textContent(), "object[10000]");
  assert.equal(await page.locator("#state-tree .node").count(), 4, "folded: the root and its three members");
  await bag.locator(".fold").click();
  assert.equal(await page.locator('#state-tree .node[data-pointer^="/bag/"]').count(), 200, "one page of the 10,000 keys");
  await page.click("#state-tree button.more");
  assert.equal(await page.locator('#state-tree .node[data-pointer^="/bag/"]').count(), 400);
  // The state's keys come back in the server's order; the 400th row is whichever key that is.
  const last = page.locator('#state-tree .node[data-pointer^="/bag/"]').last();
  const pointer = await last.getAttribute("data-pointer");
  await last.click();
  assert.equal(await page.inputValue("#pointer"), pointer);
  await shot(page, "state", "#state");
  await bag.locator(".fold").click();
  assert.equal(await page.locator("#state-tree .node").count(), 4, "folding drops the rows");
});

test("replies commit, a broken one is refused with its diagnostics highlighted, and a swipe branches", async () => {
  const first = 'The goblin hits you.\n```json\n[{"op": "replace", "path": "/hp", "value": 7, "reason": "goblin hit"}]\n```';
  assert.match(await tryAndApply(first, { label: "m1", shotName: "dry-run" }), /would commit: 1 change/);
  assert.equal(await treeValue(page, "/hp"), "7");

  const second =
    '```json\n[{"op": "replace", "path": "/hp", "value": 4, "reason": "trap"},\n' +
    ' {"op": "add", "path": "/met_goblin", "value": true, "reason": "met"},\n' +
    ' {"op": "remove", "path": "/gold", "reason": "robbed"}]\n```';
  assert.match(await tryAndApply(second, { label: "m2" }), /would commit: 3 changes/);
  assert.equal(await treeValue(page, "/hp"), "4");

  // Repaired JSON (single quotes, a trailing comma) whose value the schema refuses.
  const broken = "```json\n[{'op': 'replace', 'path': '/hp', 'value': -3,},]\n```";
  await page.fill("#reply", broken);
  await page.fill("#reply-label", "m3");
  await page.click("#try-form button[type=submit]");
  await page.locator("#try-outcome .verdict.rejected").waitFor();
  assert.equal(await page.textContent("#try-outcome .verdict"), "the batch was rejected (1 problem); nothing changed");
  const marks = page.locator("#try-outcome .reply-text mark.diagnostic");
  assert.ok((await marks.count()) >= 1, "at least one diagnostic span is highlighted");
  const title = await marks.first().getAttribute("title");
  assert.ok(title && title.length > 10, `the highlight carries its message: ${title}`);
  await marks.first().hover();
  const comma = page.locator('#try-outcome mark.diagnostic[data-kinds~="trailing_comma"]').first();
  assert.equal(await comma.textContent(), ",", "the trailing comma's own byte is marked");
  assert.match(await comma.getAttribute("title"), /trailing comma/);
  assert.doesNotMatch(await page.textContent("#try-outcome"), /null|undefined/);
  assert.equal(await page.locator("#try-outcome .diagnostics li").count() >= 1, true);
  assert.match(await page.textContent("#try-outcome .score-value"), /^\d+$/);
  assert.ok((await page.locator("#try-outcome ul.errors li").count()) >= 1, "the rejection's reasons");
  assert.match(await page.textContent("#try-outcome ul.errors"), /\/hp/);
  assert.notEqual((await page.textContent("#try-outcome .feedback")).trim(), "");
  assert.equal(await page.isDisabled("#try-outcome .apply-for-real"), true);
  await shot(page, "rejected-reply", "#try");
  assert.equal(await treeValue(page, "/hp"), "4", "nothing changed");

  // A swipe: another reply to the message after m1, committed on m1.
  const swipe = '<UpdateVariable>\n_.set("hp", 7, 9);//healed\n</UpdateVariable>';
  assert.match(await tryAndApply(swipe, { label: "m2b", at: "m1" }), /would commit/);
  assert.equal(await treeValue(page, "/hp"), "9");
  const m2 = page.locator('#timeline-graph .step[data-label="m2"]');
  assert.equal(await m2.evaluate((node) => node.classList.contains("applied")), false, "the other swipe left the current line");
  assert.equal(await page.textContent('#timeline-graph .step[data-label="m2"] .count'), "3Δ");
  await shot(page, "timeline", "#timeline");
});

test("a step shows its state and diff, is checked out, and undo and redo move along the line", async () => {
  await page.locator('#timeline-graph .step[data-label="m2"]').click();
  await page.locator("#diff-of", { hasText: "m2" }).waitFor();
  await page.locator('#state-at', { hasText: "m2" }).waitFor();
  assert.equal(await treeValue(page, "/hp"), "4", "the other swipe's state, without moving");
  assert.equal(await page.locator('#timeline-graph .step.current').getAttribute("data-label"), "m2b");
  const rows = page.locator("#diff-table tr.change");
  assert.equal(await rows.count(), 3);
  const row = (path) => page.locator(`#diff-table tr.change[data-path="${path}"]`);
  assert.equal(await row("/hp").getAttribute("class"), "change changed");
  assert.equal(await row("/hp").locator(".old").textContent(), "7");
  assert.equal(await row("/hp").locator(".new").textContent(), "4");
  assert.equal(await row("/hp").locator(".reason").textContent(), "trap");
  assert.equal(await row("/met_goblin").getAttribute("class"), "change added");
  assert.equal(await row("/gold").getAttribute("class"), "change removed");
  assert.equal(await row("/gold").locator(".new").textContent(), "(absent)");
  await shot(page, "diff", "#diff");

  await page.click("#checkout");
  await page.locator('#timeline-graph .step.current[data-label="m2"]').waitFor();
  assert.equal(await treeValue(page, "/hp"), "4");
  assert.match(await page.textContent("#state-at"), /current/);

  await page.click("#undo");
  await page.locator('#timeline-graph .step.current[data-label="m1"]').waitFor();
  assert.equal(await treeValue(page, "/hp"), "7");
  await page.click("#redo");
  await page.locator('#timeline-graph .step.current[data-label="m2"]').waitFor();
  assert.equal(await treeValue(page, "/hp"), "4");
});

test("a value is plotted along the current line", async () => {
  await page.fill("#plot-path", "/hp");
  await page.click("#plot-form button");
  await page.locator("#plot-chart svg.plot").waitFor();
  const values = await page.$$eval("#plot-chart circle.point", (points) => points.map((point) => Number(point.dataset.value)));
  assert.deepEqual(values, [10, 7, 4], "root, m1, m2");
  await shot(page, "plot", "#plot");
  // From the tree: select a number and plot it.
  await page.locator('#state-tree .node[data-pointer="/hp"]').click();
  await page.click("#plot-pointer");
  await status(page, /plotted \/hp over 3 steps/);
});

test("a step committed elsewhere shows its reasons after a reload", async () => {
  // Committed by a direct API call, not by this page.
  const answer = await fetch(`${server.url}/v1/games/quest/apply`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ batch: [{ op: "assign", path: ["hp"], value: 2, reason: "poisoned" }], label: "m3" }),
  });
  assert.equal(answer.status, 200, await answer.clone().text());
  await page.reload();
  await page.locator("body[data-ready=true]").waitFor();
  await page.click("#game-list li[data-id=quest] .open-game");
  await page.locator('#timeline-graph .step[data-label="m3"]').click();
  await page.locator("#diff-of", { hasText: "m3" }).waitFor();
  assert.equal(await page.textContent("#diff-table .source"), "1 change, in the order they were made");
  const row = page.locator('#diff-table tr.change[data-path="/hp"]');
  assert.equal(await row.getAttribute("class"), "change changed");
  assert.equal(await row.locator(".old").textContent(), "4");
  assert.equal(await row.locator(".new").textContent(), "2");
  assert.equal(await row.locator(".reason").textContent(), "poisoned");
  await shot(page, "reloaded-diff", "#diff");
});

test("a fresh tab asks for the token again and shows the reasons of steps it did not commit", async () => {
  const tab = await openPage();
  await tab.click("#game-list li[data-id=quest] .open-game");
  await tab.locator('#timeline-graph .step[data-label="m2b"]').click();
  await tab.locator("#diff-of", { hasText: "m2b" }).waitFor();
  const row = tab.locator('#diff-table tr.change[data-path="/hp"]');
  assert.equal(await row.locator(".old").textContent(), "7");
  assert.equal(await row.locator(".new").textContent(), "9");
  assert.equal(await row.locator(".reason").textContent(), "healed");
  assert.equal(await tab.locator("#diff-table tr.change").count(), 1);
  // The root changed nothing.
  await tab.locator("#timeline-graph .step[data-step=\"0\"]").click();
  await tab.locator("#diff-of", { hasText: "the root" }).waitFor();
  assert.equal(await tab.locator("#diff-table tr.change").count(), 0);
  await shot(tab, "fresh-tab");
  await tab.context().close();
});

test("a refused token is asked for again, through the JavaScript client the page imports", async () => {
  const context = await browser.newContext();
  const tab = await context.newPage();
  tab.on("pageerror", (error) => pageErrors.push(error));
  const loaded = [];
  tab.on("request", (request) => loaded.push(new URL(request.url()).pathname));
  await tab.goto(server.url);
  await tab.locator("#token-dialog").waitFor({ state: "visible" });
  assert.equal(await tab.isHidden("#token-dialog .refused"), true, "no token was refused yet");
  await tab.fill("#token-dialog input", "not-the-token");
  await tab.click("#token-dialog button");
  await tab.locator("#token-dialog .refused").waitFor({ state: "visible" });
  await shot(tab, "token-refused");
  await tab.fill("#token-dialog input", TOKEN);
  await tab.click("#token-dialog button");
  await tab.locator("body[data-ready=true]").waitFor();
  assert.equal(await tab.isHidden("#token-dialog"), true);
  assert.ok(await tab.locator("#game-list li[data-id=quest]").count(), "the games are listed");
  assert.equal(await tab.evaluate(() => sessionStorage.getItem("statecraft.token")), TOKEN);
  assert.ok(loaded.includes("/statecraft.js"), `the page loads the client: ${loaded.join(" ")}`);
  await context.close();
});

// The example card of examples/mvu-card, as a card author's file.
const cardDir = resolve(here, "../../../examples/mvu-card");

test("a game is made from a chosen card file and shows MVU's views beside the state", async () => {
  await page.click("#create summary");
  await page.fill("#create-form [name=id]", "inn");
  await page.setInputFiles("#card-file", join(cardDir, "card.json"));
  await page.locator("#card-chosen", { hasText: "card.json" }).waitFor();
  await page.fill("#create-form [name=macros]", "user=Alex");
  await page.click("#create-form button[type=submit]");
  await page.locator("#game-list li[data-id=inn]").waitFor();
  await page.locator("#timeline-graph .step.current[data-step='0']").waitFor();
  await page.locator("#mvu-of", { hasText: "the root" }).waitFor();
  assert.equal(await page.locator('#state-tree .node[data-pointer="/Alex"]').count(), 1, "the card's state, with <user> replaced");
  assert.equal(await page.locator("#mvu-delta .node").count(), 1, "the root changed nothing: delta_data is {}");
  assert.equal(await page.textContent("#card-chosen"), "", "the card is cleared once its game is made");

  const reply = "<UpdateVariable>\n_.set('Ember.trust', 10, 15);//fixed the sign\n_.set('Alex.mana', 5);\n_.add('Alex.gold', -3);//supper\n</UpdateVariable>";
  assert.match(await tryAndApply(reply, { label: "m1" }), /would commit: 2 changes/);
  await page.locator("#mvu-of", { hasText: "m1" }).waitFor();
  await page.locator('#mvu-delta .node[data-pointer="/Ember"] .fold').click();
  assert.equal(await page.textContent('#mvu-delta .node[data-pointer="/Ember/trust"] .value'), '"10->15 (fixed the sign)"');
  await page.locator('#mvu-display .node[data-pointer="/Ember"] .fold').click();
  assert.equal(await page.textContent('#mvu-display .node[data-pointer="/Ember/mood"] .value'), '"calm"');
  await page.locator('#state-tree .node[data-pointer="/Ember"] .fold').click();
  await page.locator('#state-tree .node[data-pointer="/Ember/trust"] .fold').click();
  assert.equal(await treeValue(page, "/Ember/trust/0"), "15", "the pair took the value; its description stays");
  await shot(page, "mvu-views", "#mvu");
});

test("a card dropped on the page makes the same game from its PNG", async () => {
  const png = readFileSync(join(cardDir, "card.png")).toString("base64");
  const transfer = await page.evaluateHandle((bytes) => {
    const data = Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0));
    const transfer = new DataTransfer();
    transfer.items.add(new File([data], "card.png", { type: "image/png" }));
    return transfer;
  }, png);
  await page.fill("#create-form [name=id]", "inn-png");
  await page.dispatchEvent("#card-drop", "drop", { dataTransfer: transfer });
  await page.locator("#card-chosen", { hasText: "card.png" }).waitFor();
  assert.match(await page.textContent("#card-chosen"), /PNG/);
  await page.fill("#create-form [name=macros]", "user=Alex");
  await page.selectOption("#create-form [name=profile]", "mvu");
  await page.click("#create-form button[type=submit]");
  await page.locator("#game-list li[data-id=inn-png]").waitFor();
  await page.locator('#game-list li.open[data-id="inn-png"]').waitFor();
  const [json, fromPng] = await Promise.all(
    ["inn", "inn-png"].map((id) =>
      fetch(`${server.url}/v1/games/${id}/state?step=0`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.json()),
    ),
  );
  assert.deepEqual(fromPng.state, json.state, "the PNG and the JSON card give the same state");
  // A file that is no card is refused with what and where, and nothing is made.
  await page.setInputFiles("#card-file", { name: "broken.yaml", mimeType: "text/plain", buffer: Buffer.from("- 1\n- 2\n") });
  await page.locator("#card-chosen", { hasText: "broken.yaml" }).waitFor();
  await page.fill("#create-form [name=id]", "broken");
  await page.click("#create-form button[type=submit]");
  await page.locator("#create-error", { hasText: "card" }).waitFor();
  assert.equal(await page.locator("#game-list li[data-id=broken]").count(), 0);
  await page.click("#card-clear");
  assert.equal(await page.textContent("#card-chosen"), "");
  await shot(page, "card-refused", "#games");
});

/** A fresh tab opened at an address of the page (a link), past the token question. */
async function openAt(query) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const tab = await context.newPage();
  tab.on("pageerror", (error) => pageErrors.push(error));
  await tab.goto(`${server.url}/${query}`);
  await tab.locator("#token-dialog").waitFor({ state: "visible" });
  await tab.fill("#token-dialog input", TOKEN);
  await tab.click("#token-dialog button");
  await tab.locator("body[data-ready=true]").waitFor();
  return { tab, context };
}

/**
 * Waits for the page's address to read `expected`: the page writes it after the view it names is
 * drawn, so a check right after the view shows would race. Fails with the address it has.
 */
async function addressIs(tab, expected) {
  await tab.waitForFunction((want) => location.search === want, expected, { timeout: 5000 }).catch(() => {});
  assert.equal(await tab.evaluate(() => location.search), expected);
}

test("a link opens a game at a step, says when the game or the step is unknown, and the address follows", async () => {
  // The extension's drawer links to SERVER/?game=ID&step=N.
  const { tab, context } = await openAt("?game=quest&step=1");
  await tab.locator("#game-title", { hasText: "quest" }).waitFor();
  await tab.locator("#timeline-graph .step.selected[data-step='1']").waitFor();
  await tab.locator("#state-at", { hasText: "step 1" }).waitFor();
  await tab.locator('#game-list li.open[data-id="quest"]').waitFor();
  await addressIs(tab, "?game=quest&step=1");
  await shot(tab, "deep-link");
  // Picking another step and opening another game write the address; back goes back through them.
  await tab.click("#timeline-graph .step[data-step='0']");
  await tab.locator("#timeline-graph .step.selected[data-step='0']").waitFor();
  await addressIs(tab, "?game=quest&step=0");
  await tab.click("#game-list li[data-id=inn] .open-game");
  await tab.locator("#game-title", { hasText: "inn" }).waitFor();
  await addressIs(tab, "?game=inn");
  await tab.goBack();
  await tab.locator("#game-title", { hasText: "quest" }).waitFor();
  await tab.locator("#timeline-graph .step.selected[data-step='0']").waitFor();
  await addressIs(tab, "?game=quest&step=0");
  await tab.goBack();
  await tab.locator("#timeline-graph .step.selected[data-step='1']").waitFor();
  await tab.goForward();
  await tab.locator("#timeline-graph .step.selected[data-step='0']").waitFor();
  // The address bar's text is a link that opens the same view in another tab.
  const copied = await tab.evaluate(() => location.href);
  await context.close();
  const again = await openAt(new URL(copied).search);
  await again.tab.locator("#timeline-graph .step.selected[data-step='0']").waitFor();
  await again.context.close();

  // An unknown game says so on the page, and no game is open.
  const unknown = await openAt("?game=nobody");
  await status(unknown.tab, /no game "nobody"/);
  assert.equal(await unknown.tab.isHidden("#game"), true);
  assert.equal(await unknown.tab.locator("#status.error").count(), 1);
  await shot(unknown.tab, "deep-link-unknown-game");
  await unknown.context.close();
  // An unknown step says so and shows the game at its current step; the address drops the step.
  const trimmed = await openAt("?game=quest&step=999");
  await status(trimmed.tab, /no step 999/);
  await trimmed.tab.locator("#game-title", { hasText: "quest" }).waitFor();
  await trimmed.tab.locator("#timeline-graph .step.current.selected").waitFor();
  await addressIs(trimmed.tab, "?game=quest");
  await trimmed.context.close();
});

test("no script error happened on any page", () => {
  assert.deepEqual(pageErrors.map(String), []);
});
