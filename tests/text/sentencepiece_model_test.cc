// Reading SentencePiece model files (text/sentencepiece_model.h): the fixture's spiece.model
// (trained by sentencepiece 0.2.2 in SigLIP's layout) gives the pieces transformers' SiglipTokenizer
// maps its ids to, the special ids and the normaliser spec; malformed files are refused naming the
// problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/sentencepiece.h"
#include "text/sentencepiece_model.h"
#include "sentencepiece_test_util.h"

namespace il::text {
namespace {

const std::filesystem::path kFolder = std::filesystem::path(IL_TEXT_SOURCE_DIR) / "tests/fixtures/siglip-spm-tokenizer";

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

using Type = SentencePieceModel::PieceType;

TEST(SentencePieceModel, ReadsTheFixturesModel) {
  const SentencePieceModel m = parse_sentencepiece_model(file_bytes(kFolder / "spiece.model"), "spiece.model");
  const nlohmann::json e = nlohmann::json::parse(std::ifstream(kFolder / "expected.json"));
  ASSERT_EQ(m.pieces.size(), e.at("vocab_size").get<std::size_t>());
  EXPECT_EQ(m.pieces[0].text, "<pad>");
  EXPECT_EQ(m.pieces[0].type, Type::kControl);
  EXPECT_EQ(m.pieces[1].text, "</s>");
  EXPECT_EQ(m.pieces[1].type, Type::kControl);
  EXPECT_EQ(m.pieces[2].text, "<unk>");
  EXPECT_EQ(m.pieces[2].type, Type::kUnknown);
  EXPECT_EQ(m.unk_id, 2);
  EXPECT_EQ(m.eos_id, 1);
  EXPECT_EQ(m.pad_id, 0);
  EXPECT_EQ(m.bos_id, -1);  // stored as a ten-byte varint
  EXPECT_EQ(m.model_type, SentencePieceModel::ModelType::kUnigram);
  EXPECT_FALSE(m.byte_fallback);
  EXPECT_EQ(m.normalizer_name, "nmt_nfkc");
  EXPECT_GT(m.precompiled_charsmap.size(), 1000u);
  EXPECT_TRUE(m.add_dummy_prefix && m.remove_extra_whitespaces && m.escape_whitespaces);
  // Every piece transformers printed for a case sits at the id it gave (unknown pieces aside).
  std::size_t checked = 0;
  for (const auto& c : e.at("cases")) {
    const auto pieces = c.at("pieces").get<std::vector<std::string>>();
    const auto ids = c.at("unpadded").get<std::vector<int>>();
    if (pieces.size() + 1 != ids.size()) continue;  // the eos already in the text is not doubled
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (ids[i] == m.unk_id) continue;
      EXPECT_EQ(m.pieces.at(static_cast<std::size_t>(ids[i])).text, pieces[i]) << c.at("text");
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000u);
  for (const auto& p : m.pieces) EXPECT_TRUE(p.score <= 0.0f || p.type != Type::kNormal) << p.text;
}

// Protobuf pieces for hand-made files: a key, a varint, a length-delimited field.
std::string varint(uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string key(uint32_t field, int wire) { return varint((static_cast<uint64_t>(field) << 3) | wire); }
std::string number(uint32_t field, int64_t v) { return key(field, 0) + varint(static_cast<uint64_t>(v)); }
std::string message(uint32_t field, const std::string& body) { return key(field, 2) + varint(body.size()) + body; }
std::string piece(const std::string& text, int type = 1) { return message(1, message(1, text) + number(3, type)); }

TEST(SentencePieceModel, RefusesMalformedFiles) {
  const std::string good = file_bytes(kFolder / "spiece.model");
  const auto says = [](const std::string& bytes) {
    try {
      (void)parse_sentencepiece_model(bytes, "x/spiece.model");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // One piece, the special ids bos / eos off (-1: ten bytes on the wire), unk 0.
  const std::string specials = message(2, number(40, 0) + number(41, -1) + number(42, -1));
  const std::string minimal = piece("a") + specials;
  EXPECT_EQ(says(minimal), "accepted");
  EXPECT_EQ(parse_sentencepiece_model(minimal, "m").bos_id, -1);
  EXPECT_NE(says(good.substr(0, good.size() / 2)).find("x/spiece.model"), std::string::npos);
  EXPECT_NE(says("").find("without pieces"), std::string::npos);
  EXPECT_NE(says(piece("a") + std::string(1, '\0')).find("field number 0"), std::string::npos);
  EXPECT_NE(says(key(1, 5) + std::string(4, '\0')).find("wire type 5"), std::string::npos);  // pieces as fixed32
  EXPECT_NE(says(piece("a", 9) + specials).find("type 9"), std::string::npos);
  EXPECT_NE(says(piece("") + specials).find("piece 0 is empty"), std::string::npos);
  EXPECT_NE(says(piece("a") + message(2, number(40, 5) + number(41, -1) + number(42, -1))).find("special ids"),
            std::string::npos);
  EXPECT_NE(says(key(1, 2) + varint(127)).find("past its end"), std::string::npos);
  EXPECT_NE(says(piece("a") + specials + key(3, 2)).find("ends inside a number"), std::string::npos);
  EXPECT_NE(says(piece("a") + specials + key(7, 3)).find("wire type 3"), std::string::npos);  // a group
}

// The encoder over hand-made models: pieces 0 <unk> (unknown), then `rest`; unk id 0.
std::string model_of(const std::string& rest, const std::string& normalizer = "") {
  const std::string specials = message(2, number(40, 0) + number(41, -1) + number(42, -1));
  return piece("<unk>", 2) + rest + specials + (normalizer.empty() ? "" : message(3, normalizer));
}

std::string encoder_error(const std::string& bytes) {
  try {
    SentencePieceEncoder(parse_sentencepiece_model(bytes, "x/spiece.model"), "x/spiece.model");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

// The library refuses a model spelling two pieces the same within its normal pieces (normal,
// user-defined, unused) or within its reserved ones (control, unknown, byte): "is already defined".
// A control piece may share a normal piece's spelling; looking the spelling up gives the control one.
TEST(SentencePieceEncoder, RefusesTwoPiecesSpelledTheSame) {
  EXPECT_EQ(encoder_error(model_of(piece("a") + piece("b"))), "accepted");
  const std::string e = encoder_error(model_of(piece("a") + piece("b") + piece("a", 4)));
  EXPECT_NE(e.find("x/spiece.model: pieces 1 and 3 are both spelled \"a\""), std::string::npos) << e;
  const std::string r = encoder_error(model_of(piece("</s>", 3) + piece("b") + piece("</s>", 3)));
  EXPECT_NE(r.find("pieces 1 and 3 are both spelled \"</s>\""), std::string::npos) << r;
  const std::string both = model_of(piece("a") + piece("a", 3));
  ASSERT_EQ(encoder_error(both), "accepted");
  const SentencePieceEncoder enc(parse_sentencepiece_model(both, "m"), "m");
  EXPECT_EQ(enc.piece_id("a"), 2);
}

// User-defined pieces are copied by the normaliser as they are, the longest one first, before
// the charsmap: with "ab" and "abc" user-defined and a charsmap upper-casing b and c, "abcbc"
// keeps "abc" and maps the rest.
TEST(SentencePieceEncoder, LongestUserDefinedPieceComesBeforeTheCharsmap) {
  const std::string map = spm_testing::charsmap({{"b", "B"}, {"c", "C"}});
  const std::string normalizer = message(1, "custom") + message(2, map);
  const std::string pieces = piece("ab", 4) + piece("abc", 4) + piece("\xE2\x96\x81") + piece("B") + piece("C");
  const SentencePieceEncoder both(parse_sentencepiece_model(model_of(pieces, normalizer), "m"), "m");
  EXPECT_EQ(both.normalize("abcbc"), "\xE2\x96\x81" "abcBC");
  const SentencePieceEncoder shorter(
      parse_sentencepiece_model(model_of(piece("ab", 4) + piece("\xE2\x96\x81") + piece("B") + piece("C"), normalizer), "m"),
      "m");
  EXPECT_EQ(shorter.normalize("abcbc"), "\xE2\x96\x81" "abCBC");
}

}  // namespace
}  // namespace il::text
