// BPE tokenizer.json variants that exercise what the real files do not: every Split behaviour
// and `invert`, Replace with regexes, ByteLevel with add_prefix_space and the GPT-2 split, BPE
// with continuing_subword_prefix / end_of_word_suffix, byte fallback with fused unknown tokens,
// and the Strip, Replace and BPEDecoder decoders. The models are derived from the real Claude
// BPE (its merges, or a closed subset of them rewritten); each document is read and written
// back by the library itself, so the files are what the library makes of them.
"use strict";
const fs = require("fs");
const path = require("path");
const t = require("tokenizers");

// GPT-2's byte-level alphabet: character -> byte.
function byteOfChar() {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  const map = new Map();
  let next = 0x100;
  for (let b = 0; b < 256; b++) map.set(String.fromCodePoint(printable(b) ? b : next++), b);
  return map;
}

// The Claude merges as [a, b] pairs of plain text (byte-level characters decoded; merges whose
// sides are not whole UTF-8 text are left out).
function plainMerges(claude) {
  const bytes = byteOfChar();
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const plain = (tok) => {
    const b = [];
    for (const ch of tok) {
      if (!bytes.has(ch)) return null;
      b.push(bytes.get(ch));
    }
    try {
      return decoder.decode(Uint8Array.from(b));
    } catch {
      return null;
    }
  };
  const out = [];
  for (const m of claude.model.merges) {
    const [a, b] = typeof m === "string" ? m.split(" ") : m;
    const pa = plain(a);
    const pb = plain(b);
    if (pa !== null && pb !== null) out.push([pa, pb]);
  }
  return out;
}

// Merges over `alphabet` closed under the vocabulary: a merge is kept when both sides are
// characters of the alphabet or results of earlier kept merges. Returns the kept merges and
// the tokens they make, in order.
function closedMerges(pairs, alphabet, limit) {
  const known = new Set(alphabet);
  const merges = [];
  for (const [a, b] of pairs) {
    if (merges.length >= limit) break;
    if (!known.has(a) || !known.has(b)) continue;
    merges.push([a, b]);
    known.add(a + b);
  }
  return { merges, tokens: [...known] };
}

// A vocabulary starting with the special tokens; add() gives new tokens the next id.
function vocabulary() {
  const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
  let size = 3;
  const add = (tok) => { if (!(tok in vocab)) vocab[tok] = size++; };
  return { vocab, add };
}

const ASCII = Array.from({ length: 0x7e - 0x20 }, (_, i) => String.fromCharCode(0x21 + i));

// A BPE with continuing_subword_prefix "##" and end_of_word_suffix "</w>": every token exists
// bare, prefixed, suffixed and both, and every merge in the four forms the model looks up.
function prefixSuffixModel(pairs) {
  const { merges, tokens } = closedMerges(pairs.filter(([a, b]) => /^[A-Za-z]+$/.test(a + b)),
                                          ASCII, 3000);
  const { vocab, add } = vocabulary();
  for (const tok of tokens) {
    add(tok); add("##" + tok); add(tok + "</w>"); add("##" + tok + "</w>");
  }
  const out = [];
  for (const [a, b] of merges) {
    out.push([a, "##" + b], ["##" + a, "##" + b], [a, "##" + b + "</w>"],
             ["##" + a, "##" + b + "</w>"]);
  }
  return {
    type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: "##",
    end_of_word_suffix: "</w>", fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab, merges: out.map(([a, b]) => `${a} ${b}`),
  };
}

// A SentencePiece-style BPE ("▁" for spaces) with byte fallback, except for the lead bytes of
// 4-byte characters, which therefore become (fused) unknown tokens.
function byteFallbackModel(pairs) {
  const latin = Array.from({ length: 0x17f - 0xc0 }, (_, i) => String.fromCharCode(0xc0 + i));
  const spaced = pairs.map(([a, b]) => [a.replaceAll(" ", "\u2581"), b.replaceAll(" ", "\u2581")]);
  const { merges, tokens } = closedMerges(spaced, [...ASCII, "\u2581", ...latin], 8000);
  const { vocab, add } = vocabulary();
  for (let b = 0; b < 256; b++) {
    if (b < 0xf0 || b > 0xf4) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  }
  for (const tok of tokens) add(tok);
  return {
    type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
    vocab, merges,
  };
}

function added(id, content, special, options = {}) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special,
           special, ...options };
}

const split = (pattern, behavior, invert = false) => ({ type: "Split", pattern, behavior, invert });
const byteLevel = (addPrefixSpace, useRegex) => ({
  type: "ByteLevel", add_prefix_space: addPrefixSpace, trim_offsets: true, use_regex: useRegex,
});
const byteLevelDecoder = { type: "ByteLevel", add_prefix_space: true, trim_offsets: true };

// name -> function(claude tokenizer.json, plain merges) returning a tokenizer.json document.
const VARIANTS = {
  // GPT-2 / RoBERTa style: the ByteLevel split regex, a prefix space, offsets trimmed; a regex
  // Replace in the normalizer.
  bytelevel_prefix_space(claude) {
    return {
      added_tokens: [...claude.added_tokens, added(65000, "<mask>", true, { lstrip: true }),
                     added(65001, "hello world", false, { single_word: true })],
      normalizer: { type: "Sequence", normalizers: [
        { type: "Replace", pattern: { Regex: "[\\t ]{2,}" }, content: " " },
        { type: "Lowercase" }] },
      pre_tokenizer: byteLevel(true, true),
      post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true,
                      use_regex: true },
      decoder: byteLevelDecoder,
      model: claude.model,
    };
  },
  // Split behaviours Removed, MergedWithPrevious, MergedWithNext and Contiguous, on regex and
  // string patterns, before a plain byte-level mapping.
  split_behaviours(claude) {
    return {
      added_tokens: claude.added_tokens,
      pre_tokenizer: { type: "Sequence", pretokenizers: [
        split({ Regex: "\\s+" }, "Removed"),
        split({ String: "-" }, "MergedWithPrevious"),
        split({ Regex: "\\p{P}" }, "MergedWithNext"),
        split({ Regex: "\\d" }, "Contiguous"),
        byteLevel(false, false)] },
      decoder: byteLevelDecoder,
      model: claude.model,
    };
  },
  // Inverted patterns, a pattern of empty matches (before capitals), a Replace regex with
  // lookahead, prefix spaces on every split; Replace and Strip in the decoder.
  split_inverted(claude) {
    return {
      added_tokens: claude.added_tokens,
      normalizer: { type: "Sequence", normalizers: [
        { type: "NFKC" },
        { type: "Replace", pattern: { Regex: "\\s+(?=\\p{Lu})" }, content: "_" }] },
      pre_tokenizer: { type: "Sequence", pretokenizers: [
        split({ Regex: "\\p{L}+" }, "Contiguous", true),
        split({ Regex: "[aeiou]+" }, "MergedWithNext", true),
        split({ Regex: "(?=\\p{Lu})" }, "Isolated"),
        byteLevel(true, false)] },
      decoder: { type: "Sequence", decoders: [
        byteLevelDecoder,
        { type: "Replace", pattern: { Regex: "\\s+" }, content: " " },
        { type: "Strip", content: " ", start: 2, stop: 0 }] },
      model: claude.model,
    };
  },
  // ModernBERT's layout (answerdotai/ModernBERT-base: a byte-level BPE under the GPT-2 split
  // without a prefix space, wrapped in a BERT template of added [CLS] / [SEP] tokens, its [MASK]
  // taking the space on its left); the text encoder fixtures of ModernBERT use WordPiece, so this
  // is where the pipeline the real folders ship is checked.
  bytelevel_bert_template(claude) {
    const special = (name, type) => ({ SpecialToken: { id: name, type_id: type } });
    const seq = (id, type) => ({ Sequence: { id, type_id: type } });
    return {
      added_tokens: [...claude.added_tokens, added(65000, "[CLS]", true), added(65001, "[SEP]", true),
                     added(65002, "[MASK]", true, { lstrip: true })],
      pre_tokenizer: byteLevel(false, true),
      post_processor: {
        type: "TemplateProcessing",
        single: [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)],
        pair: [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0), seq("B", 0), special("[SEP]", 0)],
        special_tokens: { "[CLS]": { id: "[CLS]", ids: [65000], tokens: ["[CLS]"] },
                          "[SEP]": { id: "[SEP]", ids: [65001], tokens: ["[SEP]"] } },
      },
      decoder: byteLevelDecoder,
      model: claude.model,
    };
  },
  // continuing_subword_prefix and end_of_word_suffix, unknown characters (not fused), accents
  // removed by a regex Replace after NFKD.
  bpe_prefix_suffix(claude, pairs) {
    return {
      added_tokens: [added(1, "<s>", true), added(2, "</s>", true)],
      normalizer: { type: "Sequence", normalizers: [
        { type: "NFKD" },
        { type: "Replace", pattern: { Regex: "\\p{Mn}+" }, content: "" }] },
      pre_tokenizer: { type: "Sequence", pretokenizers: [
        split({ Regex: "\\s+" }, "Removed"), split({ Regex: "\\p{P}" }, "Isolated")] },
      post_processor: {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
                 { SpecialToken: { id: "</s>", type_id: 0 } }],
        pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
               { SpecialToken: { id: "</s>", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } },
               { SpecialToken: { id: "</s>", type_id: 1 } }],
        special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] },
                          "</s>": { id: "</s>", ids: [2], tokens: ["</s>"] } },
      },
      decoder: { type: "Sequence", decoders: [
        { type: "Replace", pattern: { String: "##" }, content: "" },
        { type: "BPEDecoder", suffix: "</w>" },
        // The library's Strip reads past the start of an empty token when stop > 0: only used
        // here, where no token is empty.
        { type: "Strip", content: " ", start: 0, stop: 1 }] },
      model: prefixSuffixModel(pairs),
    };
  },
  // Llama-2 style: no pre-tokenizer (a whole line is one word), "▁" for spaces, byte fallback
  // with fused unknown tokens; ByteFallback, Fuse and Strip in the decoder.
  bpe_byte_fallback(claude, pairs) {
    return {
      added_tokens: [added(0, "<unk>", true), added(1, "<s>", true), added(2, "</s>", true)],
      normalizer: { type: "Sequence", normalizers: [
        { type: "Prepend", prepend: "\u2581" },
        { type: "Replace", pattern: { String: " " }, content: "\u2581" }] },
      post_processor: {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "<s>", type_id: 0 } },
                 { Sequence: { id: "A", type_id: 0 } }],
        pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
               { SpecialToken: { id: "<s>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } }],
        special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
      },
      decoder: { type: "Sequence", decoders: [
        { type: "Replace", pattern: { String: "\u2581" }, content: " " },
        { type: "ByteFallback" }, { type: "Fuse" },
        { type: "Strip", content: " ", start: 1, stop: 0 }] },
      model: byteFallbackModel(pairs),
    };
  },
};

// Writes OUT_DIR/<name>.json for every variant (real = {name: path} of the real files); returns
// {name: path}.
async function buildBpeVariants(real, outDir) {
  const claude = JSON.parse(fs.readFileSync(real.claude, "utf8"));
  const pairs = plainMerges(claude);
  const out = {};
  for (const [name, make] of Object.entries(VARIANTS)) {
    const doc = { version: "1.0", truncation: null, padding: null, added_tokens: [],
                  normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null,
                  ...make(claude, pairs) };
    const file = path.join(outDir, `${name}.json`);
    try {
      t.Tokenizer.fromString(JSON.stringify(doc)).save(file, true);
    } catch (e) {
      throw new Error(`bpe variant ${name}: ${e.message}`);
    }
    out[name] = file;
  }
  return out;
}

module.exports = { buildBpeVariants, VARIANTS };
