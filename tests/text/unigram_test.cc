// The Unigram model: Viterbi segmentation, unknown characters (fused, byte fallback), lookups,
// and the load errors that name the field.
#include <gtest/gtest.h>

#include "sentencepiece_test_util.h"

namespace il::text {
namespace {

using namespace spm_testing;

// The library's own documentation example.
json abcd_doc() {
  return unigram_doc({{"<unk>", 0.0}, {"a", 0.0}, {"b", 0.0}, {"c", 0.0}, {"d", 0.0},
                      {"cd", 1.0}, {"ab", 2.0}, {"abc", 5.0}, {"abcd", 10.0}});
}

TEST(Unigram, BestSegmentationAndFusedUnknowns) {
  const Tokenizer t = load(abcd_doc());
  const Encoding e = t.encode("abcdacdxx");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"abcd", "a", "cd", "<unk>"}));
  // Consecutive unknown characters become one token over all of them.
  EXPECT_EQ(e.offsets, (Offsets{{0, 4}, {4, 5}, {5, 7}, {7, 9}}));
  EXPECT_EQ(t.model_type(), "Unigram");
  EXPECT_EQ(t.vocab_size(), 9u);
  EXPECT_EQ(t.encode("").ids.size(), 0u);
}

TEST(Unigram, UnknownCharactersAreWholeCharacters) {
  const Tokenizer t = load(abcd_doc());
  // é (2 bytes) and 🤗 (4 bytes) fuse with each other, never split inside a character.
  const Encoding e = t.encode("aé🤗b");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 7}, {7, 8}}));
}

TEST(Unigram, TiesKeepTheEarlierLongerPiece) {
  // "ab" scores exactly a + b: the path found first (the piece from position 0) stays.
  const Tokenizer t = load(unigram_doc({{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"ab", -2.0}}));
  EXPECT_EQ(tokens_of(t, t.encode("ab")), (std::vector<std::string>{"ab"}));
  const Tokenizer u = load(unigram_doc({{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"ab", -2.5}}));
  EXPECT_EQ(tokens_of(u, u.encode("ab")), (std::vector<std::string>{"a", "b"}));
}

TEST(Unigram, ByteFallbackSpellsUnknownTextInBytes) {
  std::vector<std::pair<std::string, double>> pieces = {{"<unk>", 0.0}, {"a", -1.0}};
  for (const char* b : {"<0xC3>", "<0xA9>", "<0x78>"}) pieces.emplace_back(b, -5.0);
  json doc = unigram_doc(pieces, 0, true);
  const Tokenizer t = load(doc);
  // "éx" is unknown as a whole: its three bytes, each spanning the whole unknown text.
  const Encoding e = t.encode("aéx");
  EXPECT_EQ(tokens_of(t, e), (std::vector<std::string>{"a", "<0xC3>", "<0xA9>", "<0x78>"}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 4}, {1, 4}, {1, 4}}));
  // A byte without its piece: the whole unknown text is the unknown token.
  EXPECT_EQ(tokens_of(t, t.encode("ay")), (std::vector<std::string>{"a", "<unk>"}));
  // Without byte_fallback the pieces are never used for unknowns.
  doc["model"]["byte_fallback"] = false;
  const Tokenizer plain = load(doc);
  EXPECT_EQ(tokens_of(plain, plain.encode("aéx")), (std::vector<std::string>{"a", "<unk>"}));
}

TEST(Unigram, TheUnknownPieceTypedInTheTextFusesWithUnknowns) {
  // "<unk>" in the text matches the unknown piece itself; it has the unknown id, so it fuses
  // with the unknown character before it, as in the library (which fuses by id).
  const Tokenizer t = load(unigram_doc({{"<unk>", 0.0}, {"a", -1.0}}));
  const Encoding e = t.encode("a\u00e9<unk>a");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 0, 1}));
  EXPECT_EQ(e.offsets, (Offsets{{0, 1}, {1, 8}, {8, 9}}));
}

TEST(Unigram, APieceOfAMegabyteLoads) {
  // The vocabulary trie is as deep as its longest piece; building it recursed once per byte and
  // overflowed the stack (found by fuzz/tokenizer_json_fuzzer with a 30 kB piece under ASan).
  const std::string long_piece(std::size_t{1} << 20, 'a');
  const Tokenizer t = load(unigram_doc({{"<unk>", 0.0}, {"a", -1.0}, {long_piece, -2.0}}));
  EXPECT_EQ(t.token_to_id(long_piece), 2);
  EXPECT_EQ(t.id_to_token(2), long_piece);
  // (Encoding that text walks the piece from every position: Viterbi costs the text's length
  // times the longest piece, as in the library, so a short one here.)
  EXPECT_EQ(t.encode("aa").ids, (std::vector<int32_t>{1, 1}));
}

TEST(Unigram, DuplicatePiecesMatchTheirLastId) {
  const Tokenizer t = load(unigram_doc({{"<unk>", 0.0}, {"a", -1.0}, {"a", -2.0}}));
  EXPECT_EQ(t.encode("a").ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(t.token_to_id("a"), 2);
  EXPECT_EQ(t.id_to_token(1), "a");
  EXPECT_EQ(t.vocab_size(), 3u);
}

TEST(Unigram, WithoutUnkIdUnknownTextIsRefused) {
  json doc = unigram_doc({{"a", -1.0}, {"b", -1.0}}, nullptr);
  const Tokenizer t = load(doc);
  EXPECT_EQ(t.encode("ab").ids, (std::vector<int32_t>{0, 1}));
  try {
    t.encode("abc");
    FAIL() << "an unknown character without unk_id must be refused";
  } catch (const il::Error& e) {
    EXPECT_STREQ(e.what(), "Unigram: the character U+0063 is not in the vocabulary and the model "
                           "has no unk_id");
  }
  // An empty vocabulary loads without unk_id (and refuses any text).
  EXPECT_EQ(load_error(unigram_doc({}, nullptr)), "(no error)");
}

TEST(Unigram, ModelWithoutTypeIsUnigramByItsVocabList) {
  json doc = abcd_doc();
  doc["model"].erase("type");
  EXPECT_EQ(load(doc).model_type(), "Unigram");
}

TEST(Unigram, LoadErrorsNameTheField) {
  json doc = abcd_doc();
  doc["model"]["unk_id"] = 9;
  EXPECT_EQ(load_error(doc),
            "tokenizer.json: model.unk_id is 9, not an index into the 9 pieces of the vocabulary");
  doc["model"]["unk_id"] = -1;
  EXPECT_NE(load_error(doc).find("model.unk_id is -1"), std::string::npos) << load_error(doc);
  doc["model"]["unk_id"] = "0";
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.unk_id must be an integer, not a string");

  doc = abcd_doc();
  doc["model"]["vocab"][2][1] = "high";
  EXPECT_EQ(load_error(doc),
            "tokenizer.json: model.vocab[2][1] must be a number (the piece's score)");
  doc["model"]["vocab"][2] = json::array({"b", 1.0, 2.0});
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.vocab[2] must be a [piece, score] pair");
  doc["model"]["vocab"][2] = json::array({7, 1.0});
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.vocab[2][0] must be a string, not a number");
  doc["model"]["vocab"] = json::object();
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.vocab must be an array, not an object");
  doc["model"]["vocab"] = json::array();
  EXPECT_EQ(load_error(doc),
            "tokenizer.json: model.vocab is empty, but unk_id needs at least the unknown piece");
  doc["model"].erase("vocab");
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.vocab is missing");

  doc = abcd_doc();
  doc["model"]["byte_fallback"] = 1;
  EXPECT_EQ(load_error(doc), "tokenizer.json: model.byte_fallback must be a boolean, not a number");
  doc = abcd_doc();
  doc["model"]["type"] = "Unigrams";
  EXPECT_NE(load_error(doc).find("model.type \"Unigrams\" is not supported"), std::string::npos);
  // Fields the library does not know it ignores, and so do we.
  doc = abcd_doc();
  doc["model"]["min_score"] = -3;
  EXPECT_EQ(load_error(doc), "(no error)");
}

}  // namespace
}  // namespace il::text
