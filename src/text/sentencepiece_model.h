// A SentencePiece model file (`spiece.model`, `spm.model`, `tokenizer.model`): the protobuf
// message sentencepiece.ModelProto, read without the protobuf library. Only what encoding needs is
// kept: the pieces (string, score, type) in id order, the trainer's model type and special ids,
// and the normaliser's spec with its precompiled charsmap. Fields this reader does not know are
// skipped by wire type; absent fields take the .proto's defaults.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace il::text {

struct SentencePieceModel {
  enum class PieceType : int { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  struct Piece {
    std::string text;
    float score = 0.0f;
    PieceType type = PieceType::kNormal;
  };
  enum class ModelType : int { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

  std::vector<Piece> pieces;  // index = id
  // TrainerSpec.
  ModelType model_type = ModelType::kUnigram;
  int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  // NormalizerSpec.
  std::string normalizer_name;
  std::string precompiled_charsmap;  // empty: no mapping (identity)
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Throws il::Error naming `source` for anything that is not a well-formed ModelProto: a truncated
// field, a wrong wire type for a known field, no pieces, an empty piece, a piece type outside 1..6,
// a special id outside the pieces.
SentencePieceModel parse_sentencepiece_model(std::string_view bytes, const std::string& source);

}  // namespace il::text
