#include "text/models/model.h"

#include "text/models/bpe.h"
#include "text/models/unigram.h"
#include "text/models/wordpiece.h"

namespace il::text {

std::unique_ptr<Model> make_model(const JsonRef& j) {
  j.expect_object();
  // Files written by old library versions may leave the type out; WordPiece is then the model
  // with max_input_chars_per_word and no merges.
  if (!j.find("type")) {
    if (j.find("max_input_chars_per_word") && !j.find("merges")) {
      return std::make_unique<WordPiece>(j);
    }
    // ... and Unigram the one whose vocab is a list of [piece, score] pairs.
    if (const auto vocab = j.find("vocab"); vocab && vocab->value().is_array()) {
      return std::make_unique<Unigram>(j);
    }
    // ... and BPE the one with merges.
    if (j.find("merges")) return std::make_unique<Bpe>(j);
    j["type"];  // reports the missing field
  }
  const std::string t = j.type({"WordPiece", "BPE", "Unigram"});
  if (t == "BPE") return std::make_unique<Bpe>(j);
  if (t == "Unigram") return std::make_unique<Unigram>(j);
  return std::make_unique<WordPiece>(j);
}

}  // namespace il::text
