#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/probe_attention.h"

namespace il::ops {

void check_probe_attention(const ProbeAttentionArgs& a, const char* what) {
  check(a.q && a.k.data && a.v.data && a.out.data && a.seq_starts, what, ": null operand");
  check(a.k.dtype == a.v.dtype && a.k.dtype == a.out.dtype, what, ": keys ", dtype_name(a.k.dtype), ", values ",
        dtype_name(a.v.dtype), " and output ", dtype_name(a.out.dtype), " differ in element type");
  check(a.heads > 0 && a.head_dim > 0, what, ": no heads");
  const std::size_t w = a.heads * a.head_dim;
  check(a.k.ld >= w && a.v.ld >= w && a.out.ld >= w, what, ": row strides (", a.k.ld, ", ", a.v.ld, ", ", a.out.ld,
        ") too small for ", a.heads, " heads of ", a.head_dim);
}

void probe_attention_cpu(const ProbeAttentionArgs& a, ThreadPool& pool) {
  check_probe_attention(a);
  const float* const k = f32_data(a.k, "probe_attention");
  const float* const v = f32_data(a.v, "probe_attention");
  float* const out = f32_data(a.out, "probe_attention");
  const std::size_t hd = a.head_dim;
  pool.parallel_for(a.num_seqs * a.heads, 1, [&](std::size_t i0, std::size_t i1) {
    std::vector<float> p;
    for (std::size_t i = i0; i < i1; ++i) {
      const std::size_t s = i / a.heads, h = i % a.heads;
      const auto b = static_cast<std::size_t>(a.seq_starts[s]), e = static_cast<std::size_t>(a.seq_starts[s + 1]);
      float* o = out + s * a.out.ld + h * hd;
      std::fill(o, o + hd, 0.0f);
      if (e <= b) continue;
      const float* q = a.q + h * hd;
      p.resize(e - b);
      float m = -INFINITY;
      for (std::size_t j = b; j < e; ++j) {
        const float* kr = k + j * a.k.ld + h * hd;
        float d = 0.0f;
        for (std::size_t c = 0; c < hd; ++c) d += q[c] * kr[c];
        p[j - b] = d * a.scale;
        m = std::max(m, p[j - b]);
      }
      float sum = 0.0f;
      for (float& x : p) sum += (x = std::exp(x - m));
      const float inv = 1.0f / sum;
      for (std::size_t j = b; j < e; ++j) {
        const float w = p[j - b] * inv;
        const float* vr = v + j * a.v.ld + h * hd;
        for (std::size_t c = 0; c < hd; ++c) o[c] += w * vr[c];
      }
    }
  });
}

}  // namespace il::ops
