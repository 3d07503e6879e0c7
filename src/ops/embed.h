// Embedding lookup for a ragged batch: row t = word[token t] + position[offset + local index of t]
// + type[segment id of t]. Inputs are validated by the caller (ids inside the tables).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "ops/tensor_view.h"

namespace il::ops {

struct EmbedArgs {
  const int32_t* tokens = nullptr;    // [T]
  const int32_t* type_ids = nullptr;  // [T] or null (all 0)
  const int32_t* seq_starts = nullptr;
  std::size_t num_seqs = 0;
  // The tables are dense rows of `cols` (their ld is not read) in out's element type.
  ConstTensorView word;               // [vocab, cols]
  ConstTensorView position;           // [max_pos, cols] or absent
  std::size_t position_offset = 0;
  ConstTensorView type;               // [type_vocab, cols] or absent
  TensorView out;                     // [T, cols]
  std::size_t cols = 0;
  float scale = 1.0f;                 // the word row is multiplied by it (in f32) before the sums
};

// The checks both backends make: operands present, tables in out's element type, stride.
void check_embed(const EmbedArgs& a, const char* what = "embed");
// f32 tables and output only.
void embed_cpu(const EmbedArgs& a, ThreadPool& pool);

}  // namespace il::ops
