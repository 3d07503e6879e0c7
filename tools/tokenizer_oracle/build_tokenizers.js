// Builds WordPiece tokenizer.json files with the Hugging Face library itself (npm `tokenizers`)
// from the BERT vocabulary: the real bert-base-uncased pipeline plus variants that exercise the
// other normalizers, pre-tokenizers, post-processors and added-token options.
"use strict";
const path = require("path");
const t = require("tokenizers");

const SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

async function wordPiece(vocabTxt) {
  return t.WordPiece.fromFile(vocabTxt, {
    unkToken: "[UNK]", continuingSubwordPrefix: "##", maxInputCharsPerWord: 100,
  });
}

function bertTemplate() {
  return t.templateProcessing("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1",
                              [["[CLS]", 101], ["[SEP]", 102]]);
}

// name -> function(tokenizer) configuring everything but the model.
const VARIANTS = {
  // bert-base-uncased exactly as transformers ships it.
  bert_base_uncased(tok) {
    tok.setNormalizer(t.bertNormalizer({ cleanText: true, handleChineseChars: true,
                                         lowercase: true }));
    tok.setPreTokenizer(t.bertPreTokenizer());
    tok.setPostProcessor(bertTemplate());
    tok.setDecoder(t.wordPieceDecoder("##", true));
    tok.addSpecialTokens(SPECIALS);
  },
  // Cased BERT settings, BertProcessing, no cleanup in the decoder.
  bert_cased_processing(tok) {
    tok.setNormalizer(t.bertNormalizer({ cleanText: true, handleChineseChars: false,
                                         stripAccents: false, lowercase: false }));
    tok.setPreTokenizer(t.bertPreTokenizer());
    tok.setPostProcessor(t.bertProcessing(["[SEP]", 102], ["[CLS]", 101]));
    tok.setDecoder(t.wordPieceDecoder("##", false));
    tok.addSpecialTokens(SPECIALS);
  },
  // Sequence normalizer, Whitespace pre-tokenizer, RoBERTa post-processor, added tokens with
  // lstrip / rstrip / single_word / normalized.
  sequence_added_tokens(tok) {
    tok.setNormalizer(t.sequenceNormalizer([t.nfdNormalizer(), t.lowercase(),
                                            t.stripAccentsNormalizer()]));
    tok.setPreTokenizer(t.whitespacePreTokenizer());
    tok.setPostProcessor(t.robertaProcessing(["[SEP]", 102], ["[CLS]", 101], true, false));
    tok.setDecoder(t.wordPieceDecoder("##", true));
    tok.addSpecialTokens(SPECIALS);
    tok.addAddedTokens([
      new t.AddedToken("[ENT]", true, { leftStrip: true, rightStrip: true, normalized: false }),
      new t.AddedToken("New York", false, { singleWord: true, normalized: true }),
      new t.AddedToken("ab", false, { singleWord: true, normalized: false }),
      new t.AddedToken("\u{1F917}", false, { normalized: false }),
      new t.AddedToken("Hello World", false, { normalized: false, leftStrip: true }),
      new t.AddedToken("mask]", false, { normalized: true }),
    ]);
  },
  // Compatibility composition with offsets through NFKC, splitting on whitespace and punctuation.
  nfkc_punctuation(tok) {
    tok.setNormalizer(t.sequenceNormalizer([t.nfkcNormalizer(), t.lowercase(),
                                            t.stripNormalizer(true, true)]));
    tok.setPreTokenizer(t.sequencePreTokenizer([t.whitespaceSplitPreTokenizer(),
                                                t.punctuationPreTokenizer()]));
    tok.setPostProcessor(bertTemplate());
    tok.setDecoder(t.wordPieceDecoder("##", true));
    tok.addSpecialTokens(SPECIALS);
  },
  // Canonical composition and decomposition back to back, digits split one by one.
  nfc_digits(tok) {
    tok.setNormalizer(t.sequenceNormalizer([t.nfdNormalizer(), t.nfcNormalizer(),
                                            t.nfkdNormalizer(), t.lowercase()]));
    tok.setPreTokenizer(t.sequencePreTokenizer([t.bertPreTokenizer(),
                                                t.digitsPreTokenizer(true)]));
    tok.setPostProcessor(t.templateProcessing("[CLS]:1 $A:0 [SEP]:1", "[CLS] $A [SEP] $B:1",
                                              [["[CLS]", 101], ["[SEP]", 102]]));
    tok.setDecoder(t.wordPieceDecoder("##", true));
    tok.addSpecialTokens(SPECIALS);
  },
  // Prepend (its characters take the first character's place), byte-level offset trimming.
  prepend_byte_level_post(tok) {
    tok.setNormalizer(t.sequenceNormalizer([t.stripNormalizer(true, false),
                                            t.prependNormalizer("un "), t.nfcNormalizer()]));
    tok.setPreTokenizer(t.whitespaceSplitPreTokenizer());
    tok.setPostProcessor(t.byteLevelProcessing(true));
    tok.setDecoder(t.wordPieceDecoder("##", false));
    tok.addSpecialTokens(SPECIALS);
    tok.addAddedTokens([
      new t.AddedToken("[ENT]", true, { leftStrip: true, rightStrip: true, normalized: false }),
    ]);
  },
  // No normalizer, no post-processor, no decoder.
  bare(tok) {
    tok.setPreTokenizer(t.whitespaceSplitPreTokenizer());
  },
};

// Writes OUT_DIR/<name>.json for every variant; returns {name: path}.
async function buildTokenizers(vocabTxt, outDir) {
  const out = {};
  for (const [name, configure] of Object.entries(VARIANTS)) {
    const tok = new t.Tokenizer(await wordPiece(vocabTxt));
    configure(tok);
    const file = path.join(outDir, `${name}.json`);
    tok.save(file, true);
    out[name] = file;
  }
  return out;
}

module.exports = { buildTokenizers, VARIANTS };
