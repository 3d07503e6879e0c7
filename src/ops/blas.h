// The BLAS the CPU GEMM calls: OpenBLAS, loaded at first use.
//
// OpenBLAS picks its kernels when it is loaded, from the CPU model, and a model newer than the
// library (a 2023 Xeon under OpenBLAS 0.3.21) falls back to its slowest SSE kernels: measured
// 4× slower GEMMs. Loading it ourselves lets us name the kernel family from the CPU's features
// first (OPENBLAS_CORETYPE, unless the user set it). BLAS runs single-threaded inside each of our
// pool's tasks, so one thread pool owns the cores.
#pragma once

#include <cstddef>
#include <string>

namespace il::ops::blas {

// Row-major c[m, n] = a[m, k] · b[n, k]ᵀ + beta · c. Thread-safe; single-threaded inside.
void sgemm_nt(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
              const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

// "OpenBLAS 0.3.21 … (core SkylakeX)", for info and bench output.
std::string describe();

}  // namespace il::ops::blas
