// The inspector page: the games (made from a state or from an MVU character card, chosen or
// dropped), and for the open game its timeline, state, MVU's views, step diff, a reply tried as a dry
// run, and a value over time. Everything it shows comes from the HTTP API, through the JavaScript
// client (`api.js`). The address says what is shown (`?game=ID`, and `&step=N` for a step picked on
// the timeline), so a link opens it, the address bar can be copied, and the back button goes back.

import { client, StatecraftError } from "./api.js";
import { el } from "./dom.js";
import { lookup, typeOf } from "./values.js";
import { renderTree, schemaDescription } from "./tree.js";
import { renderTimeline, treeOf, lineTo } from "./timeline.js";
import { renderChanges } from "./diff.js";
import { renderOutcome } from "./reply.js";
import { renderPlot } from "./plot.js";

const $ = (id) => document.getElementById(id);

/**
 * What the page is looking at; `card` is the card chosen for the next game, as the API takes it;
 * `pinned` whether the selected step was picked (by a click or a link) rather than the current one.
 */
const view = { game: null, log: null, selected: null, steps: null, after: null, card: null, pinned: false };

/**
 * Writes what the page shows into its address: `?game=ID`, with `&step=N` when a step is pinned.
 * `push` makes a new history entry (the user opened or picked something), else the entry is
 * replaced (the page only caught up with a move).
 */
function address(push) {
  const params = new URLSearchParams();
  if (view.game !== null) params.set("game", view.game);
  if (view.game !== null && view.pinned && view.selected !== null) params.set("step", String(view.selected));
  const query = params.toString();
  const url = `${location.pathname}${query ? `?${query}` : ""}`;
  if (url === `${location.pathname}${location.search}`) return;
  history[push ? "pushState" : "replaceState"]({ game: view.game, step: view.pinned ? view.selected : null }, "", url);
}

/**
 * Shows what an address names (a link, or the back and forward buttons): the game and the step, or
 * says on the page that the game or the step is unknown. Changes no history entry of its own.
 */
async function follow() {
  const params = new URLSearchParams(location.search);
  const id = params.get("game");
  const stepText = params.get("step");
  if (id === null || id === "") {
    closeGame();
    return;
  }
  const step = stepText === null ? null : /^\d+$/.test(stepText) ? Number(stepText) : NaN;
  try {
    await openGame(id, { step, from: "address" });
  } catch (error) {
    if (error instanceof StatecraftError && error.kind === "unknown_game") {
      closeGame();
      status(`no game "${id}" on this server: it was deleted, or the link is for another server`, true);
      return;
    }
    throw error;
  }
}

function closeGame() {
  view.game = null;
  view.selected = null;
  view.pinned = false;
  $("game").hidden = true;
  for (const item of $("game-list").children) item.classList.remove("open");
}

function status(message, error = false) {
  const line = $("status");
  line.textContent = message;
  line.classList.toggle("error", error);
}

/** Runs an action, showing its failure in the status line instead of losing it. */
async function attempt(action) {
  try {
    return await action();
  } catch (error) {
    status(error instanceof StatecraftError ? `${error.kind}: ${error.message}` : String(error), true);
    return undefined;
  }
}

// Kept per tab: the schema a game was created with (the API does not hand it out).
const schemaKey = (id) => `statecraft.schema.${id}`;

function forget(id) {
  sessionStorage.removeItem(schemaKey(id));
}

// Games: list (a page at a time), create, open, delete.

async function listGames(more = false) {
  const page = await client.listGames({ after: more ? view.after : undefined });
  const list = $("game-list");
  if (!more) list.replaceChildren();
  for (const game of page.games) {
    list.append(
      el(
        "li",
        { class: game.id === view.game ? "game open" : "game", "data-id": game.id },
        el("button", { type: "button", class: "open-game", onclick: () => attempt(() => openGame(game.id, { from: "click" })) }, game.id),
        el("span", { class: "where", text: game.label ? ` at “${game.label}”` : ` at step ${game.step}` }),
      ),
    );
  }
  view.after = page.next;
  $("more-games").hidden = page.next === null;
  if (list.children.length === 0) list.append(el("li", { class: "empty", text: "no games yet" }));
}

/** Reads an optional JSON field of the create form. */
function optionalJson(text, name) {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not JSON: ${error.message}`);
  }
}

/** The API's `macros` from `name=value` lines. */
function macrosOf(text) {
  const macros = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    if (at <= 0) throw new Error(`the macro line "${line.trim()}" is not name=value`);
    macros[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return macros;
}

/** Bytes as base64, a chunk at a time (a spread of a whole card would overflow the call stack). */
function base64(bytes) {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

/** Reads a card file as the API's `card`: a PNG's bytes as `{png}`, any other file as its text (the
 * server tells a card's JSON, a world book and InitVar text apart). */
async function chooseCard(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  const png = bytes.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((byte, index) => bytes[index] === byte);
  let card;
  if (png) {
    card = { png: base64(bytes) };
  } else {
    try {
      card = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      $("create-error").textContent = `${file.name} is neither a PNG nor UTF-8 text`;
      return;
    }
  }
  view.card = card;
  $("create-error").textContent = "";
  $("card-chosen").textContent = `card: ${file.name} (${bytes.length} bytes${png ? ", PNG" : ""}); the state below is not used`;
  $("card-clear").hidden = false;
  const state = document.querySelector("#create-form [name=state]");
  state.required = false;
  $("state-field").classList.add("unused");
}

function clearCard() {
  view.card = null;
  $("card-file").value = "";
  $("card-chosen").textContent = "";
  $("card-clear").hidden = true;
  document.querySelector("#create-form [name=state]").required = true;
  $("state-field").classList.remove("unused");
}

async function createGame(form) {
  $("create-error").textContent = "";
  let body;
  try {
    body = view.card === null ? { state: JSON.parse(form.state.value) } : { card: view.card };
    if (view.card !== null) {
      const macros = macrosOf(form.macros.value);
      if (Object.keys(macros).length) body.macros = macros;
    }
    if (form.profile.value) body.profile = form.profile.value;
    const schema = optionalJson(form.schema.value, "the schema");
    const scripts = optionalJson(form.scripts.value, "the scripts");
    if (schema !== undefined) body.schema = schema;
    if (scripts !== undefined) body.scripts = scripts;
    if (form.id.value.trim()) body.id = form.id.value.trim();
  } catch (error) {
    $("create-error").textContent = error.message.startsWith("the ") ? error.message : `the state is not JSON: ${error.message}`;
    return;
  }
  try {
    const created = await client.createGame(body);
    if (body.card !== undefined) clearCard();
    forget(created.id);
    if (body.schema !== undefined) sessionStorage.setItem(schemaKey(created.id), JSON.stringify(body.schema));
    await listGames();
    await openGame(created.id, { from: "click" });
    status(`created ${created.id}`);
  } catch (error) {
    $("create-error").textContent = error instanceof StatecraftError ? `${error.kind}: ${error.message}` : String(error);
  }
}

/**
 * Opens a game, at `step` when one is named (an unknown step says so and shows the current one).
 * `from` is what opened it: a `click` makes a new history entry, an `address` (a link, back or
 * forward) follows the one there is. The game is read before anything changes on the page, so an
 * unknown game leaves the page as it was.
 */
async function openGame(id, { step = null, from = "click" } = {}) {
  const [position, log] = await Promise.all([client.getGame(id), client.log(id)]);
  view.game = id;
  view.selected = null;
  view.pinned = false;
  $("game").hidden = false;
  $("game-title").textContent = id;
  $("schema-text").value = sessionStorage.getItem(schemaKey(id)) ?? "";
  $("try-outcome").replaceChildren();
  $("plot-chart").replaceChildren();
  $("diff-table").replaceChildren(el("p", { class: "empty", text: "click a step of the timeline" }));
  for (const item of $("game-list").children) item.classList.toggle("open", item.dataset.id === id);
  let missing = false;
  if (step !== null) {
    missing = !(step === 0 || log.steps.some((each) => each.id === step));
    if (!missing) {
      view.selected = step;
      view.pinned = true;
    }
  }
  await refresh({ position, log });
  if (from === "click") address(true);
  else if (missing) address(false);
  if (missing) {
    status(`game ${id} has no step ${Number.isNaN(step) ? "like that" : step} (trimmed, or never made): showing the current step`, true);
  } else {
    status(`opened ${id}${view.pinned ? ` at step ${view.selected}` : ""}`);
  }
}

async function deleteGame() {
  const id = view.game;
  if (!confirm(`Delete the game ${id} and its whole history?`)) return;
  await client.deleteGame(id);
  forget(id);
  closeGame();
  address(true);
  await listGames();
  status(`deleted ${id}`);
}

// Timeline and state.

/** Reloads the open game's timeline and shows the selected step (the current one by default). */
async function refresh(read) {
  const { position, log } = read ?? {
    position: await client.getGame(view.game),
    log: await client.log(view.game),
  };
  view.log = log;
  view.steps = treeOf(log);
  if (view.selected === null || !view.steps.has(view.selected)) view.selected = position.step;
  drawTimeline();
  if (view.selected === position.step) showState(position.state, position.step, position.label, true);
  else await pickStep(view.selected);
  await showViews();
}

/** MVU's views of the current step (`?view=mvu`), beside the state. */
async function showViews() {
  const views = await client.mvuView(view.game);
  const name = views.step === 0 ? "the root" : views.label ? `“${views.label}” (step ${views.step})` : `step ${views.step}`;
  $("mvu-of").textContent = `of the current step, ${name}`;
  renderTree($("mvu-delta"), views.delta_data, {});
  renderTree($("mvu-display"), views.display_data, {});
}

function drawTimeline() {
  renderTimeline($("timeline-graph"), view.log, { selected: view.selected, onPick: (step) => attempt(() => pickStep(step.id, true)) });
  $("checkout").disabled = view.selected === view.log.current;
}

async function stateAt(step) {
  return client.stateAt(view.game, { step });
}

/** Shows a step; `picked` when the user picked it, which the address then names. */
async function pickStep(id, picked = false) {
  view.selected = id;
  if (picked) {
    view.pinned = true;
    address(true);
  }
  drawTimeline();
  const at = await stateAt(id);
  showState(at.state, id, at.label, id === view.log.current);
  showDiff(id, at.changes);
}

function schema() {
  try {
    return JSON.parse($("schema-text").value || "null");
  } catch {
    return null;
  }
}

function showState(state, step, label, current) {
  view.state = state;
  const name = step === 0 ? "the root" : label ? `“${label}” (step ${step})` : `step ${step}`;
  $("state-at").textContent = `at ${name}${current ? ", current" : ""}`;
  const known = schema();
  $("pointer").value = "";
  $("node-description").textContent = "";
  $("plot-pointer").disabled = true;
  renderTree($("state-tree"), state, {
    describe: known ? (pointer) => schemaDescription(known, pointer) : undefined,
    onSelect: (pointer, value) => {
      $("pointer").value = pointer;
      $("node-description").textContent = (known && schemaDescription(known, pointer)) || "";
      $("plot-pointer").disabled = typeOf(value) !== "number";
    },
  });
}

/** A step's own change log, reasons included, as the API answers it with the step's state. */
function showDiff(id, changes) {
  const step = view.steps.get(id);
  const name = id === 0 ? "the root" : step.label ? `“${step.label}” (step ${id})` : `step ${id}`;
  $("diff-of").textContent = `of ${name}`;
  if (id === 0) {
    $("diff-table").replaceChildren(el("p", { class: "empty", text: "the root is the state before every step" }));
    return;
  }
  $("diff-table").replaceChildren(
    el("p", { class: "source", text: `${changes.length} change${changes.length === 1 ? "" : "s"}, in the order they were made` }),
    renderChanges(changes),
  );
}

/** Undo, redo or checkout (of the selected step). */
async function move(how) {
  const moved = how === "checkout" ? await client.checkout(view.game, view.selected) : await client[how](view.game);
  view.selected = moved.step;
  view.pinned = false;
  address(false);
  await refresh();
  await listGames();
  status(moved.moved === false ? `${how}: nowhere to go` : `now at ${moved.label ? `“${moved.label}”` : `step ${moved.step}`}`);
}

// Try a reply.

/** The `at` field: `#N` is step N, anything else a label; empty is none. */
function atField() {
  const text = $("reply-at").value.trim();
  if (!text) return undefined;
  return /^#\d+$/.test(text) ? Number(text.slice(1)) : text;
}

function applyBody(dryRun) {
  const body = { input: $("reply").value };
  const label = $("reply-label").value.trim();
  const at = atField();
  if (label) body.label = label;
  if (at !== undefined) body.at = at;
  if (dryRun) body.dryRun = true;
  return body;
}

async function tryReply() {
  const text = $("reply").value;
  const body = applyBody(true);
  $("try-outcome").replaceChildren(el("p", { class: "empty", text: "running…" }));
  let outcome;
  try {
    const answer = await client.apply(view.game, body);
    // A dry run that would commit carries no feedback; the extract endpoint writes it for the same
    // reply read against the same state.
    const base =
      body.at === undefined
        ? await client.getGame(view.game)
        : await client.stateAt(view.game, typeof body.at === "number" ? { step: body.at } : { at: body.at });
    const extracted = await client.extract(text, { state: base.state });
    outcome = { ok: true, body: { ...answer, feedback: extracted.feedback } };
  } catch (error) {
    if (!(error instanceof StatecraftError) || error.status !== 422) throw error;
    outcome = { ok: false, body: error.body };
  }
  renderOutcome($("try-outcome"), text, outcome, { onApply: () => attempt(applyReply) });
  status(outcome.ok ? "dry run: the reply would commit" : "dry run: the reply would be rejected");
}

async function applyReply() {
  const text = $("reply").value;
  try {
    const answer = await client.apply(view.game, applyBody(false));
    if (answer.committed) {
      status(`committed step ${answer.step}${answer.label ? ` “${answer.label}”` : ""}: ${answer.changes.length} change${answer.changes.length === 1 ? "" : "s"}`);
    }
    $("try-outcome").replaceChildren(el("p", { class: "verdict committed", text: `committed as step ${answer.step}` }), renderChanges(answer.changes));
    view.selected = answer.step;
    view.pinned = false;
    address(false);
    await refresh();
    await listGames();
  } catch (error) {
    if (!(error instanceof StatecraftError) || error.status !== 422) throw error;
    renderOutcome($("try-outcome"), text, { ok: false, body: error.body }, { onApply: () => attempt(applyReply) });
    status("rejected: nothing changed", true);
  }
}

// A value over time.

async function plot(pointer) {
  $("plot-path").value = pointer;
  const log = await client.log(view.game);
  const steps = treeOf(log);
  const line = lineTo(steps, log.current);
  const points = new Array(line.length);
  let next = 0;
  const worker = async () => {
    while (next < line.length) {
      const index = next++;
      const at = await stateAt(line[index]);
      points[index] = { step: line[index], label: steps.get(line[index]).label, value: lookup(at.state, pointer) };
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  renderPlot($("plot-chart"), pointer, points);
  status(`plotted ${pointer} over ${line.length} step${line.length === 1 ? "" : "s"}`);
}

// Wiring.

function wire() {
  $("card-file").addEventListener("change", (event) => {
    const file = event.target.files[0];
    if (file) attempt(() => chooseCard(file));
  });
  const drop = $("card-drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const file = event.dataTransfer?.files?.[0];
    if (file) attempt(() => chooseCard(file));
  });
  $("card-clear").addEventListener("click", clearCard);
  $("create-form").addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(() => createGame(event.target));
  });
  $("more-games").addEventListener("click", () => attempt(() => listGames(true)));
  $("delete-game").addEventListener("click", () => attempt(deleteGame));
  $("undo").addEventListener("click", () => attempt(() => move("undo")));
  $("redo").addEventListener("click", () => attempt(() => move("redo")));
  $("checkout").addEventListener("click", () => attempt(() => move("checkout")));
  $("copy-pointer").addEventListener("click", () => {
    const input = $("pointer");
    input.select();
    navigator.clipboard?.writeText(input.value).then(
      () => status(`copied ${input.value || "(root)"}`),
      () => status("select the pointer and copy it by hand", true),
    );
  });
  $("plot-pointer").addEventListener("click", () => attempt(() => plot($("pointer").value)));
  $("plot-form").addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(() => plot($("plot-path").value.trim()));
  });
  $("try-form").addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(tryReply);
  });
  $("schema-text").addEventListener("change", () => {
    if (!view.game) return;
    sessionStorage.setItem(schemaKey(view.game), $("schema-text").value);
    attempt(refresh);
  });
}

wire();
window.addEventListener("popstate", () => attempt(follow));
attempt(async () => {
  await listGames();
  status("ready");
  await follow();
}).finally(() => {
  document.body.dataset.ready = "true";
});

