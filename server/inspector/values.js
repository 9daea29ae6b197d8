// How the page reads and shows JSON values: the value at a JSON Pointer (by the client's pointer
// rules), a value's type, a one-line rendering. Nothing here touches the page or the API.

import { pointerTokens } from "./statecraft.js";

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
