// Drives DeepSeek-OCR's vision programs (models/model.h, ViewVisionSpec) over pages of square
// views: builds each program's batch (patch positions into the resized position table, the
// 3 × 3 convolutions' gathered rows, the encoder's SAM rows and learned queries under the
// prefix-causal mask), runs them in turn, views grouped to fit the executor's batch, and
// assembles each page's rows for the decoder.
#pragma once

#include <vector>

#include "inferencelayer/generation.h"
#include "inferencelayer/types.h"
#include "models/model.h"
#include "plan/executor.h"

namespace il::runtime {

// The rows a page gives the decoder (the image placeholders it fills): each view's queries, then
// the separator. Throws il::Error naming the view when a side is not one the model has tables
// for or a view does not fit one batch.
std::size_t view_page_rows(const models::ViewVisionSpec& v, const PatchImage& page, std::size_t max_tokens);
void check_view_page(const models::ViewVisionSpec& v, const PatchImage& page, std::size_t max_tokens,
                     const std::string& what);

// A page from its processor's pixel values (CHW floats, normalised): `tiles` of tile_count
// views of tile_side² pixels each (pixel_values_local), then the global view of global_side²
// (pixel_values); cut into patches of `patch` pixels, each patch row in (channel, y, x) order.
PatchImage make_view_page(const float* global, std::size_t global_side, const float* tiles, std::size_t tile_count,
                          std::size_t tile_side, std::size_t patch);

struct ViewVisionResult {
  std::vector<Matrix> pages;  // per page: its rows for the decoder
  std::vector<Matrix> sam;    // per view (pages in order, each page's views in order), when asked:
                              // SAM's output after the stride-2 convolutions, one row per position
};

ViewVisionResult run_view_vision(const models::ViewVisionSpec& v, plan::Executor& exec,
                                 const std::vector<const PatchImage*>& pages, bool keep_sam = false);

}  // namespace il::runtime
