// GLM-OCR's prompt for one page and one task, as transformers 5.17's Glm46VProcessor with the
// checkpoint's chat template builds it, and the 3-axis M-RoPE positions GlmOcrModel.get_rope_index
// gives it. Sources and the rendered template: docs/glm-ocr.md ("The prompt").
//
//   [gMASK]<sop><|user|>\n<|begin_of_image|><|image|> x N<|end_of_image|>{task}<|assistant|>\n
//
// N = t * h * w / merge² of the image's grid; {task} is "Text Recognition:", "Table Recognition:"
// or "Formula Recognition:". mm_token_type_ids is 1 on the <|image|> tokens only (the begin/end
// markers are text, 0). Positions: text runs take the running index on all three axes; an image
// run starting at p takes (p + frame, p + row, p + column) over the merged grid, raster order,
// after which the running index advances by max(h, w) / merge (not by the run's length); the
// rope delta (max position + 1 - length) shifts every later decode position on all axes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace il::text {
class Tokenizer;
}

namespace il::models {

enum class GlmOcrTask { text, table, formula };

// "Text Recognition:", "Table Recognition:", "Formula Recognition:" (the GLM-OCR SDK's prompts).
std::string_view glm_ocr_task_prompt(GlmOcrTask task);
// "text" / "table" / "formula" (the CLI's --task values); nullopt otherwise.
std::optional<GlmOcrTask> parse_glm_ocr_task(std::string_view name);

// The chat template's special tokens, looked up by name in the tokenizer.
struct GlmOcrSpecialTokens {
  std::int32_t gmask = 0;        // [gMASK]
  std::int32_t sop = 0;          // <sop>
  std::int32_t user = 0;         // <|user|>
  std::int32_t assistant = 0;    // <|assistant|>
  std::int32_t begin_image = 0;  // <|begin_of_image|>
  std::int32_t image = 0;        // <|image|>
  std::int32_t end_image = 0;    // <|end_of_image|>

  // Throws il::Error naming `source` and the missing token.
  static GlmOcrSpecialTokens from_tokenizer(const text::Tokenizer& tokenizer, const std::string& source);
};

struct GlmOcrPrompt {
  std::vector<std::int32_t> input_ids;
  std::vector<std::uint8_t> mm_token_type_ids;  // 1 on <|image|>, 0 elsewhere
  std::size_t image_offset = 0;                 // index of the first <|image|>
  std::size_t image_tokens = 0;                 // N
};

// The prompt for one page whose processor grid is `grid_thw` (image::PatchedImage::grid_thw),
// with a free task text (glm_ocr_task_prompt() for the standard ones). The rendered template is
// tokenized as transformers does: without the tokenizer's own special tokens, the template's
// special tokens matched as added tokens. Throws il::Error for a grid not divisible by the merge
// window, a task text containing template tokens, or a tokenizer that splits the placeholder.
GlmOcrPrompt build_glm_ocr_prompt(const text::Tokenizer& tokenizer, const GlmOcrSpecialTokens& special,
                                  const std::array<int, 3>& grid_thw, std::size_t merge_size,
                                  std::string_view task_text);

// 3-axis positions (t, h, w) per token and the rope delta.
struct MropePositions {
  std::array<std::vector<std::int32_t>, 3> axes;
  std::int32_t delta = 0;  // max position + 1 - length; decode step at cache index i: i + delta

  std::size_t size() const { return axes[0].size(); }
};

// GlmOcrModel.get_rope_index for one unpadded sequence: runs of equal mm_token_type_ids, the
// image runs taking the grids in order. Throws il::Error when a run's length is not
// t*h*w/merge² of its grid, when grids are missing or left over, or for video runs (type 2).
MropePositions glm_ocr_rope_index(std::span<const std::uint8_t> mm_token_type_ids,
                                  std::span<const std::array<int, 3>> grids_thw, std::size_t merge_size);

}  // namespace il::models
