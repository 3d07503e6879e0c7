#include "models/registry.h"

#include "core/error.h"
#include "models/bert.h"
#include "models/config_check.h"
#include "models/embedding_head.h"

namespace il::models {
namespace {

std::string layout_name(const io::EncoderConfig& cfg, const BertNames& names) {
  if (names.layout == BertLayout::kJina) return "jina-xlm-roberta";
  switch (cfg.arch) {
    case io::Arch::kBert: return "bert";
    case io::Arch::kXlmRoberta: return "xlm-roberta";
  }
  return "?";
}

void build(BuiltModel& m, const WeightSource& src, const std::optional<DenseWeights>& dense) {
  const BertNames names = detect_bert_names(src, m.config);
  m.layout = layout_name(m.config, names);
  const EncoderBuffers encoder = build_bert_encoder(m.plan, m.config, src, names);
  if (m.config.is_cross_encoder) {
    build_cross_encoder_head(m.plan, m.config, src, names, encoder);
  } else {
    m.embedding_dim = build_embedding_head(m.plan, encoder.hidden, encoder.first,
                                           static_cast<std::size_t>(m.config.hidden), dense);
  }
}

}  // namespace

BuiltModel build_model_from_folder(const std::filesystem::path& dir) {
  BuiltModel m;
  m.config = io::load_encoder_config(dir);
  m.st = io::load_sentence_transformer_info(dir);
  // Without a pooling config, sentence-transformers itself falls back to mean pooling.
  m.pooling = m.st.pooling.value_or(PoolingMode::kMean);
  m.normalize = m.st.normalize;
  SafeTensorsSource src(io::SafeTensors::open(dir));
  m.stored_dtype = std::string(dtype_name(src.tensors().dominant_dtype()));
  m.stored_bytes = src.tensors().total_bytes();
  std::optional<SafeTensorsSource> dense_src;
  std::optional<DenseWeights> dense;
  if (m.st.dense) {
    dense_src.emplace(io::SafeTensors::open(m.st.dense->dir));
    dense = DenseWeights{&*dense_src, *m.st.dense};
  }
  const std::filesystem::path config_file = dir / "config.json";
  check_config_against_tensors(m.config, config_file, src.tensors(), src, detect_bert_names(src, m.config));
  check_modules_against_model(m.st, m.config, config_file, dense_src ? &dense_src->tensors() : nullptr);
  build(m, src, dense);
  return m;
}

BuiltModel build_model_random(const io::EncoderConfig& config) {
  BuiltModel m;
  m.config = config;
  m.pooling = PoolingMode::kMean;
  m.normalize = true;
  RandomSource src(bert_standard_tensors(config));
  build(m, src, std::nullopt);
  return m;
}

}  // namespace il::models
