#include "models/config_check.h"

#include <string>

#include "core/error.h"

namespace il::models {
namespace {

using io::SafeTensors;

// Where the message starts: "<file>: field "<name>" = <value>".
std::string field(const std::filesystem::path& file, const char* name, long long value) {
  return file.string() + ": field \"" + name + "\" = " + std::to_string(value);
}

// Dimension `dim` (0 rows, 1 columns) of a 2-D tensor must equal the field's value. Absent tensors
// and other ranks are left to the builder, whose messages name the tensor and both shapes.
void expect_dim(const SafeTensors& t, const std::string& tensor, int dim, long long want,
                const std::filesystem::path& file, const char* name) {
  if (!t.has(tensor)) return;
  const io::TensorInfo& info = t.info(tensor);
  if (info.shape.size() != 2 || info.shape[static_cast<std::size_t>(dim)] == want) return;
  const char* unit = dim == 0 ? " rows" : " columns";
  throw make_error(field(file, name, want), " does not match tensor \"", tensor, "\" in ", info.file.string(),
                   ": expected ", want, unit, ", found ", info.shape[static_cast<std::size_t>(dim)], unit);
}

}  // namespace

void check_config_against_tensors(const BertConfig& cfg, const std::filesystem::path& config_file,
                                  const SafeTensors& t, const WeightSource& src, const BertNames& names) {
  const std::string& p = names.prefix;
  const std::string word = p + "embeddings.word_embeddings.weight";
  expect_dim(t, word, 1, cfg.hidden, config_file, "hidden_size");
  expect_dim(t, word, 0, cfg.vocab, config_file, "vocab_size");
  expect_dim(t, p + "embeddings.position_embeddings.weight", 0, cfg.max_positions, config_file,
             "max_position_embeddings");

  // 0 means "no token-type table": a table in the checkpoint would go unused and every
  // token_type_ids input would be ignored.
  const std::string types = p + "embeddings.token_type_embeddings.weight";
  if (cfg.type_vocab == 0 && t.has(types))
    throw make_error(field(config_file, "type_vocab_size", 0), " (no token-type table) does not match tensor \"", types,
                     "\" in ", t.info(types).file.string(), ": a table of ", t.info(types).shape.at(0),
                     " rows is present");
  if (cfg.type_vocab > 0)
    check(t.has(types), field(config_file, "type_vocab_size", cfg.type_vocab), " but the checkpoint has no tensor \"",
          types, "\"");
  expect_dim(t, types, 0, cfg.type_vocab, config_file, "type_vocab_size");

  // Fewer layers than the checkpoint holds would compute another model than the one published.
  const std::string last = bert_layer_tensors(names, cfg.layers - 1).attention_in;
  check(t.has(last), field(config_file, "num_hidden_layers", cfg.layers), " but the checkpoint has no tensor \"", last,
        "\" (it holds fewer layers)");
  const std::string extra = bert_layer_tensors(names, cfg.layers).attention_in;
  if (t.has(extra))
    throw make_error(field(config_file, "num_hidden_layers", cfg.layers), " but ", t.info(extra).file.string(),
                     " holds more layers (tensor \"", extra, "\")");
  expect_dim(t, bert_layer_tensors(names, 0).mlp_up, 0, cfg.intermediate, config_file, "intermediate_size");

  if (cfg.is_cross_encoder)
    expect_dim(t, cross_encoder_head_names(src, names).out + ".weight", 0, cfg.num_labels, config_file, "num_labels");
}

void check_modules_against_model(const io::SentenceTransformerInfo& st, int hidden,
                                 const std::filesystem::path& config_file, const SafeTensors* dense) {
  if (st.pooling_dimension && *st.pooling_dimension != hidden)
    throw make_error(field(st.pooling_file, "word_embedding_dimension", *st.pooling_dimension),
                     " does not match the model: expected ", hidden, " (hidden_size in ", config_file.string(),
                     "), found ", *st.pooling_dimension);
  if (!st.dense) return;
  const io::DenseModule& d = *st.dense;
  const std::filesystem::path file = d.dir / "config.json";
  if (d.in_features != hidden)
    throw make_error(field(file, "in_features", d.in_features), " does not match the pooled embedding: expected ",
                     hidden, " (hidden_size in ", config_file.string(), "), found ", d.in_features);
  if (dense == nullptr) return;
  expect_dim(*dense, "linear.weight", 0, d.out_features, file, "out_features");
  expect_dim(*dense, "linear.weight", 1, d.in_features, file, "in_features");
}

}  // namespace il::models
