// The state the model sees (docs/state-view.md, "Macros and world info"): the budgeted view of the
// state in the prompt, `{{state}}` / `{{state::PATH}}` (and MVU's `{{get_message_variable::
// stat_data.PATH}}` for MVU cards) wherever SillyTavern expands macros, and world-info entries that
// follow the state (a condition on the entry, evaluated by the engine at the step a generation
// builds on, the entries whose condition holds activated with WORLDINFO_FORCE_ACTIVATE). index.js
// creates one `StateView` and calls it from its hooks; the functions above the class are its logic
// without SillyTavern, tested in test/view.test.js.

import { valueAt } from "./keeper.js";

/** The view's settings, beside index.js's: `budget` 0 is the whole state. */
export const VIEW_DEFAULTS = Object.freeze({ budget: 0, format: "json", messages: 4 });

/** Where an entry keeps its condition: `entry.extensions.statecraft.condition` (cards export it). */
export const CONDITION_KEY = "statecraft";

/**
 * The condition written in an entry's title (its `comment`) as `[state: CONDITION]`, or null. The
 * condition runs to the bracket that closes the tag: brackets inside it (`items[0]`, `in [1, 2]`)
 * and inside quoted strings are matched.
 */
export function conditionInComment(comment) {
  const text = String(comment ?? "");
  const tag = /\[state:/i.exec(text);
  if (!tag) return null;
  let depth = 1;
  let quote = null;
  for (let index = tag.index + tag[0].length; index < text.length; index += 1) {
    const char = text[index];
    if (quote) {
      if (char === "\\") index += 1;
      else if (char === quote) quote = null;
      continue;
    }
    if (char === '"' || char === "'") quote = char;
    else if (char === "[") depth += 1;
    else if (char === "]") {
      depth -= 1;
      if (depth === 0) return text.slice(tag.index + tag[0].length, index).trim() || null;
    }
  }
  return null;
}

/**
 * A world-info entry's condition on the state and where it is written (`{condition, from}`), or
 * null: `extensions.statecraft.condition` (what the drawer writes), else `[state: ...]` in its title.
 */
export function entryCondition(entry) {
  const stored = entry?.extensions?.[CONDITION_KEY]?.condition;
  if (typeof stored === "string" && stored.trim()) return { condition: stored.trim(), from: "extensions" };
  const written = conditionInComment(entry?.comment);
  return written ? { condition: written, from: "title" } : null;
}

/** The character offsets in `text` of the UTF-8 byte offsets `start` and `end` (the engine's). */
export function byteSpanToChars(text, start, end) {
  let bytes = 0;
  let from = null;
  let to = null;
  let index = 0;
  for (const char of text) {
    if (from === null && bytes >= start) from = index;
    if (to === null && bytes >= end) to = index;
    bytes += new TextEncoder().encode(char).length;
    index += char.length;
  }
  return { start: from ?? index, end: to ?? index };
}

/**
 * A bad condition's error for people: the condition, a line of carets under the bytes the engine
 * points at, and its message (`error`: the evaluate endpoint's `{code, message, start, end}`).
 */
export function pointAt(condition, error) {
  const { start, end } = byteSpanToChars(condition, error.start ?? 0, error.end ?? error.start ?? 0);
  const marks = `${" ".repeat(start)}${"^".repeat(Math.max(1, end - start))}`;
  return `${condition}\n${marks}\n${error.code ? `${error.code}: ` : ""}${error.message}`;
}

/** A value for a macro: strings as they are, anything else as JSON, nothing for a missing path. */
export function macroText(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * The path of `{{get_message_variable::PATH}}` in the state: MVU keeps the state under `stat_data`
 * (`stat_data.a.b`, `stat_data["a"]`, `stat_data[0]`), so the path after it; null for another
 * variable (`display_data`, a variable of the chat's own), which is not the state.
 */
export function mvuStatePath(path) {
  const text = String(path ?? "").trim();
  const match = /^stat_data(?=$|[.[])/.exec(text);
  if (!match) return null;
  return text.slice(match[0].length).replace(/^\./, "");
}

/** The last `count` texts of the chat a generation of `type` sees, oldest first (`pending`: the box's text about to be sent). */
export function recentMessages(chat, type, count, pending = "") {
  const messages = (Array.isArray(chat) ? chat : []).filter((message) => message && !(message.extra && message.extra.type));
  const shown = messages.slice();
  const last = shown[shown.length - 1];
  if (type === "swipe" && last && !last.is_user) shown.pop();
  const texts = shown.map((message) => String(message.mes ?? "")).filter((text) => text.trim() !== "");
  if (pending.trim() && (type === undefined || type === "normal")) texts.push(pending);
  return count > 0 ? texts.slice(-count) : [];
}

/** SillyTavern's string hash (its `getStringHash`, cyrb53), which world info keys entries by. */
export function stringHash(text, seed = 0) {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i += 1) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

const KNOWN_DECORATORS = ["@@activate", "@@dont_activate"];

/** SillyTavern's split of an entry's leading `@@decorator` lines from its content (its `parseDecorators`). */
function decorators(content) {
  if (!content.startsWith("@@")) return [[], content];
  const known = (line) => KNOWN_DECORATORS.some((name) => (line.startsWith("@@@") ? line.slice(1) : line).startsWith(name));
  const lines = content.split("\n");
  const found = [];
  let rest = content;
  let fallback = false;
  for (let i = 0; i < lines.length; i += 1) {
    if (lines[i].startsWith("@@")) {
      if (lines[i].startsWith("@@@") && !fallback) continue;
      if (known(lines[i])) {
        found.push(lines[i].startsWith("@@@") ? lines[i].slice(1) : lines[i]);
        fallback = false;
      } else {
        fallback = true;
      }
    } else {
      rest = lines.slice(i).join("\n");
      break;
    }
  }
  return [found, rest];
}

/**
 * An entry as loaded for a scan (`WORLDINFO_ENTRIES_LOADED`) made into the entry the scan itself
 * uses, as WORLDINFO_FORCE_ACTIVATE wants it: its decorators split from its content and its hash
 * (timed effects such as sticky key entries by it), exactly as SillyTavern 1.19 makes them.
 */
export function scanEntry(entry) {
  const [found, content] = decorators(String(entry.content ?? ""));
  const parsed = { ...entry, decorators: found, content };
  return { ...parsed, hash: stringHash(JSON.stringify(parsed)) };
}

/** An entry's name for people: its title, else its keys, else its uid. */
export function entryName(entry) {
  const title = String(entry?.comment ?? "").replace(/\[state:[^\n]*$/i, "").trim();
  if (title) return title;
  const keys = Array.isArray(entry?.key) ? entry.key.filter(Boolean) : [];
  return keys.length ? keys.join(", ") : `entry ${entry?.uid}`;
}

/**
 * The state the model sees, in SillyTavern: the prompt's view, the macros' values, the world info
 * that follows the state and the drawer's part for them. `options`: `context()` (SillyTavern's),
 * `client()` and `keeper()` (index.js's current ones), `settings()` (the extension's settings
 * object), `enabled()`, `explain(error)`, and `mode()`, the prompt's mode for a
 * generation of a type (`reply` unless another part of the extension says otherwise).
 */
export class StateView {
  /** The chat's state as last synced: `{gameId, step, state, view}` (`view`: the prompt answer measured at that step, if any). */
  #shown = null;
  /** The generation being made: `{type, ready, at, error, intercepted}`; `at` once its state is known. */
  #active = null;
  /** The generation whose world-info scan comes next (its record, as `#active`). */
  #scan = null;
  #ownMvuMacro = false;
  #mvu = false;
  /** Whether SillyTavern's group wrapper runs (a group's members' generations happen inside it). */
  #groupRunning = false;
  /** The entry whose condition the drawer shows (`world.uid`). */
  #editing = null;

  constructor({ context, client, keeper, settings, enabled = () => true, explain = (error) => String(error?.message ?? error), mode = () => "reply" }) {
    this.context = context;
    this.client = client;
    this.keeper = keeper;
    this.settings = settings;
    this.enabled = enabled;
    this.explain = explain;
    this.mode = mode;
    /** The last world-info decision, for the drawer and tests: `{gameId, step, entries: [{world, uid, name, condition, from, holds, error}]}`. */
    this.activation = null;
    /** The last view put in a prompt or measured: the prompt answer with `tavernTokens` beside it. */
    this.lastView = null;
  }

  options() {
    const s = this.settings();
    const budget = Math.max(0, Math.floor(Number(s.budget ?? VIEW_DEFAULTS.budget)) || 0);
    const format = s.format === "compact" ? "compact" : "json";
    const messages = Math.max(0, Math.floor(Number(s.messages ?? VIEW_DEFAULTS.messages)) || 0);
    return { budget, format, messages };
  }

  /** The state the macros read now: the generation's while one is made, else the chat's. */
  current() {
    return this.#active ? this.#active.at : this.#shown;
  }

  /** `{{state::PATH}}` and `{{state}}`. */
  stateMacro(path) {
    const at = this.current();
    if (!at) return "";
    if (path === undefined || String(path).trim() === "") {
      if (at.view && at.view.step === at.step) return at.view.state;
      return JSON.stringify(at.state, null, 2);
    }
    return macroText(valueAt(at.state, path));
  }

  /** MVU's `{{get_message_variable::stat_data.PATH}}`, on the state the generation builds on. */
  mvuMacro(path) {
    const at = this.current();
    const inState = mvuStatePath(path);
    if (!at || inState === null) return "";
    return macroText(valueAt(at.state, inState));
  }

  /** Registers `{{state}}` in SillyTavern's macro engine (1.19's default; the legacy one takes no arguments). */
  registerMacros() {
    const { macros } = this.context();
    if (!macros?.register) return;
    macros.register("state", {
      category: macros.category?.VARIABLE ?? "variable",
      unnamedArgs: [{ name: "path", optional: true, description: "a dotted path (player.hp, items[0]) or a JSON Pointer (/player/hp)", sampleValue: "player.hp" }],
      description: "statecraft: the value at PATH in the chat's state, at the step the reply being written builds on (strings as they are, anything else as JSON); without a path, the state as the prompt shows it (within the budget).",
      returns: "the value, or the state view",
      exampleUsage: ["{{state::player.hp}}", "{{state::/player/hp}}", "{{state}}"],
      handler: ({ unnamedArgs }) => this.stateMacro(unnamedArgs?.[0]),
    });
  }

  /**
   * For an MVU card's chat, `{{get_message_variable::stat_data.PATH}}` reads the same state, unless
   * another extension (Tavern Helper) has it; for any other chat, ours is removed again.
   */
  mvuCard(isMvu) {
    const { macros } = this.context();
    if (!macros?.registry || isMvu === this.#mvu) return;
    this.#mvu = isMvu;
    const name = "get_message_variable";
    if (isMvu && !macros.registry.hasMacro(name)) {
      macros.register(name, {
        category: macros.category?.VARIABLE ?? "variable",
        unnamedArgs: [{ name: "path", description: "stat_data.PATH: a value of the MVU state", sampleValue: "stat_data.hp" }],
        description: "statecraft, for MVU cards: the value at stat_data.PATH in the chat's state, at the step the reply being written builds on (as MVU's macro reads it).",
        handler: ({ unnamedArgs }) => this.mvuMacro(unnamedArgs?.[0]),
      });
      this.#ownMvuMacro = true;
    } else if (!isMvu && this.#ownMvuMacro) {
      macros.registry.unregisterMacro(name);
      this.#ownMvuMacro = false;
    }
  }

  /** After every sync (index.js's keeper): the chat's state when the chat moved, and the card's kind. */
  synced(result, target) {
    if (target) this.mvuCard(Boolean(target.mvu));
    if (!result?.moved) return;
    const view = this.#shown?.gameId === result.gameId && this.#shown?.step === result.step ? this.#shown.view : null;
    this.#shown = { gameId: result.gameId, step: result.step, state: result.state, view };
    // The sync after a generation: once its interceptor ran and SillyTavern no longer shows it
    // running, the generation is over. (Not the keeper's flag: a sync between the generation's start
    // and SillyTavern marking it running clears that, and the macros must keep the generation's state
    // until its prompt is assembled.)
    if (this.#active?.intercepted && !globalThis.document?.body?.dataset.generating) this.#active = null;
  }

  /** No chat, or another chat: nothing of the last one stays. */
  chatChanged() {
    this.#groupRunning = false;
    this.#shown = null;
    this.#active = null;
    this.#scan = null;
  }

  /**
   * GENERATION_ENDED / GENERATION_STOPPED (`stopped`): the generation is over. An end (not a stop)
   * that comes before this generation's interceptor ran is the last one's (in a group, the member
   * before ends while the next one starts).
   */
  ended({ stopped = false } = {}) {
    if (stopped || this.#active?.intercepted) this.#active = null;
  }

  /** SillyTavern's GROUP_WRAPPER_STARTED / GROUP_WRAPPER_FINISHED. */
  groupWrapper(running) {
    this.#groupRunning = running;
  }

  /**
   * A real generation of `type` starts (SillyTavern's GENERATION_AFTER_COMMANDS, before it expands
   * the card's fields): the state it builds on, and the view for its prompt, are fetched now, so
   * that every macro of this generation reads them. Never rejects; a failure is the interceptor's to
   * report.
   */
  async prepare(type) {
    if (!this.enabled() || !this.keeper()) return;
    // In a group chat SillyTavern's first call only starts the group's wrapper, which then generates
    // each member's reply in a call of its own: that one is prepared.
    if (this.context().groupId && !this.#groupRunning) return;
    const record = { type, at: null, error: null, intercepted: false };
    this.#active = record;
    record.ready = this.#prepare(type, record);
    await record.ready;
  }

  /**
   * The state first (the macros read it even if the view fails), then the view. A regeneration
   * removes the reply it replaces only after this event: until then it builds, as a new swipe does,
   * on the chat without its last reply (read without moving the game; the sync after it moves it).
   */
  async #prepare(type, record) {
    const path = type === "regenerate" ? "swipe" : type;
    try {
      const at = await this.keeper().stateForGeneration(path);
      if (!at) return null;
      record.at = { ...at, view: null };
      if (type !== "quiet" || this.settings().quiet) {
        const pending = String(globalThis.jQuery?.("#send_textarea").val() ?? "");
        const messages = recentMessages(this.context().chat, path, this.options().messages, pending);
        record.at.view = await this.fetchView(at, { messages, mode: this.mode(type) });
      }
    } catch (error) {
      record.error = error;
    }
    return record.at;
  }

  /** The per-game prompt at `at.step` with the drawer's budget and format; measured for the drawer. */
  async fetchView(at, { messages = [], mode = "reply" } = {}) {
    const { budget, format } = this.options();
    const body = { step: at.step, format, messages };
    if (budget > 0) body.budget = budget;
    if (mode && mode !== "reply") body.mode = mode;
    const answer = await this.client().request("POST", `/v1/games/${encodeURIComponent(at.gameId)}/prompt`, body);
    this.lastView = { ...answer, gameId: at.gameId, budget, format, tavernTokens: null };
    this.measure(this.lastView);
    if (this.#shown?.gameId === at.gameId && this.#shown.step === at.step) this.#shown.view = answer;
    return answer;
  }

  /** Counts a view with SillyTavern's own tokenizer (for the model in use) and shows both counts. */
  async measure(view) {
    const ctx = this.context();
    try {
      view.tavernTokens = await ctx.getTokenCountAsync(view.state);
      view.tokenizer = ctx.mainApi === "openai" && ctx.getTokenizerModel ? ctx.getTokenizerModel() : ctx.mainApi;
    } catch {
      view.tavernTokens = null;
    }
    if (view === this.lastView) this.showSize(view);
  }

  showSize(view) {
    const $ = globalThis.jQuery;
    if (!$) return;
    const elided = view.elided?.length ? `; ${view.elided.length} part${view.elided.length === 1 ? "" : "s"} left out (${view.elided.reduce((sum, part) => sum + part.tokens, 0)} tokens)` : "";
    const tavern = view.tavernTokens === null ? "SillyTavern's tokenizer did not answer" : `${view.tavernTokens} tokens by SillyTavern's tokenizer for ${view.tokenizer}`;
    const budget = view.budget > 0 ? `budget ${view.budget}` : "no budget";
    $("#statecraft_view_size")
      .text(`step ${view.step}, ${view.format}, ${budget}: the view is ${tavern}, ${view.tokens.state} by statecraft's estimate; the whole state ${view.tokens.full_state} by the estimate${elided}`)
      .attr("data-tavern", view.tavernTokens ?? "")
      .attr("data-estimate", view.tokens.state)
      .attr("data-full", view.tokens.full_state)
      .attr("data-step", view.step);
  }

  /**
   * The interceptor's part (SillyTavern's generate interceptor, after the card's fields were
   * expanded): the state and view prepared for this generation (prepared now if the event did not
   * come), and the next world-info scan is this generation's. Rejects when the server cannot answer.
   */
  async forGeneration(type) {
    let record = this.#active;
    if (!record || record.type !== type) {
      await this.prepare(type);
      record = this.#active;
    }
    this.#scan = record ?? null;
    if (!record) return null;
    record.intercepted = true;
    const at = await record.ready;
    if (record.error) throw record.error;
    if (at && !at.view && (type !== "quiet" || this.settings().quiet)) at.view = await this.fetchView(at, { mode: this.mode(type) });
    return at;
  }

  /**
   * SillyTavern's WORLDINFO_ENTRIES_LOADED, before every world-info scan, with the lists the scan
   * will read (each entry with its `world`): an entry with a condition is in the scan only when its
   * condition holds on the state the generation builds on, and then it is activated whatever its
   * keys say (WORLDINFO_FORCE_ACTIVATE); outside a real generation (dry runs, counting) such entries
   * are left out. A condition the engine cannot read keeps its entry out, and the drawer says why.
   */
  async entriesLoaded(lore) {
    if (!this.enabled() || !lore) return;
    const lists = [lore.globalLore, lore.characterLore, lore.chatLore, lore.personaLore].filter(Array.isArray);
    const found = [];
    for (const list of lists) {
      for (const entry of list) {
        const condition = entryCondition(entry);
        if (condition) found.push({ list, entry, ...condition });
      }
    }
    const scan = this.#scan;
    this.#scan = null;
    if (found.length === 0) {
      if (scan) this.report({ entries: [] });
      return;
    }
    let results = [];
    let at = null;
    let failure = null;
    if (scan) {
      at = await scan.ready;
      if (!at && scan.error) failure = this.explain(scan.error);
      if (at) {
        try {
          const answer = await this.client().request("POST", `/v1/games/${encodeURIComponent(at.gameId)}/evaluate`, {
            conditions: found.map((item) => item.condition),
            step: at.step,
          });
          results = answer.results;
        } catch (error) {
          failure = this.explain(error);
        }
      }
    }
    const activate = [];
    const entries = [];
    found.forEach((item, index) => {
      const result = results[index];
      const holds = result?.holds === true;
      if (holds) activate.push(scanEntry(item.entry));
      else item.list.splice(item.list.indexOf(item.entry), 1);
      entries.push({
        world: item.entry.world,
        uid: item.entry.uid,
        name: entryName(item.entry),
        condition: item.condition,
        from: item.from,
        holds,
        error: result?.error ?? (failure ? { message: failure } : null),
      });
    });
    if (!scan) return;
    if (activate.length) {
      const { eventSource, eventTypes } = this.context();
      await eventSource.emit(eventTypes.WORLDINFO_FORCE_ACTIVATE, activate);
    }
    this.report({ gameId: at?.gameId ?? null, step: at?.step ?? null, entries, failure });
  }

  /** Shows which entries the state switched on, and why (or why not). */
  report(activation) {
    this.activation = activation;
    const $ = globalThis.jQuery;
    if (!$) return;
    const list = $("#statecraft_wi_active").empty();
    if (activation.failure) list.append($("<div class='bad'></div>").text(`the conditions could not be evaluated: ${activation.failure}`));
    if (!activation.entries.length) {
      list.append($("<div></div>").text("no entry of the active world info has a condition on the state"));
      return;
    }
    list.append($("<div></div>").text(`at step ${activation.step}:`));
    for (const entry of activation.entries) {
      const line = $("<div class='statecraft-wi-line'></div>").attr("data-world", entry.world).attr("data-uid", entry.uid);
      if (entry.error && entry.error.start !== undefined) {
        line.addClass("bad").append($("<pre></pre>").text(`✗ ${entry.world} / ${entry.name}: the condition cannot be read\n${pointAt(entry.condition, entry.error)}`));
      } else if (entry.error) {
        line.addClass("bad").text(`✗ ${entry.world} / ${entry.name}: ${entry.error.message}`);
      } else {
        line.toggleClass("on", entry.holds).text(`${entry.holds ? "✓ in the prompt" : "– left out"}: ${entry.world} / ${entry.name}, because ${entry.condition} ${entry.holds ? "holds" : "does not hold"}`);
      }
      list.append(line);
    }
  }

  // The drawer's part.

  static DRAWER = `
      <hr>
      <div><b>The state the model sees</b></div>
      <label for="statecraft_budget">State budget (tokens; 0 = the whole state)</label>
      <input id="statecraft_budget" class="text_pole" type="number" min="0" step="50">
      <label for="statecraft_format">Format</label>
      <select id="statecraft_format" class="text_pole">
        <option value="json">JSON</option>
        <option value="compact">compact</option>
      </select>
      <div id="statecraft_measure" class="menu_button menu_button_icon">Measure the view</div>
      <div id="statecraft_view_size" class="statecraft-note"></div>
      <div><b>World info that follows the state</b></div>
      <div class="statecraft-note">An entry with a condition is in the prompt exactly when its condition holds on the state (its keys no longer decide). Write it here, or in the entry's title as [state: CONDITION].</div>
      <label for="statecraft_wi_world">World</label>
      <select id="statecraft_wi_world" class="text_pole"></select>
      <label for="statecraft_wi_entry">Entry</label>
      <select id="statecraft_wi_entry" class="text_pole"></select>
      <label for="statecraft_wi_condition">Condition (empty: none), e.g. hp &lt; 30 and not cursed</label>
      <input id="statecraft_wi_condition" class="text_pole" type="text" autocomplete="off" spellcheck="false">
      <div id="statecraft_wi_save" class="menu_button menu_button_icon">Save the condition</div>
      <pre id="statecraft_wi_result" class="statecraft-note"></pre>
      <div id="statecraft_wi_active" class="statecraft-note"></div>`;

  bindDrawer() {
    const $ = globalThis.jQuery;
    $(".statecraft-settings .inline-drawer-content").append(StateView.DRAWER);
    const { budget, format } = this.options();
    const save = () => this.context().saveSettingsDebounced();
    $("#statecraft_budget").val(budget).on("change", (event) => {
      this.settings().budget = Math.max(0, Math.floor(Number(event.target.value)) || 0);
      save();
    });
    $("#statecraft_format").val(format).on("change", (event) => {
      this.settings().format = event.target.value === "compact" ? "compact" : "json";
      save();
    });
    $("#statecraft_measure").on("click", () => this.measureShown());
    $("#statecraft_wi_world").on("change", () => this.fillEntries());
    $("#statecraft_wi_entry").on("change", () => this.showEntryCondition());
    $("#statecraft_wi_save").on("click", () => this.saveCondition());
    // SillyTavern lists a new world book only after its save's event: the list is read again
    // whenever the drawer is opened, and when the world list is opened.
    const refresh = () => this.fillWorlds().catch(() => {});
    $("#extensions-settings-button .drawer-toggle, .statecraft-settings .inline-drawer-toggle").on("click", refresh);
    $("#statecraft_wi_world").on("mousedown focus", () => this.fillWorlds({ entries: false }).catch(() => {}));
    refresh();
  }

  /** "Measure the view": the view of the chat's state as it stands, with the drawer's settings. */
  async measureShown() {
    const $ = globalThis.jQuery;
    const shown = this.#shown ?? (await this.keeper()?.sync());
    const at = this.#shown ?? (shown?.moved ? shown : null);
    if (!at) {
      $("#statecraft_view_size").text("open a chat first");
      return;
    }
    try {
      await this.fetchView(at, { messages: recentMessages(this.context().chat, "normal", this.options().messages) });
    } catch (error) {
      $("#statecraft_view_size").text(this.explain(error));
    }
  }

  /** The world books SillyTavern has, the open character's first. */
  fillWorlds({ entries = true } = {}) {
    const $ = globalThis.jQuery;
    const ctx = this.context();
    const names = ctx.getWorldInfoNames?.() ?? [];
    const own = ctx.characters?.[ctx.characterId]?.data?.extensions?.world;
    const ordered = own && names.includes(own) ? [own, ...names.filter((name) => name !== own)] : names;
    const select = $("#statecraft_wi_world");
    const before = select.val();
    const listed = select.find("option").map((_, option) => option.value).get();
    if (listed.join("\n") === ordered.join("\n")) return entries ? this.fillEntries() : Promise.resolve();
    select.empty();
    for (const name of ordered) select.append($("<option></option>").val(name).text(name));
    if (before && ordered.includes(before)) select.val(before);
    const same = select.val() === before;
    return entries || !same ? this.fillEntries() : Promise.resolve();
  }

  async fillEntries() {
    const $ = globalThis.jQuery;
    const name = $("#statecraft_wi_world").val();
    const select = $("#statecraft_wi_entry");
    const before = select.val();
    select.empty();
    if (!name) return this.showEntryCondition();
    const data = await this.context().loadWorldInfo(name);
    for (const entry of Object.values(data?.entries ?? {})) {
      const mark = entryCondition(entry) ? " ◆" : "";
      select.append($("<option></option>").val(String(entry.uid)).text(`${entry.uid}: ${entryName(entry)}${mark}`));
    }
    if (before && select.find(`option[value="${before}"]`).length) select.val(before);
    return this.showEntryCondition();
  }

  async showEntryCondition() {
    const $ = globalThis.jQuery;
    const found = await this.selectedEntry();
    const key = found ? `${found.name}.${found.entry.uid}` : null;
    // A refill of the same entry (after a save, or another edit of the book) keeps what is typed and said.
    if (key === this.#editing) return;
    this.#editing = key;
    const condition = found ? entryCondition(found.entry) : null;
    $("#statecraft_wi_condition").val(condition?.condition ?? "");
    $("#statecraft_wi_result").text(condition?.from === "title" ? "this condition is written in the entry's title; saving one here takes precedence" : "").removeClass("bad ok");
  }

  async selectedEntry() {
    const $ = globalThis.jQuery;
    const name = $("#statecraft_wi_world").val();
    const uid = $("#statecraft_wi_entry").val();
    if (!name || uid === null || uid === undefined || uid === "") return null;
    const data = await this.context().loadWorldInfo(name);
    const entry = data?.entries?.[uid];
    return entry ? { name, data, entry } : null;
  }

  /**
   * Checks the condition with the engine (at the open chat's step, when a chat is open) and saves it
   * on the entry (`extensions.statecraft.condition`); a condition the engine cannot read is shown
   * with its bytes pointed at, and not saved.
   */
  async saveCondition() {
    const $ = globalThis.jQuery;
    const result = $("#statecraft_wi_result").removeClass("bad ok");
    const found = await this.selectedEntry();
    if (!found) {
      result.text("pick a world and an entry first");
      return;
    }
    const condition = String($("#statecraft_wi_condition").val() ?? "").trim();
    let verdict = "";
    if (condition) {
      const at = this.#shown;
      if (at) {
        try {
          const answer = await this.client().request("POST", `/v1/games/${encodeURIComponent(at.gameId)}/evaluate`, { conditions: [condition], step: at.step });
          const [one] = answer.results;
          if (one.error) {
            result.addClass("bad").text(pointAt(condition, one.error));
            return;
          }
          verdict = ` (on the chat's state now it ${one.holds ? "holds" : "does not hold"})`;
        } catch (error) {
          result.addClass("bad").text(`not saved: the condition could not be checked: ${this.explain(error)}`);
          return;
        }
      } else {
        verdict = " (not checked: no chat is open)";
      }
    }
    const { name, data, entry } = found;
    const extensions = { ...(entry.extensions ?? {}) };
    if (condition) extensions[CONDITION_KEY] = { ...(extensions[CONDITION_KEY] ?? {}), condition };
    else delete extensions[CONDITION_KEY];
    entry.extensions = extensions;
    await this.context().saveWorldInfo(name, data, true);
    this.context().reloadWorldInfoEditor?.(name);
    result.addClass("ok").text(condition ? `saved${verdict}` : "the condition is removed");
    await this.fillEntries();
  }
}
