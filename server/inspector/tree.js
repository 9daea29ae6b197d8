// The state as a foldable tree. Only unfolded nodes are built, and a node's children are built a page
// at a time, so a state with 10,000 keys in one object costs one page of rows until asked for more.

import { el } from "./dom.js";
import { pointerToken, pointerTokens } from "./statecraft.js";
import { brief, lookup, typeOf } from "./values.js";

/** How many children of a node are built at once. */
export const PAGE = 200;

/**
 * Draws `value` into `container`. `onSelect(pointer, value)` is called when a node is clicked;
 * `describe(pointer)` gives the schema's description of a node, or nothing.
 */
export function renderTree(container, value, { onSelect, describe }) {
  container.replaceChildren(el("ul", { class: "tree", role: "tree" }, row("", "(root)", value, 0, { onSelect, describe }, true)));
}

function row(pointer, name, value, depth, hooks, open = false) {
  const type = typeOf(value);
  const composite = type === "object" || type === "array";
  const size = type === "array" ? value.length : type === "object" ? Object.keys(value).length : 0;
  const description = hooks.describe?.(pointer);
  const line = el(
    "div",
    { class: "node", "data-pointer": pointer, title: description || undefined, tabindex: 0 },
    el("span", { class: "fold", text: composite ? (open ? "▾" : "▸") : " " }),
    el("span", { class: "key", text: name }),
    el("span", { class: `type type-${type}`, text: composite ? `${type}[${size}]` : type }),
    composite ? null : el("span", { class: `value value-${type}`, text: brief(value, 120) }),
    description ? el("span", { class: "description", text: description }) : null,
  );
  const item = el("li", { role: "treeitem" }, line);
  let children = null;
  const fold = () => {
    if (!composite) return;
    if (children) {
      children.remove();
      children = null;
      line.querySelector(".fold").textContent = "▸";
      item.removeAttribute("aria-expanded");
      return;
    }
    children = el("ul", { role: "group" });
    const keys = type === "array" ? value.map((_, index) => index) : Object.keys(value);
    const more = (from) => {
      for (const key of keys.slice(from, from + PAGE)) {
        children.append(row(`${pointer}/${pointerToken(key)}`, String(key), value[key], depth + 1, hooks));
      }
      if (from + PAGE < keys.length) {
        const rest = keys.length - from - PAGE;
        const button = el("button", {
          class: "more",
          type: "button",
          text: `show ${Math.min(rest, PAGE)} more of ${rest}`,
          onclick: () => {
            button.parentElement.remove();
            more(from + PAGE);
          },
        });
        children.append(el("li", {}, button));
      }
    };
    more(0);
    item.append(children);
    item.setAttribute("aria-expanded", "true");
    line.querySelector(".fold").textContent = "▾";
  };
  line.querySelector(".fold").addEventListener("click", (event) => {
    event.stopPropagation();
    fold();
  });
  line.addEventListener("click", () => {
    for (const selected of line.closest(".tree").querySelectorAll(".node.selected")) selected.classList.remove("selected");
    line.classList.add("selected");
    hooks.onSelect?.(pointer, value);
  });
  line.addEventListener("dblclick", fold);
  line.addEventListener("keydown", (event) => {
    if (event.key === "Enter") line.click();
    if (event.key === " ") {
      event.preventDefault();
      fold();
    }
  });
  if (open) fold();
  return item;
}

/**
 * The description a JSON Schema gives of the node at `pointer`, following `properties`,
 * `patternProperties`, `additionalProperties`, `items`, `prefixItems`, local `$ref`s and the first
 * branch of `allOf`/`anyOf`/`oneOf` that knows the member.
 */
export function schemaDescription(schema, pointer) {
  const tokens = pointerTokens(pointer);
  if (!schema || typeof schema !== "object" || tokens === null) return undefined;
  let node = resolve(schema, schema);
  for (const token of tokens) {
    node = child(schema, node, token);
    if (!node) return undefined;
  }
  return node.description ?? node.title;
}

function resolve(root, node, seen = 0) {
  while (node && typeof node === "object" && typeof node.$ref === "string" && node.$ref.startsWith("#") && seen++ < 32) {
    node = lookup(root, decodeURIComponent(node.$ref.slice(1)));
  }
  return node && typeof node === "object" ? node : undefined;
}

function child(root, node, token) {
  if (!node) return undefined;
  const direct =
    node.properties?.[token] ??
    Object.entries(node.patternProperties ?? {}).find(([pattern]) => {
      try {
        return new RegExp(pattern, "u").test(token);
      } catch {
        return false;
      }
    })?.[1] ??
    (/^\d+$/.test(token) ? node.prefixItems?.[Number(token)] ?? node.items : undefined) ??
    (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined);
  if (direct) return resolve(root, direct);
  for (const branch of [...(node.allOf ?? []), ...(node.anyOf ?? []), ...(node.oneOf ?? [])]) {
    const found = child(root, resolve(root, branch), token);
    if (found) return found;
  }
  return undefined;
}
