// The engine's token estimator against the tokenizers SillyTavern ships (installed from npm under
// target/ by install.js): tiktoken's cl100k and o200k (OpenAI), and the SentencePiece and JSON
// tokenizers in SillyTavern's src/tokenizers (Llama 1/2, Llama 3, Mistral, Yi, Gemma, Jamba,
// NerdStash, Claude), loaded with the same packages SillyTavern loads them with. On the views of this
// repository's examples and two MVU cards (examples/mvu-card, mira.json), in both formats, whole and
// within a budget, and on the prompts made from them in every mode (the reply's rules, the update
// pass's, in English and in Chinese), the estimate (`tokens.state` and `tokens.text` of the game's
// prompt endpoint) must be what docs/state-view.md says it is: never below any of these tokenizers'
// counts, and at most FACTOR times the smallest. The figures go to stderr.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Statecraft } from "../../../clients/js/statecraft.js";
import { startServer } from "../../../clients/js/test/server.js";
import { installFolder, installSillyTavern } from "./install.js";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");

/** The reply an update pass is asked about. */
const PASS_REPLY = "Aria sells the rusty sword for 12 gold and leaves the market.";

/** The documented bound: the estimate is at most this many times the smallest real count. */
const FACTOR = 2.5;

let server;
let client;
/** name → (text) → number of tokens. */
const tokenizers = {};
const rows = [];
/** Every comparison that breaks the documented relation, said at the end (all of them, not the first). */
const broken = [];

before(async () => {
  const sillytavern = installSillyTavern({ log: (line) => process.stderr.write(`${line}\n`) });
  const require = createRequire(join(installFolder(), "package.json"));
  const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
  const tiktoken = require("tiktoken");
  for (const encoding of ["cl100k_base", "o200k_base"]) {
    const encoder = tiktoken.get_encoding(encoding);
    tokenizers[encoding.replace("_base", "")] = (text) => encoder.encode(text).length;
  }
  const { SentencePieceProcessor } = await load("@agnai/sentencepiece-js");
  for (const model of ["llama", "mistral", "yi", "gemma", "jamba", "nerdstash"]) {
    const processor = new SentencePieceProcessor();
    await processor.load(join(sillytavern, "src/tokenizers", `${model}.model`));
    tokenizers[model] = (text) => processor.encodeIds(text).length;
  }
  const { Tokenizer } = await load("@agnai/web-tokenizers");
  for (const model of ["llama3", "claude"]) {
    const tokenizer = await Tokenizer.fromJSON(readFileSync(join(sillytavern, "src/tokenizers", `${model}.json`)));
    tokenizers[model] = (text) => tokenizer.encode(text).length;
  }
  server = await startServer();
  client = new Statecraft(server.url);
});

after(async () => {
  await server?.stop();
  if (rows.length) {
    const names = Object.keys(tokenizers);
    // Columns of spaces: node:test writes a tab in a diagnostic line as `\t`.
    const cell = (text, width = 10) => String(text).padStart(width);
    process.stderr.write(`${"view".padEnd(32)}${cell("estimate")}${names.map((name) => cell(name)).join("")}${cell("ratio", 7)}\n`);
    for (const row of rows) process.stderr.write(`${row.name.padEnd(32)}${cell(row.estimate)}${names.map((name) => cell(row.counts[name])).join("")}${cell(row.ratio.toFixed(2), 7)}\n`);
  }
});

/** The games measured: each example's initial state (with its schema), and the two MVU cards. */
function subjects() {
  const read = (...path) => JSON.parse(readFileSync(join(repository, ...path), "utf8"));
  const list = ["fantasy", "romance", "rules", "timeline", "tavern"].map((name) => ({ name, create: { state: read("examples", name, "state.json"), schema: read("examples", name, "schema.json") } }));
  list.push({ name: "mvu-card", create: { card: read("examples/mvu-card/card.json"), macros: { user: "Tester" } } });
  list.push({ name: "mira", create: { card: read("cli/tests/sillytavern/mira.json"), macros: { user: "Tester" } } });
  return list;
}

/** Checks one text against every tokenizer; → its row. */
function compare(name, text, estimate) {
  const counts = Object.fromEntries(Object.entries(tokenizers).map(([tokenizer, count]) => [tokenizer, count(text)]));
  const smallest = Math.min(...Object.values(counts));
  for (const [tokenizer, count] of Object.entries(counts)) {
    if (estimate < count) broken.push(`${name}: the estimate ${estimate} is below ${tokenizer}'s ${count}`);
  }
  const ratio = estimate / Math.max(1, smallest);
  if (ratio > FACTOR) broken.push(`${name}: the estimate ${estimate} is ${ratio.toFixed(2)} times the smallest count (${smallest})`);
  const row = { name, estimate, counts, ratio };
  rows.push(row);
  return row;
}

test("the estimator is never below SillyTavern's tokenizers, and within the documented factor", async () => {
  for (const subject of subjects()) {
    const { id } = await client.createGame(subject.create);
    for (const format of ["json", "compact"]) {
      const whole = await client.request("POST", `/v1/games/${encodeURIComponent(id)}/prompt`, { format });
      assert.equal(whole.tokens.state, whole.tokens.full_state, `${subject.name} ${format}: no budget, the whole state`);
      assert.equal(whole.elided.length, 0);
      compare(`${subject.name} ${format}`, whole.state, whole.tokens.state);
      compare(`${subject.name} ${format} (prompt)`, whole.text, whole.tokens.text);
      // Within half of it: a smaller view, still never undercounted.
      const budget = Math.max(1, Math.floor(whole.tokens.full_state / 2));
      const half = await client.request("POST", `/v1/games/${encodeURIComponent(id)}/prompt`, { format, budget });
      assert.ok(half.tokens.state <= budget, `${subject.name} ${format}: ${half.tokens.state} within ${budget}`);
      compare(`${subject.name} ${format} budget ${budget}`, half.state, half.tokens.state);
      // The whole prompt of each mode and language, within that budget.
      for (const lang of ["en", "zh"]) {
        const reply = await client.request("POST", `/v1/games/${encodeURIComponent(id)}/prompt`, { format, budget, lang });
        compare(`${subject.name} ${format} ${lang} (prompt)`, reply.text, reply.tokens.text);
        const pass = await client.request("POST", `/v1/games/${encodeURIComponent(id)}/prompt`, { format, budget, lang, mode: "pass", reply: PASS_REPLY });
        compare(`${subject.name} ${format} ${lang} (pass)`, pass.text, pass.tokens.text);
      }
    }
  }
  assert.deepEqual(broken, [], "the estimator against SillyTavern's tokenizers");
});
