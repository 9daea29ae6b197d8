// A typed user of the client: every method called with its options, every answer read, and errors
// narrowed on their kind. `tsc --noEmit` over this file (cli/tests/js_types.rs) checks that
// ../statecraft.d.ts describes what the client and docs/http.md say; each `@ts-expect-error` line is
// a mistake the types must refuse, and fails the check if they stop refusing it.

import { Statecraft, StatecraftError } from "../statecraft.js";
import { sha256Hex, sha256HexPlain } from "../statecraft.js";
import type { Applied, ErrorKind, Json, Policies, StepState, Synced } from "../statecraft.js";

/** Every kind, handled once: a kind added to the union without a case here is a type error. */
export function explain(error: StatecraftError): string {
  const kind: ErrorKind = error.kind;
  switch (kind) {
    case "rejected":
      return `refused: ${error.feedback} (${error.errors.length} errors, ${error.diagnostics.length} diagnostics)`;
    case "step_conflict":
    case "game_exists":
    case "idempotency_key_reused":
    case "game_deleted":
    case "contention":
    case "need_text":
    case "path_trimmed":
      return `conflict ${error.status}: ${error.message}`;
    case "unknown_game":
    case "unknown_label":
    case "unknown_step":
    case "not_found":
      return `missing: ${error.message}`;
    case "bad_request":
    case "invalid_game":
    case "method_not_allowed":
    case "body_too_large":
      return `a bad request: ${error.message}`;
    case "unauthorized":
    case "origin_not_allowed":
    case "host_not_allowed":
      return `refused access: ${error.message}`;
    case "timeout":
    case "body_timeout":
    case "storage_failed":
    case "shutting_down":
    case "game_limit":
    case "game_damaged":
    case "internal_error":
      return `the server cannot: ${error.message}`;
    case "network":
    case "not_json":
    case "unknown":
      return `no answer to read (${error.status}): ${error.message}`;
    default: {
      const unhandled: never = kind;
      return unhandled;
    }
  }
}

export async function everyCall(): Promise<void> {
  const client = new Statecraft("http://127.0.0.1:8765", {
    token: "t0ken",
    fetch: (input, init) => fetch(input, init),
    timeoutMs: 5000,
    init: { credentials: "omit", cache: "no-store" },
    onUnauthorized: async (error, sent) => (sent.token === undefined ? `asked after ${error.status}` : null),
    maxBodyBytes: 1 << 20,
  });
  new Statecraft();
  // @ts-expect-error the client sets the method itself
  new Statecraft("http://127.0.0.1:8765", { init: { method: "PUT" } });

  const health: { ok: true } = await client.health();
  const made = await client.createGame(
    { state: { hp: 10 }, schema: { type: "object" }, scripts: { "a.lua": "" }, id: "g", seed: 7 },
    { idempotencyKey: "k1", signal: AbortSignal.timeout(1000) },
  );
  const id: string = made.id;
  const step0: number = made.step;
  const fromCard = await client.createGame({ card: { png: "iVBORw0KGgo=" }, macros: { user: "Alex" }, profile: "mvu" });
  await client.createGame({ card: "hp: 10\n", profile: "mvu-zod", schema: { type: "object" } });
  // @ts-expect-error a game starts from a state or a card, not both
  await client.createGame({ state: {}, card: "hp: 10" });
  // @ts-expect-error macros read a card's InitVar text
  await client.createGame({ state: {}, macros: { user: "Alex" } });
  // @ts-expect-error profiles are strict, mvu and mvu-zod
  await client.createGame({ state: {}, profile: "lenient" });
  const view = await client.mvuView(fromCard.id);
  const shown: Json = view.display_data;
  const delta: Json = view.delta_data;
  const stat: Json = view.stat_data;
  const viewLabel: string | null = view.label;
  const page = await client.listGames({ after: null, limit: 10 });
  const next: string | null = page.next;
  for (const game of page.games) game.label?.toUpperCase();
  for await (const game of client.allGames({ limit: 5 })) game.id.toUpperCase();
  const position = await client.getGame(id);
  const state: Json = position.state;
  const byLabel: StepState = await client.stateAt(id, { at: "m1" });
  const byId = await client.stateAt(id, { step: 0 });
  byId.changes.map((change) => [change.path, change.old, change.new, change.reason, change.op]);
  // @ts-expect-error a step is named by label or by id, not neither
  await client.stateAt(id, {});
  const log = await client.log(id);
  log.steps.filter((step) => step.applied && step.current && step.children.length > 0);
  const deleted: true = (await client.deleteGame(id, { idempotencyKey: "k2" })).deleted;

  const policies: Policies = { old_mismatch: "warn", missing_parent: "reject", missing_target: "skip", unknown_callback: "skip", schema_violation: "repair" };
  const applied: Applied = await client.apply(
    id,
    { input: "_.set('hp', 5);", label: "m1", at: 0, dryRun: true, expectStep: 0, macros: { user: "Alex" }, policies, bestEffort: false },
    { idempotencyKey: "k3" },
  );
  await client.apply(id, { batch: [{ op: "assign", path: ["hp"], value: 5, reason: "hit" }] });
  applied.changes.length + applied.events.length + applied.warnings.length + applied.trimmed.length + applied.diagnostics.length;
  // A commit says its step; a dry run the state it would make.
  const where: number | Json = applied.committed ? applied.step : applied.state;
  // @ts-expect-error only a commit has a step
  if (!applied.committed) applied.step;
  const score: number | undefined = applied.report?.score;
  // @ts-expect-error a misspelt policy name
  await client.apply(id, { input: "", policies: { old_mismatches: "warn" } });
  // @ts-expect-error a policy value that does not exist
  await client.apply(id, { input: "", policies: { missing_target: "create" } });
  // @ts-expect-error options are camelCase here
  await client.apply(id, { input: "", dry_run: true });

  const synced: Synced = await client.sync(id, ["Hello.", "_.set('hp', 5);"], {
    move: false,
    macros: { user: "Alex" },
    create: { state: { hp: 10 }, schema: { type: "object" }, scripts: { "a.lua": "" }, profile: "mvu" },
    idempotencyKey: "k6",
  });
  await client.sync(id, [], { create: { card: { data: {} }, macros: { user: "Alex" }, profile: "mvu", seed: 1 } });
  // @ts-expect-error a game starts from a state or a card, not both
  await client.sync(id, [], { create: { state: {}, card: { data: {} } } });
  // @ts-expect-error the game's id is the path's
  await client.sync(id, [], { create: { state: {}, id: "other" } });
  synced.applied.map((reply) => [reply.index, reply.step, reply.committed, reply.feedback?.trim()]);
  const reused: number = synced.reused + synced.step + synced.current;
  synced.label?.trim();
  const key: string = (await sha256Hex("Hello.")) + sha256HexPlain("Hello.");
  // @ts-expect-error replies are texts, not keys: the client hashes them itself
  await client.sync(id, [{ sha256: key }]);
  // @ts-expect-error a profile that does not exist
  await client.sync(id, [], { create: { state: {}, profile: "lenient" } });

  const moved: boolean = (await client.checkout(id, "m1", { idempotencyKey: "k4" })).moved;
  (await client.checkout(id, 0)).state;
  (await client.undo(id)).label;
  (await client.redo(id, { idempotencyKey: "k5" })).step;
  const held = await client.gameCard(id);
  const fingerprint: string | null = held.fingerprint;
  held.macros.user?.trim();
  const updated = await client.updateCard(id, { card: { png: "" }, dry_run: true, remove_dropped: true });
  const added: (string | number)[][] = updated.added.concat(updated.dropped, updated.removed, updated.descriptions);
  const taken: boolean = updated.changed && updated.committed && updated.previous !== fingerprint;
  // @ts-expect-error a card update needs a card
  await client.updateCard(id, { dry_run: true });
  const extracted = await client.extract("_.set('hp', 1);", { state, macros: { user: "Alex" } });
  extracted.batch.map((instruction) => instruction.op);
  const feedback: string = extracted.feedback;
  const converted = await client.convert("_.set('a', 1);", "mvu", "jsonpatch");
  // @ts-expect-error no such format
  await client.convert("", "mvu", "yaml");
  const prompt: string = (await client.prompt(state, { schema: {}, lang: "zh" })).text;
  const budgeted = await client.prompt(state, { budget: 200, format: "compact", mode: "pass", reply: "x" });
  const shownTokens: number = budgeted.tokens.state + budgeted.elided.length;
  // @ts-expect-error no such format
  await client.prompt(state, { format: "yaml" });
  const atStep = await client.gamePrompt(id, { step: "m1", mode: "state", messages: ["Mira?"] });
  const stepLabel: string | null = atStep.label;
  const schemas = await client.gameSchema(id);
  const passSchema: Json = schemas.pass;
  const evaluated = await client.evaluate(id, ["hp > 3"], { step: 2 });
  for (const result of evaluated.results) {
    const at: number = "error" in result ? result.error.start : Number(result.holds);
    void at;
  }
  const grammar = await client.schema({ gbnf: true });
  const partial: boolean = grammar.partial;
  const gbnf: string = "gbnf" in grammar ? grammar.gbnf : JSON.stringify(grammar.schema);

  // `request` answers JSON, or what the caller says it is; never `any`.
  const raw = await client.request("GET", "/v1/health");
  // @ts-expect-error JSON must be narrowed before a member is read
  raw.ok;
  const typed = await client.request<{ ok: true }>("GET", "/v1/health");
  typed.ok;
  // @ts-expect-error the API takes no PUT
  await client.request("PUT", "/v1/health");

  try {
    await client.getGame("missing");
  } catch (error) {
    if (!(error instanceof StatecraftError)) throw error;
    // @ts-expect-error a misspelt kind cannot match
    if (error.kind === "unknown_gam") return;
    if (error.kind === "rejected") error.body?.feedback?.trim();
    if (error.body !== null) error.body.error.message.trim();
    explain(error);
  }
  void [health, reused, step0, next, byLabel, deleted, moved, feedback, converted.output, prompt, partial];
  void [shown, delta, stat, viewLabel, where, score, gbnf];
  void [added, taken];
  void [shownTokens, stepLabel, passSchema];
}
