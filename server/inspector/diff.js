// Changes shown as a table: path, old, new and reason, each row marked added, removed or changed. A
// step's changes are found by comparing the state before it with the state after it (the API gives a
// step's state, not its change log); the reasons are known for the steps this page committed itself.

import { el, pointerToken, typeOf, brief } from "./api.js";

/** The differences from `before` to `after`, as `{path, old?, new?}` (absent: the slot did not exist). */
export function compare(before, after, path = "", into = []) {
  if (before === after) return into;
  const kind = typeOf(before);
  if (kind === typeOf(after) && (kind === "object" || kind === "array")) {
    const keys = kind === "array" ? range(Math.max(before.length, after.length)) : union(before, after);
    for (const key of keys) {
      const here = `${path}/${pointerToken(key)}`;
      const has = [Object.hasOwn(before, key), Object.hasOwn(after, key)];
      if (has[0] && has[1]) compare(before[key], after[key], here, into);
      else if (has[0]) into.push({ path: here, old: before[key] });
      else into.push({ path: here, new: after[key] });
    }
    return into;
  }
  into.push({ path, old: before, new: after });
  return into;
}

function range(length) {
  return Array.from({ length }, (_, index) => String(index));
}

function union(a, b) {
  const keys = Object.keys(a);
  for (const key of Object.keys(b)) if (!Object.hasOwn(a, key)) keys.push(key);
  return keys;
}

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
