// What the Engine interface does for a model that lacks a feature: a clear refusal naming what
// the model is not (an embedder asked for tokens, a text model asked for images), and the
// tokenization defaults of engines without options of their own. LocalEngine (engine.cc)
// overrides what its model has.
#include "inferencelayer/engine.h"

#include "core/error.h"

namespace il {

std::size_t Engine::prompt_tokens(std::string_view prompt) const {
  if (prompt.empty()) return 0;  // sentence-transformers treats "" as no prompt
  const TokenInput t = tokenize(prompt, true);
  return t.ids.empty() ? 0 : t.ids.size() - 1;
}

// Defaults for engines without a tokenizer-level API of their own.
TokenInput Engine::tokenize_with(std::string_view text, const TokenizeOptions& options) const {
  check(options.add_special_tokens && !options.truncate_left && options.limit_length,
        "this engine does not support these tokenization options");
  return tokenize(text, options.truncate);
}

TokenInput Engine::tokenize_pair_with(std::string_view first, std::string_view second,
                                      const TokenizeOptions& options) const {
  check(options.add_special_tokens && !options.truncate_left && options.limit_length,
        "this engine does not support these tokenization options");
  return tokenize_pair(first, second, options.truncate);
}

std::vector<TokenDetail> Engine::token_details(std::string_view, const TokenizeOptions&) const {
  throw Error("this engine does not report token spans");
}

std::vector<Matrix> Engine::token_vectors(const std::vector<TokenInput>&) {
  throw Error("this engine does not produce per-token vectors");
}

std::vector<float> Engine::late_interaction(const TokenInput&, const std::vector<TokenInput>&) {
  throw Error("this engine does not score by late interaction");
}

ImageInput Engine::load_image(const std::vector<std::uint8_t>&, std::string_view) const {
  throw Error("this model takes no images");
}

Matrix Engine::embed_images(const std::vector<ImageInput>&, const EmbedOptions&) {
  throw Error("this model takes no images");
}

std::vector<Matrix> Engine::image_hidden_states(const std::vector<ImageInput>&) {
  throw Error("this model takes no images");
}

std::vector<GenerationResult> Engine::generate(const std::vector<GenerationRequest>&, const TokenCallback&) {
  throw Error("this model does not generate text");
}

void Engine::check_generation_request(const GenerationRequest&) { throw Error("this model does not generate text"); }

GenerationId Engine::submit_generation(GenerationRequest) { throw Error("this model does not generate text"); }
std::vector<GenerationEvent> Engine::step_generation() { throw Error("this model does not generate text"); }
GenerationResult Engine::take_generation_result(GenerationId) { throw Error("this model does not generate text"); }
void Engine::cancel_generation(GenerationId) {}
GenerationLoad Engine::generation_load() const { return {}; }

PatchImage Engine::load_prompt_image(const std::vector<std::uint8_t>&, std::string_view, std::string_view) const {
  throw Error("this model takes no images in its prompts");
}

std::vector<int32_t> Engine::expand_image_placeholders(const std::vector<int32_t>&,
                                                      const std::vector<PatchImage>&) const {
  throw Error("this model takes no images in its prompts");
}

GenerationRequest Engine::ocr_request(PatchImage, std::string_view) const {
  throw Error("this model does not read pages (it is not an OCR model)");
}

std::vector<Matrix> Engine::vision_rows(const std::vector<PatchImage>&) {
  throw Error("this model has no vision tower for generation");
}

std::vector<Matrix> Engine::sam_features(const std::vector<PatchImage>&) {
  throw Error("this model has no SAM encoder (DeepSeek-OCR's)");
}

Matrix Engine::prompt_logits(const std::vector<GenerationRequest>&) {
  throw Error("this model does not generate text");
}

Matrix Engine::canvas_logits(const std::vector<int32_t>&, const std::vector<int32_t>&, const Matrix*) {
  throw Error("this model is not a block-diffusion model (it has no canvas)");
}

std::string Engine::decode(const std::vector<int32_t>&, bool) const {
  throw Error("this engine cannot decode token ids");
}

}  // namespace il
