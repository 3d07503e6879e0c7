// DiffusionGemma (DiffusionGemmaForBlockDiffusion): a causal encoder that writes the KV cache
// and a bidirectional denoiser over a canvas, one set of layers read by both (tied stacks),
// sliding and global attention layers, a dense MLP and a mixture of experts in parallel in every
// layer, self-conditioning and a softcapped tied LM head. docs/diffusion-gemma.md §2–§5.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "models/model.h"

namespace il::models {

void check_diffusion_gemma_config(const nlohmann::json& config, const std::string& source);
BuiltModel build_diffusion_gemma_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                        const std::string& source);
BuiltModel build_diffusion_gemma_random(const nlohmann::json& config, const std::string& source);

}  // namespace il::models
