#include "runtime/model_info.h"

#include <algorithm>

#include "image/deepseek_preprocess.h"

namespace il::runtime {

std::size_t max_sequence_length(const models::BuiltModel& model) {
  std::size_t n = std::max<std::size_t>(1, model.limits.max_tokens);
  if (model.st.max_seq_length > 0) n = std::min(n, static_cast<std::size_t>(model.st.max_seq_length));
  return n;
}

ModelInfo describe(const std::filesystem::path& dir, const models::BuiltModel& model,
                   const std::string& tokenizer_kind, std::size_t max_len) {
  ModelInfo i;
  i.path = dir.string();
  i.model_type = model.model_type;
  i.architecture = model.architecture;
  i.layout = model.layout;
  i.notes = model.notes;
  if (model.generation) i.notes.insert(i.notes.end(), model.generation->notes.begin(), model.generation->notes.end());
  if (model.diffusion) i.notes.insert(i.notes.end(), model.diffusion->notes.begin(), model.diffusion->notes.end());
  i.capabilities = model.capabilities;
  i.kind = model.capabilities.score ? ModelKind::kCrossEncoder : ModelKind::kEmbedding;
  i.hidden = model.hidden;
  i.layers = model.layers;
  i.heads = model.heads;
  i.kv_heads = model.kv_heads;
  i.intermediate = model.intermediate;
  i.vocab = model.limits.vocab;
  i.type_vocab = model.limits.type_vocab;
  i.max_tokens = static_cast<int>(max_len);
  i.num_labels = static_cast<int>(model.labels.size());
  i.labels = model.labels;
  // Pooled embeddings, or a multi-vector model's per-token vectors.
  i.output_dim = static_cast<int>(model.capabilities.embed || model.capabilities.multi_vector ? model.embedding_dim : 0);
  i.activation = std::string(activation_name(model.act));
  i.stored_dtype = model.stored_dtype;
  i.parameters = model.plan.parameter_count();
  i.weight_bytes = model.stored_bytes;
  i.pooling = model.pooling;
  i.normalize = model.normalize;
  i.sentence_transformers = model.st.present;
  i.random_weights = model.random_weights;
  i.tokenizer = tokenizer_kind;
  i.prompts = model.st.prompts;
  i.include_prompt = model.st.include_prompt;
  i.default_prompt_name = model.st.default_prompt_name;
  if (model.image) {
    i.image_channels = model.image->channels;
    i.image_height = model.image->height;
    i.image_width = model.image->width;
    i.patch_size = model.image->patch;
    i.image_embedding_dim = static_cast<int>(model.image_embedding_dim);
  }
  if (model.generation) {
    i.ocr_tasks = model.generation->ocr_tasks;
    i.ocr_grounding = model.generation->ocr_grounding;
    i.plain_chat = model.generation->plain_chat;
    if (model.generation->views && model.generation->views->clip)
      i.ocr_modes.assign(std::begin(image::kDeepseekV1Modes), std::end(image::kDeepseekV1Modes));
  }
  if (model.generation && model.generation->views) i.patch_size = static_cast<int>(model.generation->views->patch);
  if (model.logit) {
    i.has_logit = true;
    i.logit_scale = model.logit->first;
    i.logit_bias = model.logit->second;
  }
  return i;
}

}  // namespace il::runtime
