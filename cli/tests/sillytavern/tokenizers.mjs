// Counts the tokens of each text in a folder with every tokenizer SillyTavern ships (tiktoken's
// cl100k and o200k, the Llama, Mistral, Gemma and Yi SentencePiece models, the Llama 3 and Claude
// tokenizer files), through the same packages SillyTavern's server uses. `node tokenizers.mjs DIR`
// reads DIR/texts.json (a list of file names in DIR) and prints one JSON object per line:
// {"file", "counts": {"cl100k": n, ...}}. It installs SillyTavern first when it is missing
// (install.js). Used by cli/tests/estimator_tokenizers.rs.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { installSillyTavern } from "./install.js";

const server = installSillyTavern();
const require = createRequire(join(server, "package.json"));
const { get_encoding } = require("tiktoken");
const { SentencePieceProcessor } = require("@agnai/sentencepiece-js");
const { Tokenizer } = await import(require.resolve("@agnai/web-tokenizers"));

const counters = {};
for (const name of ["cl100k_base", "o200k_base"]) {
  const encoding = get_encoding(name);
  counters[name] = (text) => encoding.encode(text).length;
}
for (const name of ["llama", "mistral", "gemma", "yi"]) {
  const processor = new SentencePieceProcessor();
  await processor.load(join(server, "src/tokenizers", `${name}.model`));
  counters[name] = (text) => processor.encodeIds(text).length;
}
for (const name of ["llama3", "claude"]) {
  const tokenizer = await Tokenizer.fromJSON(readFileSync(join(server, "src/tokenizers", `${name}.json`)));
  counters[name] = (text) => tokenizer.encode(text).length;
}

const dir = process.argv[2];
for (const file of JSON.parse(readFileSync(join(dir, "texts.json"), "utf8"))) {
  const text = readFileSync(join(dir, file), "utf8");
  const counts = {};
  for (const [name, count] of Object.entries(counters)) counts[name] = count(text);
  console.log(JSON.stringify({ file, counts }));
}
