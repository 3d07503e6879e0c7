// Small tokenizer.json documents for the unit tests, built with nlohmann::json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace il::text::testing {

using nlohmann::json;

// A WordPiece vocabulary with BERT's special tokens first: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3
// [MASK]=4, then `words` from id 5 on.
inline json wordpiece_model(const std::vector<std::string>& words, int max_chars = 100) {
  json vocab = json::object();
  const char* specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  int id = 0;
  for (const char* s : specials) vocab[s] = id++;
  for (const auto& w : words) vocab[w] = id++;
  return {{"type", "WordPiece"},
          {"unk_token", "[UNK]"},
          {"continuing_subword_prefix", "##"},
          {"max_input_chars_per_word", max_chars},
          {"vocab", vocab}};
}

inline json added_token(int id, const std::string& content, bool special, bool normalized,
                        bool lstrip = false, bool rstrip = false, bool single_word = false) {
  return {{"id", id},           {"content", content}, {"single_word", single_word},
          {"lstrip", lstrip},   {"rstrip", rstrip},   {"normalized", normalized},
          {"special", special}};
}

inline json bert_specials() {
  return json::array({added_token(0, "[PAD]", true, false), added_token(1, "[UNK]", true, false),
                      added_token(2, "[CLS]", true, false), added_token(3, "[SEP]", true, false),
                      added_token(4, "[MASK]", true, false)});
}

inline json bert_template() {
  auto special = [](const char* id, int type_id) {
    return json{{"SpecialToken", {{"id", id}, {"type_id", type_id}}}};
  };
  auto seq = [](const char* id, int type_id) {
    return json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  return {{"type", "TemplateProcessing"},
          {"single", json::array({special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)})},
          {"pair", json::array({special("[CLS]", 0), seq("A", 0), special("[SEP]", 0),
                                seq("B", 1), special("[SEP]", 1)})},
          {"special_tokens",
           {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
            {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}};
}

inline const std::vector<std::string>& small_words() {
  static const std::vector<std::string> words = {
      "hello", "world", "##s",  "un",   "##aff", "##able", ",",   "!",    "caf",  "##e",
      "the",   "a",     "b",    "ke",   "##ba",  "##b",    "中",  "'",    "t",    "don",
      ".",     "new",   "york", "i",    "##i",   "e",      "x",   "##x",  "cafe", "-"};
  return words;
}

// bert-base-uncased's pipeline around a small vocabulary.
inline json bert_like() {
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", bert_specials()},
          {"normalizer",
           {{"type", "BertNormalizer"},
            {"clean_text", true},
            {"handle_chinese_chars", true},
            {"strip_accents", nullptr},
            {"lowercase", true}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", bert_template()},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model", wordpiece_model(small_words())}};
}

inline Tokenizer load(const json& j) { return Tokenizer::from_json_string(j.dump(), "tokenizer.json"); }

inline int32_t id_of(const Tokenizer& t, const std::string& token) {
  return t.token_to_id(token).value_or(-100);
}

}  // namespace il::text::testing
