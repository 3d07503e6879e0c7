// SigLIP's tokenizer from spiece.model (text/siglip_tokenizer.h) against transformers 5.17's
// SiglipTokenizer over sentencepiece 0.2.2 on the fixture's model (tests/fixtures/
// siglip-spm-tokenizer, tools/oracle/make_siglip_spm_fixture.py): every case's ids, padded to 64
// as SiglipProcessor feeds the text tower and unpadded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "text/siglip_tokenizer.h"

namespace il::text {
namespace {

const std::filesystem::path kFolder = std::filesystem::path(IL_TEXT_SOURCE_DIR) / "tests/fixtures/siglip-spm-tokenizer";

TEST(SiglipSpmTokenizer, GivesTransformersIds) {
  const SiglipSpmTokenizer t = SiglipSpmTokenizer::load(kFolder);
  const nlohmann::json e = nlohmann::json::parse(std::ifstream(kFolder / "expected.json"));
  EXPECT_EQ(t.max_length(), e.at("max_length").get<std::size_t>());
  EXPECT_EQ(t.vocab_size(), e.at("vocab_size").get<std::size_t>());
  std::size_t wrong = 0;
  for (const auto& c : e.at("cases")) {
    const std::string text = c.at("text");
    const auto want = c.at("unpadded").get<std::vector<int32_t>>();
    const auto got = t.encode(text);
    if (got != want) {
      ++wrong;
      ADD_FAILURE() << "text " << nlohmann::json(text).dump() << "\n  want " << nlohmann::json(want).dump()
                    << "\n  got  " << nlohmann::json(got).dump() << "\n  pieces " << c.at("pieces").dump();
    }
    EXPECT_EQ(t.encode_padded(text), c.at("input_ids").get<std::vector<int32_t>>()) << nlohmann::json(text).dump();
  }
  std::printf("[siglip spm] %zu of %zu cases differ\n", wrong, e.at("cases").size());
}

// Truncation as transformers cuts (checked against the padded cases above for the right side):
// from the start with truncation_side="left", and without "</s>" (add_special_tokens=False).
TEST(SiglipSpmTokenizer, TruncatesFromEitherSideAroundTheEos) {
  const SiglipSpmTokenizer t = SiglipSpmTokenizer::load(kFolder);
  const std::string text = "one two three four five six seven eight nine ten";
  const std::vector<int32_t> all = t.encode(text);
  ASSERT_GT(all.size(), 6u);
  ASSERT_EQ(all.back(), t.eos_id());
  const std::vector<int32_t> body(all.begin(), all.end() - 1);
  EXPECT_EQ(t.encode(text, false), body);
  EXPECT_EQ(t.encode_truncated(text, all.size()), all) << "a text that fits is not cut";
  std::vector<int32_t> right(body.begin(), body.begin() + 4);
  right.push_back(t.eos_id());
  EXPECT_EQ(t.encode_truncated(text, 5), right);
  std::vector<int32_t> left(body.end() - 4, body.end());
  left.push_back(t.eos_id());
  EXPECT_EQ(t.encode_truncated(text, 5, true, true), left);
  EXPECT_EQ(t.encode_truncated(text, 5, false), std::vector<int32_t>(body.begin(), body.begin() + 5));
  EXPECT_EQ(t.encode_truncated(text, 1), std::vector<int32_t>{t.eos_id()});
  EXPECT_THROW(t.encode_truncated(text, 0), std::exception);
  // A text ending with "</s>" keeps it once, cut or not.
  EXPECT_EQ(t.encode("a cat </s>").back(), t.eos_id());
  EXPECT_NE(t.encode("a cat </s>").end()[-2], t.eos_id());
  EXPECT_EQ(t.piece(t.eos_id()), "</s>");
  EXPECT_EQ(t.piece(-1), "");
  EXPECT_TRUE(t.is_special(t.pad_id()));
}

TEST(PythonLower, FullMappingsAndFinalSigma) {
  EXPECT_EQ(python_lower("ÀÉÎ ΣΊΣΥΦΟΣ ΟΔΟΣ. Σ AΣb"), "àéî σίσυφος οδος. σ aσb");
  EXPECT_EQ(python_lower("\xC4\xB0stanbul"), "i\xCC\x87stanbul");  // U+0130: i + U+0307
  EXPECT_EQ(python_lower("ǅemal"), "ǆemal");
  EXPECT_TRUE(is_python_space(0x3000) && is_python_space(0x1C) && is_python_space(0x85));
  EXPECT_FALSE(is_python_space(0x200B) || is_python_space(0x2581) || is_python_space(0xFEFF));
}

}  // namespace
}  // namespace il::text
