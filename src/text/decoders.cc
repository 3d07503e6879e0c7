#include "text/decoders.h"

#include <string_view>

namespace il::text {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

class WordPieceDecoder final : public Decoder {
 public:
  explicit WordPieceDecoder(const JsonRef& j)
      : prefix_(j.get_string("prefix", "##")), cleanup_(j.get_bool("cleanup", true)) {}

  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(t.begin(), ' ');
        }
      }
      if (cleanup_) cleanup(t);
    }
  }

 private:
  // The library's clean-up of tokenization spaces, in its order.
  static void cleanup(std::string& s) {
    replace_all(s, " .", ".");
    replace_all(s, " ?", "?");
    replace_all(s, " !", "!");
    replace_all(s, " ,", ",");
    replace_all(s, " ' ", "'");
    replace_all(s, " n't", "n't");
    replace_all(s, " 'm", "'m");
    replace_all(s, " do not", " don't");
    replace_all(s, " 's", "'s");
    replace_all(s, " 've", "'ve");
    replace_all(s, " 're", "'re");
  }

  std::string prefix_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(const JsonRef& j) {
    const JsonRef list = j["decoders"];
    for (std::size_t i = 0; i < list.size(); ++i) parts_.push_back(make_decoder(list.at(i)));
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : parts_) d->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const JsonRef& j) {
  const std::string t = j.type({"WordPiece", "Sequence"});
  if (t == "WordPiece") return std::make_unique<WordPieceDecoder>(j);
  return std::make_unique<SequenceDecoder>(j);
}

}  // namespace il::text
