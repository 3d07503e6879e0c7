// PyLate's ColBERT settings (models/colbert_config.h): PyLate's defaults, a saved folder's values,
// null as "default", the expansion rule, and refusals naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/colbert_config.h"

namespace il::models {
namespace {

TEST(ColbertConfig, PyLateDefaults) {
  const ColbertConfig c = parse_colbert_config(nlohmann::json::object(), "c");
  EXPECT_EQ(c.query_prefix, "[Q] ");
  EXPECT_EQ(c.document_prefix, "[D] ");
  EXPECT_EQ(c.query_length, 32);
  EXPECT_EQ(c.document_length, 180);
  EXPECT_TRUE(c.do_query_expansion);
  EXPECT_FALSE(c.attend_to_expansion_tokens);
  ASSERT_EQ(c.skiplist_words.size(), 32u);  // string.punctuation
  EXPECT_EQ(c.skiplist_words.front(), "!");
  EXPECT_EQ(c.skiplist_words[1], "\"");
  EXPECT_EQ(c.skiplist_words.back(), "~");
}

TEST(ColbertConfig, ASavedFoldersValuesAndNulls) {
  const nlohmann::json j = {{"query_prefix", "<q>"},         {"document_prefix", ""},
                            {"query_length", 48},            {"document_length", 512},
                            {"attend_to_expansion_tokens", true}, {"skiplist_words", {".", ","}},
                            {"do_query_expansion", true},    {"similarity_fn_name", "MaxSim"}};
  const ColbertConfig c = parse_colbert_config(j, "c");
  EXPECT_EQ(c.query_prefix, "<q>");
  EXPECT_EQ(c.document_prefix, "");
  EXPECT_EQ(c.query_length, 48);
  EXPECT_EQ(c.document_length, 512);
  EXPECT_TRUE(c.attend_to_expansion_tokens);
  EXPECT_EQ(c.skiplist_words, (std::vector<std::string>{".", ","}));
  nlohmann::json nulls = j;
  for (const char* k : {"query_prefix", "query_length", "skiplist_words", "attend_to_expansion_tokens"})
    nulls[k] = nullptr;
  const ColbertConfig n = parse_colbert_config(nulls, "c");
  EXPECT_EQ(n.query_prefix, "[Q] ");
  EXPECT_EQ(n.query_length, 32);
  EXPECT_EQ(n.skiplist_words.size(), 32u);
  EXPECT_FALSE(n.attend_to_expansion_tokens);
  nlohmann::json no_expansion = j;
  no_expansion["do_query_expansion"] = false;  // PyLate then never attends to expansion tokens
  EXPECT_FALSE(parse_colbert_config(no_expansion, "c").attend_to_expansion_tokens);
}

TEST(ColbertConfig, RefusesMalformedFieldsNamingThem) {
  const auto msg = [](const nlohmann::json& j) {
    try {
      (void)parse_colbert_config(j, "config_sentence_transformers.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"query_length", 1},  // the marker leaves no room
           {"document_length", "long"},
           {"skiplist_words", "."},
           {"query_prefix", 3},
           {"do_query_expansion", "yes"}}) {
    const std::string m = msg({{key, value}});
    EXPECT_NE(m.find(key), std::string::npos) << key << ": " << m;
    EXPECT_NE(m.find("config_sentence_transformers.json"), std::string::npos) << m;
  }
  EXPECT_EQ(msg({{"query_prefix", ""}, {"query_length", 1}}), "");  // no marker: one token fits
}

}  // namespace
}  // namespace il::models
