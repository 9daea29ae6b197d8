// The update pass's logic (pass.js): the block a pass writes and the extraction reads, the choice of
// constraint, the answer's text for each kind, the path while a pass runs; and `UpdatePass` itself
// against a real `statecraft serve`, with a stand-in for SillyTavern's context whose model answers as
// a test says (a batch, a refused batch, a refused batch twice), as SillyTavern's `generateRawData`
// and `generateRaw` return them.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Statecraft } from "../../js/statecraft.js";
import { startServer } from "../../js/test/server.js";
import { ChatKeeper, shownReplies } from "../keeper.js";
import {
  UpdatePass,
  answerText,
  applyPromptRegex,
  describeRun,
  hasBlock,
  makesReply,
  passKind,
  passMessages,
  replySignature,
  structuredSupported,
  visibleChat,
  withBlock,
  withoutBlock,
  PROMPT_REGEX_ID,
} from "../pass.js";

let server;
let client;

before(async () => {
  server = await startServer();
  client = new Statecraft(server.url);
});

after(async () => {
  await server?.stop();
});

const user = (mes) => ({ name: "You", is_user: true, mes });
const bot = (...swipes) => ({ name: "Warden", is_user: false, mes: swipes[0], swipes, swipe_id: 0 });

test("the block: written at the reply's end, one per reply, read back, and removed", () => {
  const batch = [{ op: "increment", path: ["gold"], value: 5 }];
  const text = withBlock("Aria finds 5 gold.", batch);
  assert.equal(text, 'Aria finds 5 gold.\n\n<statecraft>\n{"instructions":[{"op":"increment","path":["gold"],"value":5}]}\n</statecraft>');
  assert.ok(hasBlock(text));
  assert.equal(withoutBlock(text), "Aria finds 5 gold.");
  // Written again (run again, a continue): still one block, the new one.
  const again = withBlock(text, []);
  assert.equal(again.match(/<statecraft>/g).length, 1);
  assert.match(again, /\{"instructions":\[\]\}/);
  // A continue writes after the block: the reply's prose is both parts, as written.
  assert.equal(withoutBlock(`${text} Then she rests.`), "Aria finds 5 gold. Then she rests.");
  assert.equal(hasBlock("no block here"), false);
});

test("the constraint: automatic picks structured output, else a tool, else the prompt; forced wins", () => {
  assert.equal(passKind("auto", { structured: true, tools: true }), "structured");
  assert.equal(passKind("auto", { structured: false, tools: true }), "tool");
  assert.equal(passKind("auto", { structured: false, tools: false }), "prompt");
  assert.equal(passKind("tool", { structured: true, tools: false }), "tool");
  assert.equal(passKind("prompt", { structured: true, tools: true }), "prompt");
  assert.equal(passKind("structured", { structured: false, tools: false }), "structured");
  assert.equal(structuredSupported("openai", "custom"), true);
  assert.equal(structuredSupported("openai", "openrouter"), true);
  assert.equal(structuredSupported("openai", "nanogpt-unknown"), false);
  assert.equal(structuredSupported("textgenerationwebui", "custom"), false);
});

test("the answer's text: a tool call's arguments, a message's text, SillyTavern's extracted JSON", () => {
  const call = { choices: [{ message: { content: null, tool_calls: [{ function: { name: "statecraft_update", arguments: '{"instructions":[]}' } }] } }] };
  assert.equal(answerText("tool", call, "statecraft_update"), '{"instructions":[]}');
  const object = { choices: [{ message: { tool_calls: [{ function: { name: "statecraft_update", arguments: { instructions: [] } } }] } }] };
  assert.equal(answerText("tool", object, "statecraft_update"), '{"instructions":[]}');
  // Claude's tool use, as SillyTavern passes it on.
  assert.equal(answerText("tool", { content: [{ type: "tool_use", input: { instructions: [] } }] }, "x"), '{"instructions":[]}');
  // No call: the message's text goes to the lenient layer.
  assert.equal(answerText("tool", { choices: [{ message: { content: "```json\n[]\n```" } }] }, "x"), "```json\n[]\n```");
  assert.equal(answerText("structured", '{"instructions":[]}', "x"), '{"instructions":[]}');
  assert.equal(answerText("prompt", "text", "x"), "text");
});

test("the second try carries the refused answer and the feedback", () => {
  assert.deepEqual(passMessages("rules"), [{ role: "user", content: "rules" }]);
  const messages = passMessages("rules", { answer: "bad", feedback: "hp: below 0" });
  assert.equal(messages.length, 3);
  assert.deepEqual(messages[1], { role: "assistant", content: "bad" });
  assert.match(messages[2].content, /refused[\s\S]*hp: below 0/);
});

test("a reply whose pass runs is not on the path; the generation types that make a reply", () => {
  const chat = [bot("a"), user("x"), bot("b"), user("y"), bot("c")];
  assert.equal(visibleChat(chat, new Set()), chat);
  assert.deepEqual(shownReplies(visibleChat(chat, new Set([chat[2]]))), ["a"]);
  assert.deepEqual(shownReplies(visibleChat(chat, new Set([chat[4], chat[2]]))), ["a"]);
  for (const type of [undefined, "", "normal", "swipe", "regenerate", "continue"]) assert.ok(makesReply(type), String(type));
  for (const type of ["quiet", "impersonate", "first_message"]) assert.ok(!makesReply(type), type);
  const signature = replySignature(chat);
  chat[4].mes += " more";
  assert.notEqual(replySignature(chat), signature, "a continue changes it");
  assert.equal(replySignature([user("only")]), "");
});

test("the prompt regex is added once and removed", () => {
  const settings = {};
  assert.equal(applyPromptRegex(settings, true), true);
  assert.equal(applyPromptRegex(settings, true), false);
  assert.equal(settings.regex.filter((script) => script.id === PROMPT_REGEX_ID).length, 1);
  assert.equal(settings.regex[0].promptOnly, true);
  const pattern = /^\/(.*)\/(\w*)$/.exec(settings.regex[0].findRegex);
  assert.equal(withBlock("x", []).replace(new RegExp(pattern[1], pattern[2]), "").trim(), "x");
  assert.equal(applyPromptRegex(settings, false), true);
  assert.equal(settings.regex.length, 0);
});

/**
 * A stand-in for SillyTavern's context: a chat, its metadata, and a model whose answers `answers`
 * gives in order (each a function of the request's messages and options).
 */
function tavern(chat, answers, { mainApi = "openai", source = "custom" } = {}) {
  const asked = [];
  const listeners = new Map();
  let saves = 0;
  const answer = (kind, messages, options) => {
    asked.push({ kind, messages: structuredClone(messages), options });
    const next = answers.shift();
    if (!next) throw new Error("the model was asked more often than the test expected");
    return next(messages, options);
  };
  const ctx = {
    chatId: "chat-1",
    chat,
    chatMetadata: { statecraft: { game: "pass-test" } },
    mainApi,
    chatCompletionSettings: { chat_completion_source: source },
    isToolCallingSupported: () => false,
    eventTypes: { CHAT_COMPLETION_SETTINGS_READY: "settings_ready" },
    eventSource: {
      on: (name, fn) => listeners.set(name, fn),
      removeListener: (name) => listeners.delete(name),
    },
    getTokenCountAsync: async (text) => text.split(/\s+/).length,
    generateRawData: async ({ prompt, jsonSchema }) => {
      const data = { messages: prompt };
      listeners.get("settings_ready")?.(data);
      if (jsonSchema) return answer("structured", prompt, { schema: jsonSchema.value });
      return answer("tool", prompt, { tools: data.tools });
    },
    generateRaw: async ({ prompt }) => answer("prompt", prompt, {}),
    saveChat: async () => {
      saves += 1;
    },
    saveMetadataDebounced: () => {},
  };
  return { ctx, asked, saves: () => saves };
}

function passFor(ctx, settings = {}) {
  const target = () => ({ gameId: "pass-test", chat: ctx.chat, create: { state: { hp: 10, gold: 0 }, schema: SCHEMA }, macros: { user: "You" } });
  const toasts = [];
  let keeper = null;
  const pass = new UpdatePass({
    context: () => ctx,
    client: () => client,
    keeper: () => keeper,
    target: () => ({ ...target(), chat: pass.visible(ctx.chat) }),
    settings: () => ({ enabled: true, passMode: "pass", passConstraint: "auto", passWaitSeconds: 5, ...settings }),
    toast: (kind, text) => toasts.push({ kind, text }),
  });
  keeper = new ChatKeeper({ client, target: () => ({ ...target(), chat: pass.visible(ctx.chat) }), busy: () => false });
  return { pass, keeper, toasts };
}

const SCHEMA = {
  type: "object",
  properties: { hp: { type: "integer", minimum: 0 }, gold: { type: "integer", minimum: 0 } },
  required: ["hp", "gold"],
  additionalProperties: false,
};

test("the pass against a real server: a batch written into the reply, a refusal asked again, twice refused left alone", async () => {
  const chat = [bot("You wake up."), user("look"), bot("Aria finds 5 gold.")];
  const batch = (instructions) => () => JSON.stringify({ instructions });
  const { ctx, asked } = tavern(chat, [
    batch([{ op: "increment", path: ["gold"], value: 5 }]),
    batch([{ op: "increment", path: ["hp"], value: -100 }]),
    batch([{ op: "assign", path: ["hp"], value: 1 }]),
    batch([{ op: "increment", path: ["hp"], value: -100 }]),
    batch([{ op: "increment", path: ["hp"], value: -100 }]),
  ]);
  const { pass, keeper, toasts } = passFor(ctx);
  await keeper.sync();
  assert.equal(pass.kind(), "structured");

  // The pass for the last reply: one request with the game's pass schema, the block written.
  pass.generationStarted("normal", false);
  chat[2].mes = "Aria finds 5 gold.";
  const record = await pass.run(2, { type: "normal" });
  assert.equal(record.requests, 1);
  assert.equal(record.outcome, "1 instruction");
  assert.ok(record.tokens > 10, `tokens: ${record.tokens}`);
  const schemas = await client.request("GET", "/v1/games/pass-test/schema");
  assert.deepEqual(asked[0].options.schema, schemas.pass, "the game's pass schema");
  assert.match(asked[0].messages[0].content, /Aria finds 5 gold/);
  assert.ok(hasBlock(chat[2].mes));
  assert.equal(chat[2].swipes[0], chat[2].mes, "the shown swipe holds it too");
  assert.deepEqual((await client.getGame("pass-test")).state, { hp: 10, gold: 5 });
  assert.match(describeRun(record, "pass"), /reply 3 \(swipe 1\) by structured output, 1 request, prompt \d+ tokens/);

  // A refused batch is asked for again with the feedback; the corrected one is written.
  chat.push(user("touch"), bot("It is a curse."));
  const refusedOnce = await pass.run(4);
  assert.equal(refusedOnce.requests, 2);
  assert.equal(asked[2].messages.length, 3, "the second try carries the answer and the feedback");
  assert.match(asked[2].messages[2].content, /refused/);
  assert.deepEqual((await client.getGame("pass-test")).state, { hp: 1, gold: 5 });

  // Refused twice: no block, a toast says why, the state stays.
  chat.push(user("again"), bot("It is a stubborn curse."));
  const refusedTwice = await pass.run(6);
  assert.equal(refusedTwice.outcome, "refused");
  assert.equal(refusedTwice.requests, 2);
  assert.equal(hasBlock(chat[6].mes), false);
  assert.match(toasts.at(-1).text, /refused twice/);
  assert.deepEqual((await client.getGame("pass-test")).state, { hp: 1, gold: 5 });
});

test("a function tool and the schema in the prompt, and a reply changed while its pass runs", async () => {
  const chat = [bot("Hi."), user("go"), bot("Aria finds 2 gold.")];
  let release;
  const held = new Promise((resolve) => {
    release = resolve;
  });
  const { ctx, asked } = tavern(chat, [
    (_messages, { tools }) => ({ choices: [{ message: { tool_calls: [{ function: { name: tools[0].function.name, arguments: '{"instructions":[{"op":"increment","path":["gold"],"value":2}]}' } }] } }] }),
    () => "Here:\n```json\n{instructions: [{op: 'increment', path: ['gold'], value: 3},]}\n```",
    () => {
      // Edited by hand while the model is asked.
      chat[6].mes = "Edited by hand.";
      return held.then(() => '{"instructions":[]}');
    },
  ]);
  const { pass, keeper } = passFor(ctx, { passConstraint: "tool" });
  ctx.chatMetadata.statecraft.game = "pass-test";
  const target = () => ({ gameId: "pass-tool", chat: pass.visible(ctx.chat), create: { state: { hp: 10, gold: 0 } }, macros: {} });
  pass.target = target;
  keeper.target = target;
  await keeper.sync();
  const tool = await pass.run(2);
  assert.equal(tool.kind, "tool");
  assert.equal(asked[0].options.tools[0].function.parameters.type, "object");
  assert.equal(tool.outcome, "1 instruction");

  // The schema in the prompt, the answer broken as models break JSON: the lenient layer reads it.
  pass.settings = () => ({ enabled: true, passMode: "pass", passConstraint: "prompt" });
  chat.push(user("on"), bot("Aria finds 3 gold."));
  const plain = await pass.run(4);
  assert.equal(plain.kind, "prompt");
  assert.match(asked[1].messages[0].content, /JSON Schema/);
  assert.equal(plain.outcome, "1 instruction");
  assert.deepEqual((await client.getGame("pass-tool")).state, { hp: 10, gold: 5 });

  // While a pass runs, its reply is not on the path; edited meanwhile, its answer is not written.
  chat.push(user("more"), bot("Nothing happens."));
  const running = pass.run(6);
  assert.ok(pass.running);
  assert.deepEqual(shownReplies(pass.visible(chat)), ["Hi.", chat[2].mes, chat[4].mes]);
  const waiting = pass.beforeGeneration("normal");
  await new Promise((resolve) => setTimeout(resolve, 300));
  release();
  assert.equal((await running).outcome, "moot");
  assert.match(await waiting, /waited \d+\.\d s for the update of reply 7/);
  assert.equal(chat[6].mes, "Edited by hand.");
});

test("in a group chat the next member's generation lets the pass for the last reply run, though the page still shows a generation", async () => {
  // SillyTavern's group wrapper shows a generation running from the first member's reply to the
  // last: the pass for a member's reply cannot wait for the page to go idle.
  const chat = [bot("Hi."), user("go"), bot("Aria finds 2 gold.")];
  const { ctx } = tavern(chat, [() => JSON.stringify({ instructions: [{ op: "increment", path: ["gold"], value: 2 }] })]);
  const { pass, keeper } = passFor(ctx, { passWaitSeconds: 20 });
  const target = () => ({ gameId: "pass-group", chat: pass.visible(ctx.chat), create: { state: { hp: 10, gold: 0 } }, macros: {} });
  pass.target = target;
  keeper.target = target;
  await keeper.sync();
  globalThis.document = { body: { dataset: { generating: "true" } } };
  try {
    const running = pass.run(2, { type: "normal" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(pass.running, "the pass waits while the reply may still be streaming");
    const note = await pass.beforeGeneration("normal");
    assert.match(note, /waited \d+\.\d s for the update of reply 3/);
    assert.equal((await running).outcome, "1 instruction");
    assert.deepEqual((await client.getGame("pass-group")).state, { hp: 10, gold: 2 });
  } finally {
    delete globalThis.document;
  }
});

test("no pass for dry runs, quiet generations, impersonations, unchanged replies, reply mode or the extension off", async () => {
  const chat = [bot("Hi."), user("go"), bot("Aria finds 2 gold.")];
  const { ctx } = tavern(chat, []);
  const { pass } = passFor(ctx);
  pass.generationStarted("normal", true);
  assert.equal(pass.generationEnded(), null, "a dry run");
  for (const type of ["quiet", "impersonate"]) {
    pass.generationStarted(type, false);
    chat.push(bot("new"));
    assert.equal(pass.generationEnded(), null, type);
  }
  pass.generationStarted("normal", false);
  assert.equal(pass.generationEnded(), null, "nothing changed (a failed generation)");
  pass.settings = () => ({ enabled: true, passMode: "reply" });
  pass.generationStarted("normal", false);
  chat.push(bot("another"));
  assert.equal(pass.generationEnded(), null, "reply mode");
  pass.settings = () => ({ enabled: false, passMode: "pass" });
  pass.generationStarted("normal", false);
  chat.push(bot("and another"));
  assert.equal(pass.generationEnded(), null, "the extension off");
  // The chat's own choice wins over the default.
  pass.settings = () => ({ enabled: true, passMode: "reply" });
  pass.setChatMode("pass");
  assert.equal(pass.mode(), "pass");
  assert.equal(pass.storyMode(), "state");
  pass.setChatMode(null);
  assert.equal(pass.mode(), "reply");
  assert.equal(pass.storyMode(), "reply");
});
