// Decoders: the `decoder` section of tokenizer.json (token strings back to text).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/json_util.h"

namespace il::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites the token strings in place (the library's decode_chain); the text is their
  // concatenation.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const JsonRef& j);

}  // namespace il::text
