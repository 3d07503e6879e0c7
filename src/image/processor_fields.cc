#include "image/processor_fields.h"

#include <cmath>

#include "core/error.h"
#include "io/json_util.h"

namespace il::image::detail {

using nlohmann::json;

std::string shown(const json& v) { return io::describe_json(v); }

bool bool_field(const json& obj, const char* key, bool fallback, const std::string& source) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  check(it->is_boolean(), source, ": ", key, " must be true or false (got ", shown(*it), ")");
  return it->get<bool>();
}

std::array<double, 3> per_channel_field(const json& obj, const char* key, std::array<double, 3> fallback,
                                        const std::string& source) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_number()) {
    const double v = it->get<double>();
    check(std::isfinite(v), source, ": ", key, " must be finite (got ", shown(*it), ")");
    return {v, v, v};
  }
  check(it->is_array() && it->size() == 3, source, ": ", key, " must be a number or a list of 3 numbers (got ",
        shown(*it), ")");
  std::array<double, 3> out{};
  for (std::size_t c = 0; c < 3; ++c) {
    check((*it)[c].is_number() && std::isfinite((*it)[c].get<double>()), source, ": ", key, "[", c,
          "] must be a finite number (got ", shown((*it)[c]), ")");
    out[c] = (*it)[c].get<double>();
  }
  return out;
}

std::string_view without_backend_suffix(std::string_view type) {
  for (std::string_view suffix : {"Fast", "Pil"}) {
    if (type.size() > suffix.size() && type.substr(type.size() - suffix.size()) == suffix) {
      type.remove_suffix(suffix.size());
      break;
    }
  }
  return type;
}

}  // namespace il::image::detail
