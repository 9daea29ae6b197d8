// An OpenAI-compatible chat completion server for the test: it answers each request with the next
// reply the test queued (or a fixed one when none is queued), streamed as server-sent events when the
// request asks for a stream, and keeps every request so the test can read the prompt each generation
// carried.

import { createServer } from "node:http";

export async function startFakeModel() {
  const queue = [];
  const requests = [];
  let fallback = "The wind howls.";
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
    const text = queue.length > 0 ? queue.shift() : fallback;
    requests.push({ messages: parsed.messages ?? [], stream: Boolean(parsed.stream), reply: text });
    if (!parsed.stream) {
      return send(200, {
        id: `fake-${requests.length}`,
        object: "chat.completion",
        created: 0,
        model: "fake-model",
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
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
    /** Queues the replies of the next generations, in order. */
    next(...texts) {
      queue.push(...texts);
    },
    pending: () => queue.length,
    setFallback(text) {
      fallback = text;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
