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

  /**
   * @param {string} [baseUrl] where the server listens, `http://127.0.0.1:8765` by default
   * @param {{token?: string, fetch?: typeof fetch, timeoutMs?: number, init?: RequestInit,
   *          onUnauthorized?: (error: StatecraftError, sent: {token?: string}) => unknown}} [options]
   */
  constructor(baseUrl = "http://127.0.0.1:8765", options = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.fetch = options.fetch || globalThis.fetch.bind(globalThis);
    this.timeoutMs = options.timeoutMs;
    // Passed to every `fetch` under the client's own members (`{credentials: "omit", cache:
    // "no-store"}` in a browser page); method, headers, body and signal are the client's.
    this.init = options.init || {};
    this.onUnauthorized = options.onUnauthorized;
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

  /** `GET /v1/health` → `{ok: true}`. */
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

  /** The instructions found in a reply: `{batch, valid, diagnostics, report, feedback}`. */
  extract(input, { state, macros } = {}) {
    return this.request("POST", "/v1/extract", dropUndefined({ input, state, macros }));
  }

  /** Translates between `mvu`, `json` and `jsonpatch`: `{output, diagnostics, errors}`. */
  convert(input, from, to) {
    return this.request("POST", "/v1/convert", { input, from, to });
  }

  /** The rules text and state for a system prompt: `{rules, state, text}`. */
  prompt(state, { schema, lang } = {}) {
    return this.request("POST", "/v1/prompt", dropUndefined({ state, schema, lang }));
  }

  /** A JSON Schema (`{schema}`) or GBNF grammar (`{gbnf}`) for one batch. */
  schema({ schema, gbnf } = {}) {
    return this.request("POST", "/v1/schema", dropUndefined({ schema, gbnf }));
  }
}

function dropUndefined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}
