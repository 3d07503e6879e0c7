// GLM-OCR (transformers' GlmOcrForConditionalGeneration): the vision tower
// (models/glm_ocr_vision.h) and the GLM text decoder that generates from its rows. The plan's
// programs are those of a generating model (models/model.h, GenerationSpec).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/glm_ocr_config.h"
#include "models/model.h"

namespace il::models {

BuiltModel build_glm_ocr_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                const std::string& source);
BuiltModel build_glm_ocr_random(const nlohmann::json& config, const std::string& source);
void check_glm_ocr_config(const nlohmann::json& config, const std::string& source);

// The checkpoint tensors of the text decoder and head ("model.language_model.", "lm_head.").
std::map<std::string, std::vector<int64_t>> glm_ocr_text_tensors(const GlmOcrConfig& c);

}  // namespace il::models
