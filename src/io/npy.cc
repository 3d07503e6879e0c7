#include "io/npy.h"

#include <cstring>
#include <limits>

#include "core/error.h"
#include "io/regular_file.h"

namespace il::io {
namespace {

constexpr std::size_t kMaxElements = std::size_t{1} << 34;  // far beyond any input; guards the products

// The header dict is Python literal syntax: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Finds the value text after 'key': up to the next top-level comma or closing brace.
std::string_view field(std::string_view dict, std::string_view key, const std::string& source) {
  const std::string quoted = "'" + std::string(key) + "'";
  const std::size_t at = dict.find(quoted);
  check(at != std::string_view::npos, source, ": .npy header has no '", key, "' field");
  std::size_t i = dict.find(':', at + quoted.size());
  check(i != std::string_view::npos, source, ": .npy header field '", key, "' has no value");
  ++i;
  while (i < dict.size() && dict[i] == ' ') ++i;
  std::size_t j = i;
  int depth = 0;
  while (j < dict.size()) {
    const char c = dict[j];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    ++j;
  }
  check(j < dict.size() && depth == 0, source, ": .npy header field '", key, "' is not closed");
  return dict.substr(i, j - i);
}

std::vector<int64_t> parse_shape(std::string_view v, const std::string& source) {
  check(v.size() >= 2 && v.front() == '(' && v.back() == ')', source, ": .npy shape '", std::string(v),
        "' is not a tuple");
  std::vector<int64_t> shape;
  std::size_t i = 1;
  while (i < v.size() - 1) {
    while (i < v.size() - 1 && (v[i] == ' ' || v[i] == ',')) ++i;
    if (i >= v.size() - 1) break;
    int64_t n = 0;
    std::size_t digits = 0;
    while (i < v.size() - 1 && v[i] >= '0' && v[i] <= '9') {
      check(n <= (std::numeric_limits<int64_t>::max() - 9) / 10, source, ": .npy shape dimension too large");
      n = n * 10 + (v[i] - '0');
      ++i;
      ++digits;
    }
    check(digits > 0, source, ": .npy shape '", std::string(v), "' holds something other than integers");
    shape.push_back(n);
  }
  check(shape.size() <= 16, source, ": .npy array of ", shape.size(), " dimensions");
  return shape;
}

template <typename T>
void convert(const char* data, std::size_t n, std::vector<double>& out) {
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

}  // namespace

NpyArray parse_npy(std::string_view bytes, const std::string& source) {
  check(bytes.size() >= 10 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0, source,
        ": not a NumPy .npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  check(major >= 1 && major <= 3, source, ": .npy format version ", int(major), " is not supported (1 to 3)");
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else {
    check(bytes.size() >= 12, source, ": .npy file truncated in its header");
    for (int k = 0; k < 4; ++k) header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    offset = 12;
  }
  check(header_len <= bytes.size() - offset, source, ": .npy header of ", header_len, " bytes passes the end of the file");
  const std::string_view dict = bytes.substr(offset, header_len);
  NpyArray a;
  const std::string_view descr = field(dict, "descr", source);
  const std::string_view order = field(dict, "fortran_order", source);
  check(order == "False", source, ": .npy array in Fortran order; C order expected");
  a.shape = parse_shape(field(dict, "shape", source), source);
  std::size_t n = 1;
  for (int64_t d : a.shape) {
    check(d >= 0 && (d == 0 || n <= kMaxElements / static_cast<std::size_t>(d)), source, ": .npy shape too large");
    n *= static_cast<std::size_t>(d);
  }
  std::size_t width = 0;
  if (descr == "'<f4'") a.dtype = "f4", width = 4;
  else if (descr == "'<f8'") a.dtype = "f8", width = 8;
  else if (descr == "'<i4'") a.dtype = "i4", width = 4;
  else if (descr == "'<i8'") a.dtype = "i8", width = 8;
  else
    throw make_error(source, ": .npy dtype ", std::string(descr),
                     " is not supported (little-endian float32, float64, int32 or int64)");
  const std::size_t data = offset + header_len;
  check(bytes.size() - data == n * width, source, ": .npy data of ", bytes.size() - data, " bytes for ", n,
        " elements of ", width, " bytes");
  const char* p = bytes.data() + data;
  if (a.dtype == "f4") convert<float>(p, n, a.values);
  else if (a.dtype == "f8") convert<double>(p, n, a.values);
  else if (a.dtype == "i4") convert<int32_t>(p, n, a.values);
  else convert<int64_t>(p, n, a.values);
  return a;
}

NpyArray read_npy(const std::filesystem::path& path) {
  const std::string bytes = read_regular_file(path);
  return parse_npy(bytes, path.string());
}

}  // namespace il::io
