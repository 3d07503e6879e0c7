// Images given as pixel_values ({"pixel_values": [[[...] per column] per row] per channel]}: one
// image's C × H × W floats, as a transformers image processor returns them for one image), the
// parity form of image inputs: the engine runs them as they are, with no decoding or
// preprocessing.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "inferencelayer/types.h"

namespace il::cli {

// A C × H × W nested array of numbers, every row as long as the first; else an input error
// naming `where`.
ImageInput image_input_from_json(const nlohmann::json& obj, std::string_view where);

}  // namespace il::cli
