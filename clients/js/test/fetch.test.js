// The client over an injected `fetch` (no server): what each call sends, how each kind of answer
// becomes a value or a StatecraftError, and the 401 hook that asks for a token and sends again.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Statecraft, StatecraftError, sha256HexPlain } from "../statecraft.js";

/** A `fetch` that records each call and answers from `answers` in turn (a Response, or a function
 * of the call that returns one or throws). */
function recorder(...answers) {
  const calls = [];
  const fetch = async (url, init) => {
    const call = { url, ...init };
    calls.push(call);
    if (answers.length === 0) throw new Error(`unexpected call ${init.method} ${url}`);
    const answer = answers.shift();
    return typeof answer === "function" ? answer(call) : answer;
  };
  return { fetch, calls };
}

const json = (status, body) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const refused = () => json(401, { error: { kind: "unauthorized", message: "a bearer token is needed" } });

test("a call sends its method, path, JSON body, token, idempotency key and init", async () => {
  const { fetch, calls } = recorder(json(200, { committed: true }));
  const client = new Statecraft("http://game.test:1/", {
    token: "t0ken",
    fetch,
    init: { credentials: "omit", cache: "no-store", method: "PUT" },
  });
  const answer = await client.apply("a b", { input: "x", dryRun: true, expectStep: 3 }, { idempotencyKey: "k1" });
  assert.deepEqual(answer, { committed: true });
  const [call] = calls;
  assert.equal(call.url, "http://game.test:1/v1/games/a%20b/apply");
  assert.equal(call.method, "POST", "the client's method wins over init's");
  assert.equal(call.credentials, "omit");
  assert.equal(call.cache, "no-store");
  assert.deepEqual(JSON.parse(call.body), { input: "x", dry_run: true, expect_step: 3 });
  assert.deepEqual(call.headers, {
    accept: "application/json",
    "content-type": "application/json",
    authorization: "Bearer t0ken",
    "idempotency-key": "k1",
  });
});

test("a GET sends no body and no content type, and query members are encoded", async () => {
  const { fetch, calls } = recorder(json(200, { games: [], next: null }), json(200, { state: {} }));
  const client = new Statecraft(undefined, { fetch });
  await client.listGames({ after: "a&b", limit: 2 });
  await client.stateAt("g", { at: "m 1" });
  assert.equal(calls[0].url, "http://127.0.0.1:8765/v1/games?after=a%26b&limit=2");
  assert.equal(calls[0].body, undefined);
  assert.deepEqual(calls[0].headers, { accept: "application/json" });
  assert.equal(calls[1].url, "http://127.0.0.1:8765/v1/games/g/state?at=m+1");
});

test("the headers option adds to every request and may replace the content type", async () => {
  const { fetch, calls } = recorder(json(200, { ok: true }), json(200, { committed: true }));
  let asked = 0;
  const client = new Statecraft("http://game.test/api/plugins/statecraft", {
    fetch,
    headers: () => {
      asked += 1;
      return { "X-CSRF-Token": `t${asked}`, "Content-Type": "application/vnd.statecraft+json" };
    },
  });
  await client.health();
  await client.apply("g", { input: "x" });
  assert.equal(asked, 2, "asked at each request");
  assert.equal(calls[0].url, "http://game.test/api/plugins/statecraft/v1/health");
  assert.deepEqual(calls[0].headers, { accept: "application/json", "x-csrf-token": "t1" }, "no content type without a body");
  assert.deepEqual(calls[1].headers, {
    accept: "application/json",
    "content-type": "application/vnd.statecraft+json",
    "x-csrf-token": "t2",
  });
});

test("each attempt gets a timeout signal unless the call passes its own", async () => {
  const { fetch, calls } = recorder(json(200, { ok: true }), json(200, { ok: true }));
  const client = new Statecraft("http://game.test", { fetch, timeoutMs: 1000 });
  await client.health();
  assert.ok(calls[0].signal instanceof AbortSignal);
  const own = new AbortController().signal;
  await client.request("GET", "/v1/health", undefined, { signal: own });
  assert.equal(calls[1].signal, own);
});

test("an error answer becomes a StatecraftError with the body's kind and details", async () => {
  const body = {
    error: { kind: "rejected", message: "the batch was refused" },
    errors: [{ kind: "schema_violation", message: "too big", path: "/hp" }],
    diagnostics: [],
    feedback: "Your update was not applied",
  };
  const { fetch } = recorder(json(422, body));
  const error = await new Statecraft("http://game.test", { fetch }).apply("g", { batch: [] }).catch((e) => e);
  assert.ok(error instanceof StatecraftError);
  assert.equal(error.status, 422);
  assert.equal(error.kind, "rejected");
  assert.equal(error.message, "the batch was refused");
  assert.deepEqual(error.body, body);
  assert.equal(error.errors[0].path, "/hp");
  assert.equal(error.feedback, "Your update was not applied");
});

test("no answer, an answer that is not JSON and an error without a kind have the client's kinds", async () => {
  const down = new TypeError("fetch failed");
  const { fetch } = recorder(
    () => {
      throw down;
    },
    new Response("<html>bad gateway</html>", { status: 502 }),
    new Response("not json", { status: 200 }),
    json(500, { message: "a proxy's error" }),
  );
  const client = new Statecraft("http://game.test", { fetch });
  const network = await client.health().catch((e) => e);
  assert.equal(network.kind, "network");
  assert.equal(network.status, 0);
  assert.equal(network.cause, down);
  assert.match(network.message, /cannot reach http:\/\/game.test: fetch failed/);
  const gateway = await client.health().catch((e) => e);
  assert.deepEqual([gateway.kind, gateway.status], ["not_json", 502]);
  assert.match(gateway.message, /502 with text that is not JSON: <html>bad gateway/);
  const ok = await client.health().catch((e) => e);
  assert.deepEqual([ok.kind, ok.status], ["not_json", 200], "a 2xx that is not JSON is an error too");
  const bare = await client.health().catch((e) => e);
  assert.deepEqual([bare.kind, bare.status, bare.message], ["unknown", 500, "the server answered 500"]);
});

test("without onUnauthorized a 401 is thrown", async () => {
  const { fetch, calls } = recorder(refused());
  await assert.rejects(new Statecraft("http://game.test", { fetch }).health(), { status: 401, kind: "unauthorized" });
  assert.equal(calls.length, 1);
});

test("onUnauthorized gives a token and the request is sent again with it", async () => {
  const asked = [];
  const { fetch, calls } = recorder(refused(), refused(), json(201, { id: "g", step: 0 }));
  const client = new Statecraft("http://game.test", {
    fetch,
    onUnauthorized: (error, sent) => {
      asked.push([error.kind, sent.token]);
      return asked.length === 1 ? "wrong" : "right";
    },
  });
  assert.deepEqual(await client.createGame({ state: {} }, { idempotencyKey: "k" }), { id: "g", step: 0 });
  assert.deepEqual(asked, [["unauthorized", undefined], ["unauthorized", "wrong"]], "the refused token is passed");
  assert.deepEqual(calls.map((call) => call.headers.authorization), [undefined, "Bearer wrong", "Bearer right"]);
  assert.deepEqual(new Set(calls.map((call) => call.body)).size, 1, "the same body every time");
  assert.deepEqual(new Set(calls.map((call) => call.headers["idempotency-key"])), new Set(["k"]));
  assert.equal(client.token, "right", "the token given is kept");
});

test("onUnauthorized answering nothing lets the 401 through, and its own failure too", async () => {
  const { fetch } = recorder(refused(), refused());
  let client = new Statecraft("http://game.test", { fetch, onUnauthorized: async () => undefined });
  await assert.rejects(client.health(), { status: 401, kind: "unauthorized" });
  const cancelled = new Error("the user closed the dialog");
  client = new Statecraft("http://game.test", {
    fetch,
    onUnauthorized: () => {
      throw cancelled;
    },
  });
  await assert.rejects(client.health(), cancelled);
});

test("requests refused together ask once, and all go again with the one token", async () => {
  let asked = 0;
  let give;
  const given = new Promise((resolve) => {
    give = resolve;
  });
  const answer = (call) => (call.headers.authorization === "Bearer t" ? json(200, { ok: true }) : refused());
  const { fetch, calls } = recorder(...Array(6).fill(answer));
  const client = new Statecraft("http://game.test", {
    fetch,
    onUnauthorized: () => {
      asked += 1;
      return given;
    },
  });
  const all = Promise.all([client.health(), client.health()]);
  // Both are refused before the token is typed; a third is sent meanwhile, refused, and waits too.
  await new Promise((resolve) => setTimeout(resolve, 10));
  const late = client.health();
  await new Promise((resolve) => setTimeout(resolve, 10));
  give("t");
  assert.deepEqual(await all, [{ ok: true }, { ok: true }]);
  assert.deepEqual(await late, { ok: true });
  assert.equal(asked, 1);
  assert.deepEqual(
    calls.map((call) => call.headers.authorization),
    [undefined, undefined, undefined, "Bearer t", "Bearer t", "Bearer t"],
    "three refused, then the same three with the token",
  );
});

test("sync sends a game's replies as keys first, then the texts the server names, per game", async () => {
  const key = (text) => createHash("sha256").update(text, "utf8").digest("hex");
  const synced = (applied) => json(200, { state: {}, step: 2, applied, reused: 0 });
  const need = (indices) => json(409, { error: { kind: "need_text", message: "not known here" }, need: indices });
  const { fetch, calls } = recorder(synced([]), synced([]), need([0]), synced([]), synced([]));
  const client = new Statecraft("http://game.test", { fetch });
  const create = { state: { hp: 1 }, profile: "mvu" };
  await client.sync("g/1", ["Hi ü", "_.set('hp', 2);"], { create, macros: { user: "A" }, idempotencyKey: "s1" });
  await client.sync("g/1", ["Hi ü", "_.set('hp', 2);", "new"], { move: false });
  await client.sync("other", ["Hi ü"]);
  await client.sync("g/1", ["Hi ü", "edited"]);
  assert.equal(calls[0].url, "http://game.test/v1/games/g%2F1/sync");
  assert.equal(calls[0].headers["idempotency-key"], "s1");
  // A game that may not exist yet (`create`): the texts, since a new game holds none of them.
  assert.deepEqual(JSON.parse(calls[0].body), {
    replies: [{ text: "Hi ü" }, { text: "_.set('hp', 2);" }],
    macros: { user: "A" },
    create,
  });
  assert.deepEqual(JSON.parse(calls[1].body), {
    replies: [key("Hi ü"), key("_.set('hp', 2);"), { text: "new" }],
    move: false,
  });
  // A game this object has not synced: keys alone, since the server may have every reply.
  assert.deepEqual(JSON.parse(calls[2].body), { replies: [key("Hi ü")] });
  // It had none of them: the texts it named.
  assert.deepEqual(JSON.parse(calls[3].body), { replies: [{ text: "Hi ü" }] });
  assert.deepEqual(JSON.parse(calls[4].body), { replies: [key("Hi ü"), { text: "edited" }] });
  assert.match(JSON.parse(calls[1].body).replies[0], /^[0-9a-f]{64}$/);
  assert.equal(calls.length, 5);
});

test("sync answers need_text by sending the texts asked for, once", async () => {
  const need = (indices) =>
    json(409, { error: { kind: "need_text", message: "replies 0 and 2 are not known here" }, need: indices });
  const ok = json(200, { state: { hp: 3 }, step: 3, applied: [], reused: 3 });
  const { fetch, calls } = recorder(json(200, { state: {}, step: 3, applied: [], reused: 0 }), need([0, 2]), ok, need([1]), need([1]));
  const client = new Statecraft("http://game.test", { fetch });
  const replies = ["a", "b", "c"];
  await client.sync("g", replies);
  assert.deepEqual(await client.sync("g", replies, { idempotencyKey: "k" }), { state: { hp: 3 }, step: 3, applied: [], reused: 3 });
  const kinds = (call) => JSON.parse(call.body).replies.map((reply) => (typeof reply === "string" ? "#" : reply.text));
  assert.deepEqual(kinds(calls[1]), ["#", "#", "#"]);
  assert.deepEqual(kinds(calls[2]), ["a", "#", "c"]);
  assert.equal(calls[2].headers["idempotency-key"], "k/texts", "the resend has a key of its own");
  // A server that asks again after the texts were sent: the error goes to the caller.
  const error = await client.sync("g", replies).catch((e) => e);
  assert.equal(calls.length, 5);
  assert.deepEqual(kinds(calls[4]), ["#", "b", "#"]);
  assert.equal(error.kind, "need_text");
  assert.deepEqual(error.body.need, [1]);
});

test("a game the server lost is made again with the texts, and sync refuses replies that are not texts", async () => {
  const gone = json(404, { error: { kind: "unknown_game", message: "no game g" } });
  const ok = () => json(200, { state: {}, step: 1, applied: [], reused: 0 });
  const { fetch, calls } = recorder(ok(), gone, ok(), ok());
  const client = new Statecraft("http://game.test", { fetch });
  await client.sync("g", ["a"]);
  await assert.rejects(client.sync("g", ["a"]), { kind: "unknown_game" });
  // Made again: it holds none of the replies this object sent, so their texts go at once.
  await client.sync("g", ["a"], { create: { state: {} } });
  assert.deepEqual(JSON.parse(calls[2].body).replies, [{ text: "a" }]);
  await client.sync("g", ["a"]);
  assert.deepEqual(JSON.parse(calls[3].body).replies, [sha256HexPlain("a")]);
  await assert.rejects(client.sync("g", [{ sha256: "00" }]), TypeError);
  await assert.rejects(client.sync("g", "a"), TypeError);
  assert.equal(calls.length, 4, "nothing is sent for a bad call");
});

test("the plain SHA-256 agrees with node's on every padding length", () => {
  for (const length of [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000]) {
    for (const text of ["x".repeat(length), "é".repeat(length)]) {
      assert.equal(sha256HexPlain(text), createHash("sha256").update(text, "utf8").digest("hex"), `length ${length}`);
    }
  }
});
