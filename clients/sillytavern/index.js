// statecraft inside SillyTavern: the extension's entry point (manifest.json at the repository's root
// points here). It keeps each chat's game on what the chat shows by syncing the shown replies after
// every event that may change them (keeper.js holds the logic), puts the state a generation builds on
// into the prompt (the manifest's generate interceptor), and shows the state: a panel in the settings
// drawer, a badge on the last reply, toasts, `/state`, and MVU's variables on the message for MVU
// status bars. Everything SillyTavern's comes from `SillyTavern.getContext()`, so no import depends on
// the folder the extension was installed into.

import { Statecraft } from "../js/statecraft.js";
import { StateView } from "./view.js";
import { UpdatePass, applyPromptRegex, bindPassDrawer, showPass, showRefusals, PROMPT_REGEX_ID } from "./pass.js";
import { ChatKeeper, PLUGIN_CONTENT_TYPE, PLUGIN_PATH, cardChange, describeError, gameSource, pathText, testConnection, testPlugin, valueAt, newGameId } from "./keeper.js";

const NAME = "statecraft";
const PROMPT_KEY = "statecraft_state";
const REGEX_ID = "statecraft-hide-update-commands";
/** MVU's command blocks, `_.set(...)` lines, JSON Patch blocks, JSON fences and the pass's blocks (pass.js): what a reply's updates look like. */
const UPDATE_PATTERN =
  "/<statecraft>[\\s\\S]*?<\\/statecraft>|<UpdateVariable>[\\s\\S]*?<\\/UpdateVariable>|<JSONPatch>[\\s\\S]*?<\\/JSONPatch>|```(?:json)?[ \\t]*\\n[\\s\\S]*?```|_\\.(?:set|add|insert|assign|remove|unset|delete)\\((?:[^()'\"]|'[^']*'|\"[^\"]*\"|\\([^()]*\\))*\\);?(?:[ \\t]*\\/\\/[^\\n]*)?/gi";

export const DEFAULTS = Object.freeze({
  enabled: true,
  // Empty: SillyTavern's server plugin. A URL: another server, which wins (another machine, or
  // PostgreSQL for a hosted site). Settings saved before the plugin existed keep their URL.
  url: "",
  token: "",
  depth: 1,
  role: 0,
  quiet: false,
  hideCommands: true,
  mvuVariables: true,
  badge: true,
  // State updates by a separate pass (pass.js): the default for chats, how it is constrained, and
  // how long a generation waits for a pass still running.
  passMode: "reply",
  passConstraint: "auto",
  passWaitSeconds: 30,
});

const context = () => globalThis.SillyTavern.getContext();

/**
 * Set by the delete hook: from then on the extension is off and never writes its settings again (a
 * sync or an event between the hook and SillyTavern's save would otherwise put them back).
 */
let removed = false;

function settings() {
  if (removed) return { ...DEFAULTS, enabled: false, hideCommands: false, mvuVariables: false, badge: false };
  const all = context().extensionSettings;
  all[NAME] = { ...DEFAULTS, ...(all[NAME] ?? {}) };
  return all[NAME];
}

let client = null;
let keeper = null;
let last = null;
/** The state the model sees: the prompt's view, the macros, world info that follows the state (view.js). */
let view = null;
/** State updates by a separate pass (pass.js). */
let pass = null;

/** Whether the extension talks to SillyTavern's server plugin (no other server set). */
function viaPlugin() {
  return !settings().url;
}

/**
 * The client: through SillyTavern's server plugin, on the page's own origin with SillyTavern's
 * session and CSRF token (no address, no token); or to another server at its URL, with its token.
 */
function makeClient() {
  const { url, token } = settings();
  if (!url) {
    return new Statecraft(`${origin()}${PLUGIN_PATH}`, {
      timeoutMs: 40000,
      init: { credentials: "same-origin", cache: "no-store" },
      headers: () => ({ "x-csrf-token": context().getRequestHeaders()["X-CSRF-Token"], "content-type": PLUGIN_CONTENT_TYPE }),
    });
  }
  return new Statecraft(url, { token: token || undefined, timeoutMs: 30000, init: { credentials: "omit", cache: "no-store" } });
}

/** The inspector page of the server in use (docs/inspector.md). */
function inspectorUrl() {
  return viaPlugin() ? `${origin()}${PLUGIN_PATH}/` : `${settings().url.replace(/\/+$/, "")}/`;
}

/** A sentence for a failed call, for the server in use. */
function explain(error) {
  return describeError(error, { origin: origin(), plugin: viaPlugin() });
}

/** The URL this extension was installed from, which the plugin installs from too. */
async function repositoryUrl() {
  const folder = /\/scripts\/extensions\/third-party\/([^/]+)\//.exec(new URL(import.meta.url).pathname)?.[1];
  if (!folder) return undefined;
  for (const global of [false, true]) {
    try {
      const response = await fetch("/api/extensions/version", {
        method: "POST",
        headers: context().getRequestHeaders(),
        body: JSON.stringify({ extensionName: decodeURIComponent(folder), global }),
      });
      if (response.ok) return (await response.json()).remoteUrl || undefined;
    } catch {
      // No answer: the message names the repository generically.
    }
  }
  return undefined;
}

/**
 * The character whose card makes the chat's game, with what it gives (`{character, source}`, see
 * `gameSource`): the chat's character; in a group chat, the first member (in the group's order) whose
 * card gives a state of its own (statecraft settings, or [InitVar] entries in its world book), else
 * the first member. One chat, one game, one source: every member's replies change that one state.
 * Loads shallow characters and their world books (SillyTavern caches both).
 */
async function sourceCharacter() {
  const ctx = context();
  let candidates = [];
  if (ctx.groupId) {
    await ctx.unshallowGroupMembers?.(ctx.groupId);
    const group = ctx.groups.find((candidate) => candidate.id === ctx.groupId);
    candidates = (group?.members ?? []).map((avatar) => ctx.characters.find((character) => character.avatar === avatar)).filter(Boolean);
  } else if (ctx.characterId !== undefined && ctx.characters[ctx.characterId]) {
    await ctx.unshallowCharacter?.(ctx.characterId);
    candidates = [ctx.characters[ctx.characterId]];
  }
  let first = null;
  for (const character of candidates) {
    const name = character.data?.extensions?.world;
    const world = name ? await Promise.resolve(ctx.loadWorldInfo?.(name)).catch(() => null) : null;
    const source = gameSource(character, { world, macros: { user: ctx.name1, char: character.name } });
    if (source.from !== "an empty state") return { character, source };
    first ??= { character, source };
  }
  return first ?? { character: null, source: gameSource(null) };
}

/**
 * Whether SillyTavern is switching chats: it empties the metadata, names the new chat, and fills the
 * chat (a new group chat's greetings one by one, each with its event) before the chat's metadata
 * arrives, which always has its `integrity` slug. A sync read in between would make a game in
 * metadata about to be replaced; the chat's load event syncs instead.
 */
function loading(ctx) {
  return !ctx.chatMetadata.integrity;
}

/** The chat to keep, or null: the game id lives in the chat's metadata, so renames and branches keep it. */
async function target() {
  const chatId = context().chatId;
  if (!settings().enabled || !chatId) return null;
  const { character, source } = await sourceCharacter();
  // The chat may have changed while the card was read: keep the one open now.
  const ctx = context();
  if (ctx.chatId !== chatId) return target();
  if (!ctx.chatMetadata || loading(ctx)) return null;
  let game = ctx.chatMetadata[NAME]?.game;
  const isNew = !game;
  if (isNew) {
    game = newGameId(chatId);
    ctx.chatMetadata[NAME] = { game };
    ctx.saveMetadataDebounced?.();
  }
  // {{char}} in a reply's commands is the source character, in a group too (whoever wrote the
  // reply), so that the same text always does the same.
  const macros = { user: ctx.name1, char: character?.name ?? ctx.name2 };
  const profile = source.create?.profile ?? source.card?.data?.extensions?.[NAME]?.profile;
  const mvu = typeof profile === "string" && profile.startsWith("mvu");
  // A reply whose update pass runs is not on the path yet.
  const chat = pass ? pass.visible(ctx.chat) : ctx.chat;
  return { gameId: game, chat, create: source.create, schema: source.schema, macros, card: source.card, mvu, isNew };
}

function origin() {
  return globalThis.location?.origin ?? "http://127.0.0.1:8000";
}

function toast(kind, message, title = "statecraft", options = {}) {
  globalThis.toastr?.[kind]?.(message, title, { preventDuplicates: true, ...options });
}

function start() {
  keeper?.stop();
  client = makeClient();
  keeper = new ChatKeeper({
    client,
    target,
    busy: () => Boolean(globalThis.document?.body?.dataset.generating),
    onSynced: (result, chat) => {
      view?.synced(result, chat);
      return showSynced(result);
    },
    onRefused: ({ index, feedback }) => toast("warning", `Reply ${index + 1}'s update was refused; the model is told:\n${feedback}`, "statecraft: update refused", { timeOut: 15000 }),
    onError: (error) => {
      toast("error", explain(error), "statecraft", { timeOut: 15000 });
      setStatus(`error: ${explain(error)}`);
    },
    onRecovered: () => toast("success", "connected again; the chat is in sync", "statecraft"),
  });
  keeper.sync();
}

async function showSynced(result) {
  if (!result.moved) return;
  last = result;
  setStatus(`${result.replies === 1 ? "1 reply" : `${result.replies} replies`} in the chat, ${result.applied.length} applied by this sync`);
  renderState(result);
  checkCard({ gameId: result.gameId }).catch(() => {});
  const ctx = context();
  const index = lastReplyIndex(ctx.chat);
  if (index < 0) return;
  let changes = [];
  if (settings().badge || settings().mvuVariables) {
    try {
      changes = result.step === 0 ? [] : (await client.stateAt(result.gameId, { step: result.step })).changes;
    } catch {
      changes = [];
    }
  }
  if (settings().mvuVariables) await writeMvu(ctx.chat[index], result);
  if (settings().badge) renderBadge(index, result, changes);
}

function lastReplyIndex(chat) {
  for (let index = chat.length - 1; index >= 0; index -= 1) {
    const message = chat[index];
    if (!message.is_user && !(message.extra && message.extra.type)) return index;
  }
  return -1;
}

/**
 * MVU keeps a state copy per message and swipe in `variables[swipe_id]`; status bars read it there.
 * The views are the server's (MVU's own texts of each change, docs/mvu.md); when they cannot be had
 * for this step (the request failed, or the game moved on meanwhile), the state is written with the
 * views MVU gives a step that changed nothing: `display_data` the state, `delta_data` empty.
 */
async function writeMvu(message, result) {
  let views = null;
  try {
    const answer = await client.mvuView(result.gameId);
    if (answer && answer.stat_data !== undefined && answer.step === result.step) views = answer;
  } catch {
    views = null;
  }
  views ??= { stat_data: result.state, display_data: result.state, delta_data: {} };
  const swipe = Number.isInteger(message.swipe_id) ? message.swipe_id : 0;
  if (!Array.isArray(message.variables)) message.variables = [];
  message.variables[swipe] = { ...(message.variables[swipe] ?? {}), stat_data: views.stat_data, display_data: views.display_data, delta_data: views.delta_data };
}

function renderBadge(index, result, changes) {
  const $ = globalThis.jQuery;
  $(".statecraft-badge").remove();
  const block = $(`#chat .mes[mesid="${index}"] .mes_block .ch_name`).first();
  if (!block.length) return;
  const feedback = result.feedback;
  const list = changes.map((change) => `${change.path.join(".")}: ${JSON.stringify(change.old)} → ${JSON.stringify(change.new)}`);
  const badge = $("<span class='statecraft-badge'></span>")
    .text(feedback ? "⚠ refused" : `Δ ${changes.length}`)
    .toggleClass("refused", Boolean(feedback))
    .attr("title", feedback || list.join("\n") || "no changes")
    .attr("data-step", result.step);
  block.append(badge);
}

function renderState(result) {
  const $ = globalThis.jQuery;
  $("#statecraft_state").text(JSON.stringify(result.state, null, 2));
  $("#statecraft_game").text(`${result.gameId} · step ${result.step}`);
  $("#statecraft_inspector").attr("href", `${inspectorUrl()}?game=${encodeURIComponent(result.gameId)}&step=${result.step}`).show();
}

function setStatus(text) {
  globalThis.jQuery?.("#statecraft_status").text(text);
}

/**
 * The manifest's `generate_interceptor`: real generations only (SillyTavern skips it for dry runs).
 * The state and its view were fetched when the generation started (view.js), before SillyTavern
 * expanded the card's macros; here they go into the prompt.
 */
async function interceptGeneration(_chat, _contextSize, _abort, type) {
  const ctx = context();
  if (!keeper || !view || !settings().enabled) return;
  const withState = type !== "quiet" || settings().quiet;
  const clear = () => ctx.setExtensionPrompt(PROMPT_KEY, "", 1, settings().depth, false, settings().role);
  try {
    const at = await view.forGeneration(type);
    if (!at || !at.view || !withState) return clear();
    const prompt = at.feedback ? `${at.view.text}\n${at.feedback}` : at.view.text;
    ctx.setExtensionPrompt(PROMPT_KEY, prompt, 1, Number(settings().depth), false, Number(settings().role));
  } catch (error) {
    // No stale state: the model gets none this time, and the user is told why.
    clear();
    if (withState) toast("error", `the state is not in this prompt: ${explain(error)}`, "statecraft");
  }
}

/** SillyTavern's own regex, display only (`markdownOnly`): the stored text and the prompt keep the commands. */
function applyHiding() {
  const all = context().extensionSettings;
  all.regex = Array.isArray(all.regex) ? all.regex : [];
  const at = all.regex.findIndex((script) => script.id === REGEX_ID);
  if (settings().hideCommands && at < 0) {
    all.regex.push({
      id: REGEX_ID,
      scriptName: "statecraft: hide update commands (display only)",
      findRegex: UPDATE_PATTERN,
      replaceString: "",
      trimStrings: [],
      placement: [2],
      disabled: false,
      markdownOnly: true,
      promptOnly: false,
      runOnEdit: true,
      substituteRegex: 0,
      minDepth: null,
      maxDepth: null,
    });
  } else if (settings().hideCommands && all.regex[at].findRegex !== UPDATE_PATTERN) {
    // Saved by an earlier version: what a reply's updates look like grew (the pass's blocks).
    all.regex[at].findRegex = UPDATE_PATTERN;
  } else if (!settings().hideCommands && at >= 0) {
    all.regex.splice(at, 1);
  } else {
    return false;
  }
  context().saveSettingsDebounced();
  return true;
}

const DRAWER = `
<div class="statecraft-settings">
  <div class="inline-drawer">
    <div class="inline-drawer-toggle inline-drawer-header">
      <b>statecraft</b>
      <div class="inline-drawer-icon fa-solid fa-circle-chevron-down down"></div>
    </div>
    <div class="inline-drawer-content">
      <label class="checkbox_label"><input id="statecraft_enabled" type="checkbox"> <span>Keep each chat's state in statecraft</span></label>
      <div id="statecraft_connection" class="statecraft-note"></div>
      <label class="checkbox_label"><input id="statecraft_another" type="checkbox"> <span>Use another server (another machine, or PostgreSQL for a hosted site) instead of SillyTavern's server plugin</span></label>
      <div id="statecraft_server_fields">
        <label for="statecraft_url">Server URL</label>
        <input id="statecraft_url" class="text_pole" type="text" placeholder="http://127.0.0.1:8765">
        <label for="statecraft_token">Token (only for a server started with --token)</label>
        <input id="statecraft_token" class="text_pole" type="password" autocomplete="off">
      </div>
      <div class="flex-container">
        <div id="statecraft_test" class="menu_button menu_button_icon">Test connection</div>
        <div id="statecraft_resync" class="menu_button menu_button_icon">Sync now</div>
      </div>
      <div id="statecraft_test_result" class="statecraft-note"></div>
      <label class="checkbox_label"><input id="statecraft_hide" type="checkbox"> <span>Hide update commands in the chat (display only)</span></label>
      <label class="checkbox_label"><input id="statecraft_mvu" type="checkbox"> <span>Write MVU variables on the message (status bars)</span></label>
      <label class="checkbox_label"><input id="statecraft_badge" type="checkbox"> <span>Badge with the last reply's changes</span></label>
      <label class="checkbox_label"><input id="statecraft_quiet" type="checkbox"> <span>State in quiet generations too</span></label>
      <label for="statecraft_depth">Prompt depth (messages from the end)</label>
      <input id="statecraft_depth" class="text_pole" type="number" min="0" max="100">
      <hr>
      <div id="statecraft_card_update" class="statecraft-card-update" style="display:none">
        <b>This chat's card changed</b>
        <div id="statecraft_card_changes" class="statecraft-note"></div>
        <label class="checkbox_label"><input id="statecraft_card_remove" type="checkbox"> <span>Also remove the keys the card dropped</span></label>
        <div id="statecraft_card_take" class="menu_button menu_button_icon">Update this chat's game</div>
      </div>
      <div id="statecraft_card_check" class="menu_button menu_button_icon">Check the card for changes</div>
      <div id="statecraft_card_update_result" class="statecraft-note"></div>
      <b>State</b> <span id="statecraft_game" class="statecraft-note"></span>
      <a id="statecraft_inspector" target="_blank" rel="noopener" style="display:none">open in the inspector</a>
      <div id="statecraft_status" class="statecraft-note"></div>
      <pre id="statecraft_state" class="statecraft-state"></pre>
      <hr>
      <b>This character's game</b>
      <div id="statecraft_source" class="statecraft-note"></div>
      <label for="statecraft_initial">Initial state (JSON; empty: from the card's [InitVar] entries, or {})</label>
      <textarea id="statecraft_initial" class="text_pole textarea_compact" rows="4"></textarea>
      <label for="statecraft_schema">Schema (JSON Schema, optional)</label>
      <textarea id="statecraft_schema" class="text_pole textarea_compact" rows="3"></textarea>
      <label for="statecraft_scripts">Scripts (JSON: {"name.lua": "source"}, optional)</label>
      <textarea id="statecraft_scripts" class="text_pole textarea_compact" rows="3"></textarea>
      <label for="statecraft_profile">Rules</label>
      <select id="statecraft_profile" class="text_pole">
        <option value="">default (strict; mvu for an [InitVar] card)</option>
        <option value="strict">strict</option>
        <option value="mvu">mvu</option>
        <option value="mvu-zod">mvu-zod</option>
      </select>
      <div id="statecraft_save_card" class="menu_button menu_button_icon">Save with the card</div>
      <div id="statecraft_card_result" class="statecraft-note"></div>
    </div>
  </div>
</div>`;

function bindSettings() {
  const $ = globalThis.jQuery;
  $("#extensions_settings2").append(DRAWER);
  bindPassDrawer(pass, { $, into: $(".statecraft-settings .inline-drawer-content").first(), save: () => context().saveSettingsDebounced(), lastReply: () => lastReplyIndex(context().chat) });
  const s = settings();
  const save = () => context().saveSettingsDebounced();
  $("#statecraft_enabled").prop("checked", s.enabled).on("change", function () {
    settings().enabled = this.checked;
    save();
    if (!this.checked) context().setExtensionPrompt(PROMPT_KEY, "", 1, 0);
    keeper.sync();
  });
  $("#statecraft_another").prop("checked", Boolean(s.url)).on("change", function () {
    if (!this.checked) {
      // Back to the plugin: the other server's address is forgotten.
      settings().url = "";
      $("#statecraft_url").val("");
      save();
      start();
    }
    showConnection();
  });
  $("#statecraft_url").val(s.url).on("change", function () {
    settings().url = String(this.value).trim().replace(/\/+$/, "");
    save();
    start();
    showConnection();
  });
  $("#statecraft_token").val(s.token).on("change", function () {
    settings().token = String(this.value).trim();
    save();
    start();
  });
  $("#statecraft_hide").prop("checked", s.hideCommands).on("change", async function () {
    settings().hideCommands = this.checked;
    save();
    if (applyHiding()) await context().reloadCurrentChat();
  });
  $("#statecraft_mvu").prop("checked", s.mvuVariables).on("change", function () {
    settings().mvuVariables = this.checked;
    save();
  });
  $("#statecraft_badge").prop("checked", s.badge).on("change", function () {
    settings().badge = this.checked;
    save();
    if (!this.checked) $(".statecraft-badge").remove();
  });
  $("#statecraft_quiet").prop("checked", s.quiet).on("change", function () {
    settings().quiet = this.checked;
    save();
  });
  $("#statecraft_depth").val(s.depth).on("change", function () {
    settings().depth = Math.max(0, Number(this.value) || 0);
    save();
  });
  $("#statecraft_test").on("click", async () => {
    $("#statecraft_test_result").text("testing…").removeClass("ok bad");
    const result = viaPlugin()
      ? await testPlugin(makeClient(), { repository: await repositoryUrl() })
      : await testConnection(makeClient(), { origin: origin(), pageProtocol: globalThis.location?.protocol });
    $("#statecraft_test_result").text(result.message).toggleClass("ok", result.ok).toggleClass("bad", !result.ok);
    if (result.ok) keeper.sync();
  });
  showConnection();
  $("#statecraft_resync").on("click", () => keeper.sync());
  $("#statecraft_save_card").on("click", saveCharacterSource);
  $("#statecraft_card_check").on("click", () => checkCard({ force: true }));
  $("#statecraft_card_take").on("click", takeCard);
}

/**
 * Says which server the extension uses, and shows the other server's fields only when one is set
 * or asked for. Through the plugin, its health says whether it runs.
 */
async function showConnection() {
  const $ = globalThis.jQuery;
  const another = $("#statecraft_another").prop("checked");
  $("#statecraft_server_fields").toggle(another);
  if (!viaPlugin()) {
    $("#statecraft_connection").text(`using the server at ${settings().url}`);
    return;
  }
  $("#statecraft_connection").text("connecting through SillyTavern's server plugin…");
  const result = await testPlugin(makeClient(), { repository: await repositoryUrl() });
  if (viaPlugin()) $("#statecraft_connection").text(result.ok ? "connected through SillyTavern's server plugin" : result.message).toggleClass("bad", !result.ok);
}

/** Fills the per-character fields from the open chat's character. */
async function showCharacterSource() {
  const $ = globalThis.jQuery;
  const { character, source } = await sourceCharacter().catch(() => ({ character: null, source: null }));
  const own = character?.data?.extensions?.[NAME] ?? {};
  $("#statecraft_initial").val(own.state === undefined ? "" : JSON.stringify(own.state, null, 2));
  $("#statecraft_schema").val(own.schema === undefined || own.schema === null ? "" : JSON.stringify(own.schema, null, 2));
  $("#statecraft_scripts").val(own.scripts ? JSON.stringify(own.scripts, null, 2) : "");
  $("#statecraft_profile").val(own.profile ?? "");
  $("#statecraft_source").text(character ? `${character.name}: new chats start from ${source.from}` : "no character open");
}

async function saveCharacterSource() {
  const $ = globalThis.jQuery;
  const ctx = context();
  const { character } = await sourceCharacter();
  const id = ctx.characters.indexOf(character);
  if (!character || id < 0) {
    $("#statecraft_card_result").text("open a character's chat first");
    return;
  }
  const parse = (selector, what) => {
    const text = String($(selector).val()).trim();
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`${what} is not JSON: ${error.message}`);
    }
  };
  try {
    const value = {};
    const state = parse("#statecraft_initial", "the initial state");
    if (state !== undefined) value.state = state;
    const schema = parse("#statecraft_schema", "the schema");
    if (schema !== undefined) value.schema = schema;
    const scripts = parse("#statecraft_scripts", "the scripts");
    if (scripts !== undefined) value.scripts = scripts;
    const profile = String($("#statecraft_profile").val());
    if (profile) value.profile = profile;
    await ctx.writeExtensionField(id, NAME, value);
    $("#statecraft_card_result").text(`saved with ${character.name}'s card; new chats start from it`);
    showCharacterSource();
  } catch (error) {
    $("#statecraft_card_result").text(error.message);
  }
}

// Card updates (docs/mvu.md, "Card updates"): when the open chat's card has changed since its game
// was made (the fingerprint of its [InitVar] text or settings, which the game keeps), the drawer
// offers the new version, with what it would add, drop and reword, before anything changes; taken,
// it is one step on the chat's last reply, which the chat's later replies build on.

/** The offer shown (`{gameId, card, macros, change}`), and the game whose card was last compared. */
let cardOffer = null;
let cardChecked = null;

/** Compares the open chat's card with its game's (once per game unless `force`), and offers it. */
async function checkCard({ force = false, gameId } = {}) {
  if (!client || !settings().enabled) return;
  if (!force && gameId !== undefined && cardChecked === gameId) return;
  const current = await target();
  if (!current?.card) {
    showCardOffer(null);
    return;
  }
  if (!force && cardChecked === current.gameId) return;
  cardChecked = current.gameId;
  try {
    const change = await cardChange(client, current.gameId, current.card, current.macros);
    showCardOffer(change && { gameId: current.gameId, card: current.card, macros: current.macros, change });
    if (force) globalThis.jQuery("#statecraft_card_update_result").text(change ? "" : "the chat's game has this card already");
    if (change && !force) toast("info", "This chat's card changed since its game was made: the statecraft drawer offers the update.", "statecraft");
  } catch (error) {
    // A game not made yet (the chat's first sync makes it) is compared at that sync.
    cardChecked = null;
    if (force) globalThis.jQuery("#statecraft_card_update_result").text(describeError(error, { origin: origin() }));
  }
}

function showCardOffer(offer) {
  const $ = globalThis.jQuery;
  cardOffer = offer;
  if (!offer) {
    $("#statecraft_card_update").hide();
    return;
  }
  const { added, dropped, descriptions } = offer.change;
  const list = (paths) => paths.map(pathText).join(", ");
  const lines = [
    added.length ? `adds ${list(added)}` : "adds nothing",
    dropped.length ? `drops ${list(dropped)} (kept unless removed below)` : "drops nothing",
  ];
  if (descriptions.length) lines.push(`rewords ${list(descriptions)}`);
  $("#statecraft_card_changes").text(`The update ${lines.join("; ")}. Every value the game holds is kept; undo takes it back.`);
  $("#statecraft_card_remove").prop("checked", false).prop("disabled", dropped.length === 0);
  $("#statecraft_card_update").show();
}

/** Takes the offered card as one step on the chat's last reply, then shows the chat's new state. */
async function takeCard() {
  const $ = globalThis.jQuery;
  const offer = cardOffer;
  if (!offer) return;
  try {
    // The game stands on what the chat shows before the card is taken there.
    await keeper.sync();
    const body = { card: offer.card, remove_dropped: $("#statecraft_card_remove").prop("checked"), label: "card update" };
    if (offer.macros) body.macros = offer.macros;
    const answer = await client.updateCard(offer.gameId, body);
    showCardOffer(null);
    const removed = answer.removed.length ? `, removed ${answer.removed.map(pathText).join(", ")}` : "";
    $("#statecraft_card_update_result").text(`updated: added ${answer.added.map(pathText).join(", ") || "nothing"}${removed}`);
    await keeper.sync();
  } catch (error) {
    $("#statecraft_card_update_result").text(describeError(error, { origin: origin() }));
  }
}

function registerSlashCommand() {
  const ctx = context();
  const { SlashCommandParser, SlashCommand, SlashCommandArgument, ARGUMENT_TYPE } = ctx;
  if (!SlashCommandParser?.addCommandObject) return;
  SlashCommandParser.addCommandObject(
    SlashCommand.fromProps({
      name: "state",
      callback: async (_args, path) => {
        const result = await keeper.sync();
        const current = result ?? last;
        if (!current) {
          toast("warning", keeper.failure ? explain(keeper.failure) : "no chat is open", "statecraft");
          return "";
        }
        const value = valueAt(current.state, path);
        const text = value === undefined ? "" : JSON.stringify(value, null, 2);
        toast("info", value === undefined ? `nothing at ${path}` : text, `statecraft: ${String(path ?? "").trim() || "state"}`, { timeOut: 10000, escapeHtml: true });
        return text;
      },
      returns: "the state, or the value at the path, as JSON",
      unnamedArgumentList: [
        SlashCommandArgument.fromProps({ description: "a path: a.b[0] or a JSON Pointer", typeList: [ARGUMENT_TYPE.STRING], isRequired: false }),
      ],
      helpString: "Shows the chat's state kept by statecraft (or the value at a path) and returns it as JSON.",
    }),
  );
}

function bindEvents() {
  const { eventSource, eventTypes: events } = context();
  const sync = () => keeper?.sync();
  for (const name of [
    "MESSAGE_RECEIVED",
    "MESSAGE_EDITED",
    "MESSAGE_DELETED",
    "MESSAGE_SWIPED",
    "MESSAGE_SWIPE_DELETED",
    "MESSAGE_UPDATED",
    "CHAT_RENAMED",
    "CHAT_LOADED",
  ]) {
    if (events[name]) eventSource.on(events[name], sync);
  }
  eventSource.on(events.CHAT_CHANGED, (chatId) => {
    globalThis.jQuery(".statecraft-badge").remove();
    if (!chatId) {
      // "Close chat": no game, no state in prompts.
      last = null;
      context().setExtensionPrompt(PROMPT_KEY, "", 1, 0);
      globalThis.jQuery("#statecraft_state").text("");
      globalThis.jQuery("#statecraft_game").text("(no chat open)");
      globalThis.jQuery("#statecraft_inspector").hide();
    }
    showCharacterSource();
    cardChecked = null;
    showCardOffer(null);
    sync();
  });
  // Not GENERATION_STARTED: a slash command typed in the box starts a "generation" that the
  // command ends at once, without GENERATION_ENDED.
  eventSource.on(events.GENERATION_AFTER_COMMANDS, (type, _options, dryRun) => {
    if (!dryRun) keeper?.generationStarted(type);
  });
  eventSource.on(events.GENERATION_ENDED, () => keeper?.generationEnded());
  // An edited card or world book may change the open chat's card: compare it again.
  for (const name of ["CHARACTER_EDITED", "WORLDINFO_UPDATED"]) {
    if (events[name]) eventSource.on(events[name], () => {
      cardChecked = null;
      checkCard().catch(() => {});
    });
  }
  eventSource.on(events.GENERATION_STOPPED, () => keeper?.generationEnded());
  // A generation starts: the update pass notes the reply it replaces and waits (bounded) for a pass
  // still running (pass.js), then the state and view it builds on are fetched (view.js), before
  // SillyTavern expands the card's macros. SillyTavern awaits this listener.
  eventSource.on(events.GENERATION_AFTER_COMMANDS, async (type, _options, dryRun) => {
    if (dryRun) return;
    pass?.generationStarted(type, dryRun);
    if (pass && type !== "quiet") await pass.beforeGeneration(type);
    await view?.prepare(type);
  });
  eventSource.on(events.GENERATION_ENDED, () => view?.ended());
  eventSource.on(events.GENERATION_STOPPED, () => view?.ended({ stopped: true }));
  eventSource.on(events.GROUP_WRAPPER_STARTED, () => view?.groupWrapper(true));
  eventSource.on(events.GROUP_WRAPPER_FINISHED, () => view?.groupWrapper(false));
  eventSource.on(events.CHAT_CHANGED, () => view?.chatChanged());
  eventSource.on(events.WORLDINFO_ENTRIES_LOADED, (lore) => view?.entriesLoaded(lore));
  for (const name of ["CHAT_CHANGED", "WORLDINFO_UPDATED"]) eventSource.on(events[name], () => view?.fillWorlds().catch(() => {}));
  // The update pass: after a real generation that left a new or changed reply (pass.js).
  // Not awaited: SillyTavern awaits a listener's promise, and the pass waits for the generation's end.
  for (const name of ["GENERATION_ENDED", "MESSAGE_RECEIVED"]) {
    eventSource.on(events[name], () => {
      pass?.generationEnded();
    });
  }
  eventSource.on(events.CHAT_CHANGED, () => pass && showPass(pass, globalThis.jQuery));
  // A reply left without an update keeps its badge through reloads, swipes and older messages shown.
  for (const name of ["CHAT_CHANGED", "MORE_MESSAGES_LOADED", "CHARACTER_MESSAGE_RENDERED", "MESSAGE_SWIPED", "MESSAGE_UPDATED", "MESSAGE_EDITED", "MESSAGE_DELETED"]) {
    if (events[name]) eventSource.on(events[name], () => showRefusals(context(), globalThis.jQuery));
  }
}

/**
 * manifest.json `hooks.delete`: stops the extension and removes what it added to SillyTavern's
 * settings (SillyTavern then deletes the folder, saves the settings and reloads the page).
 */
export function onDelete() {
  removed = true;
  keeper?.stop();
  context().setExtensionPrompt(PROMPT_KEY, "", 1, 0);
  const all = context().extensionSettings;
  if (Array.isArray(all.regex)) all.regex = all.regex.filter((script) => script.id !== REGEX_ID && script.id !== PROMPT_REGEX_ID);
  delete all[NAME];
  context().saveSettingsDebounced();
}

globalThis.statecraftGenerateInterceptor = interceptGeneration;

globalThis.jQuery?.(() => {
  settings();
  pass = new UpdatePass({
    context,
    client: () => client,
    keeper: () => keeper,
    target,
    settings,
    toast,
    onChange: () => showPass(pass, globalThis.jQuery),
  });
  view = new StateView({
    context,
    client: () => client,
    keeper: () => keeper,
    settings,
    enabled: () => settings().enabled,
    explain,
    // A chat whose updates come from a pass: the story prompt carries the state without the rules.
    mode: () => pass?.storyMode() ?? "reply",
  });
  view.registerMacros();
  bindSettings();
  view.bindDrawer();
  const prompts = applyPromptRegex(context().extensionSettings, true);
  if (prompts) context().saveSettingsDebounced();
  if (applyHiding()) context().reloadCurrentChat?.();
  registerSlashCommand();
  start();
  bindEvents();
  showCharacterSource();
  // The chat SillyTavern opened before the extension was ready.
  showRefusals(context(), globalThis.jQuery);
  // For tests and curious users: the live objects.
  globalThis.statecraftExtension = {
    keeper: () => keeper,
    client: () => client,
    last: () => last,
    view: () => view,
    pass: () => pass,
    /** Whose card makes the open chat's game, and from what: `{character, from}`. */
    source: async () => {
      const { character, source } = await sourceCharacter();
      return { character: character?.name ?? null, from: source.from };
    },
  };
});
