// The register-blocked inner kernels behind gemm_packed_cpu, one per instruction set.
//
// A kernel computes one tile of C = A · B for up to `mr` rows and one panel of kPanel columns:
// A comes packed as kc steps of `mr` floats (the tile's rows side by side), B as kc steps of
// kPanel floats (a panel of the pre-packed weight). The ISA-specific kernels live in their own
// translation units built with their own -m flags and include nothing but intrinsics, so no
// inline function compiled for AVX-512 can leak into code that runs on an older CPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace il::ops::gemm_kernel {

inline constexpr std::size_t kPanel = 32;  // columns per packed weight panel

struct Tile {
  const float* a = nullptr;  // A: packed kc × mr (lda == 0), or row-major rows lda floats apart
  // 0: `a` is a packed micro-panel. Otherwise A is read in place, row r at a + r * lda: a short
  // batch (one row block) skips the packing pass and the synchronisation it costs.
  std::size_t lda = 0;
  // Packed B: kc rows kPanel floats apart, 64-byte aligned. A tile of at most 16 columns may
  // point at the second half of the rows (panel + 16) and then reads only 16 floats per row.
  const float* b = nullptr;
  float* c = nullptr;
  std::size_t ldc = 0;
  std::size_t kc = 0;
  std::size_t rows = 0;          // 1 … mr rows of C to compute
  std::size_t cols = 0;          // 1 … kPanel columns of C to compute and store
  const float* init = nullptr;   // when !accumulate: `cols` floats added to every row (bias), or null
  bool accumulate = false;       // add to C instead of overwriting it
  // Rows of the B block the caller computes next (same layout: rows kPanel floats apart), or
  // null. Every `prefetch_every` k steps the kernel asks for the next of those rows (both 64-byte
  // halves when prefetch_wide) into L2, so a weight streamed from memory arrives while this
  // tile computes instead of stalling the next one: a short batch otherwise pays memory time
  // plus compute time. Spreading the requests keeps them at about the rate memory delivers;
  // issued all at once they would fill the core's miss buffers and stall the FMAs instead.
  // Only the AVX-512 kernel acts on it so far (the others ignore it).
  const float* prefetch = nullptr;
  bool prefetch_wide = false;
  std::size_t prefetch_every = 1;
};

using TileFn = void (*)(const Tile&);

struct Kernel {
  const char* name = nullptr;
  std::size_t mr = 0;   // rows per packed A micro-panel
  TileFn tile = nullptr;
};

// Each returns a kernel whose `tile` is null when the compiler could not build it.
Kernel avx512_kernel();
Kernel avx2_kernel();
Kernel generic_kernel();

// Selection (gemm_kernel_select.cc): the kernels this build and CPU run, fastest first (generic
// always last); the default is the first, or the one IL_GEMM_KERNEL names.
const std::vector<Kernel>& runnable_kernels();
const Kernel& kernel_named(const std::string& name);  // il::Error when not runnable here
const Kernel& default_kernel();

}  // namespace il::ops::gemm_kernel
