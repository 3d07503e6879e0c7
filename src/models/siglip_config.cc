#include "models/siglip_config.h"

#include <climits>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/json_util.h"

namespace il::models {
namespace {

using nlohmann::json;
namespace d = io::detail;

constexpr long long kMaxDim = 1LL << 24;

void read_common(const json& j, const std::string& src, int& hidden, int& layers, int& heads, int& intermediate,
                 float& eps, Activation& act) {
  hidden = d::int_in_range(j, "hidden_size", src, 1, kMaxDim, hidden);
  layers = d::int_in_range(j, "num_hidden_layers", src, 1, kMaxDim, layers);
  heads = d::int_in_range(j, "num_attention_heads", src, 1, kMaxDim, heads);
  check(hidden % heads == 0, src, ": field \"hidden_size\" = ", hidden, " is not a multiple of \"num_attention_heads\" = ",
        heads);
  intermediate = d::int_in_range(j, "intermediate_size", src, 1, kMaxDim, intermediate);
  eps = d::opt_positive_float(j, "layer_norm_eps", src, eps);
  if (const auto a = d::opt_string(j, "hidden_act", src)) act = io::parse_activation(*a, src);
}

SiglipVisionConfig read_vision(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected an object, got ", d::describe(j));
  SiglipVisionConfig v;
  read_common(j, src, v.hidden, v.layers, v.heads, v.intermediate, v.eps, v.act);
  v.channels = d::int_in_range(j, "num_channels", src, 1, 64, v.channels);
  v.image_size = d::int_in_range(j, "image_size", src, 1, 1 << 16, v.image_size);
  v.patch_size = d::int_in_range(j, "patch_size", src, 1, 1 << 16, v.patch_size);
  check(v.patch_size <= v.image_size, src, ": field \"patch_size\" = ", v.patch_size, " is larger than \"image_size\" = ",
        v.image_size);
  v.use_head = d::opt_bool(j, "vision_use_head", src).value_or(true);
  return v;
}

SiglipTextConfig read_text(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected an object, got ", d::describe(j));
  SiglipTextConfig t;
  read_common(j, src, t.hidden, t.layers, t.heads, t.intermediate, t.eps, t.act);
  t.vocab = d::int_in_range(j, "vocab_size", src, 1, INT_MAX, t.vocab);
  t.max_positions = d::int_in_range(j, "max_position_embeddings", src, 1, kMaxDim, t.max_positions);
  t.pad_id = d::int_in_range(j, "pad_token_id", src, 0, INT_MAX, t.pad_id);
  t.projection = d::int_in_range(j, "projection_size", src, 1, kMaxDim, t.hidden);
  return t;
}

std::string first_architecture(const json& j, const std::string& src) {
  const auto it = j.find("architectures");
  if (it == j.end() || it->is_null()) return "";
  check(it->is_array() && !it->empty() && it->front().is_string(), src,
        ": field \"architectures\" must be an array of strings, got ", d::describe(*it));
  return it->front().get<std::string>();
}

}  // namespace

SiglipConfig parse_siglip_config(const json& j, const std::string& src) {
  check(j.is_object(), src, ": expected a JSON object, got ", d::type_name(j));
  SiglipConfig c;
  c.model_type = d::req_string(j, "model_type", src);
  check(c.model_type != "siglip2" && c.model_type != "siglip2_vision_model", src, ": model_type \"", c.model_type,
        "\" is not supported: SigLIP 2 embeds patches with a Linear over processor-flattened patches (pixel_values "
        "[patches, 3·P·P] with pixel_attention_mask and spatial_shapes) and resizes its position table to each "
        "image's grid, neither of which this engine implements (supported: siglip, siglip_vision_model)");
  c.architecture = first_architecture(j, src);
  c.random_weights = d::opt_bool(j, "inferencelayer_random_weights", src).value_or(false);
  if (c.model_type == "siglip_vision_model") {
    if (c.architecture.empty()) c.architecture = "SiglipVisionModel";
    check(c.architecture == "SiglipVisionModel", src, ": architecture \"", c.architecture,
          "\" is not supported for siglip_vision_model (supported: SiglipVisionModel)");
    c.vision = read_vision(j, src);
    return c;
  }
  check(c.model_type == "siglip", src, ": model_type \"", c.model_type, "\" is not a SigLIP type");
  if (c.architecture.empty()) c.architecture = "SiglipModel";
  check(c.architecture == "SiglipModel", src, ": architecture \"", c.architecture,
        "\" is not supported for siglip (supported: SiglipModel; SiglipForImageClassification is not)");
  const auto vit = j.find("vision_config");
  const auto tit = j.find("text_config");
  c.vision = read_vision(vit == j.end() || vit->is_null() ? json::object() : *vit, src + " (vision_config)");
  c.text = read_text(tit == j.end() || tit->is_null() ? json::object() : *tit, src + " (text_config)");
  return c;
}

}  // namespace il::models
