// Change logs shown as a table: path, old, new and reason, each row marked added, removed or changed
// by which of old and new it has. The logs are the API's own: a step's (`state?step=N`), an apply's
// or a dry run's.

import { el } from "./dom.js";
import { pointerToken } from "./statecraft.js";
import { brief } from "./values.js";

/** A change's path as a JSON Pointer (the API's change logs give paths as arrays of keys and indices). */
export function pointerOf(path) {
  return Array.isArray(path) ? path.map((key) => `/${pointerToken(key)}`).join("") : String(path);
}

/** What a change did: `added`, `removed` or `changed`. */
export function changeKind(change) {
  if (!("old" in change)) return "added";
  if (!("new" in change)) return "removed";
  return "changed";
}

/** A table of changes (`{path, old?, new?, reason?}`), or a line saying there are none. */
export function renderChanges(changes, empty = "no changes") {
  if (changes.length === 0) return el("p", { class: "empty", text: empty });
  return el(
    "table",
    { class: "changes" },
    el("thead", {}, el("tr", {}, ["", "path", "old", "new", "reason"].map((h) => el("th", { text: h })))),
    el(
      "tbody",
      {},
      changes.map((change) => {
        const kind = changeKind(change);
        const path = pointerOf(change.path);
        return el(
          "tr",
          { class: `change ${kind}`, "data-path": path },
          el("td", { class: "mark", title: kind, text: { added: "+", removed: "−", changed: "~" }[kind] }),
          el("td", { class: "path" }, el("code", { text: path === "" ? "(root)" : path })),
          el("td", { class: "old" }, "old" in change ? el("code", { text: brief(change.old, 200) }) : el("span", { class: "absent", text: "(absent)" })),
          el("td", { class: "new" }, "new" in change ? el("code", { text: brief(change.new, 200) }) : el("span", { class: "absent", text: "(absent)" })),
          el("td", { class: "reason", text: change.reason ?? "" }),
        );
      }),
    ),
  );
}
