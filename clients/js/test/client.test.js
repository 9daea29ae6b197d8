// The client against a real `statecraft serve`: every endpoint, and every error as a StatecraftError.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Statecraft, StatecraftError, sha256HexPlain } from "../statecraft.js";
import { startServer } from "./server.js";

let server;
let client;

before(async () => {
  server = await startServer();
  client = new Statecraft(server.url);
});

after(async () => {
  await server.stop();
});

const schema = {
  type: "object",
  properties: { hp: { type: "integer", minimum: 0, maximum: 100 } },
};

test("health", async () => {
  const health = await client.health();
  assert.equal(health.ok, true);
  assert.match(health.version, /^\d+\.\d+\.\d+/);
  assert.ok(Number.isInteger(health.api) && health.api >= 1, `api ${health.api}`);
});

test("games are created, listed, read and deleted", async () => {
  const made = await client.createGame({ state: { hp: 10 }, schema, id: "js-a" });
  assert.deepEqual(made, { id: "js-a", step: 0 });
  await client.createGame({ state: {}, id: "js-b" });
  await client.createGame({ state: {}, id: "js-c" });
  const page = await client.listGames({ limit: 2 });
  assert.equal(page.games.length, 2);
  assert.equal(page.next, page.games[1].id);
  const all = [];
  for await (const game of client.allGames({ limit: 1 })) all.push(game.id);
  assert.ok(["js-a", "js-b", "js-c"].every((id) => all.includes(id)), all.join());
  assert.deepEqual(await client.getGame("js-a"), { state: { hp: 10 }, step: 0, label: null });
  await assert.rejects(client.createGame({ state: {}, id: "js-b" }), { kind: "game_exists", status: 409 });
  assert.deepEqual(await client.deleteGame("js-c"), { id: "js-c", deleted: true });
  await assert.rejects(client.getGame("js-c"), (error) => {
    assert.ok(error instanceof StatecraftError);
    assert.equal(error.status, 404);
    assert.equal(error.kind, "unknown_game");
    return true;
  });
});

test("replies apply, swipe, check out, undo and redo", async () => {
  const { id } = await client.createGame({ state: { hp: 100, gold: 0 }, schema });
  const first = await client.apply(id, { input: "```json\n[{'op': 'assign', 'path': 'hp', 'value': 90},]\n```", label: "m1" });
  assert.equal(first.committed, true);
  assert.equal(first.step, 1);
  assert.deepEqual(first.changes, [{ path: ["hp"], old: 100, new: 90, op: "assign" }]);
  assert.ok(first.diagnostics.some((d) => d.kind === "trailing_comma"));
  await client.apply(id, { input: "_.add('gold', 5);//loot", label: "m2" });
  const swipe = await client.apply(id, { batch: [{ op: "increment", path: ["gold"], value: 50 }], label: "m2/b", at: "m1" });
  assert.equal(swipe.label, "m2/b");
  assert.deepEqual((await client.getGame(id)).state, { hp: 90, gold: 50 });
  const m2 = await client.stateAt(id, { at: "m2" });
  assert.deepEqual(m2.state, { hp: 90, gold: 5 });
  assert.deepEqual(m2.changes, [{ path: ["gold"], old: 0, new: 5, reason: "loot", op: "increment" }]);
  const root = await client.stateAt(id, { step: 0 });
  assert.deepEqual(root.state, { hp: 100, gold: 0 });
  assert.deepEqual(root.changes, []);
  const back = await client.checkout(id, "m2");
  assert.equal(back.moved, true);
  assert.deepEqual(back.state, { hp: 90, gold: 5 });
  const log = await client.log(id);
  assert.equal(log.current, 2);
  assert.deepEqual(log.steps.map((s) => s.parent), [0, 1, 1]);
  assert.equal((await client.undo(id)).label, "m1");
  assert.equal((await client.redo(id)).label, "m2");
});

test("a rejected batch carries errors, diagnostics and feedback", async () => {
  const { id } = await client.createGame({ state: { hp: 100 }, schema });
  await assert.rejects(client.apply(id, { input: '[{"op": "assign", "path": ["hp"], "value": 500}]' }), (error) => {
    assert.equal(error.status, 422);
    assert.equal(error.kind, "rejected");
    assert.equal(error.errors[0].kind, "schema_violation");
    assert.ok(Array.isArray(error.diagnostics));
    assert.match(error.feedback, /not applied/);
    return true;
  });
  assert.deepEqual((await client.getGame(id)).state, { hp: 100 });
});

test("schema repair per request, and a seeded ctx.random", async () => {
  const { id } = await client.createGame({ state: { hp: 100 }, schema });
  const repaired = await client.apply(id, {
    batch: [{ op: "assign", path: ["hp"], value: "500" }],
    policies: { schema_violation: "repair" },
  });
  assert.equal(repaired.committed, true);
  assert.deepEqual(repaired.warnings.map((w) => [w.kind, w.path]), [["schema_repaired", "/hp"]]);
  assert.deepEqual((await client.getGame(id)).state, { hp: 100 });
  const dice = { "dice.lua": 'on("roll", function(ctx) ctx.emit({op = "assign", path = "n", value = ctx.random(1, 1000000)}) end)' };
  const roll = async (seed) => {
    const game = await client.createGame({ state: {}, scripts: dice, seed });
    await client.apply(game.id, { batch: [{ op: "callback", path: ["roll"] }] });
    return (await client.getGame(game.id)).state.n;
  };
  assert.equal(await roll(11), await roll(11));
  assert.notEqual(await roll(11), await roll(12));
});

test("dry runs, expected steps and idempotency keys", async () => {
  const { id } = await client.createGame({ state: { n: 0 } });
  const dry = await client.apply(id, { batch: [{ op: "increment", path: ["n"], value: 1 }], dryRun: true });
  assert.equal(dry.committed, false);
  assert.deepEqual(dry.state, { n: 1 });
  assert.deepEqual((await client.getGame(id)).state, { n: 0 });
  const add = { batch: [{ op: "increment", path: ["n"], value: 1 }], expectStep: 0 };
  await client.apply(id, add);
  await assert.rejects(client.apply(id, add), { status: 409, kind: "step_conflict" });
  const once = { batch: [{ op: "increment", path: ["n"], value: 10 }] };
  const first = await client.apply(id, once, { idempotencyKey: "js-k" });
  const retry = await client.apply(id, once, { idempotencyKey: "js-k" });
  assert.deepEqual(retry, first);
  assert.deepEqual((await client.getGame(id)).state, { n: 11 });
  await assert.rejects(client.apply(id, add, { idempotencyKey: "js-k" }), { status: 409, kind: "idempotency_key_reused" });
  assert.throws(() => client.apply(id, { dry_run: true }), TypeError);
});

test("policies and macros reach the engine", async () => {
  const { id } = await client.createGame({ state: { name: "", hp: 5 } });
  const applied = await client.apply(id, {
    batch: [{ op: "assign", path: ["hp"], value: 6, old: 4 }],
    policies: { old_mismatch: "warn" },
  });
  assert.equal(applied.warnings[0].kind, "old_mismatch");
  await client.apply(id, { input: "_.set('name', '<user>');", macros: { user: "Alex" } });
  assert.equal((await client.getGame(id)).state.name, "Alex");
});

test("a game from an MVU card follows MVU's rules and shows MVU's views", async () => {
  const initvar = "<user>:\n  金钱: 50\nMira:\n  好感度: [10, \"-100 to 100\"]\nNPC:\n  $meta: {extensible: true, template: {心情: 平静}}\n";
  const card = {
    spec: "chara_card_v2",
    data: { name: "Mira", character_book: { entries: [{ keys: [], comment: "[InitVar]", content: initvar }] } },
  };
  const { id } = await client.createGame({ card, macros: { user: "Alex" } });
  assert.deepEqual((await client.getGame(id)).state, { Alex: { 金钱: 50 }, Mira: { 好感度: [10, "-100 to 100"] }, NPC: {} });
  const reply = "_.set('Mira.好感度', 10, 12);//笑\n_.set('Mira.typo', 1);\n_.insert('NPC', 'Bo', {});\n_.add('Alex', 1);";
  const applied = await client.apply(id, { input: reply, label: "m1" });
  assert.deepEqual(applied.warnings.map((w) => w.kind), ["type_mismatch"]);
  assert.ok(applied.diagnostics.some((d) => d.kind === "mvu_missing_path"));
  const view = await client.mvuView(id);
  assert.equal(view.label, "m1");
  assert.deepEqual(view.stat_data.NPC, { Bo: { 心情: "平静" } });
  assert.equal(view.delta_data.Mira.好感度, "10->12 (笑)");
  assert.equal(view.display_data.Alex.金钱, 50);
  await assert.rejects(client.createGame({ state: {}, card }), { kind: "bad_request", status: 400 });
  const strict = await client.createGame({ card: initvar, macros: { user: "A" }, profile: "strict" });
  await assert.rejects(client.apply(strict.id, { input: "_.add('A', 1);" }), { kind: "rejected", status: 422 });
});

test("a card game keeps its macros and takes a new version of its card", async () => {
  const book = (content) => ({ spec: "chara_card_v2", data: { name: "Io", character_book: { entries: [{ comment: "[InitVar]", content }] } } });
  const { id } = await client.createGame({ card: book("<user>:\n  hp: 10\n  title: squire\n"), macros: { user: "Alex" } });
  await client.apply(id, { input: "_.set('<user>.hp', 10, 4);" });
  const held = await client.gameCard(id);
  assert.deepEqual(held.macros, { user: "Alex", char: "Io" });
  assert.equal(held.fingerprint.length, 64);
  const v2 = book("<user>:\n  hp: 10\n  mp: 5\n");
  const preview = await client.updateCard(id, { card: v2, dry_run: true });
  assert.deepEqual([preview.changed, preview.committed, preview.added, preview.dropped], [true, false, [["Alex", "mp"]], [["Alex", "title"]]]);
  const taken = await client.updateCard(id, { card: v2, remove_dropped: true }, { idempotencyKey: "card-1" });
  assert.equal(taken.committed, true);
  assert.equal(taken.previous, held.fingerprint);
  assert.deepEqual((await client.getGame(id)).state, { Alex: { hp: 4, mp: 5 } });
  assert.deepEqual(await client.updateCard(id, { card: v2, remove_dropped: true }, { idempotencyKey: "card-1" }), taken);
  await client.undo(id);
  assert.equal((await client.gameCard(id)).fingerprint, held.fingerprint);
  await assert.rejects(client.updateCard(id, { card: [1] }), { kind: "bad_request", status: 400 });
});

test("the stateless endpoints", async () => {
  const found = await client.extract("ok: {'op': 'assign', 'path': 'a.b', 'value': 1}");
  assert.deepEqual(found.batch, [{ op: "assign", path: ["a", "b"], value: 1 }]);
  assert.equal(found.valid, true);
  const mvu = await client.convert([{ op: "assign", path: ["a"], value: 2 }], "json", "mvu");
  assert.equal(mvu.output, "_.set('a', 2);\n");
  const prompt = await client.prompt({ hp: 3 }, { lang: "zh" });
  assert.ok(prompt.text.includes('"hp"'));
  const batchSchema = await client.schema({ schema });
  assert.equal(typeof batchSchema.schema, "object");
  const grammar = await client.schema({ gbnf: true });
  assert.match(grammar.gbnf, /root/);
});

test("a game's prompt, schemas and conditions", async () => {
  const { id } = await client.createGame({ state: { hp: 10, npcs: { Mira: { mood: "calm" }, Bram: { mood: "sleepy" } } } });
  await client.apply(id, { batch: [{ op: "increment", path: ["hp"], value: -2 }], label: "hit" });
  const whole = await client.gamePrompt(id);
  assert.equal(whole.step, 1);
  assert.equal(whole.label, "hit");
  assert.ok(whole.state.includes('"hp": 8'));
  const budgeted = await client.gamePrompt(id, { step: "hit", budget: 15, format: "compact", mode: "state", messages: ["Mira?"] });
  assert.ok(budgeted.tokens.state <= 15);
  assert.ok(budgeted.elided.length > 0);
  const pass = await client.gamePrompt(id, { mode: "pass", reply: "Bram sleeps." });
  assert.ok(pass.text.includes("Bram sleeps."));
  await assert.rejects(client.gamePrompt(id, { mode: "pass" }), { kind: "bad_request", status: 400 });
  const schemas = await client.gameSchema(id);
  assert.equal(schemas.name, "statecraft_update");
  assert.deepEqual(schemas.pass.required, ["instructions"]);
  const evaluated = await client.evaluate(id, ["hp < 10", "npcs.Mira.mood == 'calm'", "hp =="], { step: 0 });
  assert.deepEqual(evaluated.results.slice(0, 2), [{ holds: false }, { holds: true }]);
  assert.equal(evaluated.results[2].error.code, "expected_value");
  await assert.rejects(client.evaluate("no-such-game", ["hp > 1"]), { kind: "unknown_game", status: 404 });
  const stateless = await client.prompt({ hp: 3, bag: ["a", "b", "c", "d"] }, { budget: 12, format: "compact" });
  assert.ok(stateless.tokens.state <= 12);
});

test("a token and an unreachable server are errors with kinds", async () => {
  const guarded = await startServer(["--token", "t0ken"]);
  try {
    await assert.rejects(new Statecraft(guarded.url).health(), { status: 401, kind: "unauthorized" });
    assert.equal((await new Statecraft(guarded.url, { token: "t0ken" }).health()).ok, true);
  } finally {
    await guarded.stop();
  }
  await assert.rejects(new Statecraft("http://127.0.0.1:9").health(), { status: 0, kind: "network" });
});

test("sync maps a chat onto its game by content, with keys for replies synced before", async () => {
  const create = { state: { hp: 100, gold: 0 }, schema };
  const chat = ["You wake up.", "_.set('hp', 90);//hit", "```json\n[{\"op\": \"increment\", \"path\": \"gold\", \"value\": 5}]\n```"];
  const first = await client.sync("js-sync", chat, { create });
  assert.deepEqual(first.state, { hp: 90, gold: 5 });
  assert.equal(first.applied.length, 3);
  assert.equal(first.reused, 0);
  assert.deepEqual(first.applied.map((reply) => reply.index), [0, 1, 2]);
  assert.ok(first.applied.every((reply) => reply.committed));
  // Again: nothing new, every reply found by its key.
  const again = await client.sync("js-sync", chat);
  assert.deepEqual([again.state, again.step, again.applied, again.reused], [first.state, first.step, [], 3]);
  // A swipe of the last reply: a sibling; the state the new swipe builds on, without moving.
  const swipe = [...chat.slice(0, 2), "_.add('gold', 50);"];
  const swiped = await client.sync("js-sync", swipe);
  assert.deepEqual(swiped.state, { hp: 90, gold: 50 });
  const parent = await client.sync("js-sync", chat.slice(0, 2), { move: false });
  assert.deepEqual(parent.state, { hp: 90, gold: 0 });
  assert.equal((await client.getGame("js-sync")).step, swiped.step, "move: false leaves the current step");
  // Back to the first swipe: no new step.
  const back = await client.sync("js-sync", chat);
  assert.deepEqual([back.step, back.applied], [first.step, []]);
  // An edit of the first reply in the middle: the path from there is new.
  const edited = await client.sync("js-sync", ["You wake up. _.set('hp', 50);", ...chat.slice(1)]);
  assert.deepEqual(edited.state, { hp: 90, gold: 5 });
  assert.deepEqual(edited.applied.map((reply) => reply.index), [0, 1, 2]);
  // Deleting the middle reply.
  const deleted = await client.sync("js-sync", [chat[0], chat[2]]);
  assert.deepEqual(deleted.state, { hp: 100, gold: 5 });
});

test("a sync hashes only the texts that the last path did not hold", async () => {
  const subtle = globalThis.crypto.subtle;
  const hashed = [];
  const bodies = [];
  subtle.digest = async function (algorithm, bytes) {
    hashed.push(new TextDecoder().decode(bytes));
    return SubtleCrypto.prototype.digest.call(this, algorithm, bytes);
  };
  try {
    const recording = new Statecraft(server.url, {
      fetch: (url, init) => {
        if (init.body) bodies.push(JSON.parse(init.body));
        return fetch(url, init);
      },
    });
    const chat = ["_.set('hp', 1);", "_.set('hp', 2);", "_.set('hp', 3);"];
    await recording.sync("js-sync-hashed", chat, { create: { state: { hp: 0 } } });
    assert.deepEqual(hashed, chat);
    // A new reply, then a swipe of it: only its texts are hashed, and every key sent is the text's.
    hashed.length = 0;
    await recording.sync("js-sync-hashed", [...chat, "_.set('hp', 4);"]);
    const swiped = await recording.sync("js-sync-hashed", [...chat, "_.set('hp', 5);"]);
    assert.deepEqual(hashed, ["_.set('hp', 4);", "_.set('hp', 5);"]);
    assert.deepEqual(swiped.state, { hp: 5 });
    assert.deepEqual(bodies.at(-1).replies.slice(0, 3), chat.map(sha256HexPlain));
    // Another game's path is hashed once more only where this one's last path lacked a text.
    hashed.length = 0;
    await recording.sync("js-sync-hashed-2", [chat[0], "_.set('hp', 9);"], { create: { state: { hp: 0 } } });
    assert.deepEqual(hashed, ["_.set('hp', 9);"]);
  } finally {
    delete subtle.digest;
  }
  assert.equal(globalThis.crypto.subtle.digest, SubtleCrypto.prototype.digest);
});

test("a client new to a game sends the chat as keys, and texts only for the replies the server lacks", async () => {
  const chat = ["_.set('hp', 1);", "_.set('hp', 2);", "_.set('hp', 3);"];
  const first = await client.sync("js-sync-reload", chat, { create: { state: { hp: 0 } } });
  const bodies = [];
  const recording = (url, init) => {
    if (init.body) bodies.push(JSON.parse(init.body));
    return fetch(url, init);
  };
  // The page loaded again: one request of keys, every step found.
  const reloaded = await new Statecraft(server.url, { fetch: recording }).sync("js-sync-reload", chat);
  assert.deepEqual([reloaded.state, reloaded.step, reloaded.applied, reloaded.reused], [first.state, first.step, [], 3]);
  assert.deepEqual(bodies, [{ replies: chat.map(sha256HexPlain) }]);
  // Another device with a new reply: the keys, then the one text the server names.
  bodies.length = 0;
  const more = await new Statecraft(server.url, { fetch: recording }).sync("js-sync-reload", [...chat, "_.set('hp', 4);"]);
  assert.deepEqual(more.state, { hp: 4 });
  assert.deepEqual(more.applied.map((reply) => reply.index), [3]);
  assert.deepEqual(bodies, [
    { replies: [...chat, "_.set('hp', 4);"].map(sha256HexPlain) },
    { replies: [...chat.map(sha256HexPlain), { text: "_.set('hp', 4);" }] },
  ]);
});

test("a refused reply is an empty step that keeps its feedback", async () => {
  const synced = await client.sync("js-sync-refused", ["_.set('hp', 500);"], { create: { state: { hp: 100 }, schema } });
  assert.deepEqual(synced.state, { hp: 100 });
  assert.equal(synced.applied[0].committed, false);
  assert.match(synced.applied[0].feedback, /hp/);
  const again = await client.sync("js-sync-refused", ["_.set('hp', 500);"]);
  assert.deepEqual([again.applied, again.reused, again.step], [[], 1, synced.step], "never applied twice");
});

test("a sync past the body limit goes as prefixes, each a whole path, moving only at the end", async () => {
  const small = await startServer(["--max-body", "16384"]);
  try {
    const bodies = [];
    const recording = (url, init) => {
      if (init.body) bodies.push(JSON.parse(init.body));
      return fetch(url, init);
    };
    const chat = Array.from({ length: 60 }, (_, index) => `Reply ${index}: ${"the cave is dark ".repeat(50)}_.add('gold', 1);`);
    // Sent whole, the body passes the server's limit.
    const whole = new Statecraft(small.url, { maxBodyBytes: 1 << 30 });
    const refused = await whole.sync("long", chat, { create: { state: { gold: 0 } } }).catch((error) => error);
    assert.equal(refused.kind, "body_too_large");
    const split = new Statecraft(small.url, { maxBodyBytes: 12000, fetch: recording });
    const synced = await split.sync("long", chat, { create: { state: { gold: 0 } }, macros: { user: "A" } });
    assert.deepEqual(synced.state, { gold: 60 });
    assert.equal(synced.applied.length, 60);
    assert.deepEqual(synced.applied.map((reply) => reply.index), chat.map((_, index) => index));
    assert.equal(synced.reused, 0);
    // With `create`, texts from the first part on: a new game holds none of them.
    assert.equal(typeof bodies[0].replies[0].text, "string");
    assert.ok(bodies.length > 3, `${bodies.length} parts`);
    for (const [part, body] of bodies.entries()) {
      assert.ok(new TextEncoder().encode(JSON.stringify(body)).length <= 12000, `part ${part} fits`);
      assert.equal(body.create !== undefined, part === 0, "only the first part may make the game");
      assert.equal(body.move, part === bodies.length - 1 ? undefined : false, "only the last part moves");
      assert.deepEqual(body.macros, { user: "A" });
      if (part > 0) {
        // Each part is a whole path: what the parts before it sent goes as keys.
        const before = bodies[part - 1].replies.length;
        assert.ok(body.replies.slice(0, before).every((reply) => typeof reply === "string"));
        assert.ok(body.replies.slice(before).every((reply) => typeof reply.text === "string"));
      }
    }
    assert.equal(bodies.at(-1).replies.length, 60);
    assert.equal((await split.getGame("long")).step, synced.step, "the whole path is current");
    // Again: one request of keys alone.
    bodies.length = 0;
    const again = await split.sync("long", chat);
    assert.deepEqual([bodies.length, again.applied.length, again.reused], [1, 0, 60]);
    // A reply too large alone is a part of its own, and the server says so.
    const huge = await split.sync("long", [...chat, "x".repeat(20000)]).catch((error) => error);
    assert.equal(huge.kind, "body_too_large");
    assert.deepEqual((await split.getGame("long")).state, { gold: 60 }, "nothing changed");
  } finally {
    await small.stop();
  }
});

test("sync sends the texts again when the server lacks the steps of its keys", async () => {
  const chat = ["_.set('hp', 1);", "_.set('hp', 2);"];
  await client.sync("js-sync-need", chat, { create: { state: { hp: 0 } } });
  // Another client deletes the game and makes it again: this client's keys name no steps now.
  const other = new Statecraft(server.url);
  await other.deleteGame("js-sync-need");
  await other.createGame({ state: { hp: 0 }, id: "js-sync-need" });
  const resent = await client.sync("js-sync-need", [...chat, "_.set('hp', 3);"]);
  assert.deepEqual(resent.state, { hp: 3 });
  assert.deepEqual(resent.applied.map((reply) => reply.index), [0, 1, 2]);
  // The 409 itself, from a bare request: the indices needed, nothing changed.
  const step = (await client.getGame("js-sync-need")).step;
  const unknown = "0".repeat(64);
  const error = await client
    .request("POST", "/v1/games/js-sync-need/sync", { replies: [{ sha256: unknown }, { text: "x" }] })
    .catch((e) => e);
  assert.equal(error.status, 409);
  assert.equal(error.kind, "need_text");
  assert.deepEqual(error.body.need, [0]);
  assert.equal((await client.getGame("js-sync-need")).step, step);
});
