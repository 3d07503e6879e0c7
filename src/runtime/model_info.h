// What `inferencelayer info` and /info report about a built model.
#pragma once

#include <filesystem>
#include <string>

#include "inferencelayer/engine.h"
#include "models/registry.h"

namespace il::runtime {

// The longest sequence (special tokens included) the model takes: the position table, narrowed
// by sentence-transformers' max_seq_length when the folder sets one.
std::size_t max_sequence_length(const models::BuiltModel& model);

ModelInfo describe(const std::filesystem::path& dir, const models::BuiltModel& model,
                   const std::string& tokenizer_kind, std::size_t max_len);

}  // namespace il::runtime
