#include "text/pre_tokenizers.h"

#include "text/byte_level.h"
#include "text/metaspace.h"
#include "text/regex.h"
#include "text/scratch.h"

namespace il::text {
namespace {

using unicode::is_whitespace;

// The library's Whitespace pre-tokenizer, the regex `\w+|[^\w\s]+`: runs of word characters and
// runs of other non-space characters; whitespace is dropped.
class WhitespaceRuns final : public SplitCut {
 public:
  void cut(std::string_view t, std::vector<Range>& out) const override {
    enum Kind { kSpace, kWord, kOther };
    std::size_t i = 0;
    std::size_t run_begin = 0;
    Kind run = kSpace;
    while (i < t.size()) {
      const std::size_t at = i;
      const char32_t c = unicode::decode_utf8(t, i);
      const Kind k = unicode::is_onig_word(c) ? kWord : is_whitespace(c) ? kSpace : kOther;
      if (k != run) {
        if (run != kSpace) out.push_back({uint32_t(run_begin), uint32_t(at)});
        run = k;
        run_begin = at;
      }
    }
    if (run != kSpace) out.push_back({uint32_t(run_begin), uint32_t(t.size())});
  }
};

// Split: cuts on a pattern (a string found literally, or a regex); `invert` makes the text
// between the matches the delimiters instead.
class PatternCut final : public SplitCut {
 public:
  explicit PatternCut(const JsonRef& j)
      : regex_(pattern_from_json(j["pattern"])),
        behavior_(parse_split_behavior(j["behavior"])),
        invert_(j["invert"].as_bool()) {}

  void cut(std::string_view text, std::vector<Range>& out) const override {
    struct Invert final : PieceSink {
      PieceSink& to;
      explicit Invert(PieceSink& t) : to(t) {}
      void add(uint32_t begin, uint32_t end, bool is_match) override {
        to.add(begin, end, !is_match);
      }
    };
    PieceFolder fold(behavior_, out);
    if (invert_) {
      Invert inverted(fold);
      regex_.find_matches(text, inverted);
    } else {
      regex_.find_matches(text, fold);
    }
    fold.finish();
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

}  // namespace

void SplitWalkScratch::release_large() {
  for (Level& l : levels) {
    release_if_large(l.ranges);
    release_if_large(l.text);
    release_if_large(l.align);
  }
}

void PreTokenizer::add(std::unique_ptr<SplitCut> step) {
  steps_.push_back({std::move(step), nullptr});
}

void PreTokenizer::add(std::unique_ptr<SplitRewrite> step) {
  steps_.push_back({nullptr, std::move(step)});
}

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

void add_pre_tokenizer_steps(const JsonRef& j, PreTokenizer& out) {
  const std::string t = j.type({"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation",
                                "Digits", "ByteLevel", "Split", "Metaspace", "Sequence"});
  if (t == "BertPreTokenizer") {
    out.add(char_cut(is_whitespace, SplitBehavior::kRemoved));
    out.add(char_cut(unicode::is_bert_punctuation, SplitBehavior::kIsolated));
  } else if (t == "ByteLevel") {
    byte_level::add_pre_tokenizer_steps(j, out);
  } else if (t == "Split") {
    out.add(std::make_unique<PatternCut>(j));
  } else if (t == "Metaspace") {
    add_metaspace_steps(j, out);
  } else if (t == "Whitespace") {
    out.add(std::make_unique<WhitespaceRuns>());
  } else if (t == "WhitespaceSplit") {
    out.add(char_cut(is_whitespace, SplitBehavior::kRemoved));
  } else if (t == "Punctuation") {
    const SplitBehavior b =
        j.find("behavior") ? parse_split_behavior(j["behavior"]) : SplitBehavior::kIsolated;
    out.add(char_cut(unicode::is_bert_punctuation, b));
  } else if (t == "Digits") {
    const bool individual = j.get_bool("individual_digits", false);
    out.add(char_cut(unicode::is_numeric,
                     individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous));
  } else {
    const JsonRef list = j["pretokenizers"];
    for (std::size_t i = 0; i < list.size(); ++i) add_pre_tokenizer_steps(list.at(i), out);
  }
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonRef& j) {
  auto p = std::make_unique<PreTokenizer>();
  add_pre_tokenizer_steps(j, *p);
  // A walk recurses once per step; real files have a handful.
  if (p->steps() > kMaxPreTokenizerSteps) {
    j.fail("has " + std::to_string(p->steps()) + " steps, more than the " +
           std::to_string(kMaxPreTokenizerSteps) + " supported");
  }
  return p;
}

}  // namespace il::text
