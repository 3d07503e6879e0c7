// Late-interaction (ColBERT "MaxSim") scores over per-token vectors: for each (query, document)
// pair of sequences of one ragged batch,
//
//   score = Σ_{i ∈ query rows} max_{j ∈ kept document rows} x_i · x_j,
//
// the sum over the query's tokens of its best dot product with the document's tokens (the cosine
// when the caller has L2-normalised the rows, as ColBERT models do). `keep` (optional, one byte
// per row) drops document rows from the max (PyLate's skiplist: punctuation in documents); query
// rows all count. A document with no kept row contributes nothing: its score is 0. Dot products
// and sums in f32; the query rows are summed in ascending order on the CPU (the CUDA kernel sums
// per-warp partials in a fixed order, so its results are deterministic but may differ from the
// CPU's in the last bits).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct MaxSimArgs {
  ConstTensorView x;                   // [rows, ≥ dim]: every sequence's token vectors
  const int32_t* seq_starts = nullptr; // num_seqs + 1 offsets into x's rows
  std::size_t num_seqs = 0;
  const int32_t* pairs = nullptr;      // [num_pairs, 2]: (query sequence, document sequence)
  std::size_t num_pairs = 0;
  std::size_t dim = 0;
  const uint8_t* keep = nullptr;       // optional, one per row of x: 0 drops a document row
  float* scores = nullptr;             // [num_pairs], f32
};

// The checks both backends make on what the host can see (operands present, dim within the row
// stride); the CPU op also checks every pair's sequence indices.
void check_maxsim(const MaxSimArgs& a, const char* what = "maxsim");
// f32 x only; every pointer in host memory.
void maxsim_cpu(const MaxSimArgs& a, ThreadPool& pool);

}  // namespace il::ops
