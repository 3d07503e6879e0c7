// A Hopper GEMM for f16 / bf16 with the bias and activation in its epilogue:
// y[m, n] = act(x[m, k] · W[n, k]ᵀ + bias[n]), f32 accumulation, one rounding of the result.
//
// Why: cuBLASLt runs bge-base's GEMMs at about 720 TFLOP/s, but its only GELU epilogue is the
// tanh approximation, so an erf-GELU model paid a separate pass over the up-projection's output
// (32768 × 3072 values read and written again at 128×256: 0.12 ms a layer, 1.46 ms a forward).
// Here the activation is applied to the accumulators before the one store.
//
// How (sm_90a only: wgmma exists on that target alone; compiled for it whatever the build's
// architecture list, used only on compute capability 9.0 devices). One block per SM
// (persistent: block b takes tiles b, b + gridDim.x, ...), three warpgroups:
// - a producer streams the k blocks (kBK = 64 columns of x and W) of the block's tiles, in
//   order, through a ring of kStages shared-memory stages, filled by the tensor memory
//   accelerator (TMA) with 128-byte swizzling, the layout wgmma reads without bank conflicts.
//   Out-of-range rows and columns arrive as zeros, so any m, n and k (k a multiple of 8 for the
//   row pitch) is handled without tails;
// - two consumer warpgroups take alternate tiles ("ping-pong"): each computes a whole
//   kBM × BN tile (two m64nBNk16 wgmma per 16 columns of k, 128 × BN / 128 f32 accumulators a
//   thread), applies bias and activation, writes the tile to its own shared-memory buffer and
//   hands it to TMA stores. Because the ring is filled in tile order, one warpgroup's k loop runs
//   while the other is in its epilogue, so the epilogue's arithmetic (the erf-GELU is about 20
//   instructions a value) leaves the tensor cores busy; "turn" barriers make the two k loops
//   alternate;
// - a stage is released when its warpgroup's wgmma.wait_group says the multiplies reading it are
//   done (one arrival per warp on the stage's "empty" barrier); the producer then refills it.
// Measured on the H200 (bge-base shapes, m = 32768, f16; docs/perf-history.md): both warpgroups on
// one tile ran the k = 768 GEMMs at 360–450 TFLOP/s against cuBLASLt's 580–730; ping-pong with
// stores from registers 425–478; the stores were the bound (without them 608–670), hence the TMA
// stores: 508–578, and the up-projection with its erf-GELU 0.318 ms against cuBLASLt and the
// separate pass 0.332. The tuner (CublasLtGemm) times this kernel against cuBLASLt per shape and
// keeps the faster, where IL_GEMM_WGMMA=1 lets it compete.
//
// Blocks run in pairs (2-block clusters) by default: the pair takes row tiles 2p and 2p + 1 of
// one column tile in step, and each block's producer loads half of the shared W block into both
// (TMA multicast), so a stage costs L2 24 KB instead of 32 (Nsight Compute: L2 throughput 53 %
// against 71 %). At full clock that changed little (qkv 582–597 against 587 TFLOP/s, the
// attention output 481–494 against 501); at the H200's power cap, where a large f16 forward
// runs, pairs are faster (down-projection 465–531 against 422–436, the fused up-projection
// 351–425 against 333–348, level with cuBLASLt plus the pass, 412–422), but cuBLASLt stays
// ahead on the plain shapes (down 622–626). IL_GEMM_WGMMA_CLUSTER=1 runs single blocks.
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "core/env.h"
#include "ops/activation_cuda.cuh"
#include "ops/check_cuda.h"
#include "ops/gemm_cuda.h"
#include "ops/launch_cuda.cuh"
#include "ops/tensor_map_cuda.h"
#include "ops/wgmma_cuda.cuh"

namespace il::ops {
namespace {

constexpr int kBM = 128, kBK = 64;
// Warpgroups 0 and 1 consume (wgmma), warpgroup 2 produces (one lane issues the copies). The
// block is launched at 168 registers a thread; the producer gives most of its share to the
// consumers (setmaxnreg), whose 128 × BN / 128 accumulators need up to 192 of them.
constexpr int kConsumerThreads = 256, kThreads = kConsumerThreads + 128;
constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;

template <int BN>
struct Tile {
  static constexpr uint32_t kBytesX = kBM * kBK * 2, kBytesW = BN * kBK * 2, kStageBytes = kBytesX + kBytesW;
  // Each consumer warpgroup stages its finished tile here for the TMA store: 64-row × 64-column
  // boxes of 8 KB (BN / 64 across, two down), in the 128-byte swizzled layout.
  static constexpr uint32_t kOutBytes = kBM * BN * 2;
  // What fits in 227 KB with the two output tiles: 4 stages at BN = 128, 3 at BN = 192.
  static constexpr int kStages = BN == 192 ? 3 : 4;
  // Stages (1024-byte aligned for the swizzle), the two output tiles, then the full and empty
  // barriers of each stage and the two turn barriers, plus the slack to align the dynamic
  // shared memory's start.
  static constexpr std::size_t kSharedBytes = kStages * kStageBytes + 2 * kOutBytes + (2 * kStages + 2) * 8 + 1024;
  static_assert(kSharedBytes <= 227 * 1024, "more shared memory than an SM offers a block");
};

template <typename T>
struct PairOf;
template <>
struct PairOf<__half> {
  using type = __half2;
  static __device__ __forceinline__ type make(float a, float b) { return __floats2half2_rn(a, b); }
  static __device__ __forceinline__ float2 split(type v) { return __half22float2(v); }
};
template <>
struct PairOf<__nv_bfloat16> {
  using type = __nv_bfloat162;
  static __device__ __forceinline__ type make(float a, float b) { return __floats2bfloat162_rn(a, b); }
  static __device__ __forceinline__ float2 split(type v) { return __bfloat1622float2(v); }
};

template <typename T, int BN>
__device__ __forceinline__ void wgmma_rows64(float (&acc)[BN / 2], uint64_t a, uint64_t b) {
  if constexpr (BN == 192)
    sm90::wgmma_m64n192k16(acc, a, b, T{});
  else
    sm90::wgmma_m64n128k16(acc, a, b, T{});
}

// C is the cluster size (1 or 2). With 2, the blocks of a pair take row tiles 2p and 2p + 1 of
// the same column tile in step, and each loads half of the shared W block into both: a quarter
// less traffic from L2 per stage (x 16 KB + W 8 KB instead of 16 + 16 at BN = 128).
template <typename T, int BN, Activation A, int C>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                      const __grid_constant__ CUtensorMap map_y, const T* __restrict__ bias, int m, int n, int k) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Cfg = Tile<BN>;
  constexpr int S = Cfg::kStages;
  extern __shared__ unsigned char shared_raw[];
  const uint32_t base = (sm90::smem_addr(shared_raw) + 1023u) & ~1023u;
  const uint32_t out_tiles = base + S * Cfg::kStageBytes;
  const uint32_t full = out_tiles + 2 * Cfg::kOutBytes, empty = full + S * 8, turn = empty + S * 8;
  const int tid = static_cast<int>(threadIdx.x), group = tid / 128, warp = tid / 32, lane = tid % 32;
  // Column tiles run fastest, so the tiles in flight together share x rows and read all of W
  // from L2. A "tile" below is a cluster's: C row tiles of kBM (rank r takes the r-th; one past
  // m loads zeros and stores nothing) by one column tile.
  const int tiles_n = (n + BN - 1) / BN, tiles = ((m + kBM - 1) / kBM + C - 1) / C * tiles_n;
  const int steps = (k + kBK - 1) / kBK;  // k blocks per tile
  const int rank = C > 1 ? static_cast<int>(sm90::cluster_rank()) : 0;
  const int block = static_cast<int>(blockIdx.x) / C, grid = static_cast<int>(gridDim.x) / C;
  const int my_tiles = tiles > block ? (tiles - 1 - block) / grid + 1 : 0;

  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      sm90::barrier_init(full + 8 * s, 1);
      // The warps of the one warpgroup that reads it, in every block of the cluster: a block's
      // producer refills the stage in all of them.
      sm90::barrier_init(empty + 8 * s, 4 * C);
    }
    sm90::barrier_init(turn, 4);
    sm90::barrier_init(turn + 8, 4);
    sm90::barrier_init_fence();
  }
  if constexpr (C > 1)
    sm90::cluster_sync();  // the peer's barriers are initialised before anything arrives on them
  else
    __syncthreads();
  pdl::wait_for_predecessor();  // x is the previous kernel's output

  if (tid >= kConsumerThreads) {
    // The producer (one lane): k block g of the block's sequence (tile g / steps of this block)
    // into stage g % S once the stage's previous k block has been released.
    sm90::registers_decrease<kProducerRegisters>();
    for (int g = 0; tid == kConsumerThreads && g < my_tiles * steps; ++g) {
      const int s = g % S;
      if (g >= S) sm90::barrier_wait(empty + 8 * s, (g / S - 1) & 1);
      const int tile = block + g / steps * grid, kb = g % steps;
      const uint32_t dst = base + s * Cfg::kStageBytes;
      sm90::barrier_arrive_expect_bytes(full + 8 * s, Cfg::kStageBytes);  // x, and W from both
      sm90::tma_load_2d(dst, &map_x, kb * kBK, (tile / tiles_n * C + rank) * kBM, full + 8 * s);
      if constexpr (C > 1)
        sm90::tma_load_2d_multicast(dst + Cfg::kBytesX + rank * (Cfg::kBytesW / C), &map_w, kb * kBK,
                                    tile % tiles_n * BN + rank * (BN / C), full + 8 * s, (1u << C) - 1);
      else
        sm90::tma_load_2d(dst + Cfg::kBytesX, &map_w, kb * kBK, tile % tiles_n * BN, full + 8 * s);
    }
    if constexpr (C > 1) sm90::cluster_sync();  // see the end of the consumers
    return;
  }

  sm90::registers_increase<kConsumerRegisters>();
  using Pair = PairOf<T>;
  const auto release = [rank](uint32_t bar) {  // this warp is done with the stage, in every block
    sm90::barrier_arrive(bar);
    for (int r = 1; r < C; ++r) sm90::barrier_arrive_in(bar, static_cast<uint32_t>((rank + r) % C));
  };
  float acc[2][BN / 2];  // rows 0–63 and 64–127 of the tile
  // This warpgroup's tiles: every other one. Their k loops take turns: turn barrier c
  // completes a phase when the other warpgroup has issued its last multiply of the tile before.
  // Besides keeping the tensor cores to one k loop at a time, the turns keep every wait on a
  // full barrier within one phase of the barrier's state (a parity wait cannot tell phase p
  // from p + 2): all k blocks of earlier tiles have landed when a tile's k loop starts.
  for (int i = group, j = 0; i < my_tiles; i += 2, ++j) {
    if (group == 1 || j > 0) sm90::barrier_wait(turn + 8 * group, (group == 1 ? j : j - 1) & 1);
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < BN / 2; ++e) acc[h][e] = 0.0f;
    for (int kb = 0; kb < steps; ++kb) {
      const int g = i * steps + kb, s = g % S;
      sm90::barrier_wait(full + 8 * s, (g / S) & 1);
      const uint32_t x_tile = base + s * Cfg::kStageBytes, w_tile = x_tile + Cfg::kBytesX;
      sm90::fence_registers(acc[0]);
      sm90::fence_registers(acc[1]);
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        const uint64_t w_desc = sm90::kmajor_sw128_desc(w_tile + kk * 32);
        wgmma_rows64<T, BN>(acc[0], sm90::kmajor_sw128_desc(x_tile + kk * 32), w_desc);
        wgmma_rows64<T, BN>(acc[1], sm90::kmajor_sw128_desc(x_tile + 64 * 128 + kk * 32), w_desc);
      }
      sm90::wgmma_commit();
      sm90::wgmma_wait<1>();  // the previous k block's multiplies are done: release its stage
      sm90::fence_registers(acc[0]);
      sm90::fence_registers(acc[1]);
      if (kb > 0 && lane == 0) release(empty + 8 * ((g - 1) % S));
    }
    if (lane == 0) sm90::barrier_arrive(turn + 8 * (1 - group));  // the other warpgroup's turn
    sm90::wgmma_wait<0>();
    sm90::fence_registers(acc[0]);
    sm90::fence_registers(acc[1]);
    if (lane == 0) release(empty + 8 * ((i * steps + steps - 1) % S));

    // Epilogue: bias and activation in f32, one rounding, into this warpgroup's output tile in
    // shared memory, then one TMA store per 64 × 64 box (clipped to m × n by the unit), which
    // runs while the warpgroup goes on to its next k loop. Accumulator e of a 64-row half is
    // 8-column chunk e / 4, row lane / 4 (+ 8 for the upper two of each four), columns
    // 2 (lane % 4) and the next. In a box row (128 bytes) 16-byte chunk q sits at q ^ (row % 8):
    // the 128-byte swizzle, which also spreads a warp's eight rows over all banks.
    const int tile = block + i * grid;
    const int m0 = (tile / tiles_n * C + rank) * kBM, n0 = tile % tiles_n * BN;
    const uint32_t out = out_tiles + group * Cfg::kOutBytes;
    const bool leader = tid % 128 == 0;
    if (leader) sm90::bulk_wait_read();  // the previous tile's stores have read the buffer
    sm90::named_barrier(1 + group, 128);
#pragma unroll
    for (int c = 0; c < BN / 8; ++c) {
      const int col = c * 8 + (lane % 4) * 2;  // in the tile
      float2 b = make_float2(0.0f, 0.0f);
      if (bias != nullptr && n0 + col < n)  // n is even: col + 1 < n too
        b = Pair::split(*reinterpret_cast<const typename Pair::type*>(bias + n0 + col));
      const uint32_t box_col = out + (col / 64) * 8192 + (col % 8) * 2;
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int row = (warp % 4) * 16 + lane / 4 + (h % 2) * 8;  // in the 64-row half h / 2
        const float v0 = act::activate_for<A, T>(acc[h / 2][c * 4 + (h % 2) * 2] + b.x);
        const float v1 = act::activate_for<A, T>(acc[h / 2][c * 4 + (h % 2) * 2 + 1] + b.y);
        const typename Pair::type v = Pair::make(v0, v1);
        const uint32_t addr = box_col + (h / 2) * (BN / 64) * 8192 + row * 128 + ((((col % 64) / 8) ^ (row % 8)) * 16);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(*reinterpret_cast<const uint32_t*>(&v)) : "memory");
      }
    }
    sm90::fence_shared_for_tma();
    sm90::named_barrier(1 + group, 128);
    if (leader) {
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int p = 0; p < BN / 64; ++p)
          sm90::tma_store_2d(&map_y, out + (half * (BN / 64) + p) * 8192, n0 + p * 64, m0 + half * 64);
      sm90::bulk_commit();
    }
  }
  if (tid % 128 == 0) sm90::bulk_wait_all();  // the shared memory must outlive the stores
  // No block of a cluster leaves while the other may still arrive on its barriers or copy into
  // its stages (the producer warpgroup takes part from its own branch).
  if constexpr (C > 1) sm90::cluster_sync();
#else
  (void)map_x, (void)map_w, (void)map_y, (void)bias, (void)m, (void)n, (void)k;
  __trap();  // never launched: wgmma_gemm_applies requires a compute capability 9.0 device
#endif
}

CUtensorMap tensor_map(const void* data, std::size_t rows, std::size_t cols, std::size_t ld, uint32_t box_rows,
                       uint32_t box_cols, DType t) {
  return tensor_map_2d(data, rows, cols, ld, box_rows, box_cols, t == DType::kBF16, "wgmma gemm");
}

int sm_count() {
  int device = 0, count = 0;
  IL_CUDA_CHECK(cudaGetDevice(&device));
  IL_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// How many clusters of C blocks the device holds at once (one block an SM; a pair must sit in one
// GPC, so with C = 2 an odd SM out per GPC stays idle). The persistent grid is that many, never a
// second wave.
template <typename T, int BN, Activation A, int C>
int resident_clusters(std::size_t shared_bytes) {
  int device = 0;
  IL_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<int, int> per_device;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = per_device.find(device); it != per_device.end()) return it->second;
  int clusters = sm_count();
  if (C > 1) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(C));
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = shared_bytes;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = C;
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    IL_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, wgmma_gemm_kernel<T, BN, A, C>, &cfg));
    check(clusters > 0, "wgmma gemm: no cluster of ", C, " blocks fits on this device");
  }
  per_device.emplace(device, clusters);
  return clusters;
}

// Launches (or, with go false, only sizes) the kernel; returns the grid's block count.
template <typename T, int BN, Activation A, int C>
unsigned launch(const GemmCudaArgs& a, cudaStream_t stream, bool go) {
  using Cfg = Tile<BN>;
  static std::once_flag once;
  std::call_once(once, [] {
    IL_CUDA_CHECK(cudaFuncSetAttribute(wgmma_gemm_kernel<T, BN, A, C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(Cfg::kSharedBytes)));
  });
  const CUtensorMap map_x = tensor_map(a.x.data, a.m, a.k, a.x.ld, kBM, kBK, a.type());
  const CUtensorMap map_w = tensor_map(a.w.data, a.n, a.k, a.k, BN / C, kBK, a.type());
  const CUtensorMap map_y = tensor_map(a.y.data, a.m, a.n, a.y.ld, 64, 64, a.type());
  const std::size_t tiles = ((a.m + kBM - 1) / kBM + C - 1) / C * ((a.n + BN - 1) / BN);
  const auto clusters =
      std::min<std::size_t>(tiles, static_cast<std::size_t>(resident_clusters<T, BN, A, C>(Cfg::kSharedBytes)));
  if (!go) return static_cast<unsigned>(clusters * C);
  cudaLaunchAttribute attrs[2]{};
  attrs[0].id = cudaLaunchAttributeClusterDimension;
  attrs[0].val.clusterDim.x = C;
  attrs[0].val.clusterDim.y = attrs[0].val.clusterDim.z = 1;
  attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[1].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * C));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = Cfg::kSharedBytes;
  cfg.stream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = pdl::enabled() ? 2 : 1;
  IL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, wgmma_gemm_kernel<T, BN, A, C>, map_x, map_w, map_y,
                                   static_cast<const T*>(a.bias.data), static_cast<int>(a.m), static_cast<int>(a.n),
                                   static_cast<int>(a.k)));
  return static_cast<unsigned>(clusters * C);
}

// The default cluster size: pairs, unless IL_GEMM_WGMMA_CLUSTER=1 (single blocks, for comparison).
int default_cluster() {
  static const int c = env::equals("IL_GEMM_WGMMA_CLUSTER", "1") ? 1 : 2;
  return c;
}

template <typename T, int BN, Activation A>
unsigned launch_clustered(const GemmCudaArgs& a, int cluster, cudaStream_t stream, bool go) {
  if (cluster == 1) return launch<T, BN, A, 1>(a, stream, go);
  return launch<T, BN, A, 2>(a, stream, go);
}

template <typename T, int BN>
unsigned launch_for_activation(const GemmCudaArgs& a, int cluster, cudaStream_t stream, bool go) {
  switch (a.act) {
    case Activation::kNone: return launch_clustered<T, BN, Activation::kNone>(a, cluster, stream, go);
    case Activation::kGeluErf: return launch_clustered<T, BN, Activation::kGeluErf>(a, cluster, stream, go);
    case Activation::kGeluTanh: return launch_clustered<T, BN, Activation::kGeluTanh>(a, cluster, stream, go);
    default: check(false, "wgmma gemm: activation ", activation_name(a.act), " is not compiled in");
  }
  return 0;
}

unsigned dispatch(const GemmCudaArgs& a, int tile_n, int cluster, cudaStream_t stream, bool go) {
  check(wgmma_gemm_applies(a), "wgmma gemm: shape, alignment, activation or device it does not handle (m ", a.m,
        ", n ", a.n, ", k ", a.k, ")");
  check(tile_n == 128 || tile_n == 192, "wgmma gemm: tile width must be 128 or 192, got ", tile_n);
  check(cluster >= 0 && cluster <= 2, "wgmma gemm: cluster size must be 1 or 2 (0: the default), got ", cluster);
  if (cluster == 0) cluster = default_cluster();
  if (a.type() == DType::kF16) {
    if (tile_n == 192) return launch_for_activation<__half, 192>(a, cluster, stream, go);
    return launch_for_activation<__half, 128>(a, cluster, stream, go);
  }
  if (tile_n == 192) return launch_for_activation<__nv_bfloat16, 192>(a, cluster, stream, go);
  return launch_for_activation<__nv_bfloat16, 128>(a, cluster, stream, go);
}

}  // namespace

bool wgmma_gemm_applies(const GemmCudaArgs& a) {
  if (a.transpose_w) return false;  // the TMA tiles of W run along k
  if (a.type() == DType::kF32 || a.m == 0 || a.n == 0 || a.k == 0) return false;
  if (a.act != Activation::kNone && a.act != Activation::kGeluErf && a.act != Activation::kGeluTanh) return false;
  const auto aligned = [](const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; };
  // TMA (x and W in, y out): 16-byte aligned bases and row pitches; bias read as pairs.
  if (!aligned(a.x.data, 16) || !aligned(a.w.data, 16) || a.x.ld % 8 != 0 || a.k % 8 != 0) return false;
  if (!aligned(a.y.data, 16) || a.y.ld % 8 != 0 || a.n % 2 != 0 || (a.bias.data != nullptr && !aligned(a.bias.data, 4))) return false;
  if (a.m >= (std::size_t{1} << 31) || a.n >= (std::size_t{1} << 31) || a.k >= (std::size_t{1} << 31) ||
      a.y.ld >= (std::size_t{1} << 31))
    return false;
  return current_device_is_sm90() && tensor_maps_available();
}

void wgmma_gemm_cuda(const GemmCudaArgs& a, int tile_n, cudaStream_t stream, int cluster) {
  dispatch(a, tile_n, cluster, stream, true);
}

unsigned wgmma_gemm_blocks(const GemmCudaArgs& a, int tile_n, int cluster) {
  return dispatch(a, tile_n, cluster, nullptr, false);
}

}  // namespace il::ops
