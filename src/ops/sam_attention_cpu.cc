#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/sam_attention.h"

namespace il::ops {

std::size_t sam_view_side(std::size_t n, const char* what) {
  const auto g = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(n))));
  check(g * g == n && n > 0, what, ": a view of ", n, " tokens is not a square grid");
  return g;
}

void check_sam_attention(const SamAttentionArgs& a, const char* what) {
  check(a.qkv && a.qkv_bias && a.out && a.view_starts && a.rel_h && a.rel_w, what, ": null operand");
  check(a.heads > 0 && a.head_dim > 0, what, ": no heads");
  check(a.ld_qkv >= 3 * a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim, what,
        ": row stride smaller than the row");
}

namespace {

// One (view, tile, head): the tile's S × S positions (the whole view when global), each a row of
// the batch or −1 for padding.
struct Tile {
  std::size_t view, head;
  std::size_t y0, x0;  // the tile's corner in the view
  std::size_t side;    // S
};

void run_tile(const SamAttentionArgs& a, const Tile& t, std::vector<float>& scores, std::vector<float>& rel) {
  const std::size_t hd = a.head_dim, W = a.heads * hd, S = t.side;
  const std::size_t start = static_cast<std::size_t>(a.view_starts[t.view]);
  const std::size_t g = sam_view_side(static_cast<std::size_t>(a.view_starts[t.view + 1]) - start);
  const float* Rh = a.rel_h[t.view];
  const float* Rw = a.rel_w[t.view];
  const float* bias_k = a.qkv_bias + W + t.head * hd;
  const float* bias_v = a.qkv_bias + 2 * W + t.head * hd;
  const auto key_of = [&](std::size_t ky, std::size_t kx) -> const float* {
    const std::size_t y = t.y0 + ky, x = t.x0 + kx;
    return y < g && x < g ? a.qkv + (start + y * g + x) * a.ld_qkv + W + t.head * hd : bias_k;
  };
  const auto value_of = [&](std::size_t ky, std::size_t kx) -> const float* {
    const std::size_t y = t.y0 + ky, x = t.x0 + kx;
    return y < g && x < g ? a.qkv + (start + y * g + x) * a.ld_qkv + 2 * W + t.head * hd : bias_v;
  };
  scores.resize(S * S);
  rel.resize(2 * S);
  for (std::size_t qy = 0; qy < S && t.y0 + qy < g; ++qy) {
    for (std::size_t qx = 0; qx < S && t.x0 + qx < g; ++qx) {
      const std::size_t row = start + (t.y0 + qy) * g + t.x0 + qx;
      const float* q = a.qkv + row * a.ld_qkv + t.head * hd;
      // The two per-axis terms of this query, once (not per key).
      for (std::size_t k = 0; k < S; ++k) {
        const float* rh = Rh + (qy + S - 1 - k) * hd;
        const float* rw = Rw + (qx + S - 1 - k) * hd;
        float sh = 0.0f, sw = 0.0f;
        for (std::size_t c = 0; c < hd; ++c) sh += q[c] * rh[c], sw += q[c] * rw[c];
        rel[k] = sh;
        rel[S + k] = sw;
      }
      float mx = -INFINITY;
      for (std::size_t ky = 0; ky < S; ++ky) {
        for (std::size_t kx = 0; kx < S; ++kx) {
          const float* k = key_of(ky, kx);
          float dot = 0.0f;
          for (std::size_t c = 0; c < hd; ++c) dot += q[c] * k[c];
          const float s = dot * a.scale + rel[ky] + rel[S + kx];
          scores[ky * S + kx] = s;
          mx = std::max(mx, s);
        }
      }
      float sum = 0.0f;
      for (float& s : scores) sum += (s = std::exp(s - mx));
      const float inv = 1.0f / sum;
      float* o = a.out + row * a.ldo + t.head * hd;
      std::fill(o, o + hd, 0.0f);
      for (std::size_t ky = 0; ky < S; ++ky) {
        for (std::size_t kx = 0; kx < S; ++kx) {
          const float p = scores[ky * S + kx] * inv;
          const float* v = value_of(ky, kx);
          for (std::size_t c = 0; c < hd; ++c) o[c] += p * v[c];
        }
      }
    }
  }
}

}  // namespace

void sam_attention_cpu(const SamAttentionArgs& a, ThreadPool& pool) {
  check_sam_attention(a);
  std::vector<Tile> tiles;
  for (std::size_t v = 0; v < a.views; ++v) {
    const std::size_t n = static_cast<std::size_t>(a.view_starts[v + 1] - a.view_starts[v]);
    if (n == 0) continue;
    const std::size_t g = sam_view_side(n);
    const std::size_t S = a.window ? a.window : g;
    for (std::size_t y0 = 0; y0 < g; y0 += S)
      for (std::size_t x0 = 0; x0 < g; x0 += S)
        for (std::size_t h = 0; h < a.heads; ++h) tiles.push_back({v, h, y0, x0, S});
  }
  pool.parallel_for(tiles.size(), 1, [&](std::size_t t0, std::size_t t1) {
    std::vector<float> scores, rel;
    for (std::size_t t = t0; t < t1; ++t) run_tile(a, tiles[t], scores, rel);
  });
}

}  // namespace il::ops
