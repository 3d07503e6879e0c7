// Helpers the architectures' config parsers share (models/<arch>_config): activation names.
#pragma once

#include <string>

#include "inferencelayer/types.h"

namespace il::io {

// "gelu" → kGeluErf, "gelu_new" → kGeluTanh, ... Throws listing the supported names.
Activation parse_activation(const std::string& name, const std::string& source_name);

}  // namespace il::io
