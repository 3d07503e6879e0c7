// The fixture WordPiece tokenizer against the Python tokenizers library's encodings of the
// tricky-lines corpus (written by tools/oracle/make_fixtures.py on the GPU machine).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "fixture.h"
#include "text/tokenizer.h"

namespace il::test {
namespace {

TEST(FixtureTokenizer, MatchesPythonTokenizersOnTrickyLines) {
  const auto root = fixtures_root();
  const auto tok = text::Tokenizer::from_file(root / "bert-mean" / "tokenizer.json");
  std::ifstream in(root / "tokenizer" / "wordpiece_cases.jsonl");
  ASSERT_TRUE(in.good());
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    text::EncodeOptions opt;
    opt.add_special_tokens = j.at("add_special_tokens").get<bool>();
    const std::string t = j.at("text").get<std::string>();
    const auto enc = j.at("pair").is_null() ? tok.encode(t, opt)
                                            : tok.encode_pair(t, j.at("pair").get<std::string>(), opt);
    const std::string where = "line " + std::to_string(n + 1) + ": " + t.substr(0, 40);
    EXPECT_EQ(enc.ids, j.at("ids").get<std::vector<int32_t>>()) << where;
    EXPECT_EQ(enc.type_ids, j.at("type_ids").get<std::vector<int32_t>>()) << where;
    std::vector<std::pair<uint32_t, uint32_t>> offsets;
    for (const auto& o : j.at("offsets")) offsets.emplace_back(o.at(0).get<uint32_t>(), o.at(1).get<uint32_t>());
    EXPECT_EQ(enc.offsets, offsets) << where;
    EXPECT_EQ(std::vector<int>(enc.special_tokens_mask.begin(), enc.special_tokens_mask.end()),
              j.at("special_tokens_mask").get<std::vector<int>>())
        << where;
    EXPECT_EQ(tok.decode(enc.ids, true), j.at("decoded").get<std::string>()) << where;
    ++n;
  }
  EXPECT_GT(n, 100u);
}

TEST(FixtureTokenizer, OffsetsOfTextCasesMatchTransformers) {
  for (const char* name : {"bert-mean", "bert-ce", "xlmr-ce"}) {
    const Fixture f = load_fixture(name);
    const auto tok = text::Tokenizer::from_file(f.dir / "tokenizer.json");
    text::EncodeOptions opt;
    opt.max_length = 64;
    for (const FixtureCase& c : f.cases) {
      const auto enc = c.pair ? tok.encode_pair(c.text, *c.pair, opt) : tok.encode(c.text, opt);
      EXPECT_EQ(enc.ids, c.input.ids) << name << ": " << c.text;
      EXPECT_EQ(enc.offsets, c.offsets) << name << ": " << c.text;
    }
  }
}

}  // namespace
}  // namespace il::test
