// The extension's logic against a real `statecraft serve`: chats shaped as SillyTavern keeps them
// (messages with `mes`, `is_user`, `swipes`, `swipe_id`, `extra`), edited as its actions edit them,
// and after each action the game's state is the state the shown replies give.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Statecraft } from "../../js/statecraft.js";
import { startServer } from "../../js/test/server.js";
import { ChatKeeper, cardChange, generationPath, pathText, shownReplies, isReply, gameSource, initVarEntries, testConnection, valueAt, newGameId, recoverable } from "../keeper.js";

let server;
let client;

before(async () => {
  server = await startServer(["--allow-origin", "http://127.0.0.1:8000"]);
  client = new Statecraft(server.url);
});

after(async () => {
  await server?.stop();
});

const user = (mes) => ({ name: "You", is_user: true, mes });
const bot = (...swipes) => ({ name: "Warden", is_user: false, mes: swipes[0], swipes, swipe_id: 0 });
const swipeTo = (message, id) => Object.assign(message, { swipe_id: id, mes: message.swipes[id] });

function keeperFor(chat, gameId, create = { state: { hp: 100, gold: 0 } }) {
  const events = { refused: [], errors: [], recovered: 0, synced: [] };
  const keeper = new ChatKeeper({
    client,
    target: () => ({ gameId, chat: chat.messages, create, macros: { user: "You" } }),
    onSynced: (result) => events.synced.push(result),
    onRefused: (refusal) => events.refused.push(refusal),
    onError: (error) => events.errors.push(error),
    onRecovered: () => {
      events.recovered += 1;
    },
    retryMs: [50],
  });
  return { keeper, events };
}

test("replies are the model's messages, hidden ones included, narrator notes not", () => {
  const chat = [
    bot("Hello"),
    user("hi"),
    { ...bot("hidden reply"), is_system: true },
    { name: "System", is_user: false, is_system: true, mes: "a note", extra: { type: "narrator" } },
    bot("last"),
  ];
  assert.deepEqual(shownReplies(chat), ["Hello", "hidden reply", "last"]);
  assert.equal(isReply(chat[3]), false);
  // A swipe being generated: SillyTavern moves swipe_id past the end of swipes until it arrives.
  const pending = { ...bot("old"), swipe_id: 1, mes: "" };
  assert.deepEqual(shownReplies([bot("Hello"), user("x"), pending]), ["Hello"]);
});

test("a generation builds on the right path", () => {
  const chat = [bot("a"), user("x"), bot("b")];
  assert.deepEqual(generationPath(chat, "swipe"), { replies: ["a"], move: false });
  // Continue: the reply being continued is on the path; the model writes after its commands.
  assert.deepEqual(generationPath(chat, "continue"), { replies: ["a", "b"], move: true });
  assert.deepEqual(generationPath(chat, "normal"), { replies: ["a", "b"], move: true });
  assert.deepEqual(generationPath(chat, "impersonate"), { replies: ["a", "b"], move: true });
  // Regenerate: SillyTavern has removed the reply before the interceptor runs.
  assert.deepEqual(generationPath(chat.slice(0, 2), "regenerate"), { replies: ["a"], move: true });
  // A swipe being generated is not on the path already.
  assert.deepEqual(generationPath([bot("a"), user("x"), { ...bot("b"), swipe_id: 1, mes: "" }], "swipe"), { replies: ["a"], move: false });
});

test("a chat new to statecraft sends its card with the first sync; a chat with a game sends it only when the server lacks it", async () => {
  const bodies = [];
  const chat = { messages: [bot("Welcome. _.set('gold', 5);")] };
  const create = { state: { hp: 100, gold: 0 } };
  // Each keeper is a page of its own, with a client of its own.
  const page = (isNew) =>
    new ChatKeeper({
      client: new Statecraft(server.url, {
        fetch: (url, init) => {
          if (init.body) bodies.push(JSON.parse(init.body));
          return fetch(url, init);
        },
      }),
      target: () => ({ gameId: "keeper-new", chat: chat.messages, create, macros: { user: "You" }, isNew }),
    });
  const state = async () => (await client.getGame("keeper-new")).state;
  // A new chat: one sync with the card and the texts.
  await page(true).sync();
  assert.deepEqual(await state(), { hp: 100, gold: 5 });
  assert.deepEqual(bodies.map((body) => body.create), [create]);
  assert.deepEqual(bodies[0].replies, [{ text: chat.messages[0].mes }]);
  // The page loaded again, with a reply more: no card, the keys, then the one text.
  bodies.length = 0;
  chat.messages.push(user("x"), bot("_.set('hp', 90);"));
  await page(false).sync();
  assert.deepEqual(await state(), { hp: 90, gold: 5 });
  assert.deepEqual(bodies.map((body) => body.create), [undefined, undefined]);
  assert.equal(typeof bodies[0].replies[1], "string", "the keys first");
  // A server without the game (deleted here): made from the card and the texts once the server
  // says so.
  bodies.length = 0;
  await client.deleteGame("keeper-new");
  await page(false).sync();
  assert.deepEqual(await state(), { hp: 90, gold: 5 });
  assert.deepEqual(bodies.map((body) => body.create), [undefined, create]);
  assert.equal(typeof bodies[1].replies[1].text, "string", "the texts at once");
});

test("every chat action lands the game on the shown replies' state", async () => {
  const chat = { messages: [bot("Welcome. _.set('gold', 5);")] };
  const { keeper, events } = keeperFor(chat, "keeper-actions");
  const state = async () => (await client.getGame("keeper-actions")).state;
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 100, gold: 5 }, "the greeting applies");
  chat.messages.push(user("attack"), bot("_.set('hp', 90);"));
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 90, gold: 5 });
  // A new swipe: the prompt builds on the state before the reply, the game does not move.
  const before = await keeper.stateForGeneration("swipe");
  assert.deepEqual(before.state, { hp: 100, gold: 5 });
  assert.deepEqual(await state(), { hp: 90, gold: 5 });
  chat.messages[2].swipes.push("_.add('gold', 10);");
  swipeTo(chat.messages[2], 1);
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 100, gold: 15 }, "the new swipe");
  swipeTo(chat.messages[2], 0);
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 90, gold: 5 }, "swiped back");
  // Delete swipe 0: swipe 1 is shown.
  chat.messages[2].swipes.splice(0, 1);
  swipeTo(chat.messages[2], 0);
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 100, gold: 15 });
  // Edit the greeting: everything after it builds on the new text.
  chat.messages[0].mes = chat.messages[0].swipes[0] = "Welcome. _.set('gold', 1);";
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 100, gold: 11 });
  // A hidden reply stays on the path; another reply, then the middle one is deleted.
  chat.messages[2].is_system = true;
  chat.messages.push(user("x"), bot("_.add('hp', -5);"));
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 95, gold: 11 });
  chat.messages.splice(1, 2);
  await keeper.sync();
  assert.deepEqual(await state(), { hp: 95, gold: 1 });
  assert.equal(events.errors.length, 0, events.errors.map((error) => error.message).join());
});

test("a continue is prompted with the reply it continues, and its whole text applies once", async () => {
  const chat = { messages: [bot("Hi."), user("fight"), bot("The blow lands. _.set('hp', 100, 60);")] };
  const { keeper, events } = keeperFor(chat, "keeper-continue");
  await keeper.sync();
  const prompt = await keeper.stateForGeneration("continue");
  assert.deepEqual(prompt.state, { hp: 60, gold: 0 }, "the model writes after the reply's commands");
  keeper.generationStarted();
  const message = chat.messages[2];
  message.mes = message.swipes[0] = `${message.mes} Then a coin. _.add('gold', 3);`;
  await keeper.generationEnded();
  assert.deepEqual((await client.getGame("keeper-continue")).state, { hp: 60, gold: 3 }, "each command once");
  const log = await client.log("keeper-continue");
  assert.equal(log.steps.length, 3, "the greeting, the reply as first written, the continued reply beside it");
  assert.equal(events.errors.length, 0, events.errors.map((error) => error.message).join());
});

test("a refusal is reported once and its feedback goes with its step only", async () => {
  const schema = { type: "object", properties: { hp: { type: "integer", maximum: 100 } } };
  const chat = { messages: [bot("Hi"), user("x"), bot("_.set('hp', 500);")] };
  const { keeper, events } = keeperFor(chat, "keeper-refused", { state: { hp: 100 }, schema });
  const synced = await keeper.sync();
  assert.equal(events.refused.length, 1);
  assert.equal(events.refused[0].index, 1);
  assert.match(synced.feedback, /hp/);
  const prompt = await keeper.stateForGeneration("normal");
  assert.match(prompt.feedback, /hp/, "the next prompt carries the refusal");
  const swipe = await keeper.stateForGeneration("swipe");
  assert.equal(swipe.feedback, "", "a swipe of the refused reply builds on its parent, without the stale feedback");
  await keeper.sync();
  assert.equal(events.refused.length, 1, "never applied twice, never reported twice");
});

test("syncs are one at a time, none while a reply is generated, one after it", async () => {
  const chat = { messages: [bot("a")] };
  const { keeper } = keeperFor(chat, "keeper-queue");
  const first = keeper.sync();
  const second = keeper.sync();
  const third = keeper.sync();
  assert.equal(second, third, "syncs asked for while one waits are one");
  await Promise.all([first, second]);
  const sent = keeper.requests;
  keeper.generationStarted();
  chat.messages.push(user("x"), { ...bot("partial _.set('hp'"), mes: "partial _.set('hp'" });
  assert.equal(await keeper.sync(), null);
  assert.equal(keeper.requests, sent, "nothing sent while generating");
  chat.messages[2].mes = chat.messages[2].swipes[0] = "_.set('hp', 1);";
  const ended = await keeper.generationEnded();
  assert.equal(ended.state.hp, 1);
});

test("a server that goes away is retried until it is back, then reported recovered", async () => {
  let down = true;
  const flaky = new Statecraft(server.url, {
    fetch: (url, init) => (down ? Promise.reject(new TypeError("Failed to fetch")) : fetch(url, init)),
  });
  const chat = { messages: [bot("_.set('gold', 3);")] };
  const events = { errors: [], recovered: 0 };
  const keeper = new ChatKeeper({
    client: flaky,
    target: () => ({ gameId: "keeper-flaky", chat: chat.messages, create: { state: { gold: 0 } } }),
    onError: (error) => events.errors.push(error),
    onRecovered: () => {
      events.recovered += 1;
    },
    retryMs: [30],
  });
  assert.equal(await keeper.sync(), null);
  assert.equal(events.errors.length, 1);
  assert.ok(recoverable(events.errors[0]));
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(events.errors.length, 1, "the same failure is reported once");
  down = false;
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(events.recovered, 1);
  assert.deepEqual((await client.getGame("keeper-flaky")).state, { gold: 3 });
  keeper.stop();
});

test("a game deleted on the server is made again from the card", async () => {
  const chat = { messages: [bot("_.set('gold', 3);")] };
  const { keeper } = keeperFor(chat, "keeper-deleted", { state: { gold: 1 } });
  await keeper.sync();
  await client.deleteGame("keeper-deleted");
  const again = await keeper.sync();
  assert.deepEqual(again.state, { gold: 3 });
});

test("the connection check names the problem", async () => {
  assert.deepEqual((await testConnection(client, { origin: "http://127.0.0.1:8000" })).ok, true);
  const down = await testConnection(new Statecraft("http://127.0.0.1:9"), { origin: "http://127.0.0.1:8000" });
  assert.equal(down.problem, "down");
  assert.match(down.message, /statecraft serve --allow-origin http:\/\/127.0.0.1:8000/);
  // A browser hides a CORS refusal as a network error; a no-cors request still reaches the server.
  const blocked = new Statecraft(server.url, { fetch: () => Promise.reject(new TypeError("Failed to fetch")) });
  const origin = await testConnection(blocked, { origin: "http://localhost:8000", fetch: (url) => fetch(url) });
  assert.equal(origin.problem, "origin");
  assert.match(origin.message, /--allow-origin http:\/\/localhost:8000/);
  const token = await startServer(["--token", "secret"]);
  try {
    const wrong = await testConnection(new Statecraft(token.url, { token: "nope" }), { origin: "x" });
    assert.equal(wrong.problem, "token");
    const missing = await testConnection(new Statecraft(token.url), { origin: "x" });
    assert.match(missing.message, /needs a token/);
  } finally {
    await token.stop();
  }
});

test("the game comes from the card's settings, its [InitVar] entries, or nothing", () => {
  const own = { data: { extensions: { statecraft: { state: { hp: 1 }, schema: { type: "object" }, profile: "strict" } } } };
  // The card goes to the server, which reads its settings as `new --card` does.
  assert.deepEqual(gameSource(own, { macros: { user: "You" } }).create, {
    card: { spec: "chara_card_v2", spec_version: "2.0", data: own.data },
    macros: { user: "You" },
  });
  assert.deepEqual(gameSource(own).schema, { type: "object" });
  // A disabled [InitVar] entry counts: MVU reads it all the same.
  const entries = [{ comment: "[InitVar] start", content: "hp: 1", enabled: false }];
  const mvu = { name: "M", data: { name: "M", character_book: { entries }, extensions: {} } };
  const fromCard = gameSource(mvu, { macros: { user: "You", char: "M" } });
  assert.equal(fromCard.create.profile, "mvu");
  assert.equal(fromCard.create.state, undefined, "a card, not a state: the server refuses both");
  assert.deepEqual(fromCard.create.card.data.character_book.entries, entries);
  assert.deepEqual(fromCard.create.macros, { user: "You", char: "M" });
  assert.match(fromCard.from, /world book in its card/);
  // The world book SillyTavern links to the card (where MVU reads) comes before the embedded one.
  const world = { entries: { 0: { uid: 0, comment: "[InitVar]", content: "hp: 2", disable: true } } };
  const linked = { ...mvu, data: { ...mvu.data, extensions: { world: "M's book" } } };
  assert.deepEqual(gameSource(linked, { world }).create.card.data.character_book.entries, world.entries);
  assert.match(gameSource(linked, { world }).from, /world book "M's book"/);
  assert.deepEqual(gameSource(linked, { world: { entries: {} } }).create.card.data.character_book.entries, entries);
  const zod = { ...mvu, data: { ...mvu.data, extensions: { statecraft: { profile: "mvu-zod" } } } };
  assert.equal(gameSource(zod).create.profile, "mvu-zod");
  assert.deepEqual(gameSource({ data: {} }).create, { state: {} });
  assert.deepEqual(initVarEntries(world).length, 1);
  assert.match(newGameId("Warden - 2026-1-1@10h / ü"), /^st-Warden-2026-1-1-10h-u-[0-9a-z]{8}$/);
});

test("a game made from a card's settings is the extension's, and a changed card is offered", async () => {
  const settings = { state: { gold: 3 }, schema: { type: "object" }, profile: "mvu" };
  const character = { name: "Vex", data: { name: "Vex", extensions: { statecraft: settings } } };
  const source = gameSource(character, { macros: { user: "You", char: "Vex" } });
  const chat = { messages: [bot("Hi. _.add('gold', 1);")] };
  const { keeper } = keeperFor(chat, "keeper-settings", source.create);
  await keeper.sync();
  assert.deepEqual((await client.getGame("keeper-settings")).state, { gold: 4 });
  assert.equal(await cardChange(client, "keeper-settings", source.card), null, "the same card: nothing to offer");
  const edited = { ...character, data: { ...character.data, extensions: { statecraft: { ...settings, state: { gold: 3, gems: 0 } } } } };
  const change = await cardChange(client, "keeper-settings", gameSource(edited).card);
  assert.deepEqual(change.added, [["gems"]]);
  assert.equal(pathText(["a", "b.c", 0, "d"]), 'a["b.c"][0].d');
  assert.deepEqual((await client.getGame("keeper-settings")).state, { gold: 4 }, "a dry run");
});

test("a chat of an MVU card: its game is made from the card and follows MVU's rules", async () => {
  const card = {
    name: "Mira",
    data: {
      name: "Mira",
      character_book: { entries: [{ comment: "[InitVar] stats", content: "hero:\n  hp: [100, \"health\"]\n  owner: <user>\n", enabled: false }] },
      extensions: {},
    },
  };
  const chat = { messages: [bot("Hello. _.set('hero.hp', 100, 90);//a scratch\n_.set('hero.mana', 5);")] };
  const { create } = gameSource(card, { macros: { user: "You", char: "Mira" } });
  const { keeper, events } = keeperFor(chat, "keeper-mvu", () => Promise.resolve(create));
  const synced = await keeper.sync();
  assert.deepEqual(synced.state, { hero: { hp: [90, "health"], owner: "You" } }, "a pair's value set; a path that does not exist skipped");
  const view = await client.mvuView("keeper-mvu");
  assert.equal(view.delta_data.hero.hp, "100->90 (a scratch)");
  assert.equal(events.errors.length, 0, events.errors.map((error) => error.message).join());
});

test("/state paths", () => {
  const state = { a: { "x.y": [1, { b: 2 }] } };
  assert.equal(valueAt(state, "a['x.y'][1].b"), 2);
  assert.equal(valueAt(state, "/a/x.y/0"), 1);
  assert.equal(valueAt(state, "a.missing"), undefined);
  assert.deepEqual(valueAt(state, ""), state);
});
