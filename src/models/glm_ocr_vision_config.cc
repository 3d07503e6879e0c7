#include "models/glm_ocr_vision_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_util.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

}  // namespace

GlmOcrVisionConfig parse_glm_ocr_vision_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  GlmOcrVisionConfig c;
  c.depth = d::int_in_range(j, "depth", src, 1, 1 << 12, c.depth);
  c.hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim, c.hidden);
  c.heads = d::int_in_range(j, "num_heads", src, 1, kMaxDim, c.heads);
  check(c.hidden % c.heads == 0, src, ": field \"hidden_size\" = ", c.hidden, " is not a multiple of \"num_heads\" = ",
        c.heads);
  // The 2-D rope splits half a head into two equal axes of rotate-half pairs: head_dim / 4 whole.
  check(c.head_dim() % 4 == 0, src, ": field \"num_heads\" = ", c.heads, " gives a head_dim of ", c.head_dim(),
        ", not a multiple of 4 (the 2-D rotary embedding needs one)");
  c.intermediate = d::int_in_range(j, "intermediate_size", src, 1, kMaxDim, c.intermediate);
  c.out_hidden = d::int_in_range(j, "out_hidden_size", src, 1, kMaxDim, c.out_hidden);
  c.patch = d::int_in_range(j, "patch_size", src, 1, 1 << 10, c.patch);
  c.temporal_patch = d::int_in_range(j, "temporal_patch_size", src, 1, 64, c.temporal_patch);
  c.merge = d::int_in_range(j, "spatial_merge_size", src, 1, 64, c.merge);
  // The downsample is a linear over the kWindowTokens token rows of a 2 × 2 window.
  check(c.merge == 2, src, ": field \"spatial_merge_size\" = ", c.merge, " is not supported (only 2: the 2×2 downsample)");
  c.channels = d::int_in_range(j, "in_channels", src, 1, 64, c.channels);
  c.eps = d::opt_positive_float(j, "rms_norm_eps", src, c.eps);
  if (const auto act = d::opt_string(j, "hidden_act", src))
    check(*act == "silu", src, ": field \"hidden_act\" = \"", *act, "\" is not supported (only \"silu\")");
  c.attention_bias = d::opt_bool(j, "attention_bias", src).value_or(c.attention_bias);
  if (const auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    const std::string rp = src + ": rope_parameters";
    check(it->is_object(), rp, ": expected an object, got ", d::describe(*it));
    if (const auto type = d::opt_string(*it, "rope_type", rp))
      check(*type == "axial" || *type == "default", rp, ": field \"rope_type\" = \"", *type,
            "\" is not supported (the vision tower's 2-D rope: \"axial\" or \"default\")");
    c.rope_theta = d::opt_positive_float(*it, "rope_theta", rp, c.rope_theta);
  }
  return c;
}

GlmOcrVisionConfig glm_ocr_vision_config_of(const json& config, const std::string& src) {
  check(config.is_object(), src, ": expected a JSON object, got ", d::type_name(config));
  const std::string type = d::opt_string(config, "model_type", src).value_or("");
  if (type == "glm_ocr_vision") return parse_glm_ocr_vision_config(config, src);
  check(type == "glm_ocr", src, ": model_type \"", type, "\" has no GLM-OCR vision tower (glm_ocr, glm_ocr_vision)");
  const auto it = config.find("vision_config");
  check(it != config.end() && it->is_object(), src, ": field \"vision_config\" must be an object");
  return parse_glm_ocr_vision_config(*it, src + ": vision_config");
}

}  // namespace il::models
