#include "text/pre_tokenizers.h"

#include <vector>

#include "text/byte_level.h"
#include "text/metaspace.h"
#include "text/regex.h"

namespace il::text {
namespace {

using unicode::is_whitespace;

class BertPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split_on_chars(is_whitespace, SplitBehavior::kRemoved);
    s.split_on_chars(unicode::is_bert_punctuation, SplitBehavior::kIsolated);
  }
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split_on_chars(is_whitespace, SplitBehavior::kRemoved);
  }
};

// The library's regex `\w+|[^\w\s]+`: runs of word characters and runs of other non-space
// characters; whitespace is dropped.
class Whitespace final : public PreTokenizer {
 public:
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split_with([](std::string_view t, std::vector<std::pair<uint32_t, uint32_t>>& out) {
      enum Kind { kSpace, kWord, kOther };
      std::size_t i = 0;
      std::size_t run_begin = 0;
      Kind run = kSpace;
      while (i < t.size()) {
        const std::size_t at = i;
        const char32_t c = unicode::decode_utf8(t, i);
        const Kind k = unicode::is_onig_word(c) ? kWord : is_whitespace(c) ? kSpace : kOther;
        if (k != run) {
          if (run != kSpace) out.emplace_back(uint32_t(run_begin), uint32_t(at));
          run = k;
          run_begin = at;
        }
      }
      if (run != kSpace) out.emplace_back(uint32_t(run_begin), uint32_t(t.size()));
    });
  }
};

class Punctuation final : public PreTokenizer {
 public:
  explicit Punctuation(const JsonRef& j)
      : behavior_(j.find("behavior") ? parse_split_behavior(j["behavior"])
                                     : SplitBehavior::kIsolated) {}
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split_on_chars(unicode::is_bert_punctuation, behavior_);
  }

 private:
  SplitBehavior behavior_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(const JsonRef& j) : individual_(j.get_bool("individual_digits", false)) {}
  void pre_tokenize(PreTokenizedString& s) const override {
    s.split_on_chars(unicode::is_numeric,
                     individual_ ? SplitBehavior::kIsolated : SplitBehavior::kContiguous);
  }

 private:
  bool individual_;
};

// Splits on a pattern (a string found literally, or a regex); `invert` makes the text between
// the matches the delimiters instead.
class Split final : public PreTokenizer {
 public:
  explicit Split(const JsonRef& j)
      : regex_(pattern_from_json(j["pattern"])),
        behavior_(parse_split_behavior(j["behavior"])),
        invert_(j["invert"].as_bool()) {}

  void pre_tokenize(PreTokenizedString& s) const override {
    s.split_on_pattern(
        [this](std::string_view text, std::vector<PatternPiece>& out) {
          const std::size_t first = out.size();
          regex_.find_matches(text, out);
          if (invert_) {
            for (std::size_t i = first; i < out.size(); ++i) out[i].is_match = !out[i].is_match;
          }
        },
        behavior_);
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(const JsonRef& j) {
    const JsonRef list = j["pretokenizers"];
    for (std::size_t i = 0; i < list.size(); ++i) parts_.push_back(make_pre_tokenizer(list.at(i)));
  }
  void pre_tokenize(PreTokenizedString& s) const override {
    for (const auto& p : parts_) p->pre_tokenize(s);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

SplitBehavior parse_split_behavior(const JsonRef& j) {
  const std::string b = j.as_string();
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  j.fail("\"" + b + "\" is not supported (supported: Removed, Isolated, MergedWithPrevious, " +
         "MergedWithNext, Contiguous)");
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonRef& j) {
  const std::string t = j.type({"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation",
                                "Digits", "ByteLevel", "Split", "Metaspace", "Sequence"});
  if (t == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (t == "ByteLevel") return byte_level::make_pre_tokenizer(j);
  if (t == "Split") return std::make_unique<Split>(j);
  if (t == "Metaspace") return make_metaspace_pre_tokenizer(j);
  if (t == "Whitespace") return std::make_unique<Whitespace>();
  if (t == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
  if (t == "Punctuation") return std::make_unique<Punctuation>(j);
  if (t == "Digits") return std::make_unique<Digits>(j);
  return std::make_unique<SequencePreTokenizer>(j);
}

}  // namespace il::text
