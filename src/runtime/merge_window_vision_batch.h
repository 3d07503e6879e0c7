// The batch of a vision tower fed in merge-window patch order, the layout of the Qwen2-VL family's
// image processors (GLM-OCR's tower, models/glm_ocr_vision.h, is the one served): the processor's
// pixel_values (one row of C·T·P·P values per patch, images one after another, each in 2×2
// merge-window order) and image_grid_thw ([t, h, w] per image, in patches). Each frame of each
// image is one sequence (attention stays inside it, as transformers' cu_seqlens makes it), and
// each patch gets its (h, w) in the patch grid as rope_positions (axis 0: h, axis 1: w), recovered
// from the merge-window order: patch i of a frame lies in window i / 4 (row-major over the
// (h/2) × (w/2) windows) at (i % 4) / 2, i % 2 inside it.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "plan/plan.h"

namespace il::runtime {

// Throws il::Error naming the image: a grid entry not positive, h or w not divisible by `merge`,
// or a patch count other than pixel_values.size() / patch_dim.
plan::Batch make_merge_window_vision_batch(const std::vector<float>& pixel_values, std::size_t patch_dim,
                                           const std::vector<std::array<int, 3>>& grid_thw, int merge = 2);

}  // namespace il::runtime
