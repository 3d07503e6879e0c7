#!/usr/bin/env node
// Writes a few MB of mixed text for the tokenizer speed benchmark: lines of 3–80 words drawn
// with a fixed seed from the conformance corpora (every script, emoji, digits, punctuation,
// code-like and long words they hold), so lines rarely repeat and a word cache cannot make the
// run look faster than real traffic.
//   node bench/make_tokenizer_text.js OUT.txt [MEGABYTES=4]
"use strict";
const fs = require("fs");
const path = require("path");

const [out, mbArg] = process.argv.slice(2);
if (!out) {
  console.error("usage: make_tokenizer_text.js OUT.txt [MEGABYTES]");
  process.exit(2);
}
const target = Math.round(Number(mbArg || 4) * 1e6);
const corpusDir = path.join(__dirname, "..", "tests", "text", "corpus");
const words = [];
for (const f of fs.readdirSync(corpusDir).filter((n) => n.endsWith(".jsonl")).sort()) {
  for (const line of fs.readFileSync(path.join(corpusDir, f), "utf8").split("\n")) {
    if (!line.trim()) continue;
    const rec = JSON.parse(line);
    for (const t of [rec.text, rec.pair]) {
      if (typeof t !== "string") continue;
      for (const w of t.split(/[ \n\r\t]+/)) if (w && !/[\u0000-\u001f]/.test(w)) words.push(w);
    }
  }
}
let seed = 0x2545f491;
const rand = (n) => {  // xorshift32: the same text on every machine
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % n;
};
const lines = [];
let bytes = 0;
while (bytes < target) {
  const n = 3 + rand(78);
  const parts = [];
  for (let i = 0; i < n; ++i) parts.push(words[rand(words.length)]);
  const line = parts.join(" ");
  lines.push(line);
  bytes += Buffer.byteLength(line) + 1;
}
fs.writeFileSync(out, lines.join("\n") + "\n");
console.error(`wrote ${lines.length} lines, ${bytes} bytes from ${words.length} corpus words to ${out}`);
