// Normalizers: the `normalizer` section of tokenizer.json.
#pragma once

#include <memory>

#include "text/json_util.h"
#include "text/normalized_string.h"

namespace il::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& s) const = 0;
};

// Builds the normalizer described by `j` (its "type" picks the kind).
std::unique_ptr<Normalizer> make_normalizer(const JsonRef& j);

}  // namespace il::text
