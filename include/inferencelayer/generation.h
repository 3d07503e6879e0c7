// Text generation through the public API (Engine::generate): a prompt of token ids, maybe with
// images, and how to pick each new token.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace il {

// One image of a multimodal prompt, as the model's processor gives it: one row of patch_dim
// values per patch (transformers' pixel_values for the image) and its [t, h, w] grid of patches.
struct PatchImage {
  std::vector<float> rows;
  std::size_t patch_dim = 0;
  std::array<int, 3> grid_thw{};
  // DeepSeek-OCR pages: `rows` holds square views back to back (the tiles, then the global view),
  // one patch row per patch, row-major in each view; their sides in patches. Empty for other
  // models (grid_thw describes the image).
  std::vector<int> view_sides;
  // DeepSeek-OCR (v1) pages with tiles: the tiles' grid, columns then rows (the processor's
  // image_spatial_crop); the tiles are row-major over it.
  std::array<int, 2> tile_grid{};
};

// How the next token is picked from the logits, in transformers' order: repetition penalty, the
// n-gram guard, then greedy (temperature 0) or temperature → top-k → top-p → a draw.
struct SamplingOptions {
  std::size_t max_new_tokens = 256;
  float temperature = 0.0f;   // 0: greedy (the largest logit; the lowest id on ties)
  std::size_t top_k = 0;      // 0: no cut
  float top_p = 1.0f;         // 1: no cut
  std::uint64_t seed = 0;     // the draws of a request depend on this alone
  // > 1 makes every token already in the prompt or the output less likely: its logit divided by
  // the penalty when positive, multiplied when negative (transformers' repetition_penalty).
  float repetition_penalty = 1.0f;
  // The anti-loop guard: a token that would complete an n-gram of this many tokens which already
  // occurs in the last `ngram_window` tokens is banned (0: off). ngram_window 0 looks at the whole
  // sequence, prompt included (transformers' no_repeat_ngram_size). N-grams that hold a token of
  // ngram_whitelist may repeat (table markup in OCR output repeats by nature).
  std::size_t no_repeat_ngram = 0;
  std::size_t ngram_window = 0;
  std::vector<int32_t> ngram_whitelist;
  // Stop on any of these ids (nullopt: the folder's end ids, generation_config.json
  // eos_token_id); the id is part of the output, as in transformers.
  std::optional<std::vector<int32_t>> stop_ids;
  // Stop once the decoded output contains one of these; the output keeps the tokens up to and
  // including the one that completed it.
  std::vector<std::string> stop_strings;
};

// Block-diffusion models (DiffusionGemma): the denoising settings of transformers'
// DiffusionGemmaGenerationConfig; each unset one takes the folder's generation_config.json
// (docs/diffusion-gemma.md §6). The seed and stop ids come from SamplingOptions; its other
// fields (temperature, top-k, top-p, penalties, max_new_tokens) do not apply: the new-token
// limit is `max_new_tokens` here (whole canvases: ceil(max_new_tokens / canvas_length) blocks).
struct DiffusionOptions {
  std::optional<std::size_t> max_new_tokens;
  std::optional<int> max_denoising_steps;
  std::optional<double> t_min, t_max;  // the temperature schedule, t_min + (t_max − t_min) · n / N
  std::optional<float> entropy_bound;
  std::optional<int> stability_threshold;
  std::optional<float> confidence_threshold;
  bool no_early_stop = false;  // denoise every step (confidence_threshold None in transformers)
};

struct GenerationRequest {
  std::vector<int32_t> input_ids;
  std::vector<PatchImage> images;  // in the order their placeholder runs appear in input_ids
  SamplingOptions options;
  DiffusionOptions diffusion;
};

enum class FinishReason { kStopId, kStopString, kLength };

inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStopId: return "stop";
    case FinishReason::kStopString: return "stop_string";
    case FinishReason::kLength: return "length";
  }
  return "?";
}

struct GenerationResult {
  std::vector<int32_t> tokens;  // the new tokens only
  FinishReason finish = FinishReason::kLength;
  std::size_t prompt_tokens = 0;
  double prefill_ms = 0.0;  // from the request's start to its first token
  double decode_ms = 0.0;   // from its first token to its last
};

// Called as tokens are produced: request index, token id, and the text it completes (decoded
// incrementally, never splitting a UTF-8 character; empty while a character is incomplete or
// without a tokenizer).
using TokenCallback = std::function<void(std::size_t request, int32_t token, const std::string& text)>;

// Incremental generation (Engine::submit_generation / step_generation): the server's scheduler
// and the ocr command keep a running batch fed, requests joining and leaving between steps.
using GenerationId = std::uint64_t;

// One token produced by a step, for the request `id`; `finished` on its last token (its result
// is then ready for Engine::take_generation_result).
struct GenerationEvent {
  GenerationId id = 0;
  int32_t token = 0;
  std::string text;  // what the token completes of the decoded output (as TokenCallback's)
  bool finished = false;
};

// How full the generation runtime is (the server's /metrics and admission).
struct GenerationLoad {
  std::size_t running = 0;       // sequences holding KV cache pages
  std::size_t waiting = 0;       // submitted, not admitted yet
  std::size_t prefilling = 0;    // of the running: prompts part in the KV cache (chunked prefill)
  std::size_t kv_pages_used = 0;
  std::size_t kv_pages_total = 0;
  std::size_t kv_page_size = 0;  // tokens per page
  // Since the start: tokens where the anti-loop guard (SamplingOptions::no_repeat_ngram) banned
  // the most likely next token, i.e. the loops it broke.
  std::uint64_t guarded_tokens = 0;
  // Since the start: requests admitted before an older one that waited for KV cache pages, when
  // that could not hold it past the step by which its pages are sure to be free
  // (runtime::Generator's backfilling).
  std::uint64_t backfilled = 0;
};

}  // namespace il
