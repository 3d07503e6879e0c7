// Model inputs given as token ids ({"input_ids": [...], "token_type_ids": [...]}) and the
// per-line checks that let a bad line be reported by its line number instead of failing the
// whole batch later with an index nobody can map back to the file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

#include "inferencelayer/types.h"
#include "models/model.h"

namespace il::cli {

// input_ids (required) and token_type_ids (optional, same length).
TokenInput token_input_from_json(const nlohmann::json& obj, std::string_view where);

// token_type_ids belong to input_ids: with a text (`text_fields`, as the message names them) the
// tokenizer sets the types, so given ones would be ignored; they are refused instead.
void check_no_types_with_text(const nlohmann::json& obj, std::string_view text_fields, std::string_view where);

class InputChecker {
 public:
  // The vocabulary and segment-table sizes of the loaded model (its ModelInfo).
  InputChecker(const ModelInfo& info, std::size_t max_tokens);
  // Throws an input error naming `where`: empty, too long, ids outside the tables.
  void check(const TokenInput& input, std::string_view where) const;

 private:
  models::InputLimits limits_;
  std::size_t max_tokens_;
};

}  // namespace il::cli
