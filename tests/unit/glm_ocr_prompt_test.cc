// GLM-OCR's prompt and M-RoPE positions. The positions are compared with what transformers 5.17's
// GlmOcrModel.get_rope_index computed on a tiny randomly initialised GlmOcrModel
// (tests/fixtures/glm-ocr/rope_expected.json, tools/oracle/make_glm_preprocess_fixtures.py), for one
// image with a non-square grid, two images of different grids with text between and after them,
// an image first, text only, and the real OCR prompt of a 1000x1400 page (grid [1, 100, 72]);
// the mm_token_type_ids with what Glm46VProcessor.create_mm_token_type_ids gave for the same ids.
// Exact integers: no tolerance.
//
// The tokenizer here is a tiny stand-in whose ids for the template's special tokens, "\n" and
// "Text Recognition:" are GLM-OCR's (59248 [gMASK], 59250 <sop>, 59253 <|user|>, 59254
// <|assistant|>, 59256/59280/59257 image markers, 10 "\n", 3649 7404 49600 58 for the task), so
// the built prompt can be compared id for id with the fixture's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "../image/sha256.h"
#include "core/error.h"
#include "models/glm_ocr_prompt.h"
#include "text/tokenizer.h"

namespace il::models {
namespace {

nlohmann::json rope_fixture() {
  const char* root = std::getenv("IL_SOURCE_DIR");
  const std::filesystem::path source_dir(root ? root : IL_UNIT_SOURCE_DIR);
  std::ifstream in(source_dir / "tests/fixtures/glm-ocr/rope_expected.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

text::Tokenizer tiny_glm_tokenizer(bool with_image_token = true) {
  nlohmann::json added = nlohmann::json::array();
  auto add = [&](int id, const std::string& content, bool special) {
    added.push_back({{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", special}});
  };
  add(59248, "[gMASK]", true);
  add(59250, "<sop>", true);
  add(59253, "<|user|>", true);
  add(59254, "<|assistant|>", true);
  add(59256, "<|begin_of_image|>", true);
  add(59257, "<|end_of_image|>", true);
  if (with_image_token) add(59280, "<|image|>", true);
  // the real tokenizer's pieces of "Text Recognition:"
  add(3649, "Text", false);
  add(7404, " Recogn", false);
  add(49600, "ition", false);
  add(58, ":", false);
  // Added tokens are in the model's vocabulary too, with the same ids (as in GLM's tokenizer.json).
  nlohmann::json vocab = {{"\n", 10}};
  for (const auto& a : added) vocab[a["content"].get<std::string>()] = a["id"];
  int next = 200;
  for (char ch : std::string("TableFormulaRecognition :")) {
    const std::string s(1, ch);
    if (!vocab.contains(s)) vocab[s] = next++;
  }
  const nlohmann::json j = {
      {"version", "1.0"},       {"truncation", nullptr}, {"padding", nullptr},       {"added_tokens", added},
      {"normalizer", nullptr},  {"pre_tokenizer", nullptr}, {"post_processor", nullptr}, {"decoder", nullptr},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
        {"merges", nlohmann::json::array()}}}};
  return text::Tokenizer::from_json_string(j.dump(), "tiny-glm/tokenizer.json");
}

std::vector<std::array<int, 3>> grids_of(const nlohmann::json& c) {
  std::vector<std::array<int, 3>> grids;
  if (c["grids"].is_null()) return grids;
  for (const auto& g : c["grids"]) grids.push_back({g[0].get<int>(), g[1].get<int>(), g[2].get<int>()});
  return grids;
}

TEST(GlmOcrPrompt, MatchesTheProcessorsIdsAndTokenTypes) {
  const auto fixture = rope_fixture();
  const text::Tokenizer tok = tiny_glm_tokenizer();
  const auto special = GlmOcrSpecialTokens::from_tokenizer(tok, "tiny");
  EXPECT_EQ(special.image, 59280);
  EXPECT_EQ(special.gmask, 59248);
  for (const char* name : {"one_image_6x10", "ocr_page_100x72"}) {
    const auto& c = fixture["cases"][name];
    const auto grids = grids_of(c);
    ASSERT_EQ(grids.size(), 1u);
    const GlmOcrPrompt p = build_glm_ocr_prompt(tok, special, grids[0], 2, glm_ocr_task_prompt(GlmOcrTask::text));
    EXPECT_EQ(p.input_ids, c["input_ids"].get<std::vector<std::int32_t>>()) << name;
    const auto mm = c["mm_token_type_ids"].get<std::vector<int>>();
    ASSERT_EQ(p.mm_token_type_ids.size(), mm.size()) << name;
    for (std::size_t i = 0; i < mm.size(); ++i) EXPECT_EQ(p.mm_token_type_ids[i], mm[i]) << name << " @" << i;
    EXPECT_EQ(p.image_offset, 5u) << name;
    EXPECT_EQ(p.image_tokens, static_cast<std::size_t>(grids[0][1] * grids[0][2] / 4)) << name;
  }
}

TEST(GlmOcrPrompt, TasksAndTheirNames) {
  EXPECT_EQ(glm_ocr_task_prompt(GlmOcrTask::table), "Table Recognition:");
  EXPECT_EQ(glm_ocr_task_prompt(GlmOcrTask::formula), "Formula Recognition:");
  EXPECT_EQ(parse_glm_ocr_task("formula"), GlmOcrTask::formula);
  EXPECT_EQ(parse_glm_ocr_task("text"), GlmOcrTask::text);
  EXPECT_FALSE(parse_glm_ocr_task("Text").has_value());
  const text::Tokenizer tok = tiny_glm_tokenizer();
  const auto special = GlmOcrSpecialTokens::from_tokenizer(tok, "tiny");
  const GlmOcrPrompt table = build_glm_ocr_prompt(tok, special, {1, 4, 6}, 2, glm_ocr_task_prompt(GlmOcrTask::table));
  // [gMASK]<sop><|user|>\n<|begin_of_image|> 6x<|image|> <|end_of_image|> task... <|assistant|>\n
  ASSERT_GE(table.input_ids.size(), 14u);
  EXPECT_EQ(std::vector<std::int32_t>(table.input_ids.begin(), table.input_ids.begin() + 5),
            (std::vector<std::int32_t>{59248, 59250, 59253, 10, 59256}));
  EXPECT_EQ(table.input_ids[11], 59257);
  EXPECT_EQ(table.input_ids[table.input_ids.size() - 2], 59254);
  EXPECT_EQ(table.input_ids.back(), 10);
  const auto text_ids = tok.encode("Table Recognition:", {.add_special_tokens = false}).ids;
  EXPECT_EQ(std::vector<std::int32_t>(table.input_ids.begin() + 12, table.input_ids.end() - 2), text_ids);
}

TEST(GlmOcrPrompt, RefusesBadInputs) {
  const text::Tokenizer tok = tiny_glm_tokenizer();
  const auto special = GlmOcrSpecialTokens::from_tokenizer(tok, "tiny");
  EXPECT_THROW(build_glm_ocr_prompt(tok, special, {1, 5, 6}, 2, "x"), Error);   // odd grid side
  EXPECT_THROW(build_glm_ocr_prompt(tok, special, {1, 0, 6}, 2, "x"), Error);   // empty
  EXPECT_THROW(build_glm_ocr_prompt(tok, special, {1, 4, 6}, 2, "a<|image|>"), Error);
  try {
    GlmOcrSpecialTokens::from_tokenizer(tiny_glm_tokenizer(false), "dir/tokenizer.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dir/tokenizer.json: the tokenizer has no token <|image|>"), std::string::npos)
        << e.what();
  }
}

TEST(GlmOcrRopeIndex, MatchesTransformersGetRopeIndex) {
  const auto fixture = rope_fixture();
  ASSERT_EQ(fixture["info"]["transformers"], "5.17.0");
  int checked = 0;
  for (const auto& [name, c] : fixture["cases"].items()) {
    ASSERT_FALSE(c.contains("error")) << name << ": " << c["error"];
    const auto mm32 = c["mm_token_type_ids"].get<std::vector<int>>();
    const std::vector<std::uint8_t> mm(mm32.begin(), mm32.end());
    const auto grids = grids_of(c);
    const MropePositions pos = glm_ocr_rope_index(mm, grids, 2);
    ASSERT_EQ(pos.size(), mm.size()) << name;
    EXPECT_EQ(pos.delta, c["delta"].get<int>()) << name;
    if (c.contains("positions")) {
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(pos.axes[a], c["positions"][a].get<std::vector<std::int32_t>>()) << name << " axis " << a;
      }
    } else {
      std::vector<std::int64_t> flat;  // the generator's int64 little-endian (3, L) array
      for (int a = 0; a < 3; ++a) flat.insert(flat.end(), pos.axes[a].begin(), pos.axes[a].end());
      EXPECT_EQ(image::test::sha256_hex(std::span(reinterpret_cast<const std::uint8_t*>(flat.data()),
                                                  flat.size() * sizeof(std::int64_t))),
                c["positions_sha256"].get<std::string>())
          << name;
      for (int a = 0; a < 3; ++a) {
        const auto head = c["positions_head"][a].get<std::vector<std::int32_t>>();
        const auto tail = c["positions_tail"][a].get<std::vector<std::int32_t>>();
        EXPECT_EQ(std::vector<std::int32_t>(pos.axes[a].begin(), pos.axes[a].begin() + 12), head) << name;
        EXPECT_EQ(std::vector<std::int32_t>(pos.axes[a].end() - 12, pos.axes[a].end()), tail) << name;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(GlmOcrRopeIndex, RefusesInconsistentInputs) {
  const std::vector<std::uint8_t> one_run{0, 1, 1, 1, 1, 0};  // 4 image tokens
  const std::array<int, 3> g24{1, 2, 4};
  EXPECT_NO_THROW(glm_ocr_rope_index(one_run, std::vector{std::array<int, 3>{1, 2, 8}}, 2));
  EXPECT_THROW(glm_ocr_rope_index(one_run, std::vector{std::array<int, 3>{1, 4, 8}}, 2), Error);  // grid needs 8
  EXPECT_THROW(glm_ocr_rope_index(one_run, std::vector<std::array<int, 3>>{}, 2), Error);  // no grid
  EXPECT_THROW(glm_ocr_rope_index(one_run, std::vector{std::array<int, 3>{1, 2, 8}, g24}, 2), Error);  // one too many
  EXPECT_THROW(glm_ocr_rope_index(one_run, std::vector{std::array<int, 3>{1, 3, 8}}, 2), Error);       // odd side
  const std::vector<std::uint8_t> video{0, 2, 2, 0};
  EXPECT_THROW(glm_ocr_rope_index(video, std::vector{g24}, 2), Error);
  const std::vector<std::uint8_t> text{0, 0, 0};
  const MropePositions t = glm_ocr_rope_index(text, {}, 2);
  EXPECT_EQ(t.delta, 0);
  EXPECT_EQ(t.axes[2], (std::vector<std::int32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace il::models
