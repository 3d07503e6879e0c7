// Models: the `model` section of tokenizer.json. A model turns one pre-tokenized word into
// vocabulary ids.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/json_util.h"

namespace il::text {

struct ModelToken {
  int32_t id;
  uint32_t begin;  // byte range inside the word
  uint32_t end;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string type() const = 0;
  // Appends the tokens of `word` (non-empty normalised text) to `out`.
  virtual void tokenize(std::string_view word, std::vector<ModelToken>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  // The token string of `id`; the view stays valid as long as the model.
  virtual std::optional<std::string_view> id_to_token(int32_t id) const = 0;
  virtual std::size_t vocab_size() const = 0;
};

std::unique_ptr<Model> make_model(const JsonRef& j);

}  // namespace il::text
