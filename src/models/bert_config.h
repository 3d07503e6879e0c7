// config.json of a BERT-family folder (BERT, RoBERTa / XLM-RoBERTa and the jina-reranker-v2 layout):
// only fields that change the math are kept; unsupported values are refused naming the field.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::models {

enum class BertFlavor { kBert, kXlmRoberta };  // kXlmRoberta covers RoBERTa too

struct BertConfig {
  BertFlavor flavor = BertFlavor::kBert;
  std::string model_type;                 // as written in config.json
  std::vector<std::string> architectures; // as written in config.json (may be empty)
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int head_dim = 0;          // hidden / heads
  int intermediate = 0;
  int vocab = 0;
  int type_vocab = 0;        // 0 means no token-type table
  int max_positions = 0;     // rows of the position table
  int position_offset = 0;   // 0 for BERT, pad_token_id + 1 for (XLM-)RoBERTa
  int pad_token_id = 0;
  float layer_norm_eps = 1e-12f;
  Activation act = Activation::kGeluErf;
  bool is_cross_encoder = false;  // architectures[0] ends in ForSequenceClassification
  int num_labels = 1;             // num_labels, else size of id2label, else 1
  // Cross-encoders: id2label, the names of outputs by index, every index below num_labels
  // (outputs it does not name are "LABEL_i", as transformers calls them).
  std::map<int, std::string> id2label;
  bool random_weights = false;    // "inferencelayer_random_weights": true (demo / fixture folders)

  int max_tokens_per_sequence() const { return max_positions - position_offset; }
};

// Parses `<dir>/config.json` (or the file `model_dir` names). Throws il::Error naming the file and
// the field.
BertConfig load_bert_config(const std::filesystem::path& model_dir);
BertConfig parse_bert_config(const nlohmann::json& j, const std::string& source_name);

}  // namespace il::models
