#include <gtest/gtest.h>

#include "core/error.h"
#include "runtime/batching.h"

namespace il::runtime {
namespace {

models::InputLimits small_config() {
  models::InputLimits c;
  c.vocab = 100;
  c.type_vocab = 2;
  return c;
}

TEST(Batching, PacksInOrderUnderTheBudget) {
  std::vector<TokenInput> in;
  for (int n : {3, 4, 2, 5, 1}) in.push_back({std::vector<int32_t>(static_cast<std::size_t>(n), 1), {}});
  auto ranges = pack_batches(in, 7);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].first, 0u);
  EXPECT_EQ(ranges[0].count, 2u);  // 3 + 4
  EXPECT_EQ(ranges[1].count, 2u);  // 2 + 5
  EXPECT_EQ(ranges[2].count, 1u);  // 1
  auto batch = make_batch(in, ranges[1]);
  EXPECT_EQ(batch.seq_starts, (std::vector<int32_t>{0, 2, 7}));
  EXPECT_TRUE(batch.type_ids.empty());
  // Each token's position is its index in its own sequence (what rotary embeddings read).
  EXPECT_EQ(batch.positions, (std::vector<int32_t>{0, 1, 0, 1, 2, 3, 4}));
}

TEST(Batching, MixedTypeIdsFillZeros) {
  std::vector<TokenInput> in = {{{1, 2}, {0, 1}}, {{3}, {}}};
  auto b = make_batch(in, {0, 2});
  EXPECT_EQ(b.type_ids, (std::vector<int32_t>{0, 1, 0}));
}

TEST(Batching, PoolStartsSkipPromptTokensOnlyWhenAsked) {
  std::vector<TokenInput> in = {{{1, 2, 3, 4}, {}}, {{5, 6}, {}}, {{7, 8, 9}, {}}};
  in[0].prompt_tokens = 2;
  in[1].prompt_tokens = 5;  // longer than the input (truncated): clamped, nothing pooled
  EXPECT_TRUE(make_batch(in, {0, 3}).pool_starts.empty());
  const auto b = make_batch(in, {0, 3}, true);
  EXPECT_EQ(b.pool_starts, (std::vector<int32_t>{2, 6, 6}));
  EXPECT_NO_THROW(plan::check_batch(b, 1 << 20));
  EXPECT_TRUE(make_batch(in, {2, 1}, true).pool_starts.empty());  // no prompt in this batch
  plan::Batch bad = b;
  bad.pool_starts[2] = 5;
  EXPECT_THROW(plan::check_batch(bad, 1 << 20), Error);
  bad.pool_starts.pop_back();
  EXPECT_THROW(plan::check_batch(bad, 1 << 20), Error);
}

TEST(Batching, ValidationNamesTheInput) {
  auto cfg = small_config();
  auto expect_error = [&](std::vector<TokenInput> in, const std::string& needle) {
    try {
      validate_inputs(in, cfg, 8);
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({{{1}, {}}, {{}, {}}}, "input 1: no tokens");
  expect_error({{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {}}}, "at most 8");
  expect_error({{{100}, {}}}, "outside the vocabulary");
  expect_error({{{1, 2}, {0, 2}}}, "token type id 2");
  expect_error({{{1, 2}, {0}}}, "1 token_type_ids for 2 input_ids");
  expect_error({}, "no inputs");
}

}  // namespace
}  // namespace il::runtime
