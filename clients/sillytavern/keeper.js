// The extension's logic, without SillyTavern: which messages are replies, which path a generation
// builds on, one serialized sync at a time with recovery when the server comes back, the connection
// check that names the real problem, and the MVU views written on a message. index.js wires it to
// SillyTavern; test/keeper.test.js runs it against a real `statecraft serve`.

import { StatecraftError, pointerTokens } from "../js/statecraft.js";

/**
 * A message the model wrote: not the user's, and not one of SillyTavern's own notes (narrator,
 * comments, help: those carry `extra.type`). A reply hidden with /hide (`is_system: true`, no type)
 * stays a reply: its changes stand.
 */
export function isReply(message) {
  return Boolean(message) && !message.is_user && !(message.extra && message.extra.type);
}

/**
 * The texts of the replies the chat shows, oldest first. A last message whose swipe is still being
 * generated (SillyTavern moves `swipe_id` past the end of `swipes` until the reply arrives) is not
 * shown yet: the path stops before it, on the state the new swipe builds on.
 */
export function shownReplies(chat) {
  const messages = Array.isArray(chat) ? chat : [];
  const last = messages.length - 1;
  const replies = [];
  messages.forEach((message, index) => {
    if (!isReply(message)) return;
    if (index === last && pendingSwipe(message)) return;
    replies.push(String(message.mes ?? ""));
  });
  return replies;
}

function pendingSwipe(message) {
  return Array.isArray(message.swipes) && Number.isInteger(message.swipe_id) && message.swipe_id >= message.swipes.length;
}

/**
 * The path a generation of `type` builds on, and whether the chat shows that path (`move`). A swipe
 * replaces the last reply: the new text builds on the state before it, read without moving the game.
 * A regeneration has already removed the reply it replaces. A continue writes after the reply it
 * continues, whose commands so far stand: it builds on the whole shown chat, that reply included;
 * once it ends, the reply's whole text is that reply (a sync applies it once, in place of the
 * shorter text). A new reply and an impersonation build on everything shown.
 */
export function generationPath(chat, type) {
  const replies = shownReplies(chat);
  const messages = Array.isArray(chat) ? chat : [];
  const last = messages[messages.length - 1];
  if (type === "swipe" && isReply(last) && !pendingSwipe(last)) {
    return { replies: replies.slice(0, -1), move: false };
  }
  return { replies, move: type !== "swipe" };
}

/** A new game id for a chat: readable, within the characters a game id allows, and unique. */
export function newGameId(chatId, random = Math.random) {
  const slug = String(chatId ?? "chat").normalize("NFKD").replace(/[^A-Za-z0-9._~]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
  const suffix = Math.floor(random() * 36 ** 8).toString(36).padStart(8, "0");
  return `st-${slug || "chat"}-${suffix}`;
}

/**
 * The `[InitVar]` entries of a world book (`{entries}`: a card's list or a world book file's object
 * keyed by uid), enabled or not: MVU builds its initial state from every entry whose name or comment
 * says `[InitVar]`, and cards often disable them to keep them out of the prompt.
 */
export function initVarEntries(book) {
  const entries = book?.entries;
  const list = Array.isArray(entries) ? entries : entries && typeof entries === "object" ? Object.values(entries) : [];
  return list.filter((entry) => entry && /\[initvar\]/i.test(`${entry.comment ?? ""} ${entry.name ?? ""}`));
}

/**
 * What a chat's game is made from (`create`, the body of `POST /v1/games`), and where that came from:
 *
 * 1. the state (schema, scripts, profile) the extension stored with the character card
 *    (`data.extensions.statecraft`): the card goes to the server, which reads those settings before
 *    any `[InitVar]` entry, as `new --card` and `import-chat --card` do;
 * 2. else the card's `[InitVar]` entries, as MVU reads them: those of the character's own world book
 *    (`world`, the book SillyTavern links to the card, which is where MVU reads them), else those of
 *    the book embedded in the card (not imported yet). The card goes to the server with that book,
 *    which builds MVU's initial state and automatic schema from it, under the `mvu` profile (or the
 *    one stored with the card);
 * 3. else an empty state.
 *
 * A card goes with `macros` (`<user>`, `{{char}}`), which its game keeps for its replies, and the
 * server keeps the card's fingerprint, so that a later version of the card can be offered to the chat
 * (`card`, what `POST /v1/games/{id}/card` takes). `schema` is the JSON Schema stored with the card
 * (the prompt shows it), or undefined.
 */
export function gameSource(character, { world, macros } = {}) {
  const own = character?.data?.extensions?.statecraft;
  if (own && typeof own === "object" && own.state !== undefined) {
    const card = { spec: "chara_card_v2", spec_version: "2.0", data: { ...character.data } };
    const create = { card };
    if (macros) create.macros = macros;
    const schema = own.schema === undefined || own.schema === null ? undefined : own.schema;
    return { create, card, from: "the card's statecraft settings", schema };
  }
  const linked = world && initVarEntries(world).length > 0;
  const book = linked ? world : character?.data?.character_book;
  if (initVarEntries(book).length > 0) {
    const card = { spec: "chara_card_v2", spec_version: "2.0", data: { ...character.data, character_book: { entries: book.entries } } };
    const create = { card, profile: own?.profile || "mvu" };
    if (macros) create.macros = macros;
    const name = character.data?.extensions?.world;
    return { create, card, from: linked ? `the [InitVar] entries of its world book "${name}"` : "the [InitVar] entries of the world book in its card" };
  }
  return { create: { state: {} }, from: "an empty state" };
}

const RECOVERABLE = new Set(["network", "timeout", "shutting_down", "storage_failed", "contention", "internal_error", "not_json"]);

/**
 * What a new version of the chat's card would do to its game, or null when there is nothing to offer:
 * `POST /v1/games/{id}/card` as a dry run, whose answer lists the keys added, dropped and
 * redescribed; nothing changes. The card differs from the one the game was made with when their
 * fingerprints differ; a game made before games kept one (or from no card) is offered a card only
 * when it would change something.
 */
export async function cardChange(client, gameId, card, macros) {
  if (!card) return null;
  const body = { card, dry_run: true };
  if (macros) body.macros = macros;
  const answer = await client.updateCard(gameId, body);
  const changes = answer.added.length + answer.dropped.length + answer.descriptions.length;
  return answer.changed && (answer.previous !== null || changes > 0) ? answer : null;
}

/** The paths of a card update's answer as text, for people: `hero.mp`, `npcs["a.b"]`. */
export function pathText(path) {
  return path
    .map((segment, index) => {
      if (typeof segment === "number") return `[${segment}]`;
      if (/^[^.[\]'"]+$/.test(segment)) return index === 0 ? segment : `.${segment}`;
      return `[${JSON.stringify(segment)}]`;
    })
    .join("");
}

/** Whether trying again later may work (the server down or busy), as opposed to a wrong setting. */
export function recoverable(error) {
  return error instanceof StatecraftError && (RECOVERABLE.has(error.kind) || error.status >= 500);
}

/** Where SillyTavern's server plugin answers the API, on the page's own origin. */
export const PLUGIN_PATH = "/api/plugins/statecraft";

/**
 * The media type of the bodies the extension sends through the plugin: SillyTavern reads an
 * `application/json` body before the plugin sees it (and would lose digits of large numbers), so the
 * plugin takes the JSON as this instead (clients/sillytavern/README.md).
 */
export const PLUGIN_CONTENT_TYPE = "application/vnd.statecraft+json";

/** The plugin's own error kinds: what keeps the engine from answering, with the plugin's message. */
const PLUGIN_PROBLEMS = new Set(["starting", "binary_missing", "binary_mismatch", "crashing", "stopped", "engine_stopped"]);

/** Whether an error is SillyTavern answering that no plugin has these routes (its own 404 page). */
export function pluginMissing(error) {
  return error instanceof StatecraftError && error.status === 404 && error.kind === "not_json";
}

/**
 * What SillyTavern's server plugin says of itself, as the drawer shows it: connected (with the
 * binary's version and the games), not loaded (with the config line to add), or the engine's
 * problem (no binary, a binary of another API version, crashing, starting) with the plugin's fix.
 */
export async function testPlugin(client, { repository = "<the statecraft repository's URL>" } = {}) {
  try {
    const health = await client.health();
    const games = await countGames(client);
    return { ok: true, problem: null, message: `connected through SillyTavern's server plugin (statecraft ${health.version}, ${games})` };
  } catch (error) {
    if (!(error instanceof StatecraftError)) throw error;
    if (pluginMissing(error)) {
      return {
        ok: false,
        problem: "plugin_missing",
        message: `SillyTavern's server plugin is not loaded: in SillyTavern's folder run \`node plugins.js install ${repository}\`, add the line \`enableServerPlugins: true\` to config.yaml and restart SillyTavern (or set another server below)`,
      };
    }
    if (PLUGIN_PROBLEMS.has(error.kind)) return { ok: false, problem: error.kind, message: `the server plugin: ${error.message}` };
    if (error.status === 403) return { ok: false, problem: "session", message: "SillyTavern refused the request (the session may have ended): reload the page" };
    return { ok: false, problem: "server", message: `the server plugin answered ${error.status} (${error.kind}): ${error.message}` };
  }
}

/**
 * Checks the connection to another server as the extension uses it (a listing needs the token) and
 * names the problem: nothing answers, the page's origin is not allowed (with the exact
 * `--allow-origin`), the token, or a mixed-content block. `fetch` is the page's; `origin` the page's
 * origin.
 */
export async function testConnection(client, { origin, fetch = globalThis.fetch, pageProtocol } = {}) {
  const allow = `statecraft serve --allow-origin ${origin}`;
  try {
    await client.listGames({ limit: 1 });
    const games = await countGames(client);
    return { ok: true, message: `connected to ${client.baseUrl} (${games})` };
  } catch (error) {
    if (!(error instanceof StatecraftError)) throw error;
    if (error.kind === "unauthorized") {
      return {
        ok: false,
        problem: "token",
        message: client.token
          ? `the server refused the token: paste the one it was started with (--token)`
          : `the server needs a token (it was started with --token): paste it in the Token field`,
      };
    }
    if (error.kind === "origin_not_allowed") return { ok: false, problem: "origin", message: `the server refuses this page's origin: start it with ${allow}` };
    if (error.status !== 0) return { ok: false, problem: "server", message: `the server answered ${error.status} (${error.kind}): ${error.message}` };
    if (pageProtocol === "https:" && client.baseUrl.startsWith("http:")) {
      return {
        ok: false,
        problem: "mixed-content",
        message: `this page is https and the server http: the browser blocks that; serve statecraft over https or open SillyTavern over http`,
      };
    }
    // The browser hides why a request failed. A request that does not need CORS reaches a server that
    // answers; then the refusal was the origin (the server answers a foreign origin without CORS headers).
    try {
      await fetch(`${client.baseUrl}/v1/health`, { mode: "no-cors", cache: "no-store", credentials: "omit" });
      return { ok: false, problem: "origin", message: `the server at ${client.baseUrl} answers, but refuses this page's origin: start it with ${allow}` };
    } catch {
      return { ok: false, problem: "down", message: `nothing answers at ${client.baseUrl}: start the server (${allow})` };
    }
  }
}

async function countGames(client) {
  const page = await client.listGames({ limit: 100 });
  const count = page.games.length;
  return page.next ? `${count}+ games` : `${count} game${count === 1 ? "" : "s"}`;
}

/** A user-facing sentence for a failed call, with what to do; `plugin` when it went through the plugin. */
export function describeError(error, { origin, plugin = false } = {}) {
  if (!(error instanceof StatecraftError)) return String(error?.message ?? error);
  if (plugin) {
    if (pluginMissing(error)) return "SillyTavern's server plugin is not loaded: Test connection in the extension's settings says how to install it.";
    if (error.kind === "network") return `cannot reach SillyTavern's server (${error.message}): is SillyTavern running?`;
    if (PLUGIN_PROBLEMS.has(error.kind)) return `statecraft (server plugin): ${error.message}`;
  }
  switch (error.kind) {
    case "network":
      return `cannot reach statecraft (${error.message}): is \`statecraft serve --allow-origin ${origin ?? "THIS_PAGE"}\` running? Test the connection in the extension's settings.`;
    case "unauthorized":
      return "statecraft refused the token: set it in the extension's settings.";
    case "origin_not_allowed":
      return `statecraft refuses this page: start it with --allow-origin ${origin ?? "THIS_PAGE"}.`;
    default:
      return `statecraft answered ${error.status || ""} ${error.kind}: ${error.message}`.replace(/\s+/g, " ");
  }
}

/** The value at `path` in a state: `a.b[0]`, `a/b/0` or a JSON Pointer `/a/b/0`; `undefined` when absent. */
export function valueAt(state, path) {
  const text = String(path ?? "").trim();
  if (text === "" || text === "/") return state;
  const segments = text.startsWith("/")
    ? pointerTokens(text)
    : [...text.matchAll(/[^.[\]]+|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]/g)].map((match) => match[1] ?? match[2] ?? match[3] ?? match[0]);
  let value = state;
  for (const segment of segments) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, segment)) return undefined;
    value = value[segment];
  }
  return value;
}

/**
 * Keeps one chat's game on what the chat shows. Every sync goes through one queue (a sync reads the
 * chat when it starts, so syncs asked for while one waits are one), nothing is synced while a reply is
 * being generated (its text is not final; the generation's end syncs), and a failure that may pass
 * (the server down) is retried with growing pauses until it works, then reported as recovered.
 *
 * `target()` answers (or resolves to) the chat to keep, or null (no chat open, or the extension off):
 * `{gameId, chat, create, macros, isNew}`, where `create` is what a new game is made from or a
 * function that resolves to it (called only when the game must be made), and `isNew` says that the
 * chat had no game id until now, so its game is made with the first sync; any other game is made
 * only when the server says it has none (the card is not sent on every page load); `busy()` whether
 * a generation still shows as running.
 */
export class ChatKeeper {
  #queued = null;
  #tail = Promise.resolve();
  #generating = false;
  #dirty = false;
  #feedback = new Map();
  #failure = null;
  #retry = null;
  #retries = 0;

  constructor({ client, target, busy = () => true, onSynced = () => {}, onRefused = () => {}, onError = () => {}, onRecovered = () => {}, retryMs = [1000, 2000, 5000, 10000, 30000] }) {
    this.client = client;
    this.target = target;
    // Whether the front end still shows a generation running: a generation that ended without its
    // end event (an error, an abort) must not hold syncs forever.
    this.busy = busy;
    this.onSynced = onSynced;
    this.onRefused = onRefused;
    this.onError = onError;
    this.onRecovered = onRecovered;
    this.retryMs = retryMs;
    /** How many sync requests reached the server, for tests and the status line. */
    this.requests = 0;
  }

  /** The error of the last failed sync while it lasts, or null. */
  get failure() {
    return this.#failure;
  }

  get generating() {
    return this.#generating;
  }

  /**
   * Syncs what the chat shows (after any event that may change it). While a reply is generated, only
   * notes that a sync is due. Resolves with the sync's answer, or null when nothing was synced; never
   * rejects (failures go to `onError`).
   */
  sync() {
    if (this.#generating && !this.busy()) this.#generating = false;
    if (this.#generating) {
      this.#dirty = true;
      return Promise.resolve(null);
    }
    if (this.#queued) return this.#queued;
    const run = this.#tail.then(() => {
      this.#queued = null;
      return this.#run(null).catch(() => null);
    });
    this.#queued = run;
    this.#tail = run;
    return run;
  }

  /** A real generation started (not a dry run): hold syncs until it ends. */
  generationStarted() {
    this.#generating = true;
  }

  /** The generation ended or was stopped: sync what it left. */
  generationEnded() {
    if (!this.#generating) return this.sync();
    this.#generating = false;
    this.#dirty = false;
    return this.sync();
  }

  /**
   * The state a generation of `type` builds on: `{gameId, state, step, feedback}` (feedback: the
   * refusal of the reply that step applied, for the model), or null without a chat. Rejects when the
   * server cannot answer (the prompt must then carry no stale state).
   */
  stateForGeneration(type) {
    const run = this.#tail.then(async () => {
      const target = await this.target();
      if (!target) return null;
      const { replies, move } = generationPath(target.chat, type);
      return this.#run({ target, replies, move });
    });
    this.#tail = run.catch(() => null);
    return run;
  }

  /** The refusal feedback of the reply that made `step`, when it was refused. */
  feedbackAt(gameId, step) {
    return this.#feedback.get(`${gameId}#${step}`) ?? "";
  }

  stop() {
    clearTimeout(this.#retry);
    this.#retry = null;
  }

  async #run(request) {
    const target = request?.target ?? (await this.target());
    if (!target) return null;
    const replies = request?.replies ?? shownReplies(target.chat);
    const move = request ? request.move : true;
    let answer;
    try {
      answer = await this.#send(target, replies, move);
    } catch (error) {
      this.#failed(error);
      throw error;
    }
    for (const applied of answer.applied) {
      if (!applied.committed && applied.feedback) {
        this.#feedback.set(`${target.gameId}#${applied.step}`, applied.feedback);
        this.onRefused({ target, index: applied.index, feedback: applied.feedback });
      }
    }
    const result = {
      gameId: target.gameId,
      state: answer.state,
      step: answer.step,
      applied: answer.applied,
      reused: answer.reused,
      moved: move,
      replies: replies.length,
      feedback: this.feedbackAt(target.gameId, answer.step),
    };
    if (this.#failure) {
      this.#failure = null;
      this.#retries = 0;
      clearTimeout(this.#retry);
      this.#retry = null;
      this.onRecovered(result);
    }
    await this.onSynced(result, target);
    return result;
  }

  async #send(target, replies, move) {
    const options = { macros: target.macros };
    if (!move) options.move = false;
    const create = async () => (typeof target.create === "function" ? await target.create() : target.create);
    if (target.isNew) options.create = await create();
    this.requests += 1;
    let answer;
    try {
      answer = await this.client.sync(target.gameId, replies, options);
    } catch (error) {
      // A game the server does not have (made on another server, deleted, or a chat whose first
      // sync failed) is made from the card.
      if (!(error instanceof StatecraftError) || error.kind !== "unknown_game" || options.create) throw error;
      this.requests += 1;
      answer = await this.client.sync(target.gameId, replies, { ...options, create: await create() });
    }
    return answer;
  }

  #failed(error) {
    const first = !this.#failure || this.#failure.message !== error.message;
    this.#failure = error;
    if (first) this.onError(error);
    if (recoverable(error) && !this.#retry) {
      const wait = this.retryMs[Math.min(this.#retries, this.retryMs.length - 1)];
      this.#retries += 1;
      this.#retry = setTimeout(() => {
        this.#retry = null;
        this.sync();
      }, wait);
    }
  }
}
