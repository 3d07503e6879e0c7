#!/usr/bin/env node
// Produces everything the C++ conformance test compares against:
//   node run_conformance.js WORK_DIR CORPUS_JSONL...
// fetches the BERT vocabulary (cached in WORK_DIR/cache), builds the tokenizer.json variants with
// the library, encodes every corpus with every variant (and, for bert_base_uncased, under every
// truncation setting), and writes WORK_DIR/manifest.json listing the runs.
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");
const { bertVocabTxt } = require("./bert_vocab");
const { buildTokenizers } = require("./build_tokenizers");
const { encodeFile, setTruncation } = require("./encode");

async function main() {
  const [workDir, ...corpora] = process.argv.slice(2);
  if (!workDir || corpora.length === 0) {
    console.error("usage: run_conformance.js WORK_DIR CORPUS_JSONL...");
    process.exit(2);
  }
  const tokDir = path.join(workDir, "tokenizers");
  const outDir = path.join(workDir, "oracle");
  fs.mkdirSync(tokDir, { recursive: true });
  fs.mkdirSync(outDir, { recursive: true });

  const vocabTxt = bertVocabTxt(path.join(workDir, "cache"));
  const tokenizers = await buildTokenizers(vocabTxt, tokDir);

  const truncations = [null];
  for (const maxLength of [8, 16]) {
    for (const strategy of ["LongestFirst", "OnlyFirst", "OnlySecond"]) {
      for (const direction of ["Right", "Left"]) truncations.push({ maxLength, strategy, direction });
    }
  }
  const runs = [];
  for (const [name, tokPath] of Object.entries(tokenizers)) {
    const tok = Tokenizer.fromFile(tokPath);
    for (const corpus of corpora) {
      const corpusName = path.basename(corpus, ".jsonl");
      for (const trunc of truncations) {
        if (trunc && name !== "bert_base_uncased") continue;
        const tag = trunc ? `${trunc.maxLength}_${trunc.strategy}_${trunc.direction}` : "full";
        const out = path.join(outDir, `${name}.${corpusName}.${tag}.jsonl`);
        setTruncation(tok, trunc);
        await encodeFile(tok, corpus, out);
        runs.push({ tokenizer: path.resolve(tokPath), corpus: path.resolve(corpus),
                    oracle: path.resolve(out), truncation: trunc });
      }
    }
  }
  fs.writeFileSync(path.join(workDir, "manifest.json"), JSON.stringify({ runs }, null, 1));
  console.log(`tokenizer oracle: ${runs.length} runs written to ${workDir}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
