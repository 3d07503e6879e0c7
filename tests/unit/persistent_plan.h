// A tiny hand-built plan over persistent buffers (plan::Rows::kPersistent), shared by the CPU and
// CUDA executor tests. Program "accumulate" embeds the batch's tokens (word table only) and adds
// the first kAccRows token rows into persistent buffer "acc" — a LayerNormStep with x = acc,
// residual = the embeddings and sum_out = acc — leaving RMS-norm(acc) in persistent "normed",
// then acc · Wᵀ into persistent "proj" (a GEMM over persistent rows). After k runs acc holds the
// sum of k batches' first rows, whatever the batches were: what a KV cache or a canvas needs.
// Program "overflow" normalises every token row into "normed" (kAccRows rows): a batch of more
// tokens must be refused, not written past the buffer.
//
// Values are multiples of 1/64 below 1 in magnitude, so every sum is exact in f32 and the host's
// account of acc matches any backend bit for bit (in bf16 after rounding each sum as the
// backends do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "plan/plan.h"

namespace il::test {

inline constexpr std::size_t kAccRows = 4, kAccCols = 8, kAccVocab = 16, kProjCols = 6;

struct PersistentPlan {
  plan::Plan plan;
  plan::View acc, normed, proj;
  // The weights' values (an executor releases the plan's copies).
  std::vector<float> word, ln, w;
};

inline float persistent_value(std::size_t i, std::size_t salt) {
  return static_cast<float>(static_cast<int>((i * 37 + salt * 11) % 101) - 50) / 64.0f;
}

inline PersistentPlan make_persistent_plan() {
  PersistentPlan p;
  for (std::size_t i = 0; i < kAccVocab * kAccCols; ++i) p.word.push_back(persistent_value(i, 1));
  for (std::size_t i = 0; i < kAccCols; ++i) p.ln.push_back(1.0f + persistent_value(i, 2) / 4);
  for (std::size_t i = 0; i < kProjCols * kAccCols; ++i) p.w.push_back(persistent_value(i, 3));
  plan::Plan& plan = p.plan;
  const plan::WeightId word = plan.add_weight("word", {kAccVocab, kAccCols}, p.word);
  const plan::WeightId ln = plan.add_weight("ln", {kAccCols}, p.ln);
  const plan::WeightId w = plan.add_weight("proj.weight", {kProjCols, kAccCols}, p.w);
  const plan::BufferId emb = plan.add_buffer("emb", plan::Rows::kTokens, kAccCols);
  p.acc = plan.whole(plan.add_persistent_buffer("acc", kAccRows, kAccCols));
  p.normed = plan.whole(plan.add_persistent_buffer("normed", kAccRows, kAccCols));
  p.proj = plan.whole(plan.add_persistent_buffer("proj", kAccRows, kProjCols));

  plan::EmbedStep e;
  e.word = word;
  e.out = plan.whole(emb);
  plan.add_step("accumulate", "embed", e);
  plan::LayerNormStep n;
  n.x = p.acc;
  n.residual = plan.whole(emb);
  n.w = ln;
  n.eps = 1e-6f;
  n.rms = true;
  n.out = p.normed;
  n.sum_out = p.acc;
  plan.add_step("accumulate", "acc += emb", n);
  plan::GemmStep g;
  g.x = p.acc;
  g.w = w;
  g.y = p.proj;
  plan.add_step("accumulate", "proj", g);

  plan.add_step("overflow", "embed", e);
  plan::LayerNormStep all;
  all.x = plan.whole(emb);
  all.w = ln;
  all.rms = true;
  all.out = p.normed;
  plan.add_step("overflow", "normed = norm(emb)", all);
  return p;
}

// A batch of sequences of these lengths, token t of the batch being (t · 5 + salt) % vocab.
inline plan::Batch persistent_batch(const std::vector<int32_t>& lengths, int32_t salt) {
  plan::Batch b;
  b.seq_starts = {0};
  for (int32_t l : lengths) b.seq_starts.push_back(b.seq_starts.back() + l);
  for (int32_t t = 0; t < b.seq_starts.back(); ++t) b.tokens.push_back((t * 5 + salt) % static_cast<int32_t>(kAccVocab));
  return b;
}

// acc after one more run over `batch`: row r gains the word row of token r, in f32, rounded to
// bf16 after each sum when `bf16` (as an executor in that mode stores it).
inline void account(std::vector<float>& acc, const std::vector<float>& word, const plan::Batch& batch, bool bf16) {
  const auto round = [&](float v) { return bf16 ? bf16_to_f32(f32_to_bf16(v)) : v; };
  for (std::size_t r = 0; r < kAccRows; ++r)
    for (std::size_t j = 0; j < kAccCols; ++j)
      acc[r * kAccCols + j] =
          round(acc[r * kAccCols + j] + round(word[static_cast<std::size_t>(batch.tokens[r]) * kAccCols + j]));
}

}  // namespace il::test
