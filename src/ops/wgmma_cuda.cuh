// PTX wrappers for the Hopper (sm_90a) GEMM of ops/gemm_wgmma_cuda.cu: shared-memory barriers
// (mbarrier), tensor-memory-accelerator copies (cp.async.bulk.tensor) and warpgroup matrix
// multiply-accumulate (wgmma). Only device code compiled for sm_90a may call them: wgmma and
// setmaxnreg exist on that target alone, not on sm_90 nor on later GPUs.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace il::ops::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// --- mbarrier: a phase completes when its expected arrivals (and, for TMA, bytes) are in.
__device__ __forceinline__ void barrier_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}
// Makes initialised barriers visible to the async proxy (the TMA unit) before first use.
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void barrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival that also announces `bytes` still to land through TMA copies.
__device__ __forceinline__ void barrier_arrive_expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Spins until the phase with the given parity has completed.
__device__ __forceinline__ void barrier_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// --- TMA: a 2-D box of a global tensor (described by a CUtensorMap) into shared memory; the
// barrier's transaction count drops by the box's bytes when it has landed (out-of-range elements
// arrive as zeros and count too).
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int inner, int outer, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(bar)
      : "memory");
}

// --- Clusters (a pair of blocks on neighbouring SMs that see each other's shared memory).
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of every block in the cluster: arrives, then waits for all the others (release /
// acquire: shared-memory writes and barrier initialisations before it are visible after it).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// One arrival on the barrier at the same shared-memory offset in block `rank` of the cluster.
// The default (.release at CTA scope) is enough to signal "done reading this stage"; the
// cluster-scope release form made the GEMM's k loop about twice as slow.
__device__ __forceinline__ void barrier_arrive_in(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
// tma_load_2d into the same offset of every block in `mask` (bit r: cluster rank r); each
// destination block's barrier at offset `bar` receives the box's bytes.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, int inner, int outer,
                                                      uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(bar), "h"(mask)
      : "memory");
}

// Moves registers between warpgroups: the whole warpgroup lowers (dec) or raises (inc) its
// per-thread register count; the block's total must stay within what it was launched with.
template <int N>
__device__ __forceinline__ void registers_decrease() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_increase() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// The reverse: a 2-D box from shared memory into a global tensor, as one bulk-async group
// (rows and columns outside the tensor are not written).
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(inner), "r"(outer)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Waits until the committed stores have read their shared-memory source (the buffer may be
// rewritten) or, for bulk_wait_all, have completed.
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Makes this thread's ordinary shared-memory writes visible to the TMA unit.
__device__ __forceinline__ void fence_shared_for_tma() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// A barrier for `threads` threads (whole warps) under hardware barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// --- wgmma: a warpgroup (4 warps) multiplies a 64 × 16 tile of A by a 16 × N tile of B, both
// read from shared memory through descriptors, into f32 accumulators held in registers.

// A descriptor of a K-major tile written by TMA with 128-byte swizzling: rows of 64 half values
// (128 bytes), 8-row groups 1024 bytes apart (the stride byte offset); the leading byte offset is
// unused for this layout (1 by convention). The tile must start 1024-byte aligned; a k offset
// inside the 128-byte row moves the start address (k16 step = 32 bytes).
__device__ __forceinline__ uint64_t kmajor_sw128_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

// Orders this thread's register accesses before the warpgroup's next wgmma.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of accumulator registers across the asynchronous mma.
template <int R>
__device__ __forceinline__ void fence_registers(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// D[64 × N] += A · Bᵀ with A and B K-major (scale-d = 1: accumulate); the element type (__half or
// __nv_bfloat16) is the tag, pasted into the instruction's name.
#define IL_WGMMA_M64N128K16(TY)                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                          \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY "\n{"        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
               "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
               : "l"(a), "l"(b), "r"(1))

template <typename T>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t a, uint64_t b, T) {
  if constexpr (std::is_same_v<T, __half>)
    IL_WGMMA_M64N128K16("f16");
  else
    IL_WGMMA_M64N128K16("bf16");
}
#undef IL_WGMMA_M64N128K16

#define IL_WGMMA_M64N192K16(TY)                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"                          \
               "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY "\n{"        \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95" \
               "}, %96, %97, p, 1, 1, 0, 0;\n}\n"                                \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
               : "l"(a), "l"(b), "r"(1))

template <typename T>
__device__ __forceinline__ void wgmma_m64n192k16(float (&d)[96], uint64_t a, uint64_t b, T) {
  if constexpr (std::is_same_v<T, __half>)
    IL_WGMMA_M64N192K16("f16");
  else
    IL_WGMMA_M64N192K16("bf16");
}
#undef IL_WGMMA_M64N192K16


// --- The attention kernel's shapes (ops/attention_wgmma_cuda.cu): N = 64 (a key tile, or a
// head of 64), N = 8 (row sums against a ones operand).

// Descriptor of a tile of 64-element (128-byte) rows in the 128-byte swizzled layout read as an
// MN-major B operand (with imm-trans-b = 1): N runs along a row (one swizzle atom, 64 elements),
// K down the rows, 8-row groups 1024 bytes apart. The same bits as kmajor_sw128_desc; the
// instruction's transpose flag says which way the rows are read.
__device__ __forceinline__ uint64_t mnmajor_sw128_desc(uint32_t addr) { return kmajor_sw128_desc(addr); }

// D[64 × 64] (+)= A · Bᵀ, A and B from shared memory (K-major); scale_d 0 overwrites D.
#define IL_WGMMA_SS_M64N64K16(TY)                                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY "\n{" OUT32 "}, %32, %33, p, 1, 1, 0, 0;\n}\n" \
               : REGS32                                                                        \
               : "l"(a), "l"(b), "r"(scale_d))
// D[64 × 64] += A · B, A from registers (the m16n8k16 A-fragment layout per warp, four 32-bit
// registers of element pairs), B from shared memory MN-major (imm-trans-b = 1).
#define IL_WGMMA_RS_M64N64K16_TB(TY)                                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                   \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY "\n{" OUT32 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n" \
               : REGS32                                                                        \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
// D[64 × 8] += A · Bᵀ, A from registers, B K-major from shared memory.
#define IL_WGMMA_RS_M64N8K16(TY)                                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"                                    \
               "wgmma.mma_async.sync.aligned.m64n8k16.f32." TY "." TY "\n{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
#define OUT32 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define REGS32 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

template <typename T>
__device__ __forceinline__ void wgmma_ss_m64n64k16(float (&d)[32], uint64_t a, uint64_t b, uint32_t scale_d, T) {
  if constexpr (std::is_same_v<T, __half>)
    IL_WGMMA_SS_M64N64K16("f16");
  else
    IL_WGMMA_SS_M64N64K16("bf16");
}
template <typename T>
__device__ __forceinline__ void wgmma_rs_m64n64k16_tb(float (&d)[32], const uint32_t (&a)[4], uint64_t b, T) {
  if constexpr (std::is_same_v<T, __half>)
    IL_WGMMA_RS_M64N64K16_TB("f16");
  else
    IL_WGMMA_RS_M64N64K16_TB("bf16");
}
template <typename T>
__device__ __forceinline__ void wgmma_rs_m64n8k16(float (&d)[4], const uint32_t (&a)[4], uint64_t b, T) {
  if constexpr (std::is_same_v<T, __half>)
    IL_WGMMA_RS_M64N8K16("f16");
  else
    IL_WGMMA_RS_M64N8K16("bf16");
}
// D[64 × 128] (+)= A · Bᵀ, both K-major in shared memory; scale_d 0 overwrites D (the
// attention kernel's scores of a 128-key tile, ops/attention_tma_cuda.cu).
#define IL_WGMMA_SS_M64N128K16(TY)                                                             \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                  \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY "\n{" OUT32 ", " OUT32_HI "}, %64, %65, p, 1, 1, 0, 0;\n}\n" \
               : REGS32, REGS32_HI                                                             \
               : "l"(a), "l"(b), "r"(scale_d))
#define OUT32_HI "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define REGS32_HI "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
template <typename T>
__device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], uint64_t a, uint64_t b, uint32_t scale_d, T) {
  if constexpr (std::is_same_v<T, __half>)
    IL_WGMMA_SS_M64N128K16("f16");
  else
    IL_WGMMA_SS_M64N128K16("bf16");
}
#undef OUT32_HI
#undef REGS32_HI
#undef IL_WGMMA_SS_M64N128K16
#undef OUT32
#undef REGS32
#undef IL_WGMMA_SS_M64N64K16
#undef IL_WGMMA_RS_M64N64K16_TB
#undef IL_WGMMA_RS_M64N8K16

}  // namespace il::ops::sm90
