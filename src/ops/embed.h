// Embedding lookup for a ragged batch: row t = word[token t] + position[offset + local index of t]
// + type[segment id of t]. Inputs are validated by the caller (ids inside the tables).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace il::ops {

struct EmbedArgs {
  const int32_t* tokens = nullptr;    // [T]
  const int32_t* type_ids = nullptr;  // [T] or null (all 0)
  const int32_t* seq_starts = nullptr;
  std::size_t num_seqs = 0;
  const float* word = nullptr;        // [vocab, cols]
  const float* position = nullptr;    // [max_pos, cols] or null
  std::size_t position_offset = 0;
  const float* type = nullptr;        // [type_vocab, cols] or null
  float* out = nullptr;               // [T, ldo]
  std::size_t ldo = 0;
  std::size_t cols = 0;
};

void embed_cpu(const EmbedArgs& a, ThreadPool& pool);

}  // namespace il::ops
