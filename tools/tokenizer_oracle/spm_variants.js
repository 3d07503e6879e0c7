// Unigram tokenizer.json variants built with the library itself (npm `tokenizers`), for what the
// converted SentencePiece files (spm_convert.js) do not exercise: byte fallback with its decoder
// chain, Metaspace with prepend_scheme "never" and with split off, "first" after another
// pre-tokenizer has cut the text, added tokens between Metaspace splits, and a model without an
// unknown token (the library refuses text it cannot cover). The vocabularies and charsmaps are the
// converted files' own.
"use strict";
const fs = require("fs");
const path = require("path");
const t = require("tokenizers");

function readModel(file) {
  const doc = JSON.parse(fs.readFileSync(file, "utf8"));
  const charsmap = doc.normalizer.normalizers.find((n) => n.type === "Precompiled");
  return { vocab: doc.model.vocab,
           charsmap: Array.from(Buffer.from(charsmap.precompiled_charsmap, "base64")) };
}

function idOf(vocab, piece) {
  const id = vocab.findIndex(([p]) => p === piece);
  if (id < 0) throw new Error(`no piece ${piece}`);
  return id;
}

// name -> function({albert, big}) returning a configured Tokenizer.
const VARIANTS = {
  // The 50k pieces plus SentencePiece's 256 byte pieces, byte_fallback on: characters outside
  // the vocabulary become their UTF-8 bytes; Llama's decoder chain puts them back together.
  unigram_byte_fallback({ big }) {
    const bytes = [];
    for (let b = 0; b < 256; b++) {
      bytes.push([`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, 0]);
    }
    const vocab = big.vocab.concat(bytes);
    const tok = new t.Tokenizer(t.Unigram.init(vocab, { unkId: 0, byteFallback: true }));
    tok.setNormalizer(t.precompiled(big.charsmap));
    tok.setPreTokenizer(t.metaspacePreTokenizer("\u2581", "never", true));
    tok.setDecoder(t.sequenceDecoder([t.replaceDecoder("\u2581", " "), t.byteFallbackDecoder(),
                                      t.fuseDecoder()]));
    tok.setPostProcessor(t.templateProcessing("<s> $A", "<s> $A <s>:1 $B:1",
                                              [["<s>", idOf(vocab, "<s>")]]));
    tok.addSpecialTokens(["<unk>", "<s>", "</s>"]);
    return tok;
  },
  // ALBERT's pieces with the Metaspace left whole (split false): one Viterbi over each stretch
  // between added tokens, the replacement prepended to every stretch ("always").
  unigram_split_false({ albert }) {
    const tok = new t.Tokenizer(t.Unigram.init(albert.vocab, { unkId: 1 }));
    tok.setNormalizer(t.sequenceNormalizer([t.nfkcNormalizer(), t.lowercase()]));
    tok.setPreTokenizer(t.metaspacePreTokenizer("\u2581", "always", false));
    tok.setDecoder(t.metaspaceDecoder("\u2581", "always", false));
    tok.setPostProcessor(t.templateProcessing("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1",
                                              [["[CLS]", 2], ["[SEP]", 3]]));
    tok.addSpecialTokens(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]);
    tok.addAddedTokens([
      new t.AddedToken("[ENT]", true, { leftStrip: true, rightStrip: true, normalized: false }),
      new t.AddedToken("new york", false, { normalized: true }),
      new t.AddedToken("hello", false, { singleWord: true, normalized: true }),
    ]);
    return tok;
  },
  // "first" after punctuation has cut the text: only the piece at the start of the text gets
  // the replacement. No unk_id: text with a character the 50k pieces lack is refused.
  unigram_first_no_unk({ big }) {
    const tok = new t.Tokenizer(t.Unigram.init(big.vocab, {}));
    tok.setPreTokenizer(t.sequencePreTokenizer([t.punctuationPreTokenizer(),
                                                t.metaspacePreTokenizer("\u2581", "first", true)]));
    tok.setDecoder(t.metaspaceDecoder("\u2581", "first", true));
    tok.addSpecialTokens(["<s>", "</s>"]);
    return tok;
  },
  // "never" with the ALBERT charsmap and no post-processor; the decoder keeps a leading space.
  unigram_never({ albert }) {
    const tok = new t.Tokenizer(t.Unigram.init(albert.vocab, { unkId: 1 }));
    tok.setNormalizer(t.sequenceNormalizer([t.precompiled(albert.charsmap),
                                            t.stripNormalizer(true, true)]));
    tok.setPreTokenizer(t.metaspacePreTokenizer("\u2581", "never", true));
    tok.setDecoder(t.metaspaceDecoder("\u2581", "never", true));
    tok.addSpecialTokens(["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]);
    return tok;
  },
};

// spm: {albert_30k: path, spm_50k: path} from spm_convert.js. Writes OUT_DIR/<name>.json for
// every variant; returns {name: path}.
async function buildSpmVariants(spm, outDir) {
  const models = { albert: readModel(spm.albert_30k), big: readModel(spm.spm_50k) };
  const out = {};
  for (const [name, build] of Object.entries(VARIANTS)) {
    const file = path.join(outDir, `${name}.json`);
    build(models).save(file, true);
    out[name] = file;
  }
  return out;
}

module.exports = { buildSpmVariants };
