// BERT, RoBERTa / XLM-RoBERTa and the jina-reranker-v2 "flash" XLM-R layout: one post-norm
// encoder, three ways of naming its tensors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/bert_config.h"
#include "models/model.h"
#include "models/weight_source.h"
#include "plan/plan.h"

namespace il::models {

enum class BertLayout { kStandard, kJina };

struct BertNames {
  std::string prefix;  // "", "bert." or "roberta."
  BertLayout layout = BertLayout::kStandard;
};

// Finds the tensor prefix and layout, identically for every backend. Throws listing what was
// probed when no known layout matches.
BertNames detect_bert_names(const WeightSource& src, const BertConfig& cfg);

// The tensors the config checks read (models/config_check): layer `i`'s first attention weight
// (the query, or jina's fused QKV) and its MLP's first linear weight ([intermediate, hidden]).
struct BertLayerTensors {
  std::string attention_in;
  std::string mlp_up;
};
BertLayerTensors bert_layer_tensors(const BertNames& names, int i);

// The cross-encoder head's two linears (without ".weight"): BERT names (pooler.dense, classifier)
// when `<prefix>pooler.dense.weight` exists, else the RoBERTa names (classifier.dense,
// classifier.out_proj).
struct CrossEncoderHeadNames {
  std::string dense;
  std::string out;
};
CrossEncoderHeadNames cross_encoder_head_names(const WeightSource& src, const BertNames& names);

struct EncoderBuffers {
  plan::BufferId hidden = -1;    // [T, hidden]: the final hidden states of every token ("encode")
  plan::BufferId selected = -1;  // [B, hidden], selected rows: each sequence's first ("encode_first")
};

// Appends the trunk to program "encode" (embeddings → layers) and names the final hidden states
// output "hidden". Also appends program "encode_first": the same trunk whose last layer runs for
// each sequence's first token only (its queries; keys and values still come from every token),
// which is all a CLS-pooled embedding or a cross-encoder head reads: the last layer's attention
// output, MLP and norms shrink from T rows to B. Its buffers reuse the storage of the token
// buffers the full last layer would have used, so it costs no device memory; it overwrites
// "hidden", which only "encode" fills.
EncoderBuffers build_bert_encoder(plan::Plan& plan, const BertConfig& cfg,
                                  const WeightSource& src, const BertNames& names);

// Appends program "ce_head" (CLS → dense + tanh → classifier) and output "scores"
// ([B, num_labels]), and "ce_head_first", the same head over "encode_first"'s rows, with the
// tensors cross_encoder_head_names finds.
void build_cross_encoder_head(plan::Plan& plan, const BertConfig& cfg,
                              const WeightSource& src, const BertNames& names,
                              const EncoderBuffers& encoder);

// The tensors a standard transformers export of this config holds (for random-weight runs).
std::map<std::string, std::vector<int64_t>> bert_standard_tensors(const BertConfig& cfg);

// The registry's builders (models/registry.h): a folder, or a config with random weights.
BuiltModel build_bert_folder(const std::filesystem::path& dir, const nlohmann::json& config, const std::string& source);
BuiltModel build_bert_random(const nlohmann::json& config, const std::string& source);

}  // namespace il::models
