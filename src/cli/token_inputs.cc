#include "cli/token_inputs.h"

#include <string>

#include "cli/cli_common.h"
#include "cli/jsonl_io.h"
#include "core/error.h"
#include "runtime/batching.h"

namespace il::cli {

TokenInput token_input_from_json(const nlohmann::json& obj, std::string_view where) {
  TokenInput in;
  in.ids = get_int_array(obj, "input_ids", where);
  if (has_key(obj, "token_type_ids")) {
    in.type_ids = get_int_array(obj, "token_type_ids", where);
    if (in.type_ids.size() != in.ids.size())
      throw input_error(where, std::to_string(in.type_ids.size()) + " token_type_ids for " +
                                   std::to_string(in.ids.size()) + " input_ids");
  }
  return in;
}

void check_no_types_with_text(const nlohmann::json& obj, std::string_view text_fields, std::string_view where) {
  if (has_key(obj, "token_type_ids"))
    throw input_error(where, "\"token_type_ids\" go with \"input_ids\", not with " + std::string(text_fields) +
                                 " (the tokenizer sets the types of a text)");
}

InputChecker::InputChecker(const ModelInfo& info, std::size_t max_tokens)
    : limits_{info.vocab, info.type_vocab, max_tokens}, max_tokens_(max_tokens) {}

void InputChecker::check(const TokenInput& input, std::string_view where) const {
  // The runtime's own validation, run on one input so its message applies to this line; its
  // "input 0: " prefix is replaced by the line.
  try {
    runtime::validate_inputs({input}, limits_, max_tokens_);
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind("input 0: ", 0) == 0) msg.erase(0, 9);
    throw input_error(where, msg);
  }
}

}  // namespace il::cli
