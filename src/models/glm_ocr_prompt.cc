#include "models/glm_ocr_prompt.h"

#include <algorithm>

#include "core/error.h"
#include "text/tokenizer.h"

namespace il::models {
namespace {

constexpr std::string_view kImage = "<|image|>";
constexpr std::string_view kBeginImage = "<|begin_of_image|>";
constexpr std::string_view kEndImage = "<|end_of_image|>";

std::int32_t lookup(const text::Tokenizer& tokenizer, std::string_view token, const std::string& source) {
  const auto id = tokenizer.token_to_id(token);
  check(id.has_value(), source, ": the tokenizer has no token ", token, " (GLM-OCR's chat template needs it)");
  return *id;
}

}  // namespace

std::string_view glm_ocr_task_prompt(GlmOcrTask task) {
  switch (task) {
    case GlmOcrTask::text: return "Text Recognition:";
    case GlmOcrTask::table: return "Table Recognition:";
    case GlmOcrTask::formula: return "Formula Recognition:";
  }
  return "Text Recognition:";
}

std::optional<GlmOcrTask> parse_glm_ocr_task(std::string_view name) {
  if (name == "text") return GlmOcrTask::text;
  if (name == "table") return GlmOcrTask::table;
  if (name == "formula") return GlmOcrTask::formula;
  return std::nullopt;
}

GlmOcrSpecialTokens GlmOcrSpecialTokens::from_tokenizer(const text::Tokenizer& tokenizer, const std::string& source) {
  GlmOcrSpecialTokens s;
  s.gmask = lookup(tokenizer, "[gMASK]", source);
  s.sop = lookup(tokenizer, "<sop>", source);
  s.user = lookup(tokenizer, "<|user|>", source);
  s.assistant = lookup(tokenizer, "<|assistant|>", source);
  s.begin_image = lookup(tokenizer, kBeginImage, source);
  s.image = lookup(tokenizer, kImage, source);
  s.end_image = lookup(tokenizer, kEndImage, source);
  return s;
}

GlmOcrPrompt build_glm_ocr_prompt(const text::Tokenizer& tokenizer, const GlmOcrSpecialTokens& special,
                                  const std::array<int, 3>& grid_thw, std::size_t merge_size,
                                  std::string_view task_text) {
  check(merge_size > 0, "GLM-OCR prompt: merge size is zero");
  const std::size_t unit = merge_size * merge_size;
  for (int v : grid_thw) {
    check(v > 0, "GLM-OCR prompt: image grid [", grid_thw[0], ", ", grid_thw[1], ", ", grid_thw[2],
          "] has a non-positive side");
  }
  const std::size_t patches = static_cast<std::size_t>(grid_thw[0]) * static_cast<std::size_t>(grid_thw[1]) *
                              static_cast<std::size_t>(grid_thw[2]);
  check(grid_thw[1] % static_cast<int>(merge_size) == 0 && grid_thw[2] % static_cast<int>(merge_size) == 0,
        "GLM-OCR prompt: image grid [", grid_thw[0], ", ", grid_thw[1], ", ", grid_thw[2],
        "] is not a multiple of the merge size ", merge_size);
  for (std::string_view marker : {kImage, kBeginImage, kEndImage}) {
    check(task_text.find(marker) == std::string_view::npos, "GLM-OCR prompt: the task text contains ", marker,
          ", which the template places itself");
  }

  // The checkpoint's chat template for [{role: user, content: [image, text]}] with
  // add_generation_prompt, the image placeholder still single (the processor expands it to N
  // copies of the same added token before tokenizing, which is the same as expanding the id).
  std::string rendered = "[gMASK]<sop><|user|>\n";
  rendered += kBeginImage;
  rendered += kImage;
  rendered += kEndImage;
  rendered += task_text;
  rendered += "<|assistant|>\n";
  text::EncodeOptions options;
  options.add_special_tokens = false;  // the template carries its own; apply_chat_template adds none
  const text::Encoding enc = tokenizer.encode(rendered, options);

  const auto count = std::count(enc.ids.begin(), enc.ids.end(), special.image);
  check(count == 1, "GLM-OCR prompt: the tokenizer gave ", count, " <|image|> tokens for one placeholder");
  const auto at = static_cast<std::size_t>(std::find(enc.ids.begin(), enc.ids.end(), special.image) - enc.ids.begin());
  check(at > 0 && at + 1 < enc.ids.size() && enc.ids[at - 1] == special.begin_image &&
            enc.ids[at + 1] == special.end_image,
        "GLM-OCR prompt: the tokenizer did not keep <|begin_of_image|><|image|><|end_of_image|> as three tokens");

  GlmOcrPrompt p;
  p.image_offset = at;
  p.image_tokens = patches / unit;
  p.input_ids.reserve(enc.ids.size() - 1 + p.image_tokens);
  p.input_ids.insert(p.input_ids.end(), enc.ids.begin(), enc.ids.begin() + static_cast<std::ptrdiff_t>(at));
  p.input_ids.insert(p.input_ids.end(), p.image_tokens, special.image);
  p.input_ids.insert(p.input_ids.end(), enc.ids.begin() + static_cast<std::ptrdiff_t>(at) + 1, enc.ids.end());
  // Glm46VProcessor.create_mm_token_type_ids: 1 where the id is the image token (outside video
  // segments, of which the prompt has none).
  p.mm_token_type_ids.resize(p.input_ids.size());
  for (std::size_t i = 0; i < p.input_ids.size(); ++i) {
    p.mm_token_type_ids[i] = p.input_ids[i] == special.image ? 1 : 0;
  }
  return p;
}

MropePositions glm_ocr_rope_index(std::span<const std::uint8_t> types, std::span<const std::array<int, 3>> grids,
                                  std::size_t merge_size) {
  check(merge_size > 0, "GLM-OCR positions: merge size is zero");
  MropePositions out;
  for (auto& axis : out.axes) axis.reserve(types.size());
  const auto m = static_cast<std::int64_t>(merge_size);
  std::int64_t current = 0, max_pos = -1;
  std::size_t next_grid = 0;
  auto push = [&](std::int64_t t, std::int64_t h, std::int64_t w) {
    check(std::max({t, h, w}) <= INT32_MAX, "GLM-OCR positions: a position exceeds 32 bits");
    out.axes[0].push_back(static_cast<std::int32_t>(t));
    out.axes[1].push_back(static_cast<std::int32_t>(h));
    out.axes[2].push_back(static_cast<std::int32_t>(w));
    max_pos = std::max({max_pos, t, h, w});
  };
  for (std::size_t start = 0; start < types.size();) {
    std::size_t end = start;
    while (end < types.size() && types[end] == types[start]) ++end;
    const std::size_t run = end - start;
    if (types[start] == 0) {
      for (std::size_t i = 0; i < run; ++i) {
        const auto p = current + static_cast<std::int64_t>(i);
        push(p, p, p);
      }
      current += static_cast<std::int64_t>(run);
    } else {
      check(types[start] == 1, "GLM-OCR positions: token ", start, " has mm_token_type ", int(types[start]),
            " (only text 0 and image 1 are supported)");
      check(next_grid < grids.size(), "GLM-OCR positions: image run ", next_grid + 1, " at token ", start,
            " has no image_grid_thw entry (", grids.size(), " given)");
      const auto& g = grids[next_grid++];
      check(g[0] > 0 && g[1] > 0 && g[2] > 0 && g[1] % m == 0 && g[2] % m == 0, "GLM-OCR positions: image grid [",
            g[0], ", ", g[1], ", ", g[2], "] is not positive multiples of the merge size ", merge_size);
      const std::int64_t gt = g[0], gh = g[1] / m, gw = g[2] / m;
      check(static_cast<std::int64_t>(run) == gt * gh * gw, "GLM-OCR positions: image run at token ", start, " has ",
            run, " tokens but its grid [", g[0], ", ", g[1], ", ", g[2], "] needs ", gt * gh * gw);
      for (std::int64_t t = 0; t < gt; ++t)
        for (std::int64_t h = 0; h < gh; ++h)
          for (std::int64_t w = 0; w < gw; ++w) push(current + t, current + h, current + w);
      current += std::max(static_cast<std::int64_t>(g[1]), static_cast<std::int64_t>(g[2])) / m;
    }
    start = end;
  }
  check(next_grid == grids.size(), "GLM-OCR positions: ", grids.size(), " image grids for ", next_grid,
        " image runs");
  out.delta = static_cast<std::int32_t>(max_pos + 1 - static_cast<std::int64_t>(types.size()));
  return out;
}

}  // namespace il::models
