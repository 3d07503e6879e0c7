#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/attention.h"

namespace il::ops {
namespace {

constexpr std::size_t kRowBlock = 8;  // query rows sharing every K/V read

// Inner products and updates are compiled for AVX2+FMA as well as the baseline, chosen at load.
[[gnu::target_clones("avx2,fma", "default")]] float dot(const float* a, const float* b,
                                                         std::size_t n) {
  float acc = 0.0f;
  for (std::size_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

[[gnu::target_clones("avx2,fma", "default")]] void axpy(float alpha, const float* x, float* y,
                                                         std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

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

void run_task(const AttentionArgs& a, const Task& t, std::vector<float>& scores) {
  const std::size_t start = static_cast<std::size_t>(a.seq_starts[t.seq]);
  const std::size_t len = static_cast<std::size_t>(a.seq_starts[t.seq + 1]) - start;
  const std::size_t kvh = t.head / (a.heads / a.kv_heads);
  const std::size_t hd = a.head_dim;
  if (scores.size() < t.rows * len) scores.resize(t.rows * len);

  for (std::size_t r = 0; r < t.rows; ++r) {
    const std::size_t i = t.row0 + r;
    std::size_t lo, hi;
    key_range(a, i, len, lo, hi);
    const float* q = a.q + (start + i) * a.ldq + t.head * hd;
    float* s = scores.data() + r * len;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t j = lo; j < hi; ++j) {
      s[j] = dot(q, a.k + (start + j) * a.ldk + kvh * hd, hd) * a.scale;
      mx = std::max(mx, s[j]);
    }
    float sum = 0.0f;
    for (std::size_t j = lo; j < hi; ++j) {
      s[j] = std::exp(s[j] - mx);
      sum += s[j];
    }
    float* o = a.out + (start + i) * a.ldo + t.head * hd;
    std::fill_n(o, hd, 0.0f);
    if (hi <= lo) continue;  // no admissible key: the row stays zero
    const float inv = 1.0f / sum;
    for (std::size_t j = lo; j < hi; ++j) axpy(s[j] * inv, a.v + (start + j) * a.ldv + kvh * hd, o, hd);
  }
}

}  // namespace

void check_attention(const AttentionArgs& a) {
  check(a.q && a.k && a.v && a.out && a.seq_starts, "attention: null operand");
  check(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0,
        "attention: heads (", a.heads, ") must be a multiple of kv_heads (", a.kv_heads, ")");
  check(a.head_dim > 0, "attention: zero head_dim");
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
    std::vector<float> scores;
    for (std::size_t t = t0; t < t1; ++t) run_task(a, tasks[t], scores);
  });
}

}  // namespace il::ops
