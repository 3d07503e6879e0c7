#!/usr/bin/env node
// The reference library's side of the tokenizer speed benchmark: load TOKENIZER_JSON, encode
// every line of TEXT (special tokens added) in batches of 1000 through the official Node binding,
// print one JSON line of figures. Run it with RAYON_NUM_THREADS=1 (and pinned to one core) for
// a per-core figure: encodeBatch would otherwise use every core.
//   node bench/tokenizer_oracle_speed.js TOKENIZER_JSON TEXT
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require(path.join(__dirname, "..", "tools", "tokenizer_oracle", "node_modules", "tokenizers"));

async function main() {
  const [tokPath, textPath] = process.argv.slice(2);
  const text = fs.readFileSync(textPath, "utf8");
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(tokPath);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  let tokens = 0;
  const t1 = process.hrtime.bigint();
  for (let i = 0; i < lines.length; i += 1000) {
    const encs = await tok.encodeBatch(lines.slice(i, i + 1000), { addSpecialTokens: true });
    for (const e of encs) tokens += e.getIds().length;
  }
  const s = Number(process.hrtime.bigint() - t1) / 1e9;
  const bytes = Buffer.byteLength(text);
  console.log(JSON.stringify({ impl: "tokenizers-node", lines: lines.length, bytes, tokens,
    seconds: +s.toFixed(4), tokens_per_s: Math.round(tokens / s), mb_per_s: +(bytes / s / 1e6).toFixed(2),
    load_ms: +loadMs.toFixed(1) }));
}
main().catch((e) => { console.error(e); process.exit(1); });
