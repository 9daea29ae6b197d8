// An OpenAI-compatible chat completion server for the test. A story request is answered with the
// next reply the test queued (or a fixed one when none is queued), streamed as server-sent events
// when the request asks for a stream. A request for an update pass (clients/sillytavern/pass.js) is
// answered by its kind, from the reply it asks about:
// - `structured`: `response_format` with a JSON Schema, which must be the game's pass schema (the
//   test says which with `expectPassSchema`) as SillyTavern sends it (`flattenLikeSillyTavern`): the
//   answer is a conforming `{"instructions": [...]}`;
// - `tool`: `tools` with one function, whose parameters must be that schema: the answer is a tool
//   call with the batch as its arguments;
// - `plain`: the rules and the schema in the prompt: the answer is the batch in a fence with prose
//   around it, every other time broken the way models break JSON (trailing commas, unquoted keys).
// The batch is the fake model's reading of the reply (`readReply`): "finds N gold", "loses N hp",
// "lights a torch", "curse" (an update below the schema's minimum, which the game refuses; asked
// again with the feedback the model corrects it, unless the reply is "stubborn"). Every request is
// logged with its kind and its prompt's size.

import { createServer } from "node:http";
import { isDeepStrictEqual } from "node:util";

/** The batch a reply implies, as the fake model reads it; `retry`: asked again after a refusal. */
export function readReply(reply, { retry = false } = {}) {
  const batch = [];
  for (const match of reply.matchAll(/finds (\d+) gold/g)) batch.push({ op: "increment", path: ["gold"], value: Number(match[1]) });
  for (const match of reply.matchAll(/loses (\d+) hp/g)) batch.push({ op: "increment", path: ["hp"], value: -Number(match[1]) });
  for (const _ of reply.matchAll(/lights a torch/g)) batch.push({ op: "increment", path: ["torches"], value: -1 });
  if (/curse/.test(reply)) {
    // Below the schema's minimum: refused. Told so, the model sets the least it may, unless stubborn.
    batch.push(retry && !/stubborn/.test(reply) ? { op: "assign", path: ["hp"], value: 1 } : { op: "increment", path: ["hp"], value: -1000 });
  }
  return batch;
}

/**
 * A JSON Schema as SillyTavern 1.19 sends a `jsonSchema` to every Chat Completion source
 * (`flattenSchema` in its src/util.js, Google's filtering aside): `$defs` inlined at each `$ref`, a
 * recursive reference as `{}`, no `$schema`. A structured pass's schema must be the game's, so
 * flattened; a tool's parameters reach the Custom source as they are.
 */
export function flattenLikeSillyTavern(schema) {
  const copy = structuredClone(schema);
  const definitions = copy.$defs || {};
  delete copy.$defs;
  const resolve = (value, parents = []) => {
    if (!value || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map((item) => resolve(item, parents));
    if (value.$ref?.startsWith("#/$defs/")) {
      const name = value.$ref.split("/").pop();
      if (parents.includes(name)) return {};
      return definitions[name] ? resolve(structuredClone(definitions[name]), [...parents, name]) : {};
    }
    const result = {};
    for (const key of Object.keys(value)) result[key] = resolve(value[key], parents);
    return result;
  };
  const flat = resolve(copy);
  delete flat.$schema;
  return flat;
}

/** The text of a request's messages, joined. */
function promptText(messages) {
  return (messages ?? []).map((message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content ?? ""))).join("\n");
}

/** What kind of request this is: a story generation, or an update pass of one of three kinds. */
export function requestKind(body) {
  if (body.response_format?.type === "json_schema") return "structured";
  if (Array.isArray(body.tools) && body.tools.length > 0) return "tool";
  return /<reply>[\s\S]*<\/reply>/.test(promptText(body.messages)) ? "plain" : "story";
}

/** A rough token count (4 characters a token), for the log: the same estimate for every request. */
const tokens = (text) => Math.ceil(text.length / 4);

export async function startFakeModel() {
  const queue = [];
  const requests = [];
  let fallback = "The wind howls.";
  let passSchema = null;
  let passDelayMs = 0;
  let plainAnswers = 0;
  const server = createServer(async (request, response) => {
    let body = "";
    for await (const chunk of request) body += chunk;
    const url = new URL(request.url, "http://localhost");
    const send = (status, value) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(value));
    };
    if (request.method === "GET" && url.pathname.endsWith("/models")) {
      return send(200, { object: "list", data: [{ id: "fake-model", object: "model", owned_by: "test" }] });
    }
    if (request.method !== "POST" || !url.pathname.endsWith("/chat/completions")) return send(404, { error: { message: "no such endpoint" } });
    const parsed = JSON.parse(body || "{}");
    const kind = requestKind(parsed);
    const prompt = promptText(parsed.messages);
    const logged = { kind, messages: parsed.messages ?? [], stream: Boolean(parsed.stream), promptChars: prompt.length, promptTokens: tokens(prompt), reply: "" };
    requests.push(logged);
    if (kind !== "story") {
      if (passDelayMs) await new Promise((resolve) => setTimeout(resolve, passDelayMs));
      const schema = kind === "structured" ? parsed.response_format.json_schema?.schema : kind === "tool" ? parsed.tools[0]?.function?.parameters : null;
      const expected = passSchema === null ? null : kind === "structured" ? flattenLikeSillyTavern(passSchema) : passSchema;
      if (schema !== null && expected !== null && !isDeepStrictEqual(schema, expected)) {
        logged.error = `the schema is not the game's pass schema: got ${JSON.stringify(schema).slice(0, 300)}, expected ${JSON.stringify(expected).slice(0, 300)}`;
        return send(400, { error: { message: "the request's schema is not the game's pass schema" } });
      }
      const reply = /<reply>\n?([\s\S]*?)\n?<\/reply>/.exec(prompt)?.[1] ?? "";
      const retry = (parsed.messages ?? []).some((message) => message.role === "assistant");
      const batch = readReply(reply, { retry });
      const object = { instructions: batch };
      logged.batch = batch;
      let message;
      if (kind === "tool") {
        const name = parsed.tools[0].function.name;
        message = { role: "assistant", content: null, tool_calls: [{ id: `call_${requests.length}`, type: "function", function: { name, arguments: JSON.stringify(object) } }] };
        logged.reply = message.tool_calls[0].function.arguments;
      } else if (kind === "structured") {
        message = { role: "assistant", content: JSON.stringify(object) };
        logged.reply = message.content;
      } else {
        plainAnswers += 1;
        let json = JSON.stringify(object, null, 1);
        // Every other answer broken as models break JSON: a trailing comma, then keys without quotes.
        if (plainAnswers % 4 === 2) json = json.replace(/\}(\s*)\]/, "},$1]");
        if (plainAnswers % 4 === 0) json = json.replace(/"(instructions|op|path|value)":/g, "$1:");
        message = { role: "assistant", content: `Here is the update:\n\`\`\`json\n${json}\n\`\`\`\nThat is all.` };
        logged.reply = message.content;
      }
      return send(200, {
        id: `fake-${requests.length}`,
        object: "chat.completion",
        created: 0,
        model: "fake-model",
        choices: [{ index: 0, message, finish_reason: kind === "tool" ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: logged.promptTokens, completion_tokens: 1, total_tokens: logged.promptTokens + 1 },
      });
    }
    const text = queue.length > 0 ? queue.shift() : fallback;
    logged.reply = text;
    if (!parsed.stream) {
      return send(200, {
        id: `fake-${requests.length}`,
        object: "chat.completion",
        created: 0,
        model: "fake-model",
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        usage: { prompt_tokens: logged.promptTokens, completion_tokens: 1, total_tokens: logged.promptTokens + 1 },
      });
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    // A few pieces, so the reply is seen growing as a streamed one is.
    const pieces = text.match(/[\s\S]{1,12}/g) ?? [""];
    for (const piece of pieces) {
      const chunk = { id: "fake", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] };
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    response.write(`data: ${JSON.stringify({ id: "fake", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
    response.end("data: [DONE]\n\n");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    requests,
    /** Queues the replies of the next story generations, in order. */
    next(...texts) {
      queue.push(...texts);
    },
    pending: () => queue.length,
    setFallback(text) {
      fallback = text;
    },
    /** The schema a structured or tool pass must carry (the game's, from `GET /v1/games/{id}/schema`). */
    expectPassSchema(schema) {
      passSchema = schema;
    },
    /** How long a pass request waits before its answer. */
    setPassDelay(ms) {
      passDelayMs = ms;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
