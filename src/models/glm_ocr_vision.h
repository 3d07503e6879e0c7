// GLM-OCR's vision tower (transformers' GlmOcrVisionModel) as plan steps in one program: patch
// embedding (the Conv3d of stride = kernel as a GEMM over the batch's patch rows), `depth`
// pre-norm blocks (RMSNorm; fused qkv with bias; per-head q / k RMSNorm; the 2-D rotary
// embedding over each patch's (h, w), rotate-half, sections head_dim/4 + head_dim/4 restarting,
// freq_dim head_dim / 2; bidirectional attention within each image frame (one batch sequence
// each); proj; RMSNorm; SwiGLU MLP with biases), post_layernorm (RMSNorm), the 2×2 downsample
// (Conv2d k = s = 2 as a linear over each merge window's 4 consecutive token rows, plan window
// rows) and the merger (proj, LayerNorm + exact GELU, SwiGLU without biases).
//
// The batch (runtime/merge_window_vision_batch.h): patch rows in the processor's merge-window order,
// one sequence per image frame, rope_positions (h, w) per patch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/glm_ocr_vision_config.h"
#include "models/weight_source.h"
#include "plan/plan.h"

namespace il::models {

struct GlmOcrVisionOptions {
  std::string prefix = "model.visual.";  // the tensors' prefix ("" in a GlmOcrVisionModel folder)
  std::string program = "vision";
  // Where the merger's rows go: buffer -1, a window-row buffer of the builder's own; else the
  // caller's view of out_hidden columns (a persistent buffer must hold the launched window rows).
  plan::View output{};
};

// Views a caller (or a test) can read after a run.
struct GlmOcrVisionViews {
  plan::View post_norm;   // post_layernorm's output, token rows [n, hidden]
  plan::View downsample;  // the 2×2 downsample, window rows [n / 4, out_hidden]
  plan::View output;      // the merger's rows [n / 4, out_hidden] (also plan output "vision")
};

// Appends program options.program to `plan` and sets plan output "vision". Throws il::Error
// naming a missing or misshapen tensor.
GlmOcrVisionViews build_glm_ocr_vision(plan::Plan& plan, const GlmOcrVisionConfig& c, const WeightSource& src,
                                       const GlmOcrVisionOptions& options = {});

// The tower's tensor prefix in `src`: "model.visual." (GlmOcrForConditionalGeneration), "visual."
// or "" (GlmOcrVisionModel.save_pretrained). Throws when none holds patch_embed.proj.weight.
std::string glm_ocr_vision_prefix(const WeightSource& src);

// Every tensor the tower reads, under `prefix`, with its checkpoint shape: what a
// RandomSource needs to build the tower from a config alone (speed runs with random weights).
std::map<std::string, std::vector<int64_t>> glm_ocr_vision_tensors(const GlmOcrVisionConfig& c,
                                                                  const std::string& prefix);

// The 2×2 downsample's Conv2d weight [out, hidden, 2, 2] as the linear weight over a window's 4
// token rows side by side: W[o, (a·2 + b)·hidden + c] = Wconv[o, c, a, b] (a window row, b column).
std::vector<float> glm_ocr_downsample_weight(const std::vector<float>& conv, std::size_t out, std::size_t hidden);

}  // namespace il::models
