#include "runtime/batching.h"

#include <algorithm>

#include "core/error.h"

namespace il::runtime {

void validate_inputs(const std::vector<TokenInput>& inputs, const models::InputLimits& cfg,
                     std::size_t max_len) {
  check(!inputs.empty(), "no inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TokenInput& in = inputs[i];
    check(!in.ids.empty(), "input ", i, ": no tokens");
    check(in.ids.size() <= max_len, "input ", i, ": ", in.ids.size(),
          " tokens, the model accepts at most ", max_len);
    check(in.type_ids.empty() || in.type_ids.size() == in.ids.size(), "input ", i, ": ",
          in.type_ids.size(), " token_type_ids for ", in.ids.size(), " input_ids");
    check(in.keep.empty() || in.keep.size() == in.ids.size(), "input ", i, ": keep holds ", in.keep.size(),
          " entries for ", in.ids.size(), " input_ids");
    check(in.attended_tokens <= in.ids.size(), "input ", i, ": attended_tokens ", in.attended_tokens, " exceeds its ",
          in.ids.size(), " tokens");
    for (int32_t id : in.ids)
      check(id >= 0 && id < cfg.vocab, "input ", i, ": token id ", id,
            " is outside the vocabulary of ", cfg.vocab);
    for (int32_t t : in.type_ids)
      check(t >= 0 && (t < cfg.type_vocab || (cfg.type_vocab == 0 && t == 0)), "input ", i,
            ": token type id ", t, " is outside the model's ", cfg.type_vocab, " segment types");
  }
}

std::vector<BatchRange> pack_batches(const std::vector<TokenInput>& inputs, std::size_t max_tokens) {
  std::vector<BatchRange> ranges;
  BatchRange cur;
  std::size_t tokens = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::size_t n = inputs[i].ids.size();
    check(n <= max_tokens, "input ", i, ": ", n, " tokens do not fit a batch of ", max_tokens);
    if (cur.count > 0 && tokens + n > max_tokens) {
      ranges.push_back(cur);
      cur = {i, 0};
      tokens = 0;
    }
    if (cur.count == 0) cur.first = i;
    cur.count += 1;
    tokens += n;
  }
  if (cur.count > 0) ranges.push_back(cur);
  return ranges;
}

plan::Batch make_batch(const std::vector<TokenInput>& inputs, const BatchRange& range, bool skip_prompts) {
  plan::Batch b;
  bool any_types = false, any_prompt = false, any_limit = false;
  std::size_t total = 0;
  for (std::size_t i = range.first; i < range.first + range.count; ++i) {
    total += inputs[i].ids.size();
    any_types = any_types || !inputs[i].type_ids.empty();
    any_prompt = any_prompt || inputs[i].prompt_tokens > 0;
    any_limit = any_limit || inputs[i].attended_tokens > 0;
  }
  if (any_limit) b.key_limits.reserve(range.count);
  if (skip_prompts && any_prompt) b.pool_starts.reserve(range.count);
  b.tokens.reserve(total);
  b.positions.reserve(total);
  b.seq_starts.reserve(range.count + 1);
  b.seq_starts.push_back(0);
  if (any_types) b.type_ids.reserve(total);
  for (std::size_t i = range.first; i < range.first + range.count; ++i) {
    const TokenInput& in = inputs[i];
    if (skip_prompts && any_prompt)
      b.pool_starts.push_back(static_cast<int32_t>(b.tokens.size() + std::min(in.prompt_tokens, in.ids.size())));
    if (any_limit)  // inputs without a limit: every key
      b.key_limits.push_back(static_cast<int32_t>(in.attended_tokens > 0 ? in.attended_tokens : in.ids.size()));
    b.tokens.insert(b.tokens.end(), in.ids.begin(), in.ids.end());
    for (std::size_t t = 0; t < in.ids.size(); ++t) b.positions.push_back(static_cast<int32_t>(t));
    if (any_types) {
      if (in.type_ids.empty()) b.type_ids.insert(b.type_ids.end(), in.ids.size(), 0);
      else b.type_ids.insert(b.type_ids.end(), in.type_ids.begin(), in.type_ids.end());
    }
    b.seq_starts.push_back(static_cast<int32_t>(b.tokens.size()));
  }
  return b;
}

}  // namespace il::runtime
