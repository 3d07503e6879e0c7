#include "cli/image_inputs.h"

#include <string>

#include "cli/cli_common.h"

namespace il::cli {

ImageInput image_input_from_json(const nlohmann::json& obj, std::string_view where) {
  const auto it = obj.find("pixel_values");
  const std::string shape_msg = "\"pixel_values\" must be a non-empty channels × height × width array of numbers";
  if (it == obj.end() || !it->is_array() || it->empty()) throw input_error(where, shape_msg);
  ImageInput im;
  im.channels = it->size();
  for (std::size_t c = 0; c < im.channels; ++c) {
    const nlohmann::json& ch = (*it)[c];
    if (!ch.is_array() || ch.empty()) throw input_error(where, shape_msg);
    if (c == 0) im.height = ch.size();
    if (ch.size() != im.height)
      throw input_error(where, "\"pixel_values\" channel " + std::to_string(c) + " has " + std::to_string(ch.size()) +
                                   " rows, channel 0 has " + std::to_string(im.height));
    for (std::size_t y = 0; y < im.height; ++y) {
      const nlohmann::json& row = ch[y];
      if (!row.is_array() || row.empty()) throw input_error(where, shape_msg);
      if (c == 0 && y == 0) {
        im.width = row.size();
        im.pixels.reserve(im.channels * im.height * im.width);
      }
      if (row.size() != im.width)
        throw input_error(where, "\"pixel_values\" channel " + std::to_string(c) + ", row " + std::to_string(y) +
                                     " has " + std::to_string(row.size()) + " values, the first row has " +
                                     std::to_string(im.width));
      for (const nlohmann::json& v : row) {
        if (!v.is_number())
          throw input_error(where, "\"pixel_values\" channel " + std::to_string(c) + ", row " + std::to_string(y) +
                                       " holds a non-number");
        im.pixels.push_back(v.get<float>());
      }
    }
  }
  return im;
}

}  // namespace il::cli
