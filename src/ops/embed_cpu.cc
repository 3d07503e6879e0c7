#include "ops/embed.h"

#include "core/error.h"

namespace il::ops {

void check_embed(const EmbedArgs& a, const char* what) {
  check(a.tokens && a.seq_starts && a.word.data && a.out.data, what, ": null operand");
  const DType t = a.out.dtype;
  check(a.word.dtype == t && (!a.position.data || a.position.dtype == t) && (!a.type.data || a.type.dtype == t), what,
        ": tables and output differ in element type");
  check(a.out.ld >= a.cols, what, ": row stride ", a.out.ld, " smaller than ", a.cols, " columns");
}

void embed_cpu(const EmbedArgs& a, ThreadPool& pool) {
  check_embed(a);
  const float* const word = f32_data(a.word, "embed");
  const float* const position = f32_data(a.position, "embed");
  const float* const type = f32_data(a.type, "embed");
  float* const outs = f32_data(a.out, "embed");
  const std::size_t ldo = a.out.ld;
  pool.parallel_for(a.num_seqs, 1, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s) {
      const std::size_t begin = static_cast<std::size_t>(a.seq_starts[s]);
      const std::size_t end = static_cast<std::size_t>(a.seq_starts[s + 1]);
      for (std::size_t t = begin; t < end; ++t) {
        float* out = outs + t * ldo;
        const float* w = word + static_cast<std::size_t>(a.tokens[t]) * a.cols;
        for (std::size_t j = 0; j < a.cols; ++j) out[j] = w[j] * a.scale;
        if (position) {
          const float* p = position + (a.position_offset + t - begin) * a.cols;
          for (std::size_t j = 0; j < a.cols; ++j) out[j] += p[j];
        }
        if (type) {
          const std::size_t tt = a.type_ids ? static_cast<std::size_t>(a.type_ids[t]) : 0;
          const float* p = type + tt * a.cols;
          for (std::size_t j = 0; j < a.cols; ++j) out[j] += p[j];
        }
      }
    }
  });
}

}  // namespace il::ops
