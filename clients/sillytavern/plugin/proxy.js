// The plugin's routes: every request under /api/plugins/statecraft goes to the engine's same path
// (`/v1/...` for the API, `/` and its files for the inspector page) with the engine's token and the
// request's owner (the SillyTavern user), and the answer comes back as the engine gave it: status,
// body, and the headers that matter. Bodies pass through byte for byte within the engine's own body
// limit; a request the engine cannot take now (starting, no binary) or did not answer (it died, it
// took too long) gets an answer in the engine's own error shape, `{"error": {"kind", "message"}}`.
// It must not start or stop the engine (engine.js) or know SillyTavern (index.js).

import { Agent, request } from "node:http";

/** What SillyTavern's body parsers read before a plugin sees the request: such a body is gone. */
const PARSED_BY_SILLYTAVERN = /^(application\/json|application\/x-www-form-urlencoded|multipart\/)/i;

/** Headers of a request the engine reads. The rest (cookies, the CSRF token, `Origin`) stay here. */
const REQUEST_HEADERS = ["accept", "idempotency-key", "x-request-id", "content-length"];

/** Headers of an answer worth passing on; hop-by-hop ones are the connection's own. */
const ANSWER_HEADERS = [
  "content-type",
  "content-length",
  "x-request-id",
  "retry-after",
  "cache-control",
  "content-security-policy",
  "x-content-type-options",
  "x-frame-options",
  "referrer-policy",
];

/** Kept-alive connections to the engine, closed after 30 s idle (the engine closes them at 60 s). */
const agent = new Agent({ keepAlive: true, timeout: 30000, maxSockets: 64 });

/** Sends an error in the engine's shape. */
export function sendError(res, status, kind, message, headers = {}) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: { kind, message } });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/**
 * Forwards `req` (its `url` relative to the plugin's routes) to the engine for `owner`, and its
 * answer to `res`. `engine` gives `url`, `authorization` and `problem`; `maxBodyBytes` and
 * `timeoutMs` are the engine's own limits.
 */
export function forward(req, res, { engine, owner, maxBodyBytes, timeoutMs }) {
  if (engine.problem || !engine.url) {
    engine.recheck?.();
    const { kind, message } = engine.problem ?? { kind: "starting", message: "statecraft is starting" };
    const retry = kind === "starting" || kind === "crashing" ? { "retry-after": "1" } : {};
    return sendError(res, 503, kind, message, retry);
  }
  if (req._body || PARSED_BY_SILLYTAVERN.test(req.headers["content-type"] ?? "") && hasBody(req)) {
    return sendError(
      res,
      415,
      "unsupported_media_type",
      "SillyTavern reads a body sent as application/json before this plugin sees it (which would lose digits of large numbers and members given twice): send the JSON as application/vnd.statecraft+json (or text/plain), as the extension does",
    );
  }
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBodyBytes) {
    req.resume();
    return sendError(res, 413, "body_too_large", `the body is larger than statecraft takes (${maxBodyBytes} bytes)`);
  }
  const headers = { authorization: engine.authorization, "statecraft-owner": owner };
  for (const name of REQUEST_HEADERS) {
    if (req.headers[name] !== undefined) headers[name] = req.headers[name];
  }
  if (hasBody(req)) headers["content-type"] = "application/json";
  const target = new URL(engine.url);
  let answered = false;
  let timer = null;
  const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent });
  upstream.on("response", (answer) => {
    answered = true;
    clearTimeout(timer);
    const passed = {};
    for (const name of ANSWER_HEADERS) {
      if (answer.headers[name] !== undefined) passed[name] = answer.headers[name];
    }
    res.writeHead(answer.statusCode, passed);
    answer.pipe(res);
    answer.on("error", () => res.destroy());
  });
  upstream.on("error", (error) => {
    clearTimeout(timer);
    if (answered || res.writableEnded) return;
    sendError(
      res,
      502,
      "engine_stopped",
      `statecraft stopped before it answered (${error.code ?? error.message}) and is being started again; whether this request was done is not known: send it again (with the same Idempotency-Key, or a sync as it is)`,
    );
  });
  // The client went away: the engine's work on it is not waited for.
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  let sent = 0;
  req.on("data", (chunk) => {
    sent += chunk.length;
    if (sent > maxBodyBytes) {
      upstream.destroy();
      req.removeAllListeners("data");
      req.resume();
      answered = true;
      sendError(res, 413, "body_too_large", `the body is larger than statecraft takes (${maxBodyBytes} bytes)`);
      return;
    }
    if (!upstream.write(chunk)) {
      req.pause();
      upstream.once("drain", () => req.resume());
    }
  });
  req.on("end", () => {
    if (sent > maxBodyBytes) return;
    upstream.end();
    // The engine answers a request that takes too long itself (503 `timeout`); this is for an
    // engine that answers nothing at all.
    timer = setTimeout(() => {
      if (answered) return;
      answered = true;
      upstream.destroy();
      sendError(
        res,
        504,
        "timeout",
        `statecraft did not answer within ${Math.round(timeoutMs / 1000)} s; whether this request was done is not known: send it again (with the same Idempotency-Key, or a sync as it is)`,
      );
    }, timeoutMs);
  });
  req.on("error", () => upstream.destroy());
}

function hasBody(req) {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}
