#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/vec_math.h"

namespace il::ops {
namespace {

constexpr std::size_t kRowBlock = 128;  // query rows sharing one packed Kᵀ
constexpr std::size_t kMaxHeadDim = 256;
constexpr std::size_t kKeyTile = 32;   // keys whose scores stay in registers

// Key range [lo, hi) (sequence-local) admissible for query row i of a sequence of length len.
void key_range(const AttentionArgs& a, std::size_t i, std::size_t len, std::size_t& lo,
               std::size_t& hi) {
  lo = 0;
  hi = a.mask == MaskMode::kCausal ? i + 1 : len;
  if (a.window > 0) {
    const std::size_t half = a.window / 2;
    lo = i > half ? i - half : 0;
    hi = std::min(hi, i + half + 1);
  }
}

struct Task {
  std::size_t seq, head, row0, rows;
};

// Per-thread scratch: K of the block's key range transposed ([head_dim][keys]) so score rows are
// computed key-contiguous, and one block of score rows. Both grow with the sequence, never n×n.
struct Scratch {
  std::vector<float> kt;
  std::vector<float> scores;
};

// One (sequence, head, row block): scores = q·kᵀ·scale, softmax per row over its admissible keys,
// out = p·v. Compiled for AVX2/FMA as well as the baseline, chosen at load time.
[[gnu::target_clones("arch=x86-64-v3", "default")]] void run_task(const AttentionArgs& a,
                                                                 const Task& t, Scratch& sc) {
  const std::size_t start = static_cast<std::size_t>(a.seq_starts[t.seq]);
  const std::size_t len = static_cast<std::size_t>(a.seq_starts[t.seq + 1]) - start;
  const std::size_t kvh = t.head / (a.heads / a.kv_heads);
  const std::size_t hd = a.head_dim;

  // Union of the rows' key ranges: keys outside it are never read.
  std::size_t klo = len, khi = 0;
  for (std::size_t r = 0; r < t.rows; ++r) {
    std::size_t lo, hi;
    key_range(a, t.row0 + r, len, lo, hi);
    klo = std::min(klo, lo);
    khi = std::max(khi, hi);
  }
  const std::size_t nk = khi > klo ? khi - klo : 0;
  const std::size_t nk_pad = (nk + kKeyTile - 1) / kKeyTile * kKeyTile;
  if (sc.kt.size() < hd * nk_pad) sc.kt.resize(hd * nk_pad);
  if (sc.scores.size() < t.rows * nk_pad) sc.scores.resize(t.rows * nk_pad);
  float* kt = sc.kt.data();
  for (std::size_t j = 0; j < nk_pad; ++j) {
    const float* k = a.k + (start + klo + std::min(j, nk - 1)) * a.ldk + kvh * hd;
    for (std::size_t d = 0; d < hd; ++d) kt[d * nk_pad + j] = j < nk ? k[d] : 0.0f;
  }

  for (std::size_t r = 0; r < t.rows; ++r) {
    const std::size_t i = t.row0 + r;
    const float* q = a.q + (start + i) * a.ldq + t.head * hd;
    float* s = sc.scores.data() + r * nk_pad;
    for (std::size_t j0 = 0; j0 < nk_pad; j0 += kKeyTile) {
      float acc[kKeyTile] = {};
      for (std::size_t d = 0; d < hd; ++d) {
        const float qd = q[d];
        const float* __restrict row = kt + d * nk_pad + j0;
        for (std::size_t jj = 0; jj < kKeyTile; ++jj) acc[jj] += qd * row[jj];
      }
      for (std::size_t jj = 0; jj < kKeyTile; ++jj) s[j0 + jj] = acc[jj] * a.scale;
    }
    std::size_t lo, hi;
    key_range(a, i, len, lo, hi);
    lo -= klo;
    hi -= klo;
    float* o = a.out + (start + i) * a.ldo + t.head * hd;
    std::fill_n(o, hd, 0.0f);
    if (hi <= lo) continue;  // no admissible key: the row stays zero
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t j = lo; j < hi; ++j) mx = std::max(mx, s[j]);
    // Exponentials in their own loop so it vectorises; a float sum in the same loop would not
    // (without -ffast-math the additions keep their order).
    for (std::size_t j = lo; j < hi; ++j) s[j] = fast_exp(s[j] - mx);
    float sum = 0.0f;
    for (std::size_t j = lo; j < hi; ++j) sum += s[j];
    const float inv = 1.0f / sum;
    // Accumulate in a local row: the compiler then knows it aliases neither v nor out.
    float acc[kMaxHeadDim];
    std::fill_n(acc, hd, 0.0f);
    for (std::size_t j = lo; j < hi; ++j) {
      const float p = s[j] * inv;
      const float* __restrict v = a.v + (start + klo + j) * a.ldv + kvh * hd;
      for (std::size_t d = 0; d < hd; ++d) acc[d] += p * v[d];
    }
    std::copy_n(acc, hd, o);
  }
}

}  // namespace

void check_attention(const AttentionArgs& a) {
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention: null operand");
  check(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0,
        "attention: heads (", a.heads, ") must be a multiple of kv_heads (", a.kv_heads, ")");
  check(a.head_dim > 0 && a.head_dim <= kMaxHeadDim, "attention: head_dim ", a.head_dim,
        " outside 1..", kMaxHeadDim);
  check(a.ldq >= a.heads * a.head_dim && a.ldo >= a.heads * a.head_dim &&
            a.ldk >= a.kv_heads * a.head_dim && a.ldv >= a.kv_heads * a.head_dim,
        "attention: row stride smaller than heads × head_dim");
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
  pool.parallel_for(tasks.size(), 1, [&](std::size_t t0, std::size_t t1) {
    Scratch scratch;
    for (std::size_t t = t0; t < t1; ++t) run_task(a, tasks[t], scratch);
  });
}

}  // namespace il::ops
