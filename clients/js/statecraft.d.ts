// Types for statecraft.js: the HTTP API of `statecraft serve` (docs/http.md). Checked by
// `tsc --noEmit --strict` over typecheck/usage.ts, and against every answer of the server's golden
// files (server/tests/wire/), each typed as the type it names (cli/tests/js_types.rs).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A step named by its label (a string) or its id (a number; 0 is the root). */
export type StepName = string | number;

export type Segment = string | number;

export interface Instruction {
  op: string;
  path: Segment[] | string;
  value?: Json;
  old?: Json;
  reason?: string;
  metadata?: Json;
}

/** One primitive change: `old` is absent for a value created, `new` for a value removed. */
export interface Change {
  path: Segment[];
  old?: Json;
  new?: Json;
  reason?: string;
  /** The op of the instruction that made it. */
  op: string;
}

/** A problem with a batch (docs/codes.md lists the kinds). */
export interface BatchError {
  kind: string;
  message: string;
  /** The instruction's index, then the indices of the callbacks it went through. */
  instruction?: number[];
  /** A JSON Pointer into the instruction. */
  field?: string;
  /** A JSON Pointer into the state. */
  path?: string;
}

/** What the lenient layer cleaned in a reply (docs/lenient-layer.md). */
export interface RepairReport {
  blocks: number;
  instructions: number;
  empty_batches: number;
  fences: number;
  tags: number;
  think_sections: number;
  mvu_blocks: number;
  prose_before_bytes: number;
  prose_after_bytes: number;
  trailing_garbage: number;
  /** Repairs by code (`single_quotes`, `trailing_comma`, ...). */
  repairs: Record<string, number>;
  normalised_paths: number;
  unknown_members: number;
  skipped_values: number;
  dropped_truncated: number;
  invalid_instructions: number;
  /** 0 to 100; 100 only for exactly one valid JSON batch. */
  score: number;
}

export interface Diagnostic {
  kind: string;
  severity: "note" | "warning" | "error";
  span: [number, number];
  line: number;
  column: number;
  message: string;
}

export interface HostEvent {
  name: string;
  payload: Json;
}

export interface Position {
  state: Json;
  step: number;
  label: string | null;
}

export interface Health {
  ok: true;
  /** The binary's version, like "0.1.0". */
  version: string;
  /** The HTTP API version (`statecraft --version` says it too). */
  api: number;
}

export interface Created {
  id: string;
  step: number;
}

export interface Deleted {
  id: string;
  deleted: true;
}

/** Whose rules a game's replies follow (docs/mvu.md). */
export type Profile = "strict" | "mvu" | "mvu-zod";

/** An MVU character card: its JSON (a card or a world book), a PNG card's bytes, or InitVar text. */
export type Card = { [key: string]: Json } | { png: string } | string;

/** What a game starts from: a `state`, or a `card` read with SillyTavern `macros`. */
export type GameSource = {
  schema?: Json;
  scripts?: Record<string, string>;
  seed?: number;
  /** Default: `mvu` with a card, `strict` without. */
  profile?: Profile;
} & (
  | { state: Json; card?: undefined; macros?: undefined }
  | { card: Card; macros?: Record<string, string>; state?: undefined }
);

/** `POST /v1/games`'s body: a source and, optionally, the game's id. */
export type NewGame = GameSource & { id?: string };

/** The card a game holds at its current step (`GET /v1/games/{id}/card`). */
export interface GameCard {
  /** The SHA-256 of the card's `[InitVar]` text (or statecraft settings); null without a card. */
  fingerprint: string | null;
  /** MVU's automatic schema of the card, in MVU's shape; null when it has none. */
  automatic_schema: Json | null;
  /** The macros the game reads every reply with. */
  macros: Record<string, string>;
  profile: Profile;
  step: number;
  label: string | null;
}

/** `POST /v1/games/{id}/card`'s body: a new version of the game's card. */
export interface CardUpdateRequest {
  card: Card;
  /** For the card's InitVar text, over the macros the game keeps. */
  macros?: Record<string, string>;
  /** Remove the keys the new card dropped (by default they are only listed). */
  remove_dropped?: boolean;
  /** Only say what would change. */
  dry_run?: boolean;
  /** The step's label (default `card update`). */
  label?: string;
  expect_step?: number;
}

/** What a new version of a card does, or for a dry run (or the same card) would do. */
export interface CardUpdated {
  /** Whether the card differs from the one the game holds (its fingerprint). */
  changed: boolean;
  /** Whether a step was made. */
  committed: boolean;
  /** The current step after the request. */
  step: number;
  label: string | null;
  added: Segment[][];
  dropped: Segment[][];
  removed: Segment[][];
  descriptions: Segment[][];
  changes: Change[];
  fingerprint: string;
  previous: string | null;
}

/** MVU's views of the current step: the state, the state shown with each change as MVU shows it
 * (`"old->new (reason)"`), and only the changes. */
export interface MvuView {
  stat_data: Json;
  display_data: Json;
  delta_data: Json;
  step: number;
  label: string | null;
}

/** A step's state and its own change log (empty for the root, step 0). */
export interface StepState extends Position {
  changes: Change[];
}

export interface Moved extends Position {
  moved: boolean;
}

export interface Policies {
  old_mismatch?: "reject" | "warn" | "ignore";
  missing_parent?: "create" | "reject";
  missing_target?: "reject" | "skip";
  unknown_callback?: "reject" | "skip";
  /** `repair` mends what the schema says how to (coercion, clamping, defaults, enum case). */
  schema_violation?: "reject" | "repair";
}

export interface ApplyRequest {
  /** A raw model reply. */
  input?: string;
  /** Canonical instructions (or a JSON Patch document). */
  batch?: Instruction[] | Json;
  label?: string;
  /** The step to commit on (a swipe or an edit). */
  at?: StepName;
  dryRun?: boolean;
  /** 409 unless this is the current step. */
  expectStep?: number;
  /** SillyTavern macros for MVU text: `{user: "Alex"}`. */
  macros?: Record<string, string>;
  policies?: Policies;
  bestEffort?: boolean;
}

/** A step that trimming removed: its id and label no longer resolve. */
export interface TrimmedStep {
  id: number;
  label?: string;
}

/** What a batch did (committed, now the current step) or, for a dry run, would do. */
export type Applied = {
  changes: Change[];
  events: HostEvent[];
  warnings: BatchError[];
  trimmed: TrimmedStep[];
  diagnostics: Diagnostic[];
  /** What was cleaned in the reply; `null` for a batch sent as JSON. */
  report: RepairReport | null;
} & (
  | { committed: true; step: number; label: string | null }
  | { committed: false; dry_run: true; /** The would-be state. */ state: Json }
);

export interface LogStep {
  id: number;
  parent: number;
  label: string | null;
  changes: number;
  children: number[];
  applied: boolean;
  current: boolean;
  /** For a step made by sync: its reply's key (SHA-256, lowercase hex). */
  key?: string;
  /** For a refused reply's step: the feedback the model was given. */
  refusal?: string;
}

export interface Log {
  current: number;
  roots: number[];
  steps: LogStep[];
}

export interface GameListing {
  id: string;
  step: number;
  label: string | null;
}

export interface GameList {
  games: GameListing[];
  /** Ask for the next page `after` this id; `null` on the last page. */
  next: string | null;
}

export interface Extracted {
  batch: Instruction[];
  valid: boolean;
  diagnostics: Diagnostic[];
  report: RepairReport;
  feedback: string;
}

export interface Converted {
  /** `null` when JSON Patch cannot express the batch (see `errors`). */
  output: Json;
  diagnostics: Diagnostic[];
  errors: BatchError[];
}

/** What a prompt is: the text to inject, its rules, the state view alone (within the budget, with the
 * lines naming what it leaves out), their token counts by the documented estimator
 * (docs/state-view.md), and what the view leaves out. */
export interface Prompted {
  text: string;
  rules: string;
  state: string;
  tokens: { text: number; state: number; full_state: number };
  elided: Elided[];
}

/** A part of the state a view leaves out: a member, or a container's members counted together. */
export interface Elided {
  path: string;
  tokens: number;
  members?: number;
}

/** A game's prompt: a `Prompted` and the step it shows. */
export interface GamePrompted extends Prompted {
  step: number;
  label: string | null;
}

export interface PromptOptions {
  lang?: "en" | "zh";
  /** Tokens for the state view, by the documented estimator; without it the whole state. */
  budget?: number;
  format?: "json" | "compact";
  /** `"reply"` (commands in the story reply), `"pass"` (a separate update pass; needs `reply`) or
   * `"state"` (the state view alone). */
  mode?: "reply" | "pass" | "state";
  /** The recent chat messages, oldest first: what they mention is shown first. */
  messages?: string[];
  reply?: string;
}

/** A game's batch JSON Schema and its update pass's schema (OpenAI's strict subset). */
export interface GameSchemas {
  schema: Json;
  pass: Json;
  name: "statecraft_update";
  partial: boolean;
}

export type ConditionResult =
  | { holds: boolean }
  | { error: { code: string; message: string; start: number; end: number } };

export interface Evaluated {
  step: number;
  label: string | null;
  results: ConditionResult[];
}

/** The JSON Schema of a batch, or with `gbnf` its grammar; `partial` when the state's schema could not
 * be expressed whole (the result accepts more). */
export type Schemas = { schema: Json; partial: boolean } | { gbnf: string; partial: boolean };

/** What `sync` makes a game from when it does not exist yet: `POST /v1/games`'s body (a state or a
 * card, not both; the id is the path's). */
export type SyncCreate = GameSource;

export interface SyncOptions extends RequestOptions {
  /** `false` reads the state at the end of the path without making it current. */
  move?: boolean;
  create?: SyncCreate;
  /** SillyTavern macros for MVU text: `{user: "Alex"}`. */
  macros?: Record<string, string>;
}

/** One reply that a sync applied (the others were found as steps already). */
export interface SyncApplied {
  index: number;
  step: number;
  committed: boolean;
  /** For a refused reply: the text to hand back to the model. */
  feedback?: string;
}

export interface Synced {
  /** The state at the end of the path (the root's for an empty path). */
  state: Json;
  step: number;
  label: string | null;
  /** The current step after the sync (the end of the path unless `move: false`). */
  current: number;
  applied: SyncApplied[];
  /** How many replies were found as steps already. */
  reused: number;
}

export interface RequestOptions {
  /** A retried request with the same key gets the first answer and commits nothing twice. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** Sent as `Authorization: Bearer TOKEN`. */
  token?: string;
  /** The `fetch` to call (a test's, a proxy's); the global one by default. */
  fetch?: typeof fetch;
  /** Each attempt is aborted after this long (unless the call passes its own `signal`). */
  timeoutMs?: number;
  /** Passed to every `fetch` (`{credentials: "omit", cache: "no-store"}`); the client sets method,
   * headers, body and signal itself. */
  init?: Omit<RequestInit, "method" | "headers" | "body" | "signal">;
  /** Headers every request carries besides the client's own, which they may replace: an object, or a
   * function asked at each request (SillyTavern's CSRF token through its server plugin). */
  headers?: Record<string, string> | (() => Record<string, string>);
  /**
   * Called when the server answers 401, with the token the refused request carried: resolve with a
   * token to send that request again with it (it becomes the client's token), or with nothing to let
   * the `unauthorized` error through. Requests refused while it runs wait for its answer.
   */
  onUnauthorized?: (error: StatecraftError, sent: { token: string | undefined }) => string | undefined | null | Promise<string | undefined | null>;
  /**
   * A sync whose body would pass this many bytes (3 MiB by default, under the server's 4 MiB
   * `--max-body`) goes as several syncs of growing prefixes of the path, each a whole path.
   */
  maxBodyBytes?: number;
}

/** The server's error kinds (docs/http.md, "Errors"), one per `Kind` in server/src/error.rs. */
export type ServerErrorKind =
  | "bad_request"
  | "invalid_game"
  | "unauthorized"
  | "origin_not_allowed"
  | "host_not_allowed"
  | "unknown_game"
  | "unknown_label"
  | "unknown_step"
  | "not_found"
  | "method_not_allowed"
  | "step_conflict"
  | "game_exists"
  | "idempotency_key_reused"
  | "game_deleted"
  | "contention"
  | "need_text"
  | "path_trimmed"
  | "body_too_large"
  | "body_timeout"
  | "rejected"
  | "game_limit"
  | "timeout"
  | "storage_failed"
  | "game_damaged"
  | "internal_error"
  | "shutting_down";

/**
 * What the client itself can tell: `network` (no answer, status 0), `not_json` (an answer that is
 * not JSON), `unknown` (an error answer without `error.kind`, such as a proxy's).
 */
export type ClientErrorKind = "network" | "not_json" | "unknown";

export type ErrorKind = ServerErrorKind | ClientErrorKind;

/** An error answer's body: `error`, and for a rejected batch (422) the details beside it. */
export interface ErrorBody {
  error: { kind: ServerErrorKind; message: string };
  errors?: (BatchError | Diagnostic)[];
  diagnostics?: Diagnostic[];
  /** What was cleaned in the reply (for a reply, not a batch sent as JSON). */
  report?: RepairReport;
  feedback?: string;
  /** For `step_conflict` (409): the current step. */
  step?: number;
  /** For `need_text` (409): the indices of the replies whose text a sync needs. */
  need?: number[];
  /** For `path_trimmed` (409) and a sync's 400: the index of the reply concerned. */
  index?: number;
}

export declare class StatecraftError extends Error {
  constructor(status: number, body: ErrorBody | null, message?: string, kind?: ErrorKind);
  /** The HTTP status, or 0 when the server could not be reached. */
  status: number;
  /**
   * The server's stable error code (`rejected`, `step_conflict`, `unknown_game`, ...), or the
   * client's own. A server newer than this file may answer a kind the union lacks: keep a default.
   */
  kind: ErrorKind;
  body: ErrorBody | null;
  errors: (BatchError | Diagnostic)[];
  diagnostics: Diagnostic[];
  /** For a rejected batch: the text to hand back to the model. */
  feedback: string;
}

/** The lowercase hex SHA-256 of a text's UTF-8 bytes (the key of a reply). */
export declare function sha256Hex(text: string): Promise<string>;
/** The same, without Web Crypto (what a page outside a secure context uses). */
export declare function sha256HexPlain(text: string): string;
/** A JSON Pointer token (RFC 6901): `~` as `~0`, `/` as `~1`. */
export declare function pointerToken(key: string | number): string;
/** The tokens of a JSON Pointer (RFC 6901), or null when it is not one. */
export declare function pointerTokens(pointer: string): string[] | null;

export type Method = "GET" | "POST" | "DELETE";

export declare class Statecraft {
  constructor(baseUrl?: string, options?: ClientOptions);
  baseUrl: string;
  token: string | undefined;
  /** Sends one request; `T` is what the caller says the answer is (JSON by default). */
  request<T = Json>(method: Method, path: string, body?: Json, options?: RequestOptions): Promise<T>;
  health(): Promise<Health>;
  createGame(game: NewGame, options?: RequestOptions): Promise<Created>;
  listGames(page?: { after?: string | null; limit?: number }): Promise<GameList>;
  allGames(options?: { limit?: number }): AsyncGenerator<GameListing, void, unknown>;
  getGame(id: string): Promise<Position>;
  mvuView(id: string): Promise<MvuView>;
  /** By label (`{at}`) or by id (`{step}`), one of the two. */
  stateAt(id: string, at: { at: string; step?: undefined } | { step: number; at?: undefined }): Promise<StepState>;
  log(id: string): Promise<Log>;
  deleteGame(id: string, options?: RequestOptions): Promise<Deleted>;
  apply(id: string, request: ApplyRequest, options?: RequestOptions): Promise<Applied>;
  /**
   * Maps a chat onto its game by content: `replies` are the texts of the replies the chat shows, oldest
   * first. Replies this object synced before go as SHA-256 keys; `need_text` is answered by sending
   * the texts asked for once more. A body past `maxBodyBytes` goes as several syncs of prefixes, the
   * current step moving only with the last.
   */
  sync(id: string, replies: string[], options?: SyncOptions): Promise<Synced>;
  checkout(id: string, to: StepName, options?: RequestOptions): Promise<Moved>;
  undo(id: string, options?: RequestOptions): Promise<Moved>;
  redo(id: string, options?: RequestOptions): Promise<Moved>;
  /** The card the game holds: its fingerprint, automatic schema and macros. */
  gameCard(id: string): Promise<GameCard>;
  /** A new version of the game's card, as one step (docs/mvu.md, "Card updates"). */
  updateCard(id: string, request: CardUpdateRequest, options?: RequestOptions): Promise<CardUpdated>;
  extract(
    input: string,
    options?: { state?: Json; macros?: Record<string, string> },
  ): Promise<Extracted>;
  convert(
    input: string | Json,
    from: "mvu" | "json" | "jsonpatch",
    to: "mvu" | "json" | "jsonpatch",
  ): Promise<Converted>;
  prompt(state: Json, options?: PromptOptions & { schema?: Json }): Promise<Prompted>;
  /** The prompt at a step of a game (default the current one). */
  gamePrompt(id: string, options?: PromptOptions & { step?: StepName }): Promise<GamePrompted>;
  gameSchema(id: string): Promise<GameSchemas>;
  /** Conditions (docs/state-view.md) on the state at a step (default the current one). */
  evaluate(id: string, conditions: string[], options?: { step?: StepName }): Promise<Evaluated>;
  schema(options?: { schema?: Json; gbnf?: boolean }): Promise<Schemas>;
}
