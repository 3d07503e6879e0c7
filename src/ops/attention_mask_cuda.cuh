// The keys query row i of a sequence of `len` may see, [lo, hi), for the CUDA attention kernels
// (f32 and tensor-core): bidirectional (all), causal (up to i), and a local window of ±half_window
// around i (half_window < 0: none). `p` is a kernel's parameter block with `causal` and
// `half_window` members. The CPU op's key_range (attention_cpu.cc) is the reference semantics.
#pragma once

namespace il::ops {

template <typename Params>
__device__ __forceinline__ void key_range(const Params& p, int i, int len, int& lo, int& hi) {
  lo = 0;
  hi = p.causal ? i + 1 : len;
  if (p.half_window >= 0) {
    lo = max(0, i - p.half_window);
    hi = min(hi, i + p.half_window + 1);
  }
}

}  // namespace il::ops
