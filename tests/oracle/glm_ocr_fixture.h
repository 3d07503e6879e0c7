// The GLM-OCR fixture (tests/fixtures/glm-ocr/expected.json, tools/oracle/make_glm_ocr_fixtures.py):
// four prompts for a tiny random GlmOcrForConditionalGeneration and what transformers 5.17
// computed for them. Shared by the CPU oracle test and the GPU model test.
#pragma once

#include <string>
#include <vector>

#include "inferencelayer/generation.h"

namespace il::test {

struct GlmCase {
  std::string name;
  // The prompt, its images and options as transformers ran them: greedy, max_new_tokens the
  // recorded length, no stop id (eos_token_id=None).
  GenerationRequest request;
  std::vector<float> vision;       // the merger's rows of the case's images, flattened
  std::vector<float> last_logits;  // the prompt's last position
  std::vector<int32_t> greedy, greedy_rp, greedy_nr;  // plain, repetition_penalty 1.3, no_repeat_ngram_size 2
};

std::vector<GlmCase> load_glm_cases();
std::vector<GenerationRequest> glm_requests(const std::vector<GlmCase>& cases);

}  // namespace il::test
