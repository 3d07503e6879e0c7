// SigLIP's tokenizer from spiece.model (text/siglip_tokenizer.h) against transformers 5.17's
// SiglipTokenizer over sentencepiece 0.2.2 on the fixture's model (tests/fixtures/
// siglip-spm-tokenizer, tools/oracle/make_siglip_spm_fixture.py): every case's ids, padded to 64
// as SiglipProcessor feeds the text tower and unpadded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

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

// Text that is not UTF-8 is refused, whatever the bytes (a lead byte at the very end included),
// before any code point is read.
TEST(SiglipSpmTokenizer, InvalidUtf8IsRefused) {
  const SiglipSpmTokenizer t = SiglipSpmTokenizer::load(kFolder);
  for (const std::string& bad : {std::string("a cat \xF0"), std::string("\xC3"), std::string("x\xFFy"),
                                std::string("\xED\xA0\x80 surrogate"), std::string("ok </s>\xE2\x82")}) {
    EXPECT_THROW(t.encode(bad), std::exception) << bad.size() << " bytes";
    EXPECT_THROW(t.encode_truncated(bad, 4), std::exception);
  }
}

// model_max_length: transformers' 1e30 placeholder ("no limit") loads; nonsense is refused
// naming the file and field.
TEST(SiglipSpmTokenizer, ModelMaxLengthPlaceholderLoads) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("il_siglip_spm_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kFolder / "spiece.model", dir / "spiece.model",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json") << R"({"model_max_length": 1000000000000000019884624838656})";
  EXPECT_EQ(SiglipSpmTokenizer::load(dir).max_length(), 1000000u);
  std::ofstream(dir / "tokenizer_config.json") << R"({"model_max_length": "long"})";
  try {
    SiglipSpmTokenizer::load(dir);
    ADD_FAILURE() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model_max_length"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
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
