// The page's one way to the server: the JavaScript client of clients/js (served beside the page at
// `statecraft.js`) on this page's own origin and path, with the bearer token when the server asks
// for one. The token is asked once (on the first 401, however many requests it refused), kept in this
// tab's sessionStorage, and asked again only if the server refuses it. Served by SillyTavern's server
// plugin (under /api/plugins/statecraft/), the page goes through the plugin with SillyTavern's
// session and CSRF token instead, and needs no token. The rest are the page's DOM and JSON Pointer
// helpers.

import { Statecraft, StatecraftError, pointerToken, pointerTokens } from "./statecraft.js";

// The JSON Pointer rules are the client's, shared with the page's modules from here.
export { pointerToken, pointerTokens };

export { StatecraftError };

const TOKEN_KEY = "statecraft.token";

/** Shows the token form and resolves with what was typed. */
function askToken(refused) {
  return new Promise((resolve) => {
    const dialog = document.getElementById("token-dialog");
    const form = dialog.querySelector("form");
    const input = dialog.querySelector("input");
    dialog.querySelector(".refused").hidden = !refused;
    input.value = "";
    dialog.hidden = false;
    input.focus();
    form.onsubmit = (event) => {
      event.preventDefault();
      dialog.hidden = true;
      resolve(input.value.trim());
    };
  });
}

/** Where the API is: beside the page (`/` on the server, `/api/plugins/statecraft/` through SillyTavern). */
const base = new URL(".", location.href).href.replace(/\/+$/, "");

/** Whether SillyTavern's server plugin serves the page (its routes sit behind SillyTavern's session). */
const viaSillyTavern = new URL(base).pathname.startsWith("/api/plugins/");

/** SillyTavern's CSRF token, asked once, for the plugin's POST routes. */
let csrf = null;
if (viaSillyTavern) {
  const answer = await fetch("/csrf-token", { credentials: "same-origin", cache: "no-store" });
  csrf = answer.ok ? (await answer.json()).token : null;
}

/** The client the page calls the API with: no cached answers; no cookies, except SillyTavern's session. */
export const client = new Statecraft(base, {
  token: sessionStorage.getItem(TOKEN_KEY) ?? undefined,
  init: { credentials: viaSillyTavern ? "same-origin" : "omit", cache: "no-store" },
  // The plugin takes JSON under its own media type (SillyTavern would read application/json first).
  headers: viaSillyTavern ? { "x-csrf-token": csrf ?? "", "content-type": "application/vnd.statecraft+json" } : {},
  onUnauthorized: async (_error, sent) => {
    let token = "";
    while (!token) token = await askToken(sent.token !== undefined);
    sessionStorage.setItem(TOKEN_KEY, token);
    return token;
  },
});

/** Creates an element: `el("li", {class: "x", onclick}, child, "text")`. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Creates an SVG element. */
export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}


/** The value at a JSON Pointer, or undefined. */
export function lookup(value, pointer) {
  const tokens = pointerTokens(pointer);
  if (tokens === null) return undefined;
  let node = value;
  for (const token of tokens) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, token)) return undefined;
    node = node[token];
  }
  return node;
}

/** A value's type as the page shows it. */
export function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** A short one-line rendering of a value. */
export function brief(value, max = 80) {
  const text = JSON.stringify(value);
  if (text === undefined) return "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
