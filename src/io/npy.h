// NumPy .npy files (format versions 1 to 3): what a JSON line may give instead of a large array
// ({"npy": "path.npy"}), and what fixtures store pixel values and outputs in. Little-endian
// float32 / float64 / int32 / int64 in C order only; anything else is refused naming the file and
// what was found.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace il::io {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<double> values;  // every element, converted (f32, f64, and integers up to 2^53 exactly)
  std::string dtype;           // "f4", "f8", "i4" or "i8"
  std::size_t size() const { return values.size(); }
};

// Parses a whole .npy file held in memory; `source` names it in errors.
NpyArray parse_npy(std::string_view bytes, const std::string& source);
NpyArray read_npy(const std::filesystem::path& path);

}  // namespace il::io
