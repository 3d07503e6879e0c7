#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/disentangled_attention.h"
#include "ops/vec_math.h"

namespace il::ops {

int deberta_rel_index(int d, int span, int buckets, int max_rel) {
  int b = d;
  if (buckets > 0) {
    const int mid = buckets / 2;
    const int a = d < 0 ? -d : d;
    if (a > mid) {
      // torch: ceil(log(abs / mid) / log(tensor((max_position - 1) / mid)) * (mid - 1)) + mid, every
      // operand a float32 tensor (the quotient (max_rel - 1) / mid is a Python float rounded to f32).
      const float num = std::log(static_cast<float>(a) / static_cast<float>(mid));
      const float den = std::log(static_cast<float>(static_cast<double>(max_rel - 1) / mid));
      const float x = num / den * static_cast<float>(mid - 1);
      const int lb = static_cast<int>(std::ceil(x)) + mid;
      b = d < 0 ? -lb : lb;
    }
  }
  return std::clamp(b + span, 0, 2 * span - 1);
}

std::vector<float> deberta_rel_index_table(std::size_t max_len, int span, int buckets, int max_rel) {
  check(max_len >= 1 && span >= 1, "disentangled attention: empty relative table");
  const int n = static_cast<int>(max_len);
  std::vector<float> t(2 * max_len - 1);
  for (int d = -(n - 1); d <= n - 1; ++d)
    t[static_cast<std::size_t>(d + n - 1)] = static_cast<float>(deberta_rel_index(d, span, buckets, max_rel));
  return t;
}

RelWindow deberta_rel_window(std::size_t longest, const DisentangledAttentionArgs& a) {
  const int span = static_cast<int>(a.span);
  const int L = static_cast<int>(std::clamp<std::size_t>(longest, 1, std::max<std::size_t>(a.max_len, 1)));
  const int lo = deberta_rel_index(-(L - 1), span, a.buckets, a.max_rel);
  const int hi = deberta_rel_index(L - 1, span, a.buckets, a.max_rel);
  return {lo, hi - lo + 1};
}

std::size_t disentangled_table_floats(std::size_t rows, std::size_t heads, std::size_t span, int terms) {
  const std::size_t pitch = (2 * span + 7) / 8 * 8;  // the widest window, rounded as the op rounds it
  return static_cast<std::size_t>(terms) * heads * rows * pitch;
}

std::size_t disentangled_table_cap_floats(std::size_t rows, std::size_t heads, std::size_t span, int terms) {
  const std::size_t one_head = disentangled_table_floats(rows, 1, span, terms);
  const std::size_t cap = std::max(kDisentangledTableCapBytes / sizeof(float), one_head);
  return std::min(disentangled_table_floats(rows, heads, span, terms), cap);
}

void check_disentangled_attention_shape(const DisentangledAttentionArgs& a, const char* what) {
  check(a.q.data && a.k.data && a.v.data && a.out.data && a.seq_starts && a.rel_index, what, ": null operand");
  check(a.heads > 0 && a.head_dim > 0, what, ": no heads");
  const std::size_t w = a.heads * a.head_dim;
  check(a.q.ld >= w && a.k.ld >= w && a.v.ld >= w && a.out.ld >= w, what, ": row stride smaller than heads × head_dim");
  check(a.q.dtype == a.out.dtype && a.k.dtype == a.out.dtype && a.v.dtype == a.out.dtype, what,
        ": operands differ in element type");
  check((a.pos_key == nullptr && a.pos_query == nullptr) || a.span > 0, what, ": relative tables without a span");
  check(a.max_len >= 1, what, ": max_len 0");
}

namespace {

// Eight independent partial sums, so the loop vectorises without -ffast-math.
inline float dot(const float* a, const float* b, std::size_t n) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += a[i + l] * b[i + l];
  float r = 0.0f;
  for (; i < n; ++i) r += a[i] * b[i];
  return r + ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

constexpr std::size_t kRows = 16;  // query rows of one task

}  // namespace

void disentangled_attention_cpu(const DisentangledAttentionArgs& a, ThreadPool& pool) {
  const char* what = "disentangled attention";
  check_disentangled_attention_shape(a, what);
  const float* q = f32_data(a.q, what);
  const float* k = f32_data(a.k, what);
  const float* v = f32_data(a.v, what);
  float* out = f32_data(a.out, what);
  check(a.seq_starts[0] == 0, what, ": seq_starts[0] must be 0");
  struct Task {
    std::size_t seq, head, row0, rows;
  };
  std::vector<Task> tasks;
  for (std::size_t s = 0; s < a.num_seqs; ++s) {
    check(a.seq_starts[s + 1] >= a.seq_starts[s], what, ": seq_starts not ascending at ", s);
    const std::size_t len = static_cast<std::size_t>(a.seq_starts[s + 1] - a.seq_starts[s]);
    check(len <= a.max_len, what, ": a sequence of ", len, " tokens, longer than the relative table's ", a.max_len);
    for (std::size_t h = 0; h < a.heads; ++h)
      for (std::size_t r = 0; r < len; r += kRows) tasks.push_back({s, h, r, std::min(kRows, len - r)});
  }
  const std::size_t hd = a.head_dim, w = a.heads * a.head_dim;
  pool.parallel_for(tasks.size(), 1, [&](std::size_t t0, std::size_t t1) {
    thread_local std::vector<float> scores;
    for (std::size_t t = t0; t < t1; ++t) {
      const Task& task = tasks[t];
      const std::size_t start = static_cast<std::size_t>(a.seq_starts[task.seq]);
      const std::size_t len = static_cast<std::size_t>(a.seq_starts[task.seq + 1]) - start;
      const std::size_t col = task.head * hd;
      scores.resize(len);
      for (std::size_t r = 0; r < task.rows; ++r) {
        const std::size_t i = task.row0 + r;
        const float* qi = q + (start + i) * a.q.ld + col;
        float mx = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < len; ++j) {
          const float* kj = k + (start + j) * a.k.ld + col;
          const std::size_t m = static_cast<std::size_t>(
              a.rel_index[static_cast<std::ptrdiff_t>(i) - static_cast<std::ptrdiff_t>(j) +
                          static_cast<std::ptrdiff_t>(a.max_len) - 1]);
          float s = dot(qi, kj, hd);
          if (a.pos_key) s += dot(qi, a.pos_key + m * w + col, hd);
          if (a.pos_query) s += dot(kj, a.pos_query + m * w + col, hd);
          s *= a.scale;
          scores[j] = s;
          mx = std::max(mx, s);
        }
        float sum = 0.0f;
        for (std::size_t j = 0; j < len; ++j) {
          scores[j] = fast_exp(scores[j] - mx);
          sum += scores[j];
        }
        const float inv = 1.0f / sum;
        float* o = out + (start + i) * a.out.ld + col;
        std::fill_n(o, hd, 0.0f);
        for (std::size_t j = 0; j < len; ++j) {
          const float p = scores[j] * inv;
          const float* vj = v + (start + j) * a.v.ld + col;
          for (std::size_t d = 0; d < hd; ++d) o[d] += p * vj[d];
        }
      }
    }
  });
}

}  // namespace il::ops
