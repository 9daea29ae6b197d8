// What a reply would do: the reply text with every diagnostic's byte span highlighted (the message on
// hover), the repair score, the would-be changes or the rejection's reasons, and the feedback text a
// host would send back to the model.

import { el } from "./dom.js";
import { brief } from "./values.js";
import { renderChanges, pointerOf } from "./diff.js";

const SEVERITY = { note: 0, warning: 1, error: 2 };

/**
 * The reply text as nodes, with a `mark` over every diagnostic's span (`span` is in UTF-8 bytes).
 * A zero-width span gets an empty mark at its place. Overlapping spans split into segments, each
 * marked with every diagnostic that covers it; the sweep keeps this linear in text plus spans.
 */
export function highlight(text, diagnostics) {
  const bytes = new TextEncoder().encode(text);
  const decode = (from, to) => new TextDecoder().decode(bytes.subarray(from, to));
  const clamp = (at) => Math.max(0, Math.min(bytes.length, at));
  const spans = diagnostics.map((diagnostic, index) => ({ index, diagnostic, start: clamp(diagnostic.span[0]), end: clamp(diagnostic.span[1]) }));
  const events = [];
  for (const span of spans) {
    if (span.end > span.start) events.push([span.start, 1, span], [span.end, 0, span]);
    else events.push([span.start, 2, span]);
  }
  // At one offset: ends first, then points, then starts.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const nodes = [];
  const active = new Set();
  let at = 0;
  const flush = (to) => {
    if (to <= at) return;
    const piece = decode(at, to);
    nodes.push(active.size ? mark([...active], piece) : document.createTextNode(piece));
    at = to;
  };
  for (const [offset, type, span] of events) {
    flush(offset);
    if (type === 0) active.delete(span);
    else if (type === 1) active.add(span);
    else nodes.push(mark([span], ""));
  }
  flush(bytes.length);
  return nodes;
}

function mark(spans, piece) {
  const worst = spans.reduce((a, b) => (SEVERITY[b.diagnostic.severity] > SEVERITY[a.diagnostic.severity] ? b : a));
  return el("mark", {
    class: `diagnostic severity-${worst.diagnostic.severity}${piece ? "" : " point"}`,
    title: spans.map(({ diagnostic }) => `${diagnostic.severity} ${diagnostic.kind} (line ${diagnostic.line}, column ${diagnostic.column}): ${diagnostic.message}`).join("\n"),
    "data-kinds": spans.map(({ diagnostic }) => diagnostic.kind).join(" "),
    "data-diagnostics": spans.map(({ index }) => index).join(" "),
    text: piece,
  });
}

/**
 * Shows a dry run's outcome. `outcome` is `{ok: true, body}` (a 200 dry run, with `feedback` from
 * `/v1/extract`) or `{ok: false, body}` (a 422's error body). `onApply` applies the reply for real.
 */
export function renderOutcome(container, text, outcome, { onApply }) {
  const body = outcome.body;
  const diagnostics = body.diagnostics ?? [];
  const score = body.report?.score;
  const verdict = outcome.ok
    ? el("p", { class: "verdict would-commit", text: `would commit: ${body.changes.length} change${body.changes.length === 1 ? "" : "s"}` })
    : el("p", { class: "verdict rejected", text: body.error?.message ?? "rejected: nothing would change" });
  const parts = [
    verdict,
    el(
      "p",
      { class: "score" },
      "repair score: ",
      el("strong", { class: "score-value", text: typeof score === "number" ? String(score) : "—" }),
      typeof score === "number" ? " / 100" : "",
      ` · ${diagnostics.length} diagnostic${diagnostics.length === 1 ? "" : "s"}`,
    ),
    el("h3", { text: "reply" }),
    el("pre", { class: "reply-text" }, highlight(text, diagnostics)),
    diagnostics.length
      ? el(
          "ol",
          { class: "diagnostics" },
          diagnostics.map((d) =>
            el("li", { class: `severity-${d.severity}` }, el("code", { text: d.kind }), ` ${d.severity} at line ${d.line}, column ${d.column}: ${d.message}`),
          ),
        )
      : null,
    outcome.ok ? el("h3", { text: "would-be changes" }) : el("h3", { text: "why it was rejected" }),
    outcome.ok
      ? renderChanges(body.changes, "no changes")
      : el(
          "ul",
          { class: "errors" },
          (body.errors ?? []).map((error) =>
            el(
              "li",
              {},
              el("code", { text: error.kind }),
              error.path !== undefined ? ` at ${pointerOf(error.path)}` : "",
              error.instruction !== undefined ? ` (instruction ${error.instruction})` : "",
              `: ${error.message}`,
            ),
          ),
        ),
    outcome.ok && body.warnings?.length
      ? el("ul", { class: "warnings" }, body.warnings.map((w) => el("li", { text: `${w.kind}: ${w.message}` })))
      : null,
    outcome.ok && body.events?.length
      ? el("p", { class: "events", text: `events: ${body.events.map((e) => `${e.name} ${brief(e.payload, 60)}`).join(", ")}` })
      : null,
    el("h3", { text: "feedback for the model" }),
    el("pre", { class: "feedback", text: body.feedback || "(none: the reply is clean)" }),
    el("button", { type: "button", class: "apply-for-real", text: "apply for real", disabled: !outcome.ok, onclick: onApply }),
  ];
  container.replaceChildren(...parts.filter((part) => part instanceof Node));
}
