#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/aligned_buffer.h"
#include "ops/attention.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_packed.h"
#include "ops/vec_math.h"

namespace il::ops {
namespace {

constexpr std::size_t kRowBlock = 128;  // query rows sharing one packed K and V
constexpr std::size_t kMaxHeadDim = 256;
using gemm_kernel::kPanel;

// Key range [lo, hi) (sequence-local) admissible for query row i of sequence seq, of length len.
void key_range(const AttentionArgs& a, std::size_t seq, std::size_t i, std::size_t len, std::size_t& lo,
               std::size_t& hi) {
  lo = 0;
  hi = a.mask == MaskMode::kCausal ? i + 1 : len;
  if (a.mask == MaskMode::kCausal && a.causal_prefix)
    hi = std::max(hi, std::min(len, static_cast<std::size_t>(std::max<int32_t>(a.causal_prefix[seq], 0))));
  if (a.key_limits) hi = std::min(hi, static_cast<std::size_t>(std::max<int32_t>(a.key_limits[seq], 0)));
  if (a.window > 0) {
    const std::size_t half = a.window / 2;
    lo = i > half ? i - half : 0;
    hi = std::min(hi, i + half + 1);
  }
}

struct Task {
  std::size_t seq, head, row0, rows;
};

// Per-thread scratch, all sized by one row block and its key range, never n × n.
struct Scratch {
  AlignedBuffer keys;     // Kᵀ as GEMM panels: 32 keys per panel, head_dim rows each
  AlignedBuffer values;   // V as GEMM panels: 32 dims per panel, one row per key
  AlignedBuffer queries;  // scaled Q rows as kernel micro-panels
  AlignedBuffer probs;    // softmax rows as kernel micro-panels
  AlignedBuffer scores;   // rows × keys
};

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Rows of `rows` values each (row i at src + i * ld) into kernel micro-panels of mr rows,
// k-major, padding rows zero, each value multiplied by `scale`.
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void pack_micro_panels(const float* src, std::size_t ld, std::size_t n_rows, std::size_t depth,
                       std::size_t mr, float scale, float* dst) {
  for (std::size_t i0 = 0; i0 < n_rows; i0 += mr) {
    for (std::size_t i = 0; i < mr; ++i) {
      if (i0 + i < n_rows) {
        const float* row = src + (i0 + i) * ld;
        for (std::size_t d = 0; d < depth; ++d) dst[d * mr + i] = row[d] * scale;
      } else {
        for (std::size_t d = 0; d < depth; ++d) dst[d * mr + i] = 0.0f;
      }
    }
    dst += depth * mr;
  }
}

// `count` vectors of `width` floats (vector r at src + r * ld) as GEMM panels over their
// elements: panel p, row r holds elements p*32 … p*32+31 of vector r (V, depth = keys).
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void pack_value_panels(const float* src, std::size_t ld, std::size_t count, std::size_t width,
                       float* dst) {
  for (std::size_t p = 0; p < ceil_div(width, kPanel); ++p) {
    float* panel = dst + p * count * kPanel;
    const std::size_t c0 = p * kPanel, cols = std::min(kPanel, width - c0);
    for (std::size_t r = 0; r < count; ++r) {
      const float* v = src + r * ld + c0;
      for (std::size_t c = 0; c < kPanel; ++c) panel[r * kPanel + c] = c < cols ? v[c] : 0.0f;
    }
  }
}

// Softmax of s[lo, hi), written to p[j * p_stride] for j in [0, n) with zeros outside [lo, hi)
// (inadmissible keys weigh nothing; a row with no admissible key gives zeros): p is the row's
// place in the kernel micro-panel, so P·V needs no repacking. Max and sum run in 16 independent
// lanes so they vectorise without reordering any one lane's additions. Built for AVX-512 and
// AVX2 as well as the baseline, chosen at load time.
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void softmax_row(
    float* s, std::size_t n, std::size_t lo, std::size_t hi, float* p, std::size_t p_stride) {
  constexpr std::size_t kLanes = 16;
  for (std::size_t j = 0; j < lo; ++j) p[j * p_stride] = 0.0f;
  for (std::size_t j = hi; j < n; ++j) p[j * p_stride] = 0.0f;
  if (hi <= lo) return;
  float lane[kLanes];
  std::fill_n(lane, kLanes, -std::numeric_limits<float>::infinity());
  std::size_t j = lo;
  for (; j + kLanes <= hi; j += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] = lane[l] > s[j + l] ? lane[l] : s[j + l];
  float mx = -std::numeric_limits<float>::infinity();
  for (; j < hi; ++j) mx = std::max(mx, s[j]);
  for (float v : lane) mx = std::max(mx, v);

  std::fill_n(lane, kLanes, 0.0f);
  j = lo;
  for (; j + kLanes <= hi; j += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      const float e = fast_exp(s[j + l] - mx);
      s[j + l] = e;
      lane[l] += e;
    }
  }
  float sum = 0.0f;
  for (; j < hi; ++j) {
    s[j] = fast_exp(s[j] - mx);
    sum += s[j];
  }
  for (float v : lane) sum += v;
  const float inv = 1.0f / sum;
  for (j = lo; j < hi; ++j) p[j * p_stride] = s[j] * inv;
}

// c[rows, cols] = a (micro-panels over `depth`) · b (panels over `depth`), by kernel tiles.
void tile_product(const gemm_kernel::Kernel& kern, const float* a, std::size_t rows,
                  const float* b, std::size_t cols, std::size_t depth, float* c, std::size_t ldc) {
  gemm_kernel::Tile t;
  t.ldc = ldc;
  t.kc = depth;
  for (std::size_t p = 0; p < ceil_div(cols, kPanel); ++p) {
    t.b = b + p * depth * kPanel;
    t.cols = std::min(kPanel, cols - p * kPanel);
    for (std::size_t i0 = 0; i0 < rows; i0 += kern.mr) {
      t.a = a + i0 * depth;
      t.c = c + i0 * ldc + p * kPanel;
      t.rows = std::min(kern.mr, rows - i0);
      kern.tile(t);
    }
  }
}

// One (sequence, head, row block): scores = (q·scale)·kᵀ, softmax per row over its admissible
// keys (zero elsewhere), out = p·v; both products run on the GEMM tile kernels.
// one_row: the task is one row of its sequence, written to row t.seq of out
// (attention_first_cpu, attention_last_cpu).
void run_task(const AttentionArgs& a, const Task& t, Scratch& sc, const gemm_kernel::Kernel& kern,
              bool one_row = false) {
  const std::size_t start = static_cast<std::size_t>(a.seq_starts[t.seq]);
  const std::size_t len = static_cast<std::size_t>(a.seq_starts[t.seq + 1]) - start;
  const std::size_t kvh = t.head / (a.heads / a.kv_heads);
  const std::size_t hd = a.head_dim;
  const std::size_t mr = kern.mr;
  float* out = a.out + (one_row ? t.seq : start + t.row0) * a.ldo + t.head * hd;

  // Union of the rows' key ranges: keys outside it are never read.
  std::size_t klo = len, khi = 0;
  for (std::size_t r = 0; r < t.rows; ++r) {
    std::size_t lo, hi;
    key_range(a, t.seq, t.row0 + r, len, lo, hi);
    klo = std::min(klo, lo);
    khi = std::max(khi, hi);
  }
  const std::size_t nk = khi > klo ? khi - klo : 0;
  if (nk == 0) {
    for (std::size_t r = 0; r < t.rows; ++r) std::fill_n(out + r * a.ldo, hd, 0.0f);
    return;
  }
  const std::size_t ld_scores = ceil_div(nk, kPanel) * kPanel;
  const std::size_t row_panels = ceil_div(t.rows, mr) * mr;
  float* keys = sc.keys.get(ld_scores * hd);
  float* values = sc.values.get(ceil_div(hd, kPanel) * kPanel * nk);
  float* queries = sc.queries.get(row_panels * hd);
  float* probs = sc.probs.get(row_panels * nk);
  float* scores = sc.scores.get(t.rows * ld_scores);

  const float* k0 = a.k + (start + klo) * a.ldk + kvh * hd;
  const float* v0 = a.v + (start + klo) * a.ldv + kvh * hd;
  pack_panels(k0, a.ldk, nk, hd, keys);  // Kᵀ: one panel column per key, depth head_dim
  pack_micro_panels(a.q + (start + t.row0) * a.ldq + t.head * hd, a.ldq, t.rows, hd, mr, a.scale,
                    queries);
  tile_product(kern, queries, t.rows, keys, nk, hd, scores, ld_scores);

  for (std::size_t r = 0; r < t.rows; ++r) {
    std::size_t lo, hi;
    key_range(a, t.seq, t.row0 + r, len, lo, hi);
    const bool any = hi > lo;
    softmax_row(scores + r * ld_scores, nk, any ? lo - klo : 0, any ? hi - klo : 0,
                probs + (r / mr) * mr * nk + r % mr, mr);
  }
  // The padding rows of the last micro-panel.
  for (std::size_t r = t.rows; r < row_panels; ++r)
    for (std::size_t j = 0; j < nk; ++j) probs[(r / mr) * mr * nk + j * mr + r % mr] = 0.0f;
  pack_value_panels(v0, a.ldv, nk, hd, values);
  tile_product(kern, probs, t.rows, values, hd, nk, out, a.ldo);
}

}  // namespace

void check_attention(const AttentionArgs& a) {
  check_attention_shape(a, kMaxHeadDim);
  check(a.seq_starts[0] == 0, "attention: seq_starts[0] must be 0");
  for (std::size_t s = 0; s < a.num_seqs; ++s)
    check(a.seq_starts[s + 1] >= a.seq_starts[s], "attention: seq_starts not ascending at ", s);
}

void attention_cpu(const AttentionArgs& a, ThreadPool& pool) {
  check_attention(a);
  std::vector<Task> tasks;
  for (std::size_t s = 0; s < a.num_seqs; ++s) {
    const std::size_t len = static_cast<std::size_t>(a.seq_starts[s + 1] - a.seq_starts[s]);
    for (std::size_t h = 0; h < a.heads; ++h)
      for (std::size_t r = 0; r < len; r += kRowBlock)
        tasks.push_back({s, h, r, std::min(kRowBlock, len - r)});
  }
  const gemm_kernel::Kernel& kern = gemm_kernel::default_kernel();
  pool.parallel_for(tasks.size(), 1, [&](std::size_t t0, std::size_t t1) {
    thread_local Scratch scratch;
    for (std::size_t t = t0; t < t1; ++t) run_task(a, tasks[t], scratch, kern);
  });
}

namespace {

// One query row per sequence (its first or its last), into row s of out.
void attention_one_row(const AttentionArgs& a, bool last, ThreadPool& pool) {
  check_attention(a);
  const std::size_t tasks = a.num_seqs * a.heads;
  const gemm_kernel::Kernel& kern = gemm_kernel::default_kernel();
  pool.parallel_for(tasks, 1, [&](std::size_t t0, std::size_t t1) {
    thread_local Scratch scratch;
    for (std::size_t t = t0; t < t1; ++t) {
      const std::size_t s = t / a.heads, h = t % a.heads;
      const std::size_t len = static_cast<std::size_t>(a.seq_starts[s + 1] - a.seq_starts[s]);
      // An empty sequence has no such token: its row is zeros, as pooling gives it.
      if (len == 0) std::fill_n(a.out + s * a.ldo + h * a.head_dim, a.head_dim, 0.0f);
      else run_task(a, {s, h, last ? len - 1 : 0, 1}, scratch, kern, true);
    }
  });
}

}  // namespace

void attention_first_cpu(const AttentionArgs& a, ThreadPool& pool) { attention_one_row(a, false, pool); }

void attention_last_cpu(const AttentionArgs& a, ThreadPool& pool) { attention_one_row(a, true, pool); }

}  // namespace il::ops
