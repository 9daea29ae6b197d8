// State updates by a separate pass (clients/sillytavern/README.md, "State updates by a separate
// pass"): in a chat whose updates come from a pass, the story model writes prose only, and after each
// new reply (a new message, a swipe, a regeneration, a continue) the extension asks the model once
// more, outside the chat, for the one batch that reply implies: the rules for a pass, the state the
// reply builds on and the reply (the server's `POST /v1/games/{id}/prompt` with `mode: "pass"`),
// constrained by the game's pass schema (`GET /v1/games/{id}/schema`) as the backend best takes it.
// The answer is read by the server's lenient layer, checked against the game (a refusal is asked for
// once more with its feedback), and written into the reply's shown swipe in a `<statecraft>` block
// that the display hides and the extraction reads; the chat is saved and synced as usual, so swipes,
// edits of the block, deletions, branches and imports need nothing of their own.
//
// The pure pieces (the block, the choice of constraint, the answer's text, the path while a pass
// runs) are exported for test/pass.test.js; `UpdatePass` wires them to SillyTavern.

import { isReply, shownReplies } from "./keeper.js";

/** The tag of the block a pass writes into its reply. */
export const BLOCK_TAG = "statecraft";
/**
 * Every block of a text, with the blank lines before it (a reply has one; an edit may leave more).
 * What follows a block stays as it is: a continue writes after the block, its text starting with the
 * space or line it needs.
 */
const BLOCKS = /\s*<statecraft>[\s\S]*?<\/statecraft>/gi;
/** The block as SillyTavern's regex writes it: display-only hiding (index.js) and prompt-only removal. */
export const BLOCK_REGEX = "/<statecraft>[\\s\\S]*?<\\/statecraft>/gi";

/** The ways to constrain the pass: `auto` picks the first the backend takes. */
export const CONSTRAINTS = Object.freeze(["auto", "structured", "tool", "prompt"]);
export const MODES = Object.freeze(["reply", "pass"]);

/**
 * The chat completion sources whose answer SillyTavern 1.19 reads back as JSON when it sends a JSON
 * Schema (`extractJsonFromData`): structured output is there for these, and for no text completion
 * API in `generateRaw`.
 */
const STRUCTURED_SOURCES = new Set([
  "openai",
  "azure_openai",
  "openrouter",
  "custom",
  "claude",
  "makersuite",
  "vertexai",
  "mistralai",
  "deepseek",
  "groq",
  "cohere",
  "xai",
  "ai21",
  "perplexity",
  "pollinations",
  "aimlapi",
  "electronhub",
  "chutes",
  "zai",
]);

/** The reply's text without its update block(s). */
export function withoutBlock(text) {
  return String(text ?? "").replace(BLOCKS, "").trimEnd();
}

/** Whether a reply's text carries an update block. */
export function hasBlock(text) {
  return /<statecraft>[\s\S]*?<\/statecraft>/i.test(String(text ?? ""));
}

/** The reply's text with `batch` (an array of instructions) as its one update block, at its end. */
export function withBlock(text, batch) {
  return `${withoutBlock(text)}\n\n<${BLOCK_TAG}>\n${JSON.stringify({ instructions: batch })}\n</${BLOCK_TAG}>`;
}

/**
 * How the pass is constrained: `constraint` as set, or for `auto` structured output where the source
 * takes a JSON Schema, else a function tool where tool calling is on, else the schema in the prompt.
 */
export function passKind(constraint, { structured, tools }) {
  if (constraint === "structured" || constraint === "tool" || constraint === "prompt") return constraint;
  if (structured) return "structured";
  if (tools) return "tool";
  return "prompt";
}

/** Whether SillyTavern's API in use sends a JSON Schema as structured output. */
export function structuredSupported(mainApi, source) {
  return mainApi === "openai" && STRUCTURED_SOURCES.has(String(source ?? ""));
}

/**
 * The text of a pass's answer: a function tool's arguments (a string, or an object some sources
 * give), else the message's text. `name` is the tool's.
 */
export function answerText(kind, data, name) {
  if (typeof data === "string") return data;
  if (kind === "tool") {
    const message = data?.choices?.[0]?.message;
    const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
    const call = calls.find((candidate) => candidate?.function?.name === name) ?? calls[0];
    if (call?.function) {
      const args = call.function.arguments;
      return typeof args === "string" ? args : JSON.stringify(args ?? {});
    }
    const use = Array.isArray(data?.content) ? data.content.find((part) => part?.type === "tool_use") : null;
    if (use) return JSON.stringify(use.input ?? {});
    return String(message?.content ?? "");
  }
  const message = data?.choices?.[0]?.message;
  if (message) return String(message.content ?? "");
  return data === undefined || data === null ? "" : JSON.stringify(data);
}

/** The messages of a pass: its prompt, and for a second try the refused answer and the feedback. */
export function passMessages(prompt, retry) {
  const messages = [{ role: "user", content: prompt }];
  if (retry) {
    messages.push({ role: "assistant", content: retry.answer });
    messages.push({
      role: "user",
      content: `That update was refused, and nothing of it was applied:\n${retry.feedback}\nAnswer again with the one corrected JSON object {"instructions": [...]}.`,
    });
  }
  return messages;
}

/** The prompt's text in the "prompt" kind: the pass's rules, then the schema the answer must match. */
export function promptWithSchema(text, schema) {
  return `${text}\nThe object must be valid against this JSON Schema:\n\`\`\`json\n${JSON.stringify(schema)}\n\`\`\``;
}

/**
 * The chat as far as the game may follow it while passes run: up to the first reply whose pass has
 * not finished (`pending`, a set of message objects). Its state is not on the path yet.
 */
export function visibleChat(chat, pending) {
  if (!pending || pending.size === 0 || !Array.isArray(chat)) return chat;
  const at = chat.findIndex((message) => pending.has(message));
  return at < 0 ? chat : chat.slice(0, at);
}

/** What a reply is now, to tell whether a generation changed it: its place, swipe and text. */
export function replySignature(chat) {
  const messages = Array.isArray(chat) ? chat : [];
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (isReply(message)) return `${index}\u0000${message.swipe_id ?? 0}\u0000${message.mes ?? ""}`;
  }
  return "";
}

/** The generation types that make a new reply (SillyTavern's `type`; a new message has none or "normal"). */
export function makesReply(type) {
  return type === undefined || type === null || type === "" || ["normal", "swipe", "regenerate", "continue"].includes(type);
}

const elapsed = (start) => Math.round(performance.now() - start);

/**
 * The pass in SillyTavern. `context()` is SillyTavern's; `client()` and `keeper()` the extension's;
 * `target()` the open chat's game (`{gameId, macros, create}`); `settings()` the extension's settings
 * (`passMode`, `passConstraint`, `passWaitSeconds`); `toast(kind, text, title)`; `onChange()` after
 * anything the drawer shows changed.
 */
export class UpdatePass {
  #pending = new Map();
  #generation = null;
  /**
   * How many generations wait for passes now (`beforeGeneration`). SillyTavern runs one story
   * generation at a time, so while one waits every reply before it is final, whatever the page
   * shows: in a group chat the next member's generation starts before SillyTavern shows the last
   * one ended.
   */
  #generationsWaiting = 0;

  constructor({ context, client, keeper, target, settings, toast = () => {}, onChange = () => {}, now = () => performance.now() }) {
    this.context = context;
    this.client = client;
    this.keeper = keeper;
    this.target = target;
    this.settings = settings;
    this.toast = toast;
    this.onChange = onChange;
    this.now = now;
    /** Every pass run: `{index, swipe, kind, requests, tokens, ms, outcome, feedback}`, newest last. */
    this.runs = [];
    /** What the last generation did about a pass still running: a sentence, or "". */
    this.waitNote = "";
  }

  /** The open chat's mode: its own choice (chat metadata), else the settings' default. */
  mode() {
    const own = this.context().chatMetadata?.statecraft?.pass;
    if (MODES.includes(own)) return own;
    return MODES.includes(this.settings().passMode) ? this.settings().passMode : "reply";
  }

  /** Sets the open chat's own mode (`null`: back to the default), kept in its metadata. */
  setChatMode(mode) {
    const ctx = this.context();
    if (!ctx.chatId || !ctx.chatMetadata) return;
    ctx.chatMetadata.statecraft ??= {};
    if (MODES.includes(mode)) ctx.chatMetadata.statecraft.pass = mode;
    else delete ctx.chatMetadata.statecraft.pass;
    ctx.saveMetadataDebounced?.();
  }

  /** The prompt's mode for the story: in a pass chat the state without command rules. */
  storyMode() {
    return this.mode() === "pass" ? "state" : "reply";
  }

  /** How the next pass is constrained, for the API in use. */
  kind() {
    const ctx = this.context();
    const source = ctx.chatCompletionSettings?.chat_completion_source;
    const tools = Boolean(ctx.mainApi === "openai" && ctx.isToolCallingSupported?.());
    return passKind(this.settings().passConstraint ?? "auto", { structured: structuredSupported(ctx.mainApi, source), tools });
  }

  /** The chat as far as the game may follow it now (see `visibleChat`). */
  visible(chat) {
    return visibleChat(chat, new Set(this.#pending.keys()));
  }

  /** Whether a pass is running. */
  get running() {
    return this.#pending.size > 0;
  }

  /** A generation started (SillyTavern's GENERATION_AFTER_COMMANDS): notes what its reply was. */
  generationStarted(type, dryRun) {
    if (dryRun) return;
    if (!makesReply(type)) {
      this.#generation = null;
      return;
    }
    const ctx = this.context();
    // A swipe or regeneration of a reply whose pass runs replaces that reply: its pass is moot.
    if (type === "swipe" || type === "regenerate") {
      const last = ctx.chat?.[ctx.chat.length - 1];
      if (last && this.#pending.has(last)) this.#pending.get(last).moot = true;
    }
    this.#generation = { type: type || "normal", before: replySignature(ctx.chat), chatId: ctx.chatId };
  }

  /**
   * A generation ended or its reply arrived (GENERATION_ENDED, MESSAGE_RECEIVED): when it was a real
   * one that left a new or changed reply, and the chat's updates come from a pass, the pass runs for
   * that reply, marked pending at once so that no sync puts it on the path before its update is
   * written. Until the reply has changed, the generation stays noted: SillyTavern may say a
   * generation ended before its reply is in the chat (a dry run's end while it runs).
   */
  generationEnded() {
    const generation = this.#generation;
    const ctx = this.context();
    if (!generation) return null;
    if (generation.chatId !== ctx.chatId || !this.settings().enabled || this.mode() !== "pass") {
      this.#generation = null;
      return null;
    }
    if (replySignature(ctx.chat) === generation.before) return null;
    this.#generation = null;
    const index = lastReplyIndex(ctx.chat);
    if (index < 0) return null;
    return this.run(index, { type: generation.type });
  }

  /**
   * Before a generation's state is read: waits (at most `passWaitSeconds`) for a pass still running,
   * unless the generation replaces that very reply. Says in `waitNote` what happened.
   */
  async beforeGeneration(type) {
    const ctx = this.context();
    const entries = [...this.#pending.entries()].filter(([, entry]) => !entry.moot);
    if (entries.length === 0) return "";
    const seconds = Math.max(0, Number(this.settings().passWaitSeconds ?? 30));
    const start = this.now();
    const all = Promise.all(entries.map(([, entry]) => entry.promise.catch(() => null)));
    let timer;
    this.#generationsWaiting += 1;
    const timedOut = await Promise.race([all.then(() => false), new Promise((resolve) => (timer = setTimeout(() => resolve(true), seconds * 1000)))]);
    this.#generationsWaiting -= 1;
    clearTimeout(timer);
    const which = entries.map(([message]) => `reply ${ctx.chat.indexOf(message) + 1}`).join(", ");
    this.waitNote = timedOut
      ? `the ${type || "normal"} generation went without the update of ${which}: its pass was still running after ${seconds} s`
      : `the ${type || "normal"} generation waited ${((this.now() - start) / 1000).toFixed(1)} s for the update of ${which}`;
    this.onChange();
    return this.waitNote;
  }

  /**
   * Runs the pass for the reply at `index` (its shown swipe) and writes its batch back. Resolves with
   * the run's record; never rejects (a failure is toasted and recorded).
   */
  run(index, { type = "again" } = {}) {
    const ctx = this.context();
    const message = ctx.chat?.[index];
    if (!isReply(message)) return Promise.resolve(null);
    const previous = this.#pending.get(message);
    if (previous) previous.moot = true;
    const entry = { moot: false, promise: null };
    entry.promise = this.#run(message, index, type, entry).finally(() => {
      if (this.#pending.get(message) === entry) this.#pending.delete(message);
    });
    this.#pending.set(message, entry);
    this.onChange();
    return entry.promise.then(async (record) => {
      // Whatever the outcome, the chat's game follows what it shows now.
      await this.keeper()?.sync();
      showRefusals(this.context(), globalThis.jQuery);
      this.onChange();
      return record;
    });
  }

  /** The last run, for the drawer. */
  get last() {
    return this.runs[this.runs.length - 1] ?? null;
  }

  async #run(message, index, type, entry) {
    // The reply is final once SillyTavern no longer shows a generation running (a streamed reply
    // arrives before its generation ends).
    await this.#idle();
    const ctx = this.context();
    const chatId = ctx.chatId;
    index = ctx.chat.indexOf(message);
    const swipe = Number.isInteger(message.swipe_id) ? message.swipe_id : 0;
    const shown = String(message.mes ?? "");
    const reply = withoutBlock(shown);
    const record = { index, swipe, type, kind: this.kind(), requests: 0, tokens: 0, ms: 0, outcome: "pending", feedback: "" };
    const start = this.now();
    if (index < 0) {
      record.outcome = "moot";
      return this.#finish(record, start);
    }
    try {
      const target = await this.target();
      if (!target) throw new Error("no chat is open");
      const client = this.client();
      const before = shownReplies(ctx.chat.slice(0, index));
      const base = await this.#sync(client, target, before);
      const messages = ctx.chat
        .slice(Math.max(0, index - 4), index)
        .filter((candidate) => !candidate.is_system)
        .map((candidate) => withoutBlock(candidate.mes));
      const prompt = await client.gamePrompt(target.gameId, { mode: "pass", step: base.step, reply, messages });
      const schemas = await this.#schema(client, target.gameId);
      let retry = null;
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const text = record.kind === "prompt" ? promptWithSchema(prompt.text, schemas.pass) : prompt.text;
        const asked = passMessages(text, retry);
        record.tokens = await this.#count(asked);
        record.requests += 1;
        const answer = await this.#ask(record.kind, asked, schemas);
        if (entry.moot || !this.#same(message, chatId, shown)) {
          record.outcome = "moot";
          return this.#finish(record, start);
        }
        const extracted = await client.extract(answer, { state: base.state, macros: target.macros });
        const batch = Array.isArray(extracted.batch) ? extracted.batch : null;
        let feedback = "";
        if (!batch) {
          feedback = extracted.feedback || "no update was found in the answer: answer with one JSON object {\"instructions\": [...]}";
        } else {
          const checked = await this.#sync(client, target, [...before, withBlock(reply, batch)], true);
          feedback = checked.feedback;
        }
        if (!feedback) {
          message.mes = withBlock(shown, batch);
          if (Array.isArray(message.swipes) && message.swipes.length > swipe) message.swipes[swipe] = message.mes;
          markRefusal(message, swipe, null);
          await ctx.saveChat();
          ctx.updateMessageBlock?.(ctx.chat.indexOf(message), message);
          record.outcome = batch.length === 0 ? "no changes" : `${batch.length} instruction${batch.length === 1 ? "" : "s"}`;
          record.batch = batch;
          return this.#finish(record, start);
        }
        record.feedback = feedback;
        retry = { answer, feedback };
      }
      record.outcome = "refused";
      if (this.#same(message, chatId, shown)) {
        markRefusal(message, swipe, record.feedback);
        await ctx.saveChat();
      }
      this.toast("warning", `Reply ${index + 1} was left without an update: the model's update was refused twice. The last refusal:\n${record.feedback}`, "statecraft: update refused");
      return this.#finish(record, start);
    } catch (error) {
      record.outcome = "failed";
      record.feedback = String(error?.message ?? error);
      this.toast("error", `Reply ${index + 1}'s update could not be asked for: ${record.feedback}`, "statecraft: update pass");
      return this.#finish(record, start);
    }
  }

  /**
   * Waits (at most two minutes) until the reply is final: SillyTavern shows no generation running,
   * or the next generation waits for this pass.
   */
  async #idle() {
    const busy = () => Boolean(globalThis.document?.body?.dataset?.generating) && this.#generationsWaiting === 0;
    for (let waited = 0; busy() && waited < 120000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  #finish(record, start) {
    record.ms = Math.round(this.now() - start);
    this.runs.push(record);
    if (this.runs.length > 200) this.runs.shift();
    return record;
  }

  /** Whether the reply is still what the pass was asked for (same chat, same message, same text). */
  #same(message, chatId, shown) {
    const ctx = this.context();
    return ctx.chatId === chatId && ctx.chat.includes(message) && String(message.mes ?? "") === shown;
  }

  /**
   * The state after `replies` without moving the game (`{state, step, feedback}`); with `last`, the
   * refusal of the last reply ("" when it was applied).
   */
  async #sync(client, target, replies, last = false) {
    const options = { move: false, macros: target.macros };
    let answer;
    try {
      answer = await client.sync(target.gameId, replies, options);
    } catch (error) {
      if (error?.kind !== "unknown_game") throw error;
      const create = typeof target.create === "function" ? await target.create() : target.create;
      answer = await client.sync(target.gameId, replies, { ...options, create });
    }
    let feedback = "";
    if (last) {
      const applied = answer.applied.find((entry) => entry.index === replies.length - 1);
      if (applied) feedback = applied.committed ? "" : applied.feedback || "the update was refused";
      else feedback = (await this.#stepFeedback(client, target.gameId, answer.step)) ?? "";
    }
    return { state: answer.state, step: answer.step, feedback };
  }

  /** The refusal recorded at a step that existed before (the same reply text checked again). */
  async #stepFeedback(client, gameId, step) {
    const log = await client.log(gameId);
    const entry = log?.steps?.find?.((candidate) => candidate.id === step);
    return entry?.refusal ?? "";
  }

  async #schema(client, gameId) {
    // The schema follows the game's card, which an update may change: fetched for every pass.
    return client.gameSchema(gameId);
  }

  async #count(messages) {
    const ctx = this.context();
    const text = messages.map((message) => message.content).join("\n");
    try {
      if (ctx.getTokenCountAsync) return await ctx.getTokenCountAsync(text);
    } catch {
      // Fall through to the estimate below.
    }
    return Math.ceil(text.length / 4);
  }

  /** Asks the model in the way `kind` says; → the answer's text. */
  async #ask(kind, messages, schemas) {
    const ctx = this.context();
    const name = schemas.name || "statecraft_update";
    if (kind === "structured") {
      const answer = await ctx.generateRawData({
        prompt: messages,
        jsonSchema: { name, description: "The changes the story reply makes to the state", value: schemas.pass, strict: true, returnInvalid: true },
      });
      return answerText(kind, answer, name);
    }
    if (kind === "tool") {
      const { eventSource, eventTypes } = ctx;
      const first = messages[0];
      // SillyTavern offers tools only in its own generations: this request gets the one tool, and
      // no other request does.
      const addTool = (data) => {
        const ours = Array.isArray(data?.messages) && data.messages.some((candidate) => candidate === first || candidate?.content === first.content);
        if (!ours) return;
        data.tools = [{ type: "function", function: { name, description: "Record the changes the story reply makes to the state", parameters: schemas.pass } }];
        data.tool_choice = { type: "function", function: { name } };
      };
      eventSource.on(eventTypes.CHAT_COMPLETION_SETTINGS_READY, addTool);
      try {
        const data = await ctx.generateRawData({ prompt: messages });
        return answerText(kind, data, name);
      } finally {
        eventSource.removeListener(eventTypes.CHAT_COMPLETION_SETTINGS_READY, addTool);
      }
    }
    return String(await ctx.generateRaw({ prompt: messages }));
  }
}

/** Where a swipe's refusal is kept: in its `extra`, saved with the chat. */
const REFUSAL = "statecraft_refused";

/**
 * Records on the reply's swipe `swipe` that its update was refused twice, with the last refusal
 * (`null`: it was not, or no longer is). SillyTavern keeps the shown swipe's `extra` on the message
 * and each swipe's in `swipe_info`: both are set, so that the mark follows swipes and reloads.
 */
function markRefusal(message, swipe, feedback) {
  const extras = [message.extra ??= {}];
  const info = message.swipe_info?.[swipe];
  if (info && typeof info === "object") extras.push((info.extra ??= {}));
  for (const extra of extras) {
    if (feedback === null) delete extra[REFUSAL];
    else extra[REFUSAL] = feedback;
  }
}

/**
 * Puts the "⚠ no update" badge on every reply on screen whose shown swipe was left without an update
 * (the pass refused twice, and no block has been written into it since), and takes it off the rest.
 */
export function showRefusals(ctx, $) {
  if (!$ || !Array.isArray(ctx?.chat)) return;
  $("#chat .mes").each((_, element) => {
    const node = $(element);
    const message = ctx.chat[Number(node.attr("mesid"))];
    const feedback = message?.extra?.[REFUSAL];
    const refused = typeof feedback === "string" && isReply(message) && withoutBlock(message.mes) === String(message.mes ?? "").trimEnd();
    node.find(".statecraft-pass-refused").remove();
    if (!refused) return;
    node
      .find(".mes_block .ch_name")
      .first()
      .append($("<span class='statecraft-pass-refused'></span>").text("⚠ no update").attr("title", `The update pass was refused twice:\n${feedback}`));
  });
}

function lastReplyIndex(chat) {
  for (let index = chat.length - 1; index >= 0; index -= 1) {
    if (isReply(chat[index])) return index;
  }
  return -1;
}

/** The drawer's part for the pass (index.js puts it in the extension's drawer). */
export const PASS_DRAWER = `
<div class="statecraft-pass">
  <b>State updates</b>
  <label for="statecraft_pass_mode">In this chat</label>
  <select id="statecraft_pass_mode" class="text_pole">
    <option value="">the default</option>
    <option value="reply">in the reply</option>
    <option value="pass">separate pass</option>
  </select>
  <label for="statecraft_pass_default">Default for chats</label>
  <select id="statecraft_pass_default" class="text_pole">
    <option value="reply">in the reply</option>
    <option value="pass">separate pass</option>
  </select>
  <label for="statecraft_pass_constraint">The pass's answer is constrained by</label>
  <select id="statecraft_pass_constraint" class="text_pole">
    <option value="auto">automatic (structured output, else a function tool, else the schema in the prompt)</option>
    <option value="structured">structured output (JSON Schema)</option>
    <option value="tool">a function tool</option>
    <option value="prompt">the schema in the prompt</option>
  </select>
  <label for="statecraft_pass_wait">A generation waits for a running pass at most (seconds)</label>
  <input id="statecraft_pass_wait" class="text_pole" type="number" min="0" max="600">
  <div id="statecraft_pass_again" class="menu_button menu_button_icon">Run the update again for the last reply</div>
  <div id="statecraft_pass_status" class="statecraft-note"></div>
  <div id="statecraft_pass_wait_note" class="statecraft-note"></div>
</div>`;

/** The drawer's sentence for a pass run. */
export function describeRun(record, mode) {
  if (!record) return mode === "pass" ? "no update pass has run yet in this session" : "updates come in the reply";
  const how = { structured: "structured output", tool: "a function tool", prompt: "the schema in the prompt" }[record.kind] ?? record.kind;
  const tries = record.requests === 1 ? "1 request" : `${record.requests} requests`;
  const what = record.outcome === "refused" ? `refused twice, left without an update: ${record.feedback}` : record.outcome === "failed" ? `failed: ${record.feedback}` : record.outcome;
  return `last pass: reply ${record.index + 1} (swipe ${record.swipe + 1}) by ${how}, ${tries}, prompt ${record.tokens} tokens, ${(record.ms / 1000).toFixed(1)} s: ${what}`;
}

/** The id of the regex script that keeps update blocks out of the story's prompt. */
export const PROMPT_REGEX_ID = "statecraft-pass-blocks-out-of-prompts";

/**
 * SillyTavern's regex, prompt only: the story model never reads the update blocks of earlier
 * replies (its prompt carries the state instead), so it is not led to write such blocks itself.
 * → whether the settings changed.
 */
export function applyPromptRegex(extensionSettings, on = true) {
  extensionSettings.regex = Array.isArray(extensionSettings.regex) ? extensionSettings.regex : [];
  const at = extensionSettings.regex.findIndex((script) => script.id === PROMPT_REGEX_ID);
  if (on && at < 0) {
    extensionSettings.regex.push({
      id: PROMPT_REGEX_ID,
      scriptName: "statecraft: update blocks out of the story prompt",
      findRegex: BLOCK_REGEX,
      replaceString: "",
      trimStrings: [],
      placement: [2],
      disabled: false,
      markdownOnly: false,
      promptOnly: true,
      runOnEdit: true,
      substituteRegex: 0,
      minDepth: null,
      maxDepth: null,
    });
    return true;
  }
  if (!on && at >= 0) {
    extensionSettings.regex.splice(at, 1);
    return true;
  }
  return false;
}

/**
 * Puts the pass's part into the extension's drawer (`into`, a jQuery element) and binds it: the
 * chat's mode (kept in its metadata), the default, the constraint, the wait, and "run again".
 * `save()` saves the settings; `lastReply()` the index of the chat's last reply.
 */
export function bindPassDrawer(pass, { $, into, save, lastReply }) {
  into.append(PASS_DRAWER);
  const s = pass.settings();
  $("#statecraft_pass_default").val(MODES.includes(s.passMode) ? s.passMode : "reply").on("change", function () {
    pass.settings().passMode = String(this.value);
    save();
    showPass(pass, $);
  });
  $("#statecraft_pass_constraint").val(CONSTRAINTS.includes(s.passConstraint) ? s.passConstraint : "auto").on("change", function () {
    pass.settings().passConstraint = String(this.value);
    save();
    showPass(pass, $);
  });
  $("#statecraft_pass_wait").val(s.passWaitSeconds ?? 30).on("change", function () {
    pass.settings().passWaitSeconds = Math.max(0, Math.min(600, Number(this.value) || 0));
    save();
  });
  $("#statecraft_pass_mode").on("change", function () {
    pass.setChatMode(String(this.value) || null);
    showPass(pass, $);
  });
  $("#statecraft_pass_again").on("click", async () => {
    const index = lastReply();
    if (index < 0) {
      $("#statecraft_pass_status").text("the chat has no reply to update");
      return;
    }
    $("#statecraft_pass_status").text(`asking for reply ${index + 1}'s update…`);
    await pass.run(index, { type: "again" });
  });
  showPass(pass, $);
}

/** Shows the chat's mode, the constraint in effect and the last run in the drawer. */
export function showPass(pass, $) {
  const ctx = pass.context();
  const own = ctx.chatMetadata?.statecraft?.pass;
  $("#statecraft_pass_mode").val(MODES.includes(own) ? own : "");
  const mode = pass.mode();
  const running = pass.running ? " A pass is running." : "";
  const kind = mode === "pass" ? ` The next pass uses ${{ structured: "structured output", tool: "a function tool", prompt: "the schema in the prompt" }[pass.kind()]}.` : "";
  $("#statecraft_pass_status").text(`${describeRun(pass.last, mode)}.${kind}${running}`);
  $("#statecraft_pass_wait_note").text(pass.waitNote);
}
