#include "io/safetensors.h"

#include <bit>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <utility>

#include "core/error.h"
#include "io/json_util.h"
#include "io/safetensors_format.h"

namespace il::io {

namespace fs = std::filesystem;
using nlohmann::json;

// F32 data is copied byte for byte; a big-endian host would need a swap here.
static_assert(std::endian::native == std::endian::little, "safetensors loading assumes a little-endian host");

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

struct Entry {
  TensorInfo info;
  std::size_t file = 0;  // index into Impl::files
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::size_t TensorInfo::numel() const {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

struct SafeTensors::Impl {
  fs::path source;                        // what the caller passed, for "not found" messages
  std::vector<detail::MappedFile> files;  // every file opened, in the order opened
  std::map<std::string, Entry, std::less<>> tensors;

  const Entry& entry(std::string_view name) const {
    auto it = tensors.find(name);
    if (it != tensors.end()) return it->second;
    std::ostringstream searched;
    for (std::size_t i = 0; i < files.size(); ++i) searched << (i ? ", " : "") << files[i].path().filename().string();
    throw make_error("tensor \"", name, "\" not found in ", source.string(), " (searched ", searched.str(), ")");
  }

  // Maps and validates one file; returns its tensors by name.
  std::map<std::string, detail::HeaderEntry> add_file(const fs::path& path) {
    detail::MappedFile file(path);
    auto list = detail::parse_safetensors(file.data(), file.size(), path.string());
    files.push_back(std::move(file));
    std::map<std::string, detail::HeaderEntry> by_name;
    for (auto& e : list) by_name.emplace(e.name, std::move(e));
    return by_name;
  }

  void add_tensor(detail::HeaderEntry&& h) {
    Entry e;
    e.info.name = h.name;
    e.info.dtype = h.dtype;
    e.info.shape = std::move(h.shape);
    e.info.file = files.back().path();
    e.file = files.size() - 1;
    e.begin = h.begin;
    e.end = h.end;
    tensors.insert_or_assign(std::move(h.name), std::move(e));
  }

  void open_single(const fs::path& path) {
    for (auto& [name, h] : add_file(path)) add_tensor(std::move(h));
  }

  void open_sharded(const fs::path& index_path);
};

void SafeTensors::Impl::open_sharded(const fs::path& index_path) {
  const std::string label = index_path.string();
  const json index = detail::read_json_file(index_path);
  check(index.is_object(), label, ": expected a JSON object, got ", detail::type_name(index));
  auto wm = index.find("weight_map");
  check(wm != index.end(), label, ": missing \"weight_map\"");
  check(wm->is_object(), label, ": \"weight_map\" must be an object, got ", detail::type_name(*wm));
  check(!wm->empty(), label, ": \"weight_map\" is empty");

  // The index is authoritative, as in transformers: a shard's tensors that it does not list are
  // not exposed.
  std::map<std::string, std::vector<std::string>> by_shard;  // shard file → tensors it must hold
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    check(it->is_string(), label, ": weight_map entry for tensor \"", it.key(), "\" must be a file name, got ",
          detail::describe(*it));
    const std::string& shard = it->get_ref<const std::string&>();
    const fs::path rel(shard);
    bool escapes = rel.empty() || !rel.is_relative();
    for (const auto& part : rel) escapes = escapes || part == "..";
    check(!escapes, label, ": tensor \"", it.key(), "\": shard \"", shard, "\" must be a file inside ",
          index_path.parent_path().string());
    by_shard[shard].push_back(it.key());
  }

  for (auto& [shard, names] : by_shard) {
    const fs::path shard_path = index_path.parent_path() / shard;
    std::error_code ec;
    // Present but not a regular file (a FIFO, a folder) is refused by add_file, naming the shard.
    check(fs::exists(shard_path, ec), label, ": shard \"", shard, "\" (listed for tensor \"", names.front(),
          "\") not found at ", shard_path.string());
    auto present = add_file(shard_path);
    for (const std::string& name : names) {
      auto it = present.find(name);
      check(it != present.end(), label, ": tensor \"", name, "\" is listed in shard \"", shard, "\" but ",
            shard_path.string(), " does not contain it");
      add_tensor(std::move(it->second));
    }
  }
}

SafeTensors SafeTensors::open(const fs::path& path) {
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / kSingleFile, ec)) {
      impl->open_single(path / kSingleFile);
    } else if (fs::exists(path / kIndexFile, ec)) {
      impl->open_sharded(path / kIndexFile);
    } else {
      throw make_error(path.string(), ": no ", kSingleFile, " or ", kIndexFile, " in this folder");
    }
  } else if (fs::exists(path, ec)) {
    if (ends_with(path.filename().string(), ".index.json")) {
      impl->open_sharded(path);
    } else {
      impl->open_single(path);
    }
  } else {
    throw make_error(path.string(), ": not found");
  }
  return SafeTensors(std::move(impl));
}

SafeTensors::SafeTensors(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafeTensors::SafeTensors(SafeTensors&&) noexcept = default;
SafeTensors& SafeTensors::operator=(SafeTensors&&) noexcept = default;
SafeTensors::~SafeTensors() = default;

bool SafeTensors::has(std::string_view name) const { return impl_->tensors.find(name) != impl_->tensors.end(); }

const TensorInfo& SafeTensors::info(std::string_view name) const { return impl_->entry(name).info; }

std::vector<std::string> SafeTensors::names() const {
  std::vector<std::string> out;
  out.reserve(impl_->tensors.size());
  for (const auto& [name, e] : impl_->tensors) out.push_back(name);
  return out;
}

std::vector<float> SafeTensors::load_f32(std::string_view name) const {
  const Entry& e = impl_->entry(name);
  const std::size_t n = e.info.numel();
  std::vector<float> out(n);
  if (n == 0) return out;
  // Offsets were validated against the file size when it was opened. Data is not necessarily
  // aligned for its element type, so every element goes through memcpy.
  convert_to_f32(e.info.dtype, impl_->files[e.file].data() + e.begin, out.data(), n);
  return out;
}

std::vector<float> SafeTensors::load_f32(std::string_view name, const std::vector<int64_t>& expected_shape) const {
  const TensorInfo& ti = info(name);
  check(ti.shape == expected_shape, ti.file.string(), ": tensor \"", name, "\": expected shape ",
        shape_str(expected_shape), ", got ", shape_str(ti.shape));
  return load_f32(name);
}

const std::uint8_t* SafeTensors::bytes(std::string_view name, const std::vector<int64_t>& expected_shape) const {
  const TensorInfo& ti = info(name);
  check(ti.shape == expected_shape, ti.file.string(), ": tensor \"", name, "\": expected shape ",
        shape_str(expected_shape), ", got ", shape_str(ti.shape));
  const Entry& e = impl_->entry(name);
  return impl_->files[e.file].data() + e.begin;
}

std::size_t SafeTensors::total_bytes() const {
  std::size_t total = 0;
  for (const auto& [name, e] : impl_->tensors) total += static_cast<std::size_t>(e.end - e.begin);
  return total;
}

DType SafeTensors::dominant_dtype() const {
  // Most tensors wins; ties go to the dtype holding more bytes, then to F32.
  std::size_t count[3] = {0, 0, 0};
  std::size_t bytes[3] = {0, 0, 0};
  for (const auto& [name, e] : impl_->tensors) {
    const auto k = static_cast<std::size_t>(e.info.dtype);
    ++count[k];
    bytes[k] += static_cast<std::size_t>(e.end - e.begin);
  }
  std::size_t best = 0;
  for (std::size_t k = 1; k < 3; ++k) {
    if (count[k] > count[best] || (count[k] == count[best] && bytes[k] > bytes[best])) best = k;
  }
  return static_cast<DType>(best);
}

}  // namespace il::io
