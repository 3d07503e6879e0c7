// Embedding lookup on the GPU: one block per token; the token's sequence (hence its position)
// comes from a binary search over the device's seq_starts, so the grid needs only T. Tables and
// output share the element type; the sum runs in f32 and is rounded once.
#include "ops/check_cuda.h"
#include "ops/elem_cuda.cuh"
#include "ops/launch_cuda.cuh"
#include "ops/ops_cuda.h"

namespace il::ops {
namespace {

template <typename T>
struct EmbedParams {
  const int32_t* tokens;
  const int32_t* type_ids;
  const int32_t* seq_starts;
  int num_seqs;
  const T* word;
  const T* position;
  std::size_t position_offset;
  const T* type;
  T* out;
  std::size_t ldo, cols;
  float scale;  // the word row's factor (Gemma's √hidden), applied in f32 before the sums
};

template <typename T>
__global__ void embed_kernel(EmbedParams<T> p) {
  pdl::wait_for_predecessor();
  const int t = static_cast<int>(blockIdx.x);
  T* out = p.out + static_cast<std::size_t>(t) * p.ldo;
  if (t >= p.seq_starts[p.num_seqs]) {  // padding past the batch (a graph bucket): zero rows
    for (std::size_t j = threadIdx.x; j < p.cols; j += blockDim.x) elem::store(out + j, 0.0f);
    return;
  }
  // The last sequence whose start is ≤ t: empty sequences (equal starts) are skipped over.
  int lo = 0, hi = p.num_seqs;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (p.seq_starts[mid] <= t) lo = mid; else hi = mid;
  }
  const std::size_t local = static_cast<std::size_t>(t - p.seq_starts[lo]);
  const T* w = p.word + static_cast<std::size_t>(p.tokens[t]) * p.cols;
  const T* pos = p.position ? p.position + (p.position_offset + local) * p.cols : nullptr;
  const T* typ = p.type ? p.type + static_cast<std::size_t>(p.type_ids ? p.type_ids[t] : 0) * p.cols : nullptr;
  for (std::size_t j = threadIdx.x; j < p.cols; j += blockDim.x) {
    float v = elem::load(w + j) * p.scale;  // summed in the CPU op's order: word, position, type
    if (pos) v += elem::load(pos + j);
    if (typ) v += elem::load(typ + j);
    elem::store(out + j, v);
  }
}

}  // namespace

void embed_cuda(const EmbedArgs& a, std::size_t num_tokens, cudaStream_t stream) {
  check_embed(a, "embed (CUDA)");
  if (num_tokens == 0 || a.num_seqs == 0) return;
  check(num_tokens < (1u << 31), "embed: too many tokens for one launch");
  elem::dispatch(a.out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const EmbedParams<T> p{a.tokens, a.type_ids, a.seq_starts, static_cast<int>(a.num_seqs),
                           static_cast<const T*>(a.word.data), static_cast<const T*>(a.position.data),
                           a.position_offset, static_cast<const T*>(a.type.data), static_cast<T*>(a.out.data),
                           a.out.ld, a.cols, a.scale};
    pdl::launch(embed_kernel<T>, static_cast<unsigned>(num_tokens), 128, 0, stream, p);
  });
}

}  // namespace il::ops
