#include "runtime/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "core/error.h"

namespace il::runtime {

void check_sampling_options(const SamplingOptions& o) {
  check(std::isfinite(o.temperature) && o.temperature >= 0.0f, "temperature must be a finite number ≥ 0, got ",
        o.temperature);
  check(std::isfinite(o.top_p) && o.top_p > 0.0f && o.top_p <= 1.0f, "top_p must lie in (0, 1], got ", o.top_p);
  check(std::isfinite(o.repetition_penalty) && o.repetition_penalty > 0.0f,
        "repetition_penalty must be a positive number, got ", o.repetition_penalty);
  check(o.max_new_tokens >= 1, "max_new_tokens must be at least 1");
  check(o.no_repeat_ngram <= 64, "no_repeat_ngram must be at most 64, got ", o.no_repeat_ngram);
  for (const std::string& s : o.stop_strings) check(!s.empty(), "a stop string is empty");
}

TokenSampler::TokenSampler(const SamplingOptions& options) : o_(options), rng_(options.seed) {
  check_sampling_options(o_);
}

// transformers' RepetitionPenaltyLogitsProcessor: every distinct token of the history once.
void TokenSampler::penalize_repeats(std::span<float> logits, std::span<const int32_t> history) const {
  if (o_.repetition_penalty == 1.0f) return;
  std::unordered_set<int32_t> seen;
  for (int32_t t : history) {
    if (t < 0 || static_cast<std::size_t>(t) >= logits.size() || !seen.insert(t).second) continue;
    float& l = logits[static_cast<std::size_t>(t)];
    l = l < 0.0f ? l * o_.repetition_penalty : l / o_.repetition_penalty;
  }
}

bool TokenSampler::ngram_tail(std::span<const int32_t> history, std::span<const int32_t>& window,
                              std::span<const int32_t>& tail) const {
  const std::size_t n = o_.no_repeat_ngram;
  if (n == 0 || history.size() + 1 < n) return false;
  std::span<const int32_t> h = history;
  if (o_.ngram_window > 0 && h.size() > o_.ngram_window) h = h.subspan(h.size() - o_.ngram_window);
  if (h.size() + 1 < n) return false;
  // The n-1 tokens the next one would extend.
  const std::span<const int32_t> t = h.subspan(h.size() - (n - 1));
  for (int32_t id : t)
    if (whitelisted(id)) return false;
  window = h;
  tail = t;
  return true;
}

bool TokenSampler::whitelisted(int32_t t) const {
  return std::find(o_.ngram_whitelist.begin(), o_.ngram_whitelist.end(), t) != o_.ngram_whitelist.end();
}

// transformers' NoRepeatNGramLogitsProcessor, over the last ngram_window tokens when set: for
// each earlier n-gram whose first n-1 tokens equal the last n-1 of the history, its last token is
// banned, unless the n-gram holds a whitelisted token. A ban of the most likely token counts as
// one guarded pick.
void TokenSampler::ban_repeated_ngrams(std::span<float> logits, std::span<const int32_t> history) {
  std::span<const int32_t> h, tail;
  if (!ngram_tail(history, h, tail)) return;
  const std::size_t n = o_.no_repeat_ngram, len = h.size();
  float banned_best = -std::numeric_limits<float>::infinity();  // the largest logit banned
  for (std::size_t start = 0; start + n <= len; ++start) {
    if (!std::equal(tail.begin(), tail.end(), h.begin() + static_cast<std::ptrdiff_t>(start))) continue;
    const int32_t banned = h[start + n - 1];
    if (banned < 0 || static_cast<std::size_t>(banned) >= logits.size() || whitelisted(banned)) continue;
    float& l = logits[static_cast<std::size_t>(banned)];
    banned_best = std::max(banned_best, l);
    l = -std::numeric_limits<float>::infinity();
  }
  // Rare (a repeat about to happen), so the scan for the largest logit left costs nothing.
  if (banned_best > -std::numeric_limits<float>::infinity() &&
      banned_best >= *std::max_element(logits.begin(), logits.end()))
    ++guarded_;
}

int32_t TokenSampler::draw(std::span<float> logits) {
  // Temperature, then the top-k cut, then the top-p (nucleus) cut over the softmax, as
  // transformers' warpers do; the draw is over what is left.
  for (float& l : logits) l /= o_.temperature;
  scratch_.clear();
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (logits[i] > -std::numeric_limits<float>::infinity()) scratch_.emplace_back(logits[i], static_cast<int32_t>(i));
  check(!scratch_.empty(), "sampling: every token is banned");
  std::stable_sort(scratch_.begin(), scratch_.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (o_.top_k > 0 && scratch_.size() > o_.top_k) scratch_.resize(o_.top_k);
  const float mx = scratch_.front().first;
  double total = 0.0;
  for (auto& [l, id] : scratch_) total += std::exp(static_cast<double>(l - mx));
  if (o_.top_p < 1.0f) {
    // Keep the smallest prefix whose probability reaches top_p (at least one token).
    double cum = 0.0;
    std::size_t keep = 0;
    while (keep < scratch_.size()) {
      cum += std::exp(static_cast<double>(scratch_[keep].first - mx)) / total;
      ++keep;
      if (cum >= o_.top_p) break;
    }
    scratch_.resize(keep);
    total = 0.0;
    for (auto& [l, id] : scratch_) total += std::exp(static_cast<double>(l - mx));
  }
  const double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double acc = 0.0;
  for (const auto& [l, id] : scratch_) {
    acc += std::exp(static_cast<double>(l - mx));
    if (u < acc) return id;
  }
  return scratch_.back().second;
}

bool TokenSampler::picks_plain_argmax(std::span<const int32_t> history) const {
  if (o_.temperature != 0.0f || o_.repetition_penalty != 1.0f) return false;
  std::span<const int32_t> h, tail;
  if (!ngram_tail(history, h, tail)) return true;
  // Any earlier n-gram the tail would complete bans a token (whitelisted or out-of-range ones
  // too, to keep this check simple: the caller then reads the logits and pick() decides).
  const std::size_t n = o_.no_repeat_ngram;
  for (std::size_t start = 0; start + n <= h.size(); ++start)
    if (std::equal(tail.begin(), tail.end(), h.begin() + static_cast<std::ptrdiff_t>(start))) return false;
  return true;
}

int32_t TokenSampler::pick(std::span<float> logits, std::span<const int32_t> history) {
  penalize_repeats(logits, history);
  ban_repeated_ngrams(logits, history);
  if (o_.temperature == 0.0f) {
    // The first largest value, as torch.argmax returns it.
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best]) best = i;
    return static_cast<int32_t>(best);
  }
  return draw(logits);
}

}  // namespace il::runtime
