// Pre-tokenizers: the `pre_tokenizer` section of tokenizer.json, as the list of steps it applies
// to every split: cuts (a split into smaller ones) and rewrites (a split's text, with one
// alignment per new byte). The library applies each pre-tokenizer to every split of the
// sequence before the next; each step only looks at one split, so walking the splits depth
// first visits the same words in the same order while holding only the text of the sequence,
// the list of words the first cut made, and one split per later step, instead of every
// intermediate list and text. It also lets a truncated encode stop early.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_util.h"
#include "text/normalized_string.h"
#include "text/splits.h"

namespace il::text {

class SplitCut {
 public:
  virtual ~SplitCut() = default;
  // Appends the non-empty ranges of `text` (a non-empty split) the step keeps, in order.
  virtual void cut(std::string_view text, std::vector<Range>& out) const = 0;
};

class SplitRewrite {
 public:
  virtual ~SplitRewrite() = default;
  // Appends the new text of a non-empty split to `out` and, for every byte of it, the
  // alignment (source range in the sequence text) to `out_align`.
  virtual void rewrite(std::string_view text, std::span<const Alignment> align, std::string& out,
                       std::vector<Alignment>& out_align) const = 0;
};

// Cuts at the characters where is_delimiter(c) is true (see cut_on_chars).
template <typename Pred>
class CharCut final : public SplitCut {
 public:
  CharCut(Pred is_delimiter, SplitBehavior behavior)
      : is_delimiter_(is_delimiter), behavior_(behavior) {}
  void cut(std::string_view text, std::vector<Range>& out) const override {
    cut_on_chars(text, is_delimiter_, behavior_, out);
  }

 private:
  Pred is_delimiter_;
  SplitBehavior behavior_;
};

template <typename Pred>
std::unique_ptr<SplitCut> char_cut(Pred is_delimiter, SplitBehavior behavior) {
  return std::make_unique<CharCut<Pred>>(is_delimiter, behavior);
}

// Per-thread buffers of a walk, one level per step.
struct SplitWalkScratch {
  struct Level {
    std::vector<Range> ranges;
    std::string text;
    std::vector<Alignment> align;
  };
  std::vector<Level> levels;
  void release_large();
};

// The most steps a pre_tokenizer may have (a Sequence of splits and rewrites).
inline constexpr std::size_t kMaxPreTokenizerSteps = 256;

class PreTokenizer {
 public:
  void add(std::unique_ptr<SplitCut> step);
  void add(std::unique_ptr<SplitRewrite> step);
  std::size_t steps() const { return steps_.size(); }

  // Calls word(text, alignments) for every split the steps make of `text` (non-empty, with one
  // alignment per byte), in order or, with `backwards`, last first; stops when word returns
  // false. Returns false when it stopped.
  template <typename Word>
  bool walk(std::string_view text, std::span<const Alignment> align, bool backwards,
            SplitWalkScratch& scratch, Word&& word) const {
    if (scratch.levels.size() < steps_.size()) scratch.levels.resize(steps_.size());
    return walk_from(0, text, align, backwards, scratch, word);
  }

 private:
  struct Step {
    std::unique_ptr<SplitCut> cut;  // exactly one of the two
    std::unique_ptr<SplitRewrite> rewrite;
  };

  template <typename Word>
  bool walk_from(std::size_t k, std::string_view text, std::span<const Alignment> align,
                 bool backwards, SplitWalkScratch& scratch, Word& word) const {
    if (k == steps_.size()) return word(text, align);
    SplitWalkScratch::Level& level = scratch.levels[k];
    const Step& step = steps_[k];
    if (step.rewrite) {
      level.text.clear();
      level.align.clear();
      step.rewrite->rewrite(text, align, level.text, level.align);
      if (level.text.empty()) return true;
      return walk_from(k + 1, level.text, level.align, backwards, scratch, word);
    }
    level.ranges.clear();
    step.cut->cut(text, level.ranges);
    // The deeper levels only use their own buffers, so this level's ranges stay put.
    const std::size_t n = level.ranges.size();
    for (std::size_t i = 0; i < n; ++i) {
      const Range r = level.ranges[backwards ? n - 1 - i : i];
      if (!walk_from(k + 1, text.substr(r.begin, r.end - r.begin),
                     align.subspan(r.begin, r.end - r.begin), backwards, scratch, word)) {
        return false;
      }
    }
    return true;
  }

  std::vector<Step> steps_;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonRef& j);
// Appends the steps of the pre-tokenizer `j` describes.
void add_pre_tokenizer_steps(const JsonRef& j, PreTokenizer& out);

// The library's SplitDelimiterBehavior spelled as in tokenizer.json ("removed", "isolated", ...).
SplitBehavior parse_split_behavior(const JsonRef& j);

}  // namespace il::text
