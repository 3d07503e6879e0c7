// Model folder → plan. Chooses the architecture builder from the config and the heads from the
// folder (cross-encoder head, or sentence-embedding pooling + Dense + Normalize).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "io/hf_config.h"
#include "io/st_modules.h"
#include "models/weight_source.h"
#include "plan/plan.h"

namespace il::models {

struct BuiltModel {
  plan::Plan plan;
  io::EncoderConfig config;
  io::SentenceTransformerInfo st;
  std::string layout;          // "bert", "xlm-roberta", "jina-xlm-roberta"
  std::size_t embedding_dim = 0;
  PoolingMode pooling = PoolingMode::kMean;  // the folder's default
  bool normalize = false;                     // the folder's default
  std::string stored_dtype = "F32";           // what most checkpoint tensors are stored as
  std::size_t stored_bytes = 0;               // tensor bytes in the checkpoint
};

// Builds from the folder's config.json, safetensors and sentence-transformers modules.
BuiltModel build_model_from_folder(const std::filesystem::path& dir);

// Builds from a config alone with random weights (benchmarks). Embedding models pool by mean.
BuiltModel build_model_random(const io::EncoderConfig& config);

}  // namespace il::models
