// The rotary positions of a multimodal prompt (M-RoPE, three axes: temporal, height, width), as
// transformers' GlmOcrModel.get_rope_index / Qwen2-VL number them: text tokens take a running
// index on all three axes; a run of image tokens starting at index p takes (p + t, p + row,
// p + col) over the image's merged grid in raster order, and the running index then moves on by
// max(rows, cols). A token generated after the prompt at cache index i sits at i + delta on
// every axis, delta = (the largest prompt position + 1) − the prompt's length.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace il::runtime {

struct PromptPositions {
  std::vector<int32_t> axes;  // 3 × length, axis-major (plan::Batch::rope_positions' layout)
  int32_t delta = 0;
};

// `grids`: each image's [t, h, w] in patches, in order; its run is t·h·w / merge² tokens equal to
// `image_token`. Throws il::Error when the runs and the grids disagree.
PromptPositions mrope_positions(std::span<const int32_t> ids, int32_t image_token,
                                std::span<const std::array<int, 3>> grids, std::size_t merge);

}  // namespace il::runtime
