// The table of architectures. One row per architecture: the config.json `model_type` values it
// accepts, and its two builders (a model folder; a config alone with random weights, for `bench`
// and `serve --config`), each of which parses its own config (models/<arch>_config), checks it
// against the tensors, builds the plan and says what the model can do. Adding an architecture is
// a model file and a row here (docs/architecture.md, "How to add an architecture").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/model.h"

namespace il::models {

struct Architecture {
  std::string name;                      // "bert", "qwen3"
  std::vector<std::string> model_types;  // config.json "model_type" values
  std::string serves;                    // what it serves, for the refusal of an unknown type
  // `config` is config.json, already parsed; `source` names it in messages.
  // Checks the config alone (what a folder's builder parses first), throwing il::Error.
  void (*check_config)(const nlohmann::json& config, const std::string& source);
  BuiltModel (*from_folder)(const std::filesystem::path& dir, const nlohmann::json& config, const std::string& source);
  BuiltModel (*random)(const nlohmann::json& config, const std::string& source);
};

const std::vector<Architecture>& architectures();

// The row whose model_types hold config["model_type"]; an unknown or missing type is refused
// with the list of supported ones.
const Architecture& find_architecture(const nlohmann::json& config, const std::string& source);

// Builds from the folder's config.json, safetensors and sentence-transformers modules.
BuiltModel build_model_from_folder(const std::filesystem::path& dir);

// Builds from a config alone with random weights (benchmarks). Embedding models pool by mean
// unless the architecture pools otherwise (last token for decoder embedders).
BuiltModel build_model_random(const nlohmann::json& config, const std::string& source);

}  // namespace il::models
