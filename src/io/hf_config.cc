#include "io/hf_config.h"

#include "core/error.h"

namespace il::io {

Activation parse_activation(const std::string& name, const std::string& source_name) {
  if (name == "gelu" || name == "gelu_python") return Activation::kGeluErf;
  if (name == "gelu_new" || name == "gelu_fast" || name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "relu") return Activation::kRelu;
  if (name == "tanh") return Activation::kTanh;
  if (name == "quick_gelu") return Activation::kQuickGelu;
  throw make_error(source_name, ": activation \"", name,
                   "\" is not supported (supported: gelu, gelu_python, gelu_new, gelu_fast, gelu_pytorch_tanh, silu, "
                   "swish, relu, tanh, quick_gelu)");
}

}  // namespace il::io
