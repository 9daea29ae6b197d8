// Types for statecraft.js: the HTTP API of `statecraft serve` (docs/http.md).

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

export interface Change {
  path: Segment[];
  old?: Json;
  new?: Json;
  reason?: string;
  op: string;
}

export interface BatchError {
  kind: string;
  message: string;
  instruction?: number[];
  field?: string;
  path?: string;
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
  [policy: string]: string | undefined;
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

export interface Applied {
  committed: boolean;
  dry_run?: boolean;
  step?: number;
  label?: string | null;
  /** The would-be state, for a dry run. */
  state?: Json;
  changes: Change[];
  events: HostEvent[];
  warnings: BatchError[];
  trimmed: { id: number; label?: string }[];
  diagnostics: Diagnostic[];
  report: Json;
}

export interface LogStep {
  id: number;
  parent: number;
  label: string | null;
  changes: number;
  children: number[];
  applied: boolean;
  current: boolean;
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

export interface RequestOptions {
  /** A retried request with the same key gets the first answer and commits nothing twice. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ClientOptions {
  token?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export declare class StatecraftError extends Error {
  /** The HTTP status, or 0 when the server could not be reached. */
  status: number;
  /** The server's stable error code (`rejected`, `step_conflict`, `unknown_game`, ...), or `network`. */
  kind: string;
  body: Json | null;
  errors: (BatchError | Diagnostic)[];
  diagnostics: Diagnostic[];
  /** For a rejected batch: the text to hand back to the model. */
  feedback: string;
}

export declare class Statecraft {
  constructor(baseUrl?: string, options?: ClientOptions);
  baseUrl: string;
  request(method: string, path: string, body?: Json, options?: RequestOptions): Promise<any>;
  health(): Promise<{ ok: true }>;
  createGame(
    game: { state: Json; schema?: Json; scripts?: Record<string, string>; id?: string; seed?: number },
    options?: RequestOptions,
  ): Promise<{ id: string; step: number }>;
  listGames(page?: { after?: string | null; limit?: number }): Promise<{ games: GameListing[]; next: string | null }>;
  allGames(options?: { limit?: number }): AsyncGenerator<GameListing, void, unknown>;
  getGame(id: string): Promise<Position>;
  stateAt(id: string, at: { at?: string; step?: number }): Promise<StepState>;
  log(id: string): Promise<Log>;
  deleteGame(id: string, options?: RequestOptions): Promise<{ id: string; deleted: true }>;
  apply(id: string, request: ApplyRequest, options?: RequestOptions): Promise<Applied>;
  checkout(id: string, to: StepName, options?: RequestOptions): Promise<Moved>;
  undo(id: string, options?: RequestOptions): Promise<Moved>;
  redo(id: string, options?: RequestOptions): Promise<Moved>;
  extract(
    input: string,
    options?: { state?: Json; macros?: Record<string, string> },
  ): Promise<{ batch: Instruction[]; valid: boolean; diagnostics: Diagnostic[]; report: Json; feedback: string }>;
  convert(
    input: string | Json,
    from: "mvu" | "json" | "jsonpatch",
    to: "mvu" | "json" | "jsonpatch",
  ): Promise<{ output: Json; diagnostics: Diagnostic[]; errors: BatchError[] }>;
  prompt(state: Json, options?: { schema?: Json; lang?: "en" | "zh" }): Promise<{ rules: string; state: Json; text: string }>;
  schema(options?: { schema?: Json; gbnf?: boolean }): Promise<{ schema?: Json; gbnf?: string; partial: boolean }>;
}
