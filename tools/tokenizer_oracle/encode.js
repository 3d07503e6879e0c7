#!/usr/bin/env node
// Reference encodings from the Hugging Face tokenizers library (npm `tokenizers`, the official
// Node binding of the Rust library).
//
//   node encode.js TOKENIZER_JSON CORPUS_JSONL OUT_JSONL
//        [--max-length N --strategy LongestFirst|OnlyFirst|OnlySecond --direction Right|Left]
//
// Input lines: {"text": ..., "pair": ...?, "add_special_tokens": ...?}. Output lines, one per
// input line: {"ids", "type_ids", "offsets", "special_tokens_mask", "sequence_ids", "tokens",
// "decoded", "decoded_with_special"} or {"error": message} when the library refuses the input.
// The library reports offsets as code-point indices; they are written as UTF-8 byte offsets into
// the token's own sequence (the text or the pair), which is what our tokenizer reports.
"use strict";
const fs = require("fs");
const { Tokenizer } = require("tokenizers");

function parseArgs(argv) {
  const pos = [];
  const opt = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith("--")) opt[argv[i].slice(2)] = argv[++i];
    else pos.push(argv[i]);
  }
  if (pos.length !== 3) {
    console.error("usage: encode.js TOKENIZER_JSON CORPUS_JSONL OUT_JSONL [--max-length N " +
                  "--strategy S --direction D]");
    process.exit(2);
  }
  return { tokenizerPath: pos[0], corpusPath: pos[1], outPath: pos[2], opt };
}

// byteAt[i] = UTF-8 byte offset of code point i (and of the end, at i = number of code points).
function codePointToByte(text) {
  const table = [0];
  let bytes = 0;
  for (const ch of text) {
    bytes += Buffer.byteLength(ch, "utf8");
    table.push(bytes);
  }
  return table;
}

// Encodes every line of corpusPath with `tok` (whose truncation is already set) into outPath.
async function encodeFile(tok, corpusPath, outPath) {
  const lines = fs.readFileSync(corpusPath, "utf8").split("\n").filter((l) => l.length > 0);
  const out = [];
  for (const line of lines) {
    const input = JSON.parse(line);
    const pair = input.pair === undefined ? null : input.pair;
    const addSpecial = input.add_special_tokens === undefined ? true : input.add_special_tokens;
    let enc;
    try {
      enc = await tok.encode(input.text, pair, { addSpecialTokens: addSpecial });
    } catch (e) {
      out.push(JSON.stringify({ error: String(e && e.message ? e.message : e) }));
      continue;
    }
    const seqIds = enc.getSequenceIds();
    const tables = [codePointToByte(input.text), pair === null ? null : codePointToByte(pair)];
    const offsets = enc.getOffsets().map(([b, e], i) => {
      const s = seqIds[i];
      if (s === null || s === undefined) return [b, e];
      const t = tables[s];
      return [t[b], t[e]];
    });
    const ids = enc.getIds();
    out.push(JSON.stringify({
      ids,
      type_ids: enc.getTypeIds(),
      offsets,
      special_tokens_mask: enc.getSpecialTokensMask(),
      sequence_ids: seqIds.map((s) => (s === null || s === undefined ? -1 : s)),
      tokens: enc.getTokens(),
      decoded: await tok.decode(ids, true),
      decoded_with_special: await tok.decode(ids, false),
    }));
  }
  fs.writeFileSync(outPath, out.join("\n") + "\n");
}

// truncation: null or {maxLength, strategy, direction} (direction "Right" or "Left").
function setTruncation(tok, truncation) {
  if (!truncation) {
    tok.disableTruncation();
    return;
  }
  tok.setTruncation(truncation.maxLength, {
    strategy: truncation.strategy || "LongestFirst",
    // The binding accepts the direction only in lower case.
    direction: (truncation.direction || "Right").toLowerCase(),
    stride: 0,
  });
}

async function main() {
  const { tokenizerPath, corpusPath, outPath, opt } = parseArgs(process.argv.slice(2));
  const tok = Tokenizer.fromFile(tokenizerPath);
  setTruncation(tok, opt["max-length"] === undefined ? null : {
    maxLength: Number(opt["max-length"]), strategy: opt.strategy, direction: opt.direction,
  });
  await encodeFile(tok, corpusPath, outPath);
}

module.exports = { encodeFile, setTruncation };

if (require.main === module) {
  main().catch((e) => { console.error(e); process.exit(1); });
}
