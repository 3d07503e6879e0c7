// Writes the small tokenizer.json files the tokenizer fuzz targets load (fuzz/tokenizers/): one per
// model family, each with the components real files use around it, so that arbitrary text goes
// through every stage. Committed with its output; rerun after changing it:
//   build-fuzz/fuzz/il_make_fuzz_tokenizers fuzz/tokenizers
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sentencepiece_test_util.h"
#include "text/byte_level.h"
#include "text/unicode.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::vector<std::string> kWords = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "with", "as", "was", "on",
    "be", "at", "by", "this", "had", "not", "are", "but", "from", "or", "have", "an", "they",
    "which", "one", "you", "were", "her", "all", "she", "there", "would", "their", "we", "him",
    "been", "has", "when", "who", "will", "more", "no", "if", "out", "so", "said", "what",
    "token", "ization", "hello", "world", "un", "##able", "café", "naïve", "2024", "100"};

json added(const std::string& content, bool special, bool normalized, bool lstrip = false,
           bool rstrip = false, bool single_word = false) {
  return {{"id", 0},         {"content", content}, {"single_word", single_word},
          {"lstrip", lstrip}, {"rstrip", rstrip},  {"normalized", normalized},
          {"special", special}};
}

json special_token(const std::string& id, int32_t value) {
  return {{"id", id}, {"ids", {value}}, {"tokens", {id}}};
}

// WordPiece, BERT style, with added tokens that strip spaces or match whole words only.
json wordpiece() {
  json vocab = json::object();
  int32_t id = 0;
  for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) vocab[s] = id++;
  for (char c = '!'; c <= '~'; ++c) {
    vocab[std::string(1, c)] = id++;
    vocab["##" + std::string(1, c)] = id++;
  }
  for (const std::string& w : kWords) vocab[w] = id++;
  for (const char* s : {"中", "文", "é", "##é", "ï", "##ï"}) vocab[s] = id++;
  return {{"version", "1.0"},
          {"added_tokens",
           {added("[PAD]", true, false), added("[UNK]", true, false),
            added("[CLS]", true, false), added("[SEP]", true, false),
            added("[MASK]", true, false, true, false), added("<b>", false, true, false, true),
            added("new york", false, true, false, false, true)}},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor",
           {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"continuing_subword_prefix", "##"},
            {"max_input_chars_per_word", 100},
            {"vocab", vocab}}}};
}

// Byte-level BPE, GPT-2 / Llama 3 style: every byte's character, and merges spelling out the
// words (with and without their leading space) one character at a time.
json bpe_byte_level() {
  json vocab = json::object();
  int32_t id = 0;
  auto token = [&](const std::string& t) {
    if (!vocab.contains(t)) vocab[t] = id++;
  };
  for (int b = 0; b < 256; ++b) {
    token(std::string(il::text::byte_level::char_of_byte(static_cast<uint8_t>(b))));
  }
  json merges = json::array();
  auto spell = [&](const std::string& word) {
    std::string mapped;
    for (const char c : word) {
      mapped += il::text::byte_level::char_of_byte(static_cast<uint8_t>(c));
    }
    std::size_t i = 0;
    std::string left;
    il::text::unicode::append_utf8(left, il::text::unicode::decode_utf8(mapped, i));
    while (i < mapped.size()) {
      std::string right;
      il::text::unicode::append_utf8(right, il::text::unicode::decode_utf8(mapped, i));
      if (!vocab.contains(left + right)) {
        merges.push_back(left + " " + right);
        token(left + right);
      }
      left += right;
    }
  };
  for (const std::string& w : kWords) {
    spell(w);
    spell(" " + w);
  }
  for (const char* s : {"  ", "    ", "\n\n", "...", "!!"}) spell(s);
  const int32_t eot = id;
  return {{"version", "1.0"},
          {"added_tokens",
           {added("<|endoftext|>", true, false), added("<mask>", true, true, true, false),
            added(" hello world", false, true)}},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern",
                {{"Regex",
                  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                  "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", true},
               {"trim_offsets", true},
               {"use_regex", true}}}}}},
          {"post_processor",
           {{"type", "Sequence"},
            {"processors",
             {{{"type", "ByteLevel"},
               {"add_prefix_space", true},
               {"trim_offsets", true},
               {"use_regex", true}},
              {{"type", "TemplateProcessing"},
               {"single", "$A <|endoftext|>"},
               {"pair", "$A <|endoftext|> $B:1 <|endoftext|>:1"},
               {"special_tokens", {{"<|endoftext|>", special_token("<|endoftext|>", eot)}}}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

// Unigram, SentencePiece style: a precompiled charsmap (NFKC-like rules, a grapheme key, an empty
// replacement), Metaspace, byte fallback, and the decoders SentencePiece files chain.
json unigram_precompiled() {
  std::vector<std::pair<std::string, double>> pieces = {
      {"<unk>", 0.0}, {"<s>", 0.0}, {"</s>", 0.0}, {"\u2581", -2.0}};
  double score = -3.0;
  for (const std::string& w : kWords) {
    pieces.push_back({"\u2581" + w, score});
    pieces.push_back({w, score - 0.5});
    score -= 0.25;
  }
  for (char c = '!'; c <= '~'; ++c) pieces.push_back({std::string(1, c), -12.0});
  for (const char* s : {"ガ", "中", "文", "\u2581中"}) pieces.push_back({s, -11.0});
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    pieces.push_back({name, -20.0});
  }
  // Each trie node of the charsmap takes 1 KiB: few rules, sharing their first bytes.
  const std::map<std::string, std::string> rules = {
      {"\xef\xac\x81", "fi"},        // U+FB01 ligature
      {"\xef\xbc\xa1", "A"},         // fullwidth A
      {"\xc2\xa0", " "},              // no-break space
      {"e\xcc\x81", "\xc3\xa9"},     // e + combining acute (one grapheme) -> é
      {"\xe2\x80\x8b", ""},          // zero-width space: removed
      {"\xe2\x80\xa6", "..."},       // ellipsis -> 3 characters
  };
  json doc = il::text::spm_testing::unigram_doc(pieces, 0, true);
  doc["added_tokens"] = {added("<unk>", true, false), added("<s>", true, false),
                         added("</s>", true, false), added("<mask>", true, false, true, false)};
  doc["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Precompiled"},
         {"precompiled_charsmap",
          il::text::spm_testing::base64(il::text::spm_testing::charsmap(rules))}},
        {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  doc["pre_tokenizer"] = {{"type", "Metaspace"},
                          {"replacement", "\u2581"},
                          {"prepend_scheme", "first"},
                          {"split", true}};
  doc["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", "<s> $A </s>"},
      {"pair", "<s> $A </s> </s> $B </s>"},
      {"special_tokens", {{"<s>", special_token("<s>", 1)}, {"</s>", special_token("</s>", 2)}}}};
  doc["decoder"] = {{"type", "Sequence"},
                    {"decoders",
                     {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}},
                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: il_make_fuzz_tokenizers OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  const std::pair<const char*, json> files[] = {
      {"wordpiece.json", wordpiece()},
      {"bpe_byte_level.json", bpe_byte_level()},
      {"unigram_precompiled.json", unigram_precompiled()}};
  for (const auto& [name, doc] : files) {
    // Loading checks the file before it is written.
    il::text::spm_testing::load(doc);
    std::ofstream(out / name) << doc.dump() << "\n";
  }
  return 0;
}
