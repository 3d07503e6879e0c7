// sentence-transformers folder metadata: modules.json, 1_Pooling/config.json, 2_Normalize,
// an optional Dense module, config_sentence_transformers.json (prompts) and
// sentence_bert_config.json (max_seq_length). A plain transformers folder has none of these.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "inferencelayer/types.h"

namespace il::io {

struct DenseModule {
  std::filesystem::path dir;  // folder holding model.safetensors (tensors linear.weight / linear.bias)
  int in_features = 0;
  int out_features = 0;
  bool bias = true;
  Activation act = Activation::kNone;  // from activation_function, e.g. torch.nn.modules.activation.Tanh
};

struct SentenceTransformerInfo {
  bool present = false;                 // modules.json exists
  std::optional<PoolingMode> pooling;   // from 1_Pooling/config.json; refused modes throw
  std::filesystem::path pooling_file;   // that file, for messages
  std::optional<int> pooling_dimension; // its word_embedding_dimension: the width it pools
  bool include_prompt = true;
  bool normalize = false;               // a Normalize module is listed
  std::optional<DenseModule> dense;
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;      // empty when none
  int max_seq_length = 0;               // 0 when not given
};

// Throws il::Error naming the file and field on malformed content or unsupported pooling modes
// (max, mean_sqrt_len, weightedmean).
SentenceTransformerInfo load_sentence_transformer_info(const std::filesystem::path& model_dir);

}  // namespace il::io
