#include "ops/embed.h"

#include "core/error.h"

namespace il::ops {

void embed_cpu(const EmbedArgs& a, ThreadPool& pool) {
  check(a.tokens && a.seq_starts && a.word && a.out, "embed: null operand");
  pool.parallel_for(a.num_seqs, 1, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s) {
      const std::size_t begin = static_cast<std::size_t>(a.seq_starts[s]);
      const std::size_t end = static_cast<std::size_t>(a.seq_starts[s + 1]);
      for (std::size_t t = begin; t < end; ++t) {
        float* out = a.out + t * a.ldo;
        const float* w = a.word + static_cast<std::size_t>(a.tokens[t]) * a.cols;
        for (std::size_t j = 0; j < a.cols; ++j) out[j] = w[j];
        if (a.position) {
          const float* p = a.position + (a.position_offset + t - begin) * a.cols;
          for (std::size_t j = 0; j < a.cols; ++j) out[j] += p[j];
        }
        if (a.type) {
          const std::size_t tt = a.type_ids ? static_cast<std::size_t>(a.type_ids[t]) : 0;
          const float* p = a.type + tt * a.cols;
          for (std::size_t j = 0; j < a.cols; ++j) out[j] += p[j];
        }
      }
    }
  });
}

}  // namespace il::ops
