#include "plan/operands.h"

#include "plan/overloaded.h"

namespace il::plan {
namespace {

bool present(const View& v) { return v.buffer >= 0; }

}  // namespace

Operands operands(const StepOp& op) {
  Operands o;
  const auto weight = [&](WeightId id, WeightRole role, const View& meets) {
    if (id != kNoWeight) o.weights.push_back({id, role, meets});
  };
  std::visit(Overloaded{
                 [&](const EmbedStep& s) {
                   o.writes = {s.out};
                   weight(s.word, WeightRole::kTable, s.out);
                   weight(s.position, WeightRole::kTable, s.out);
                   weight(s.type, WeightRole::kTable, s.out);
                 },
                 [&](const GemmStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.y};
                   weight(s.w, s.transpose_w ? WeightRole::kGemmTransposed : WeightRole::kGemm, s.x);
                   weight(s.bias, WeightRole::kGemmBias, s.x);
                 },
                 [&](const LayerNormStep& s) {
                   o.reads = {s.x};
                   if (present(s.residual)) o.reads.push_back(s.residual);
                   o.writes = {s.out};
                   if (present(s.sum_out)) o.writes.push_back(s.sum_out);
                   weight(s.w, WeightRole::kNorm, s.x);
                   weight(s.b, WeightRole::kNorm, s.x);
                 },
                 [&](const GluStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.out};
                 },
                 [&](const RopeStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.x};
                   weight(s.norm_first, WeightRole::kNorm, s.x);
                   weight(s.norm_rest, WeightRole::kNorm, s.x);
                 },
                 [&](const AttentionStep& s) {
                   o.reads = {s.q, s.k, s.v};
                   o.writes = {s.out};
                 },
                 [&](const PoolStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.out};
                 },
                 [&](const L2Step& s) {
                   o.reads = {s.x};
                   o.writes = {s.x};
                 },
                 [&](const DisentangledAttentionStep& s) {
                   o.reads = {s.q, s.k, s.v};
                   o.writes = {s.out};
                   // f32 in every mode, like norm weights (the CPU op and the CUDA-core kernel), and
                   // in the activations' type for the tensor-core form's table products.
                   weight(s.pos_key, WeightRole::kNorm, s.q);
                   weight(s.pos_query, WeightRole::kNorm, s.q);
                   weight(s.pos_key, WeightRole::kOperand, s.q);
                   weight(s.pos_query, WeightRole::kOperand, s.q);
                   weight(s.rel_index, WeightRole::kNorm, s.q);
                 },
                 [&](const ShortConvStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.out};
                   weight(s.w, WeightRole::kNorm, s.x);  // f32 in every mode, like a norm's scale
                 },
                 [&](const PatchEmbedStep& s) {
                   o.writes = {s.patches, s.out};
                   weight(s.w, WeightRole::kGemm, s.patches);
                   weight(s.bias, WeightRole::kGemmBias, s.patches);
                   weight(s.position, WeightRole::kTable, s.out);
                 },
                 [&](const ProbeAttentionStep& s) {
                   o.reads = {s.k, s.v};
                   o.writes = {s.out};
                   weight(s.query, WeightRole::kNorm, s.k);  // f32 in every mode, read whole by the kernel
                 },
                 [&](const KvWriteStep& s) {
                   o.reads = {s.k, s.v};
                   o.writes = {s.k_cache, s.v_cache};
                 },
                 [&](const CachedAttentionStep& s) {
                   o.reads = {s.q, s.k_cache, s.v_cache};
                   o.writes = {s.out};
                 },
                 [&](const InjectRowsStep& s) {
                   o.reads = {s.src, s.out};
                   o.writes = {s.out};
                 },
                 [&](const RouterStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.ids, s.weights};
                   // f32 in every mode: small, and the routing decision is made in f32.
                   weight(s.w, WeightRole::kNorm, s.x);
                   weight(s.expert_scale, WeightRole::kNorm, s.x);
                 },
                 [&](const MoeStep& s) {
                   o.reads = {s.x, s.ids, s.weights};
                   o.writes = {s.out};
                   weight(s.gate_up, WeightRole::kExperts, s.x);
                   weight(s.down, WeightRole::kExperts, s.x);
                 },
                 [&](const SoftmaxStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.out};
                 },
                 [&](const SoftcapStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.out};
                 },
                 [&](const SamAttentionStep& s) {
                   o.reads = {s.qkv};
                   o.writes = {s.out};
                   // f32 in every mode, read whole by the kernel.
                   weight(s.qkv_bias, WeightRole::kNorm, s.qkv);
                   for (const SamRelTable& t : s.tables) {
                     weight(t.h, WeightRole::kNorm, s.qkv);
                     weight(t.w, WeightRole::kNorm, s.qkv);
                   }
                 },
                 [&](const SequenceWindowStep& s) {
                   o.reads = {s.x};
                   o.writes = {s.out};
                 },
                 [&](const GatherRowsStep& s) {
                   o.reads = {s.src};
                   o.writes = {s.out};
                 },
             },
             op);
  return o;
}

}  // namespace il::plan
