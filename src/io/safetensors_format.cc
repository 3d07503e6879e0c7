#include "io/safetensors_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "io/json_util.h"
#include "io/regular_file.h"

namespace il::io::detail {

using nlohmann::json;

namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

DType parse_dtype(const json& v, const std::string& label, const std::string& name) {
  check(v.is_string(), label, ": tensor \"", name, "\": \"dtype\" must be a string, got ", describe(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  throw make_error(label, ": tensor \"", name, "\": dtype ", describe(v),
                   " is not supported (supported: F32, F16, BF16)");
}

// A non-negative JSON integer that fits in uint64 (nlohmann stores bigger literals as floats).
bool as_u64(const json& v, std::uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<json::number_unsigned_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<json::number_integer_t>() >= 0) {
    out = static_cast<std::uint64_t>(v.get<json::number_integer_t>());
    return true;
  }
  return false;
}

HeaderEntry parse_entry(const std::string& name, const json& e, std::uint64_t data_start, std::uint64_t data_size,
                        const std::string& label) {
  const std::string where = label + ": tensor \"" + name + "\"";
  check(e.is_object(), where, ": entry must be an object, got ", describe(e));
  HeaderEntry out;
  out.name = name;

  auto dt = e.find("dtype");
  check(dt != e.end(), where, ": missing \"dtype\"");
  out.dtype = parse_dtype(*dt, label, name);

  auto sh = e.find("shape");
  check(sh != e.end(), where, ": missing \"shape\"");
  check(sh->is_array(), where, ": \"shape\" must be an array, got ", describe(*sh));
  std::uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : *sh) {
    std::uint64_t dim = 0;
    // Not check(): its message arguments are built even when the check passes, once a dimension.
    if (!as_u64(d, dim) || dim > static_cast<std::uint64_t>(std::numeric_limits<int64_t>::max()))
      throw make_error(where, ": shape ", describe(*sh), " must hold non-negative integers");
    out.shape.push_back(static_cast<int64_t>(dim));
    overflow = overflow || __builtin_mul_overflow(numel, dim, &numel);
  }

  auto off = e.find("data_offsets");
  check(off != e.end(), where, ": missing \"data_offsets\"");
  check(off->is_array() && off->size() == 2 && as_u64((*off)[0], out.begin) && as_u64((*off)[1], out.end), where,
        ": \"data_offsets\" must be [begin, end] with non-negative integers, got ", describe(*off));
  check(out.begin <= out.end, where, ": data_offsets [", out.begin, ", ", out.end, "] has begin after end");
  check(out.end <= data_size, where, ": data_offsets [", out.begin, ", ", out.end, "] end beyond data section of ",
        data_size, " bytes");

  // Zero-sized dims make numel 0 even when another dim overflowed on the way.
  const bool has_zero = std::find(out.shape.begin(), out.shape.end(), 0) != out.shape.end();
  std::uint64_t bytes = 0;
  if (has_zero) {
    bytes = 0;
  } else {
    overflow = overflow || __builtin_mul_overflow(numel, dtype_size(out.dtype), &bytes);
    check(!overflow, where, ": shape ", describe(*sh), " is too large");
  }
  check(bytes == out.end - out.begin, where, ": shape ", describe(*sh), " of ", dtype_name(out.dtype), " needs ", bytes,
        " bytes but data_offsets [", out.begin, ", ", out.end, "] hold ", out.end - out.begin);

  out.begin += data_start;
  out.end += data_start;
  return out;
}

}  // namespace

std::vector<HeaderEntry> parse_safetensors(const std::uint8_t* data, std::size_t size, const std::string& label) {
  check(size >= 8, label, ": file is ", size, " bytes, too short for a safetensors header (at least 8)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];  // little-endian u64
  check(n <= kMaxHeaderBytes, label, ": header length ", n, " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  check(n <= size - 8, label, ": header length ", n, " runs past the end of the file (", size, " bytes)");
  const std::uint64_t data_start = 8 + n;
  const std::uint64_t data_size = size - data_start;

  const json header = parse_json_limited(
      std::string_view(reinterpret_cast<const char*>(data) + 8, static_cast<std::size_t>(n)), label + ": header");
  check(header.is_object(), label, ": header must be a JSON object, got ", type_name(header));

  std::vector<HeaderEntry> entries;
  entries.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;  // free-form string map, not a tensor
    entries.push_back(parse_entry(it.key(), it.value(), data_start, data_size, label));
  }

  // Overlap check over non-empty ranges sorted by start.
  std::vector<std::size_t> order(entries.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return entries[a].begin < entries[b].begin; });
  const HeaderEntry* reach = nullptr;  // the non-empty tensor reaching furthest so far
  for (std::size_t i : order) {
    const HeaderEntry& e = entries[i];
    if (e.begin == e.end) continue;
    if (reach != nullptr && e.begin < reach->end) {
      throw make_error(label, ": tensor \"", e.name, "\": data_offsets [", e.begin - data_start, ", ",
                       e.end - data_start, "] overlap tensor \"", reach->name, "\" [", reach->begin - data_start, ", ",
                       reach->end - data_start, "]");
    }
    if (reach == nullptr || e.end > reach->end) reach = &e;
  }
  return entries;
}

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  const int fd = open_regular_file(path);  // a FIFO or device in its place is refused, not waited on
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw make_error(path.string(), ": cannot stat: ", errno_text(err));
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    check(m != MAP_FAILED, path.string(), ": cannot map ", size_, " bytes: ", errno_text(err));
    data_ = static_cast<const std::uint8_t*>(m);
  } else {
    ::close(fd);
  }
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace il::io::detail
