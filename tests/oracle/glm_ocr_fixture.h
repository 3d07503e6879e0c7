// The GLM-OCR fixture (tests/fixtures/glm-ocr/expected.json, tools/oracle/make_glm_ocr_fixtures.py):
// four prompts for a tiny random GlmOcrForConditionalGeneration and what transformers 5.17
// computed for them. Shared by the CPU oracle test and the GPU model test.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "inferencelayer/engine.h"
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

// Chunked prefill, on an engine loaded with a per-step prefill budget of 3 tokens and pages of 4:
// the page prompt (case 0) runs alone, then the text prompt (case 3, 10 tokens), the tall page
// (case 1, 23 tokens, its images through token 13) and the two-image prompt (case 2, 23 tokens,
// images through token 19) arrive while it decodes. Stepped until all finish; per case its
// streamed tokens, the step (from 0) of its first token, and the load after each step.
struct ChunkedPrefillRun {
  std::map<std::size_t, std::vector<int32_t>> streamed;
  std::map<std::size_t, int> first_step;
  std::vector<GenerationLoad> loads;
  bool page_decoded_every_step = true;  // case 0 gave a token in every step until it finished
};
ChunkedPrefillRun run_chunked_prefill(Engine& engine, const std::vector<GlmCase>& cases);

}  // namespace il::test
