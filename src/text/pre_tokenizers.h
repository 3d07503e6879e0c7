// Pre-tokenizers: the `pre_tokenizer` section of tokenizer.json.
#pragma once

#include <memory>

#include "text/json_util.h"
#include "text/pre_tokenized_string.h"

namespace il::text {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenizedString& s) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonRef& j);

// The library's SplitDelimiterBehavior spelled as in tokenizer.json ("removed", "isolated", ...).
SplitBehavior parse_split_behavior(const JsonRef& j);

}  // namespace il::text
