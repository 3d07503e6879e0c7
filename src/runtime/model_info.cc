#include "runtime/model_info.h"

#include <algorithm>

namespace il::runtime {

std::size_t max_sequence_length(const models::BuiltModel& model) {
  std::size_t n = static_cast<std::size_t>(std::max(1, model.config.max_tokens_per_sequence()));
  if (model.st.max_seq_length > 0) n = std::min(n, static_cast<std::size_t>(model.st.max_seq_length));
  return n;
}

ModelInfo describe(const std::filesystem::path& dir, const models::BuiltModel& model,
                   const std::string& tokenizer_kind, std::size_t max_len) {
  const io::EncoderConfig& c = model.config;
  ModelInfo i;
  i.path = dir.string();
  i.model_type = c.model_type;
  i.architecture = c.architectures.empty() ? c.model_type : c.architectures.front();
  i.layout = model.layout;
  i.kind = c.is_cross_encoder ? ModelKind::kCrossEncoder : ModelKind::kEmbedding;
  i.hidden = c.hidden;
  i.layers = c.layers;
  i.heads = c.heads;
  i.intermediate = c.intermediate;
  i.vocab = c.vocab;
  i.max_tokens = static_cast<int>(max_len);
  i.num_labels = c.is_cross_encoder ? c.num_labels : 0;
  for (int l = 0; l < i.num_labels; ++l) {
    const auto name = c.id2label.find(l);
    i.labels.push_back(name != c.id2label.end() ? name->second : "LABEL_" + std::to_string(l));
  }
  i.output_dim = static_cast<int>(c.is_cross_encoder ? 0 : model.embedding_dim);
  i.activation = std::string(activation_name(c.act));
  i.stored_dtype = model.stored_dtype;
  i.parameters = model.plan.parameter_count();
  i.weight_bytes = model.stored_bytes;
  i.pooling = model.pooling;
  i.normalize = model.normalize;
  i.sentence_transformers = model.st.present;
  i.random_weights = c.random_weights;
  i.tokenizer = tokenizer_kind;
  i.prompts = model.st.prompts;
  i.include_prompt = model.st.include_prompt;
  i.default_prompt_name = model.st.default_prompt_name;
  return i;
}

}  // namespace il::runtime
