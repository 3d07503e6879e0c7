// config.json → a typed encoder config. Only fields that change the math are kept; unknown
// model types and activations are refused with a message listing what is supported.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "inferencelayer/types.h"

namespace il::io {

enum class Arch { kBert, kXlmRoberta };  // kXlmRoberta covers RoBERTa too

struct EncoderConfig {
  Arch arch = Arch::kBert;
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
  // (outputs it does not name are "LABEL_i", as transformers calls them; see runtime/model_info).
  std::map<int, std::string> id2label;
  bool random_weights = false;    // "inferencelayer_random_weights": true (demo / fixture folders)

  int max_tokens_per_sequence() const { return max_positions - position_offset; }
};

// Parses `<dir>/config.json`. Throws il::Error naming the file and the field.
EncoderConfig load_encoder_config(const std::filesystem::path& model_dir);
EncoderConfig parse_encoder_config(const nlohmann::json& j, const std::string& source_name);

// "gelu" → kGeluErf, "gelu_new" → kGeluTanh, ... Throws listing the supported names.
Activation parse_activation(const std::string& name, const std::string& source_name);

}  // namespace il::io
