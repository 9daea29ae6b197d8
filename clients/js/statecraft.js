// A client for `statecraft serve` (docs/http.md): every endpoint, on `fetch`, with no dependencies.
//
// Works in browsers, Node 18+, Deno and Bun. Every error the server answers becomes a
// `StatecraftError` with the server's `kind` and `message`, and for a rejected batch (422) its
// `errors`, `diagnostics` and the `feedback` text to hand back to the model. Options are camelCase
// here and snake_case on the wire (`dryRun` → `dry_run`). This module holds no state of its own
// besides the server's address, the token and the options it was made with; `statecraft serve`
// also serves this very file at `/statecraft.js`, where the inspector page imports it.

/**
 * An error answer from the server, or no answer it could read: `kind` "network" (status 0) when the
 * server could not be reached, "not_json" when the answer is not JSON, "unknown" when an error
 * answer has no `error.kind` (a proxy's, say).
 */
export class StatecraftError extends Error {
  constructor(status, body, message, kind) {
    const error = (body && body.error) || {};
    super(message || error.message || `the server answered ${status}`);
    this.name = "StatecraftError";
    this.status = status;
    this.kind = kind || error.kind || (status === 0 ? "network" : "unknown");
    this.body = body || null;
    this.errors = (body && body.errors) || [];
    this.diagnostics = (body && body.diagnostics) || [];
    this.feedback = (body && body.feedback) || "";
  }
}

const APPLY_FIELDS = {
  input: "input",
  batch: "batch",
  label: "label",
  at: "at",
  dryRun: "dry_run",
  expectStep: "expect_step",
  macros: "macros",
  policies: "policies",
  bestEffort: "best_effort",
};

export class Statecraft {
  /** The `onUnauthorized` call in progress, which every refused request waits for. */
  #asking = null;

  /** Per game, the SHA-256 keys of the replies this object has synced: `sync` sends these as keys
   * (what a game's first sync sends is in `sync`'s comment). */
  #synced = new Map();

  /** The key of each text of the last path this object synced (any game), so that a chat's next
   * sync hashes only its new and edited replies (hashing them all was most of a sync's time in the
   * client). */
  #keyOf = new Map();

  /**
   * @param {string} [baseUrl] where the server listens, `http://127.0.0.1:8765` by default
   * @param {{token?: string, fetch?: typeof fetch, timeoutMs?: number, init?: RequestInit,
   *          headers?: Record<string, string> | (() => Record<string, string>),
   *          onUnauthorized?: (error: StatecraftError, sent: {token?: string}) => unknown,
   *          maxBodyBytes?: number}} [options]
   */
  constructor(baseUrl = "http://127.0.0.1:8765", options = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.fetch = options.fetch || globalThis.fetch.bind(globalThis);
    this.timeoutMs = options.timeoutMs;
    // Passed to every `fetch` under the client's own members (`{credentials: "omit", cache:
    // "no-store"}` in a browser page); method, headers, body and signal are the client's.
    this.init = options.init || {};
    // Headers every request carries besides the client's own, which they may replace (names in lower
    // case): an object, or a function asked at each request. Through SillyTavern's server plugin
    // these are SillyTavern's CSRF token and the plugin's content type (clients/sillytavern).
    this.headers = options.headers || {};
    this.onUnauthorized = options.onUnauthorized;
    // A sync whose body would pass this goes in parts (the server refuses bodies past its
    // `--max-body`, 4 MiB by default).
    this.maxBodyBytes = options.maxBodyBytes ?? 3 * 1024 * 1024;
  }

  /** Sends one request and returns the parsed JSON answer, or throws a StatecraftError. A 401 is
   * handed to `onUnauthorized`, and the request sent again with the token it gives back. */
  async request(method, path, body, { idempotencyKey, signal } = {}) {
    const text = body === undefined ? undefined : JSON.stringify(body);
    for (;;) {
      const token = this.token;
      try {
        return await this.#send(method, path, text, token, idempotencyKey, signal);
      } catch (error) {
        if (!(error instanceof StatecraftError) || error.status !== 401) throw error;
        // The server did nothing with a refused request, so sending it again is safe. A token
        // replaced while it was in flight (another request asked for it) is simply tried, and
        // requests refused while the hook runs wait for its answer instead of calling it again.
        if (this.token === token) {
          if (!this.onUnauthorized) throw error;
          this.#asking ??= Promise.resolve()
            .then(() => this.onUnauthorized(error, { token }))
            .finally(() => {
              this.#asking = null;
            });
          const given = await this.#asking;
          if (typeof given !== "string" || given === "") throw error;
          this.token = given;
        }
      }
    }
  }

  async #send(method, path, text, token, idempotencyKey, signal) {
    // Each attempt gets the whole timeout: the time spent asking for a token is not the server's.
    if (!signal && this.timeoutMs && typeof AbortSignal !== "undefined" && AbortSignal.timeout) {
      signal = AbortSignal.timeout(this.timeoutMs);
    }
    const headers = { accept: "application/json" };
    if (text !== undefined) headers["content-type"] = "application/json";
    if (token) headers.authorization = `Bearer ${token}`;
    if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
    const extra = typeof this.headers === "function" ? this.headers() : this.headers;
    for (const [name, value] of Object.entries(extra ?? {})) headers[name.toLowerCase()] = value;
    if (text === undefined) delete headers["content-type"];
    let response;
    try {
      response = await this.fetch(this.baseUrl + path, { ...this.init, method, headers, body: text, signal });
    } catch (cause) {
      const error = new StatecraftError(0, null, `cannot reach ${this.baseUrl}: ${cause.message}`);
      error.cause = cause;
      throw error;
    }
    const answer = await response.text();
    let parsed = null;
    if (answer) {
      try {
        parsed = JSON.parse(answer);
      } catch {
        const message = `the server answered ${response.status} with text that is not JSON: ${answer.slice(0, 200)}`;
        throw new StatecraftError(response.status, null, message, "not_json");
      }
    }
    if (!response.ok) throw new StatecraftError(response.status, parsed);
    return parsed;
  }

  /** `GET /v1/health` → `{ok: true, version, api}`. */
  health() {
    return this.request("GET", "/v1/health");
  }

  /**
   * `POST /v1/games` → `{id, step}`. The game starts from `state`, or from an MVU character `card`
   * (its JSON, `{png: BASE64}`, or InitVar text) read with SillyTavern `macros`; `profile` is
   * `strict`, `mvu` or `mvu-zod` (default `mvu` with a card, `strict` without).
   */
  createGame({ state, card, macros, profile, schema, scripts, id, seed }, options) {
    const body = dropUndefined({ state, card, macros, profile, schema, scripts, id, seed });
    return this.request("POST", "/v1/games", body, options);
  }

  /** One page of games: `{games: [{id, step, label}], next}`. */
  listGames({ after, limit } = {}) {
    const query = new URLSearchParams();
    if (after !== undefined && after !== null) query.set("after", after);
    if (limit !== undefined) query.set("limit", String(limit));
    const suffix = query.toString() ? `?${query}` : "";
    return this.request("GET", `/v1/games${suffix}`);
  }

  /** Every game, a page at a time. */
  async *allGames({ limit = 100 } = {}) {
    let after;
    do {
      const page = await this.listGames({ after, limit });
      yield* page.games;
      after = page.next;
    } while (after);
  }

  /** `GET /v1/games/{id}` → `{state, step, label}`. */
  getGame(id) {
    return this.request("GET", `/v1/games/${encodeURIComponent(id)}`);
  }

  /**
   * `GET /v1/games/{id}?view=mvu` → `{stat_data, display_data, delta_data, step, label}`: MVU's
   * views of the current step, for status bars written against MVU.
   */
  mvuView(id) {
    return this.request("GET", `/v1/games/${encodeURIComponent(id)}?view=mvu`);
  }

  /** The state at a step without moving, by label (`at`) or by id (`step`), and that step's own
   * changes: `{state, step, label, changes}`. */
  stateAt(id, { at, step } = {}) {
    const query = new URLSearchParams();
    if (at !== undefined) query.set("at", at);
    if (step !== undefined) query.set("step", String(step));
    return this.request("GET", `/v1/games/${encodeURIComponent(id)}/state?${query}`);
  }

  /** The history tree: `{current, roots, steps: [{id, parent, label, changes, children, applied, current}]}`. */
  log(id) {
    return this.request("GET", `/v1/games/${encodeURIComponent(id)}/log`);
  }

  /** `DELETE /v1/games/{id}`. */
  deleteGame(id, options) {
    return this.request("DELETE", `/v1/games/${encodeURIComponent(id)}`, undefined, options);
  }

  /**
   * Applies a raw model reply (`input`) or a batch (`batch`): `{committed, step, label, changes,
   * events, warnings, diagnostics, report, trimmed}`. A rejected batch throws a StatecraftError with
   * status 422 and its `feedback`.
   */
  apply(id, request, options) {
    const body = {};
    for (const [name, value] of Object.entries(request)) {
      if (value === undefined) continue;
      const wire = APPLY_FIELDS[name];
      if (!wire) throw new TypeError(`apply takes no option "${name}"`);
      body[wire] = value;
    }
    return this.request("POST", `/v1/games/${encodeURIComponent(id)}/apply`, body, options);
  }

  /**
   * Maps a chat onto its game by content (docs/timeline.md, "Sync"): `replies` are the texts of the
   * model's replies as the chat shows them, oldest first. A reply this object has synced with this
   * game before goes as its SHA-256 key (the bare hex string), the rest as `{text}`; when the server lacks a step for a key
   * (trimmed, or a new server) it answers `need_text` and the texts it names are sent once more.
   * The first sync of a game by this object sends every reply as its key: the server has them all
   * when the page was loaded again or another device synced the chat, and names the ones it lacks.
   * With `create` (the game may not exist yet), or after the server answered that it does not, the
   * first sync sends the texts instead. `move: false` reads the state at the end of the path without
   * making it current; `create` makes the game first when it does not exist.
   * → `{state, step, applied, reused}`.
   *
   * A body that would pass `maxBodyBytes` (a long chat opened for the first time) goes as several
   * syncs of growing prefixes of the path, each a whole path from the first reply (what the earlier
   * ones sent goes as keys): every prefix but the last with `move: false`, so the current step moves
   * only once the whole path is there. The answer is the last one's, with `applied` gathering every
   * part's and `reused` counting the replies whose step existed before the call.
   */
  async sync(id, replies, { move, create, macros, idempotencyKey, signal } = {}) {
    if (!Array.isArray(replies) || replies.some((reply) => typeof reply !== "string")) {
      throw new TypeError("sync takes the replies as an array of strings");
    }
    const keys = await Promise.all(replies.map((reply) => this.#keyOf.get(reply) ?? sha256Hex(reply)));
    this.#keyOf = new Map(replies.map((reply, index) => [reply, keys[index]]));
    const known = this.#synced.get(id) ?? new Set(create ? [] : keys);
    const url = `/v1/games/${encodeURIComponent(id)}/sync`;
    // A known reply goes as its key alone (a bare 64-hex string: 67 bytes on the wire with its comma).
    const body = (end, texts, first, last) => {
      const path = keys.slice(0, end).map((hash, index) => (texts(index) ? { text: replies[index] } : hash));
      return dropUndefined({ replies: path, move: last ? move : false, macros, create: first ? create : undefined });
    };
    const bytes = (value) => utf8Length(JSON.stringify(value));
    const applied = [];
    let retried = false;
    for (;;) {
      // The texts this call must send (the rest go as keys), and the prefixes that fit.
      const texts = (index) => !known.has(keys[index]);
      const ends = splitPath(replies.length, this.maxBodyBytes, bytes(body(0, texts, true, true)), (index) =>
        texts(index) ? bytes({ text: replies[index] }) + 1 : 67,
      );
      let answer;
      try {
        for (const [part, end] of ends.entries()) {
          const first = part === 0;
          const last = part === ends.length - 1;
          const suffix = [retried ? "/texts" : "", first ? "" : `/${part}`].join("");
          const key = idempotencyKey && `${idempotencyKey}${suffix}`;
          answer = await this.request("POST", url, body(end, texts, first, last), { idempotencyKey: key, signal });
          applied.push(...answer.applied);
          // What this part sent is there now: the next parts send it as keys.
          for (const hash of keys.slice(0, end)) known.add(hash);
          this.#synced.set(id, known);
        }
      } catch (error) {
        // A game the server lacks holds none of the replies: the next sync starts anew.
        if (error instanceof StatecraftError && error.kind === "unknown_game") this.#synced.delete(id);
        if (retried || !(error instanceof StatecraftError) || error.kind !== "need_text") throw error;
        // Nothing changed by that part: send the path again with the texts asked for. A retry has a
        // key of its own, since the first key's answer may be kept as the refusal.
        retried = true;
        for (const index of Array.isArray(error.body?.need) ? error.body.need : []) known.delete(keys[index]);
        continue;
      }
      const byIndex = new Map(applied.map((reply) => [reply.index, reply]));
      const all = [...byIndex.values()].sort((a, b) => a.index - b.index);
      return { ...answer, applied: all, reused: replies.length - all.length };
    }
  }

  /** Makes a step current (a label or an id) → `{state, step, label, moved}`. */
  checkout(id, to, options) {
    return this.request("POST", `/v1/games/${encodeURIComponent(id)}/checkout`, { to }, options);
  }

  /** Moves to the parent step → `{state, step, label, moved}`. */
  undo(id, options) {
    return this.request("POST", `/v1/games/${encodeURIComponent(id)}/undo`, {}, options);
  }

  /** Moves to the child visited last → `{state, step, label, moved}`. */
  redo(id, options) {
    return this.request("POST", `/v1/games/${encodeURIComponent(id)}/redo`, {}, options);
  }

  /** The card the game holds at its current step → `{fingerprint, automatic_schema, macros, profile, step, label}`. */
  gameCard(id) {
    return this.request("GET", `/v1/games/${encodeURIComponent(id)}/card`);
  }

  /**
   * A new version of the game's card as one step: `{card, macros?, remove_dropped?, dry_run?, label?,
   * expect_step?}` → `{changed, committed, step, label, added, dropped, removed, descriptions,
   * changes, fingerprint, previous}`.
   */
  updateCard(id, request, options) {
    return this.request("POST", `/v1/games/${encodeURIComponent(id)}/card`, request, options);
  }

  /** The instructions found in a reply: `{batch, valid, diagnostics, report, feedback}`. */
  extract(input, { state, macros } = {}) {
    return this.request("POST", "/v1/extract", dropUndefined({ input, state, macros }));
  }

  /** Translates between `mvu`, `json` and `jsonpatch`: `{output, diagnostics, errors}`. */
  convert(input, from, to) {
    return this.request("POST", "/v1/convert", { input, from, to });
  }

  /**
   * The rules text and state view for a system prompt: `{text, rules, state, tokens, elided}`. Options:
   * `schema`, `lang`, `budget` (tokens for the state view), `format` (`"json"` or `"compact"`), `mode`
   * (`"reply"`, `"pass"` with `reply`, or `"state"`), `messages` (recent chat messages, oldest first).
   */
  prompt(state, { schema, lang, budget, format, mode, messages, reply } = {}) {
    return this.request(
      "POST",
      "/v1/prompt",
      dropUndefined({ state, schema, lang, budget, format, mode, messages, reply }),
    );
  }

  /**
   * The prompt at a step of a game (default the current one), its view ranking the step's recent
   * changes first: `{text, rules, state, step, label, tokens, elided}`. Options as `prompt`'s, and
   * `step` (an id or a label).
   */
  gamePrompt(id, { step, lang, budget, format, mode, messages, reply } = {}) {
    return this.request(
      "POST",
      `/v1/games/${encodeURIComponent(id)}/prompt`,
      dropUndefined({ step, lang, budget, format, mode, messages, reply }),
    );
  }

  /**
   * The game's batch JSON Schema and its update pass's strict schema (`{"instructions": [...]}`):
   * `{schema, pass, name, partial}`.
   */
  gameSchema(id) {
    return this.request("GET", `/v1/games/${encodeURIComponent(id)}/schema`);
  }

  /**
   * Conditions on the state at a step (default the current one): `{step, label, results}`, one result
   * per condition, `{holds}` or `{error: {code, message, start, end}}`.
   */
  evaluate(id, conditions, { step } = {}) {
    return this.request(
      "POST",
      `/v1/games/${encodeURIComponent(id)}/evaluate`,
      dropUndefined({ conditions, step }),
    );
  }

  /** A JSON Schema (`{schema}`) or GBNF grammar (`{gbnf}`) for one batch. */
  schema({ schema, gbnf } = {}) {
    return this.request("POST", "/v1/schema", dropUndefined({ schema, gbnf }));
  }
}

/** The lowercase hex SHA-256 of a text's UTF-8 bytes: Web Crypto where the page has it (secure
 * contexts only: https or localhost), else the plain implementation below, which SillyTavern served
 * over a LAN address (plain http) needs. */
export async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text);
  const subtle = globalThis.crypto?.subtle;
  const digest = subtle ? new Uint8Array(await subtle.digest("SHA-256", bytes)) : sha256Bytes(bytes);
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

const ROUND = Uint32Array.from(
  "428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3 72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da 983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13 650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070 19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208 90befffa a4506ceb bef9a3f7 c67178f2"
    .split(" ")
    .map((word) => parseInt(word, 16)),
);

/** FIPS 180-4 SHA-256 of a byte array. */
function sha256Bytes(bytes) {
  const length = bytes.length;
  const padded = new Uint8Array(((length + 9 + 63) >> 6) << 6);
  padded.set(bytes);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
  view.setUint32(padded.length - 4, (length << 3) >>> 0);
  const hash = Uint32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i += 1) w[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i += 1) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) >>> 0;
    }
    // Plain variables, not an array swapped each round: that allocation made this about twice as slow.
    let a = hash[0];
    let b = hash[1];
    let c = hash[2];
    let d = hash[3];
    let e = hash[4];
    let f = hash[5];
    let g = hash[6];
    let h = hash[7];
    for (let i = 0; i < 64; i += 1) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + ROUND[i] + w[i]) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    hash[0] += a;
    hash[1] += b;
    hash[2] += c;
    hash[3] += d;
    hash[4] += e;
    hash[5] += f;
    hash[6] += g;
    hash[7] += h;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i += 1) outView.setUint32(i * 4, hash[i]);
  return out;
}

/** For tests: the plain implementation, whatever the page has. */
export const sha256HexPlain = (text) => {
  let hex = "";
  for (const byte of sha256Bytes(new TextEncoder().encode(text))) hex += byte.toString(16).padStart(2, "0");
  return hex;
};

/**
 * Where the parts of a sync end: the fewest prefixes of a path of `count` replies, each a body under
 * `limit` bytes, where a body is `base` bytes plus, for every reply before the previous part's end,
 * a key (67 bytes), and for the others `size(index)`. A part holds at least one reply it sends anew,
 * so a reply too large alone is a part of its own (and the server answers it 413). An empty path is
 * one part.
 */
function splitPath(count, limit, base, size) {
  const ends = [];
  let start = 0;
  while (start < count || ends.length === 0) {
    let used = base + 67 * start;
    let end = start;
    while (end < count && (end === start || used + size(end) <= limit)) {
      used += size(end);
      end += 1;
    }
    ends.push(end);
    start = end;
  }
  return ends;
}

function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

function dropUndefined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

/** A JSON Pointer token (RFC 6901): `~` as `~0`, `/` as `~1`. */
export function pointerToken(key) {
  return String(key).replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The tokens of a JSON Pointer (RFC 6901), or null when it is not one. */
export function pointerTokens(pointer) {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) return null;
  return pointer.slice(1).split("/").map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}
