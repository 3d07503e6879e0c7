// DeepSeek-OCR-2 (docs/deepseek-ocr.md): its vision (models/deepseek_ocr_vision.h) and the
// DeepSeek-V2 mixture-of-experts decoder, as a generating model (models/model.h, GenerationSpec:
// programs "prefill", "decode", "logits", and the view-vision programs). DeepSeek-OCR (v1) shares
// the decoder; its DeepEncoder is not built yet.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/deepseek_ocr_config.h"
#include "models/model.h"

namespace il::models {

BuiltModel build_deepseek_ocr_folder(const std::filesystem::path& dir, const nlohmann::json& config,
                                     const std::string& source);
BuiltModel build_deepseek_ocr_random(const nlohmann::json& config, const std::string& source);
void check_deepseek_ocr_config(const nlohmann::json& config, const std::string& source);

// The decoder's and the head's checkpoint tensors under `prefix` ("model."), the experts fused as
// transformers holds them in memory.
std::map<std::string, std::vector<int64_t>> deepseek_text_tensors(const DeepseekTextConfig& c,
                                                                   const std::string& prefix, bool tied_head);

}  // namespace il::models
