// The plan: a model written once as typed steps over named buffers, run by any backend.
//
// A builder (models/) reads a config and weights and appends steps to named programs
// ("encode", "pool_mean", "ce_head", ...). Buffers are sized once for the largest batch; per
// batch only the row counts change: a buffer has one row per token (T) or one per sequence (B),
// or a fixed number of rows that keep their contents from run to run (persistent buffers).
// A View is a column window of a buffer, so a packed [T, 3H] QKV buffer is read as three views
// without copies. Executors never branch on the architecture; builders never on the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "inferencelayer/types.h"
#include "ops/attention.h"

namespace il::plan {

// kTokens: one row per token. kSequences: one per sequence (pooled rows, heads, scores; f32 in
// every precision mode). kSelected: one per sequence too, but encoder activations of one chosen
// token of each sequence (its first or its last, see AttentionStep::queries), kept in the serving
// precision like token rows: a model pooled from one token needs no other row in its last layer
// (models/layers.h, "selected rows"). kPersistent: a row count fixed when the plan is built
// (BufferDesc::fixed_rows), not the batch's, and contents that survive set_batch and run: zeroed
// once when an executor is built, then changed only by the steps that write them (the KV cache,
// diffusion canvas and self-conditioning logits of generating models). Only row-wise steps
// (GEMM, norm, GLU, L2) may read or write them so far; such a step runs over rows(x) rows and
// every operand must hold that many (a step over token rows writing a persistent buffer needs
// it to hold the batch's launched rows: on CUDA the token count rounded up to its bucket).
// kWindows: one row per window of kWindowTokens consecutive token rows (a vision tower's 2×2
// spatial merge): tokens / kWindowTokens rows, the batch's token count a multiple of it (the
// launched rows on CUDA: its bucketed token count / kWindowTokens, rounded down). A windows
// buffer of kWindowTokens · c columns over the storage of a token buffer of c columns reads each
// window's token rows side by side, as one row (add_buffer_over): the reshape [n, c] →
// [n / 4, 4c] costs nothing. Only row-wise steps may use window rows.
enum class Rows { kTokens, kSequences, kSelected, kPersistent, kWindows };
inline constexpr std::size_t kWindowTokens = 4;

// The element type of a buffer. kActivation: the serving precision (f32, or f16 / bf16 on a GPU
// in those modes); kF32: f32 in every mode; kI32: 32-bit integers (ids, indices).
enum class Elem { kActivation, kF32, kI32 };

// The element type a buffer of `rows` gets unless its builder says otherwise.
constexpr Elem default_elem(Rows rows) { return rows == Rows::kSequences ? Elem::kF32 : Elem::kActivation; }

using BufferId = int;

struct BufferDesc {
  std::string name;
  Rows rows = Rows::kTokens;
  std::size_t cols = 0;
  // -1: the buffer has storage of its own. Else the token buffer whose storage it reuses (no
  // chains; at most as many columns): for programs that never need both at once.
  BufferId storage = -1;
  Elem elem = Elem::kActivation;
  std::size_t fixed_rows = 0;  // kPersistent: the row count; else 0 (the batch decides)
};

// The rows an executor allocates for a buffer: a persistent buffer's own count, else the
// largest batch's (max_tokens, for sequence and selected rows too: a batch may hold as many
// sequences as tokens; window rows a quarter of that). A buffer over another's storage allocates
// none (see BufferDesc::storage).
constexpr std::size_t capacity_rows(const BufferDesc& b, std::size_t max_tokens) {
  if (b.rows == Rows::kWindows) return (max_tokens + kWindowTokens - 1) / kWindowTokens;
  return b.rows == Rows::kPersistent ? b.fixed_rows : max_tokens;
}

// A weight's values as the checkpoint stores them: parts stacked row-wise (one part, or the
// tensors a fused weight joins: q, k, v), each `numel` elements of `dtype` (little-endian, maybe
// unaligned) at `bytes`, kept valid by `keep` (the mapped checkpoint, or buffers of their own).
struct StoredPart {
  DType dtype = DType::kF32;
  const std::uint8_t* bytes = nullptr;
  std::size_t numel = 0;
};
struct StoredTensor {
  std::vector<StoredPart> parts;
  std::vector<std::shared_ptr<const void>> keep;
};

struct WeightDesc {
  std::string name;             // the checkpoint tensor it came from (or a fused name)
  std::vector<int64_t> shape;
  // The values: f32 computed by the builder (`data`: fused, folded, or converted), or, with
  // `data` empty, the checkpoint's own bytes (`stored`), so a bf16 model is not copied to f32 on
  // the host whole. Backends convert per tensor as they place it (upload, pack into panels) and
  // then release() it: the plan's copy is only needed until an executor holds its own.
  std::vector<float> data;
  StoredTensor stored;

  std::size_t numel() const;
  bool has_values() const { return !data.empty() || !stored.parts.empty() || numel() == 0; }
  // The element type of the values held: the parts' when they agree, else f32.
  DType dtype() const;
  // The values as f32 (a copy). Throws when released.
  std::vector<float> to_f32() const;
  void release();
};

using WeightId = int;
inline constexpr WeightId kNoWeight = -1;

struct View {
  BufferId buffer = -1;
  std::size_t col = 0;   // first column of the window
  std::size_t cols = 0;  // width of the window
};

// Step vocabulary. Each names its output for debugging dumps and profiles. plan/operands.h lists
// what each step reads and writes; a new kind goes in StepOp, operands.cc, step_profile.cc and
// each executor's dispatch (which fails to compile without it).
struct EmbedStep {
  WeightId word = kNoWeight, position = kNoWeight, type = kNoWeight;
  std::size_t position_offset = 0;
  View out;
  float scale = 1.0f;  // the word row times scale (Gemma's √hidden), before position and type rows
};
struct GemmStep {
  View x;
  WeightId w = kNoWeight, bias = kNoWeight;
  Activation act = Activation::kNone;
  View y;
  // w read as an [in, out] matrix (y = x · w): a tied embedding table [vocab, hidden] multiplied
  // by a distribution over the vocabulary (DiffusionGemma's self-conditioning), from the one copy
  // the LM head reads as [out, in].
  bool transpose_w = false;
};
// out = norm(x + residual) · w (+ b); sum_out, when given, also gets x + residual (the residual
// stream of a pre-norm model, kept for the next sum). group > 0 normalises each run of `group`
// columns on its own with a weight of `group` values (per-head q / k norms); 0: whole rows.
// Outputs may alias inputs: a row is read before it is written.
struct LayerNormStep {
  View x;
  View residual;  // buffer -1: none
  WeightId w = kNoWeight, b = kNoWeight;
  float eps = 1e-12f;
  bool rms = false;
  View out;
  View sum_out;   // buffer -1: none (needs a residual)
  std::size_t group = 0;
  Activation act = Activation::kNone;  // then out = act(out) (GLM-OCR's merger: LayerNorm, GELU)
  // The sum is (x + residual) · sum_scale, normalised and stored (sum_out) scaled: Gemma-4's
  // per-layer `layer_scalar` on the residual stream a layer leaves.
  float sum_scale = 1.0f;
};
// out = act(x[:, :n]) ⊙ x[:, n:2n] with n = out.cols: a gated MLP's gate and up projections,
// computed as one GEMM with the gate's rows first.
struct GluStep {
  View x;
  Activation act = Activation::kSilu;
  View out;
};
// Rotary position embedding, in place on `heads` heads of `head_dim` columns of x, at each token's
// position (Batch::positions): rotate-half pairs (j, j + rotary_dim / 2) over the first
// rotary_dim columns of a head, angle position · theta^(−2j / rotary_dim); with `interleaved`
// (GPT-J form, nomic-bert's rotary_emb_interleaved) the pairs are (2j, 2j + 1) instead.
struct RopeStep {
  View x;
  std::size_t heads = 0, head_dim = 0, rotary_dim = 0;
  float theta = 10000.0f;
  bool interleaved = false;
  // Multi-axis rotary (ops/rope.h): empty, the angles read Batch::positions; else group sizes
  // (summing to rotary_dim / 2) whose group g reads axis g of Batch::rope_positions, which must
  // hold at least sections.size() axes. inv_freq restarts in each group with sections_restart;
  // its exponent's denominator is freq_dim (0: rotary_dim).
  std::vector<int> sections;
  bool sections_restart = false;
  std::size_t freq_dim = 0;
  // 0: every pair turns. Else only pairs j < active_pairs turn, the others pass unchanged
  // (Gemma-4's "proportional" rope: rotate-half over the whole head, a quarter of the
  // frequencies non-zero).
  std::size_t active_pairs = 0;
  // Optional per-head RMSNorm before the rotation (Qwen3's and LFM2's q / k norms, one step for
  // q and k instead of four): each head is normalised over its head_dim columns, scaled by
  // norm_first (heads below norm_split: the queries) or norm_rest (the keys), and stored in the
  // activation type, exactly as a LayerNormStep with group = head_dim would leave it.
  WeightId norm_first = kNoWeight, norm_rest = kNoWeight;
  std::size_t norm_split = 0;
  float norm_eps = 1e-6f;
};
// Which query rows an attention computes: every token, or one per sequence (its first or its
// last token); with one, out has kSelected rows (row s for sequence s) while keys and values are
// still every token of the sequence.
enum class QueryRows { kAll, kFirst, kLast };
struct AttentionStep {
  View q, k, v;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  ops::MaskMode mask = ops::MaskMode::kBidirectional;
  std::size_t window = 0;
  View out;
  QueryRows queries = QueryRows::kAll;
};
// Token rows of one sequence → one row per sequence. x is token rows, or kSelected rows (one per
// sequence, taken as is: the mode must then pick the row the plan selected, kCls or kLastToken).
struct PoolStep {
  View x;
  PoolingMode mode = PoolingMode::kMean;
  View out;  // sequence rows
};
struct L2Step {
  View x;
};
// DeBERTa's disentangled attention (ops/disentangled_attention.h): every query row, bidirectional,
// no GQA; the relative terms read pos_key (c2p) / pos_query (p2c), either absent, and the row
// index table rel_index (all three f32 weights in every precision mode), for sequences of up to
// max_len tokens.
struct DisentangledAttentionStep {
  View q, k, v;
  std::size_t heads = 0, head_dim = 0;
  WeightId pos_key = kNoWeight, pos_query = kNoWeight, rel_index = kNoWeight;
  std::size_t span = 0, max_len = 0;
  int position_buckets = 0, max_relative = 0;  // what rel_index was made with (its column window)
  float scale = 1.0f;
  View out;
};

// LFM2's gated short causal convolution (ops/short_conv.h): x holds each token's B | C | x blocks
// (3 · out.cols columns), w the depthwise filter [out.cols, taps] (f32); out[i] = C[i] ⊙ the
// causal convolution of B ⊙ x over the token's own sequence. Needs every token of a sequence.
struct ShortConvStep {
  View x;
  WeightId w = kNoWeight;
  std::size_t taps = 0;
  View out;
};

// Image patches in (a ViT's patch embedding, SigLIP's Conv2d of stride = kernel): the batch's
// patch rows (Batch::patches, patch_dim values each) are written to `patches` (token rows in the
// serving precision), then out = patches · wᵀ + bias + position[the token's position]: w is the
// convolution's weight reshaped [out.cols, patch_dim], position a table of one row per patch
// index (Batch::positions).
struct PatchEmbedStep {
  View patches;
  WeightId w = kNoWeight, bias = kNoWeight, position = kNoWeight;
  View out;
};
// Attention pooling with a learned query (SigLIP's MAP head): each sequence's one query is the
// fixed row `query` (heads · head_dim values, f32, already projected and without the scale),
// keys and values are every token row of the sequence; out gets one row per sequence (kSelected
// or kSequences rows), heads side by side. scale multiplies q · k.
struct ProbeAttentionStep {
  WeightId query = kNoWeight;
  View k, v;
  std::size_t heads = 0, head_dim = 0;
  float scale = 1.0f;
  View out;
};

// Generation (runtime/generator.h) keeps each sequence's keys and values in a KV cache: per
// layer, persistent buffers whose rows are cache entries, handed out in pages of
// Batch::kv_page_size rows. KvWriteStep stores the batch's new keys and values: token t's k and v
// rows go to row Batch::cache_rows[t] of k_cache and v_cache (views of kv_heads · head_dim columns).
struct KvWriteStep {
  View k, v;
  View k_cache, v_cache;
};
// Causal attention over the KV cache: token t (of sequence s) attends to the first
// Batch::cache_lengths[t] entries of s's cache, its own included (a KvWriteStep stored them
// before); entry j lives in row kv_pages[kv_page_starts[s] + j / P] · P + j % P, P the page size.
// GQA as in AttentionStep. A decode step's tokens are one per sequence, a prefill's the prompt.
// With window W > 0 (sliding-window layers) token t reads only entries from
// max(0, a − W + 1) up to its cache length, a = Batch::window_anchors[t] (empty: cache length − 1,
// the token's own entry: a causal sliding window). A diffusion canvas's tokens all anchor at the
// canvas's first entry: they see the W − 1 entries before it and the whole canvas.
struct CachedAttentionStep {
  View q;
  View k_cache, v_cache;
  std::size_t heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  View out;
  std::size_t window = 0;
};
// Rows taken from another buffer: out[t] = src[Batch::inject_rows[t]] for the tokens where that
// is not negative (a multimodal prompt's image tokens take the vision tower's rows, which a
// persistent buffer holds); the other rows are left as they are.
struct InjectRowsStep {
  View src;
  View out;
};

// Mixture of experts (ops/moe.h). RouterStep: per token, p = softmax(x · wᵀ) over `experts`
// (w [experts, x.cols], f32 arithmetic), the top_k experts by p, their weights p renormalised
// over the top_k and times expert_scale[e]: ids (an Elem::kI32 buffer) and weights (kF32),
// top_k columns each. MoeStep: out[t] = Σ_k weights[t, k] · down[e] · (act(g) ⊙ u),
// [g | u] = gate_up[e] · x[t], e = ids[t, k]; gate_up [experts, 2 · inner, x.cols] (gate rows
// first), down [experts, out.cols, inner].
struct RouterStep {
  View x;
  WeightId w = kNoWeight, expert_scale = kNoWeight;
  std::size_t experts = 0, top_k = 0;
  View ids, weights;
  bool renormalize = true;  // the chosen probabilities divided by their sum (ops::RouterArgs)
  float scale = 1.0f;
};
struct MoeStep {
  View x;
  View ids, weights;
  WeightId gate_up = kNoWeight, down = kNoWeight;
  std::size_t experts = 0, top_k = 0, inner = 0;
  Activation act = Activation::kGeluTanh;
  View out;
};
// out = softmax(x) · scale per row, x f32; a row of −inf (no distribution) gives zeros. Runs
// over out's rows: x may be a persistent buffer holding at least that many.
struct SoftmaxStep {
  View x;
  float scale = 1.0f;
  View out;
};
// out = cap · tanh(x / cap), out f32 (a final logit softcap).
struct SoftcapStep {
  View x;
  float cap = 30.0f;
  View out;
};

// SAM's attention (ops/sam_attention.h) over the batch's sequences, each one square view: qkv
// holds q | k | v (heads · head_dim each), the padding positions of a windowed view take the qkv
// bias as their q | k | v; global (window 0) or in window × window tiles. The relative position
// tables ([2S − 1, head_dim], f32) are per side S (the window, or a view's side): the step holds
// one pair for each side it can meet, resized on the host when the plan is built.
struct SamRelTable {
  std::size_t side = 0;
  WeightId h = kNoWeight, w = kNoWeight;
};
struct SamAttentionStep {
  View qkv;
  WeightId qkv_bias = kNoWeight;
  std::size_t heads = 0, head_dim = 0, window = 0;
  std::vector<SamRelTable> tables;
  float scale = 1.0f;
  View out;
};
// Rows gathered side by side, the im2col of a convolution: part t (src.cols columns) of out row
// r is src row Batch::gather[r · taps + t], or zeros where that is −1. out has taps · src.cols
// columns and the batch's token rows; src may be a persistent buffer (another program's output).
struct GatherRowsStep {
  View src;
  std::size_t taps = 0;
  View out;
};
// The im2col of a 1-D convolution over each sequence with zero padding (DeBERTa-v2's ConvLayer):
// part j (x.cols columns) of out row t is x row t + j − (taps − 1) / 2 when that row lies in t's
// own sequence, else zeros. taps is odd; out has taps · x.cols columns and the batch's token rows.
struct SequenceWindowStep {
  View x;
  std::size_t taps = 0;
  View out;
};

using StepOp = std::variant<EmbedStep, GemmStep, LayerNormStep, GluStep, RopeStep, AttentionStep, PoolStep, L2Step,
                            DisentangledAttentionStep, ShortConvStep, PatchEmbedStep, ProbeAttentionStep, KvWriteStep,
                            CachedAttentionStep, InjectRowsStep, RouterStep, MoeStep, SoftmaxStep, SoftcapStep,
                            SamAttentionStep, GatherRowsStep, SequenceWindowStep>;

struct Step {
  std::string name;  // e.g. "L3.attn_out"
  StepOp op;
};

class Plan {
 public:
  // Token, sequence or selected rows (persistent buffers: add_persistent_buffer).
  BufferId add_buffer(std::string name, Rows rows, std::size_t cols);
  BufferId add_buffer(std::string name, Rows rows, std::size_t cols, Elem elem);
  // A buffer of `rows` rows whose contents persist between runs (Rows::kPersistent): storage of
  // its own, never shared with another buffer.
  BufferId add_persistent_buffer(std::string name, std::size_t rows, std::size_t cols, Elem elem = Elem::kActivation);
  // Changes a persistent buffer's row count (a runtime sizing a KV cache before it builds an
  // executor).
  void set_fixed_rows(BufferId id, std::size_t rows);
  // A buffer over the storage of token buffer `owner` (see BufferDesc::storage): at most its
  // columns, or, for window rows, exactly kWindowTokens times them (each window's token rows
  // side by side).
  BufferId add_buffer_over(std::string name, Rows rows, std::size_t cols, BufferId owner);
  WeightId add_weight(std::string name, std::vector<int64_t> shape, std::vector<float> data);
  WeightId add_weight(std::string name, std::vector<int64_t> shape, StoredTensor stored);
  // Refuses a step that is not row-wise (embed, rope, attention, pool) over a persistent buffer.
  void add_step(const std::string& program, std::string name, StepOp op);
  // Names a view so callers can read it back ("hidden", "embedding", "scores").
  void set_output(const std::string& name, View view);

  const std::vector<BufferDesc>& buffers() const { return buffers_; }
  const std::vector<WeightDesc>& weights() const { return weights_; }
  std::vector<WeightDesc>& weights() { return weights_; }
  const std::vector<Step>& program(const std::string& name) const;  // throws if absent
  bool has_program(const std::string& name) const { return programs_.count(name) > 0; }
  std::vector<std::string> program_names() const;
  View output(const std::string& name) const;  // throws if absent
  bool has_output(const std::string& name) const { return outputs_.count(name) > 0; }

  View whole(BufferId id) const { return {id, 0, buffers_.at(static_cast<std::size_t>(id)).cols}; }
  View slice(BufferId id, std::size_t col, std::size_t cols) const;

  std::size_t parameter_count() const;

 private:
  std::vector<BufferDesc> buffers_;
  std::vector<WeightDesc> weights_;
  std::map<std::string, std::vector<Step>> programs_;
  std::map<std::string, View> outputs_;
};

// One ragged batch: tokens of all sequences back to back, no padding.
inline constexpr std::size_t kMaxRopeAxes = 4;  // Batch::rope_positions axes at most

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> type_ids;    // empty or one per token
  // One per token: its position in its sequence (what rotary embeddings read). Empty: each
  // token's index in its sequence (runtime::make_batch always fills them).
  std::vector<int32_t> positions;
  // Multi-axis positions (RopeStep::sections): empty, or axes × num_tokens values, axis-major
  // (axis a of token t at a · num_tokens + t), at most kMaxRopeAxes axes, none negative. GLM's
  // decoder gives (t, h, w) per token, its vision tower (h, w) per patch.
  std::vector<int32_t> rope_positions;
  std::vector<int32_t> seq_starts;  // num_seqs + 1 entries, first 0, last tokens.size()
  // Empty, or one per sequence: the first row mean and last-token pooling read, after the
  // sequence's leading prompt tokens (models pooled without their prompt; see ops/pool.h).
  std::vector<int32_t> pool_starts;
  // Empty, or one per sequence: how many of its first tokens are unmasked. The rows past the
  // limit are masked tokens (PyLate's masked query expansion, TokenInput::attended_tokens), as an
  // attention mask of 0 makes them in transformers: attention reads no key past the limit (every
  // row sees only the first key_limits[s] keys, and what its mask allows), and a short
  // convolution gives the masked rows zero (transformers zeroes a masked row's input before the
  // in-projection, so its C block is zero). Both backends (on CUDA the flash attention kernel takes them).
  std::vector<int32_t> key_limits;
  // Image inputs (PatchEmbedStep): empty, or one row of patch_dim values per token, the token's
  // image patch (channel-major, then kernel row, then kernel column, as a Conv2d weight's
  // [C, P, P] is laid out). tokens still holds one (ignored) entry per patch token.
  std::vector<float> patches;
  std::size_t patch_dim = 0;
  // Generation (KvWriteStep, CachedAttentionStep): empty, or one per token: the KV cache row its
  // keys and values go to, and how many cache entries of its sequence its query reads. Each
  // sequence's cache pages, in order: kv_pages[kv_page_starts[s] .. kv_page_starts[s + 1]), of
  // kv_page_size rows each.
  std::vector<int32_t> cache_rows;
  std::vector<int32_t> cache_lengths;
  // Empty, or one per token: the entry a sliding window counts back from (CachedAttentionStep).
  std::vector<int32_t> window_anchors;
  std::vector<int32_t> kv_page_starts;
  std::vector<int32_t> kv_pages;
  std::size_t kv_page_size = 0;
  // InjectRowsStep: empty, or one per token: the source row it takes, or -1 to keep its own.
  std::vector<int32_t> inject_rows;
  // Empty, or GatherRowsStep's source rows: taps per token row (−1: a zero part).
  std::vector<int32_t> gather;
  // Empty, or one per sequence: under a causal AttentionStep, every row of sequence s also sees
  // its first causal_prefix[s] keys (ops::AttentionArgs::causal_prefix).
  std::vector<int32_t> causal_prefix;
  // Or the same patch rows as bytes (runtime::make_image_batch from compact ImageInputs; patches
  // then empty): image_bytes holds each sequence's image, image_rows × image_cols pixels of
  // image_channels interleaved bytes (the part the patch grid covers, rows and cols multiples of
  // image_patch), back to back in sequence order; byte_values[c · 256 + byte] is the value a byte
  // stands for in channel c (one table for the batch). Token k of a sequence is grid cell
  // (k / (image_cols / P), k % (image_cols / P)), P = image_patch, and its patch row holds
  // exactly the values `patches` would: patch_dim = image_channels · P · P. Executors upload the
  // bytes (a quarter of the f32 rows) and cut and look up the rows themselves.
  std::vector<std::uint8_t> image_bytes;
  std::vector<float> byte_values;
  std::size_t image_rows = 0, image_cols = 0, image_channels = 0, image_patch = 0;
  std::size_t num_tokens() const { return tokens.size(); }
  std::size_t num_seqs() const { return seq_starts.empty() ? 0 : seq_starts.size() - 1; }
  std::size_t rope_axes() const { return tokens.empty() ? 0 : rope_positions.size() / tokens.size(); }
};

// The checks every executor makes of a batch before it runs: at least one sequence, at most
// max_tokens tokens and sequences, seq_starts ascending from 0 to the token count, type_ids and
// positions empty or one per token (positions not negative), rope_positions whole axes of
// tokens (at most kMaxRopeAxes, not negative), pool_starts empty or one per
// sequence inside it. Throws il::Error saying which.
void check_batch(const Batch& batch, std::size_t max_tokens);

}  // namespace il::plan
