#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/activation.h"
#include "ops/blas.h"
#include "ops/gemm.h"

namespace il::ops {
namespace {

constexpr std::size_t kMinTileRows = 64;   // BLAS kernels lose efficiency on thinner row blocks
constexpr std::size_t kColAlign = 16;      // column tiles stay multiples of a vector register pair
constexpr std::size_t kSerialWork = 1u << 18;  // m·n·k below which splitting costs more than it saves

// One tile: rows [r0, r1) × columns [c0, c1) of y, with the bias and activation applied while
// the tile is still in cache.
void gemm_tile(const GemmArgs& a, std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
  const std::size_t m = r1 - r0, n = c1 - c0;
  float* y = a.y + r0 * a.ldy + c0;
  float beta = 0.0f;
  if (a.bias) {
    for (std::size_t i = 0; i < m; ++i) std::memcpy(y + i * a.ldy, a.bias + c0, n * sizeof(float));
    beta = 1.0f;
  }
  if (a.k == 0) {
    if (!a.bias)
      for (std::size_t i = 0; i < m; ++i) std::fill_n(y + i * a.ldy, n, 0.0f);
  } else {
    blas::sgemm_nt(m, n, a.k, a.x + r0 * a.ldx, a.ldx, a.w + c0 * a.k, a.k, beta, y, a.ldy);
  }
  apply_activation_rows(a.act, y, m, n, a.ldy);
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

}  // namespace

void check_gemm(const GemmArgs& a) {
  check(a.x && a.w && a.y, "gemm: null operand");
  check(a.ldx >= a.k && a.ldy >= a.n, "gemm: row stride smaller than the row (ldx ", a.ldx,
        " k ", a.k, " ldy ", a.ldy, " n ", a.n, ")");
}

void gemm_cpu(const GemmArgs& a, ThreadPool& pool) {
  check_gemm(a);
  if (a.m == 0 || a.n == 0) return;
  const std::size_t threads = pool.size();
  if (threads == 1 || a.m * a.n * std::max<std::size_t>(a.k, 1) < kSerialWork) {
    gemm_tile(a, 0, a.m, 0, a.n);
    return;
  }
  // A grid of about one tile per thread: as many row blocks as keep kMinTileRows rows each,
  // the rest of the split along columns (contiguous rows of W).
  const std::size_t row_parts = std::clamp<std::size_t>(a.m / kMinTileRows, 1, threads);
  const std::size_t col_parts = std::min(ceil_div(threads, row_parts), ceil_div(a.n, kColAlign));
  const std::size_t rows = ceil_div(a.m, row_parts);
  const std::size_t cols = ceil_div(ceil_div(a.n, col_parts), kColAlign) * kColAlign;
  const std::size_t nr = ceil_div(a.m, rows), nc = ceil_div(a.n, cols);
  pool.parallel_for(nr * nc, 1, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t) {
      const std::size_t r0 = (t / nc) * rows, c0 = (t % nc) * cols;
      gemm_tile(a, r0, std::min(a.m, r0 + rows), c0, std::min(a.n, c0 + cols));
    }
  });
}

}  // namespace il::ops
