// DeepSeek-OCR's vision as plan programs (docs/deepseek-ocr.md §2, §6): SAM ViT-B over square
// views of patch rows (windowed and global blocks with decomposed relative position), its neck,
// the two stride-2 convolutions, then for DeepSeek-OCR-2 the Qwen2-style encoder over each view's
// SAM rows followed by its learned queries (prefix-causal mask), for v1 CLIP-L over the SAM rows
// with its output beside them; then the projector. models/model.h, ViewVisionSpec, says what
// each program's batch holds.
#pragma once

#include "models/deepseek_ocr_config.h"
#include "models/model.h"
#include "models/weight_source.h"

namespace il::models {

// Adds programs "sam", "sam_down1", "sam_down2", "encoder" to m.plan and fills
// m.generation->views. `text_hidden`: the decoder's width (the projector's output).
void build_deepseek_ocr2_vision(BuiltModel& m, const DeepseekOcrConfig& c, const WeightSource& src);

// The checkpoint tensors of the vision part (original DeepSeek-OCR-2 names), for random weights.
std::map<std::string, std::vector<int64_t>> deepseek_ocr2_vision_tensors(const DeepseekOcrConfig& c);

}  // namespace il::models
