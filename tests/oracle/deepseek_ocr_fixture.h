// The DeepSeek-OCR-2 and v1 fixtures (tests/fixtures/deepseek-ocr2, deepseek-ocr: expected.json and its .npy files,
// tools/oracle/make_deepseek_ocr_fixtures.py): three pages (a native view, one whose tables are
// resized, a tiled page) and two text prompts, with what transformers 5.17 computed for them.
// Shared by the CPU oracle test and the GPU model test.
#pragma once

#include <string>
#include <vector>

#include "inferencelayer/generation.h"
#include "io/npy.h"

namespace il::test {

struct TextCase {
  std::string name;
  std::vector<int32_t> input_ids, greedy;
  std::vector<float> last_logits;
  std::vector<std::vector<float>> step_logits;
};

struct PageCase {
  std::string name;
  std::vector<int32_t> input_ids, greedy;
  PatchImage page;
  io::NpyArray vision;
  std::vector<float> last_logits;
};

std::vector<TextCase> text_cases();
// `folder`: "deepseek-ocr2", or "deepseek-ocr" (v1: the same cases composed by
// tools/oracle/deepseek_ocr_v1_reference.py; tiles carry image_spatial_crop).
std::vector<PageCase> page_cases(const std::string& folder = "deepseek-ocr2");
// A page case as a request: greedy, its recorded length, no stop id (transformers ran without one).
GenerationRequest page_request(const PageCase& c);

}  // namespace il::test
