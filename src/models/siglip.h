// SigLIP (transformers' SiglipModel / SiglipVisionModel): the vision tower as a ViT over patch
// tokens (plan::PatchEmbedStep, then pre-norm encoder layers with biased LayerNorms and
// projections, gelu_pytorch_tanh MLPs, post_layernorm) into program "image_encode" (output
// "image_hidden", one row per patch), and its MAP head (attention pooling with a learned probe,
// plan::ProbeAttentionStep, then out_proj and a residual MLP) into program "image_head" (output
// "image_embedding", one row per image). The image programs and outputs have names of their own
// so a joint folder's text tower can use the text ones.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model.h"
#include "models/siglip_config.h"

namespace il::models {

// The registry's builders (models/registry.h).
BuiltModel build_siglip_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                               const std::string& source);
BuiltModel build_siglip_random(const nlohmann::json& config, const std::string& source);

// The tensors transformers saves for the vision tower (under "vision_model.", as a joint model
// names them) and, for a joint
// folder, the text tower ("text_model.") and logit_scale / logit_bias.
std::map<std::string, std::vector<int64_t>> siglip_tensors(const SiglipConfig& cfg);

}  // namespace il::models
