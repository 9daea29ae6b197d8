// The page's one way to the server: the JavaScript client of clients/js (served beside the page at
// `statecraft.js`) on this page's own origin and path, with the bearer token when the server asks
// for one. The token is asked once (on the first 401, however many requests it refused), kept in this
// tab's sessionStorage, and asked again only if the server refuses it. Served by SillyTavern's server
// plugin (under /api/plugins/statecraft/), the page goes through the plugin with SillyTavern's
// session and CSRF token instead, and needs no token.

import { Statecraft, StatecraftError } from "./statecraft.js";

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
