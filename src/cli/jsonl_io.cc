#include "cli/jsonl_io.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>

#include "cli/cli_common.h"
#include "core/error.h"
#include "io/json_util.h"
#include "io/npy.h"

namespace il::cli {

LineReader::LineReader(const std::string& path) : path_(path) {
  if (path == "-") {
    // The C++ streams are not mixed with C stdio on stdin, so they need not stay in sync.
    std::ios::sync_with_stdio(false);
    in_ = &std::cin;
    return;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError("input " + path + " is a folder, not a file");
  file_.open(path, std::ios::binary);
  if (!file_) throw UsageError("cannot open input file " + path);
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) total_bytes_ = size;
  in_ = &file_;
}

bool LineReader::next(std::string& line) {
  if (!std::getline(*in_, line)) {
    if (in_->bad()) throw std::runtime_error("read error on " + (path_ == "-" ? std::string("stdin") : path_));
    return false;
  }
  ++line_number_;
  bytes_read_ += line.size() + 1;
  // Editors on Windows start UTF-8 files with a byte-order mark; it is not part of the text.
  if (line_number_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

OutputSink::OutputSink(const std::string& path) : path_(path) {
  if (path == "-") {
    file_ = stdout;
    return;
  }
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) throw UsageError("cannot create output file " + path + ": " + std::strerror(errno));
  owned_ = true;
}

OutputSink::~OutputSink() {
  // Errors were reported by the last explicit flush(); a destructor must not throw.
  if (!buf_.empty()) std::fwrite(buf_.data(), 1, buf_.size(), file_);
  if (owned_) std::fclose(file_);
  else std::fflush(file_);
}

void OutputSink::end_line() {
  buf_ += '\n';
  if (buf_.size() > (4u << 20)) flush();
}

void OutputSink::flush() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size())
    throw std::runtime_error("cannot write " + (path_ == "-" ? std::string("stdout") : path_) + ": " +
                             std::strerror(errno));
  buf_.clear();
  if (std::fflush(file_) != 0)
    throw std::runtime_error("cannot write " + (path_ == "-" ? std::string("stdout") : path_) + ": " +
                             std::strerror(errno));
}

void append_ints(std::string& out, const std::vector<int32_t>& values) {
  out += '[';
  char buf[16];
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    const auto r = std::to_chars(buf, buf + sizeof buf, values[i]);
    out.append(buf, r.ptr);
  }
  out += ']';
}

void append_json_string(std::string& out, std::string_view s) {
  // nlohmann's dump() does the escaping (and refuses invalid UTF-8 the same way everywhere).
  out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// The values of `a` from element `first` on, nested by shape[dim ..].
nlohmann::json nest(const io::NpyArray& a, std::size_t dim, std::size_t& next) {
  if (dim == a.shape.size()) {
    const double v = a.values[next++];
    if (a.dtype[0] == 'i') return static_cast<long long>(v);
    return v;
  }
  nlohmann::json arr = nlohmann::json::array();
  for (int64_t i = 0; i < a.shape[dim]; ++i) arr.push_back(nest(a, dim + 1, next));
  return arr;
}

}  // namespace

void resolve_npy_fields(nlohmann::json& obj, const LineReader& in, std::string_view where) {
  const std::filesystem::path base =
      in.path() == "-" ? std::filesystem::path(".") : std::filesystem::path(in.path()).parent_path();
  for (auto& [key, value] : obj.items()) {
    if (!value.is_object() || !value.contains("npy")) continue;
    const auto& ref = value.at("npy");
    if (value.size() != 1 || !ref.is_string())
      throw input_error(where, "\"" + key + "\": an array from a file is {\"npy\": \"path.npy\"}, got " +
                                   io::describe_json(value));
    const std::filesystem::path file = base / ref.get<std::string>();
    try {
      const io::NpyArray a = io::read_npy(file);
      std::size_t next = 0;
      value = nest(a, 0, next);
    } catch (const Error& e) {
      throw input_error(where, "\"" + key + "\": " + e.what());
    }
  }
}

nlohmann::json parse_json_object(const std::string& line, std::string_view where) {
  nlohmann::json j;
  try {
    j = io::parse_json_limited(line, std::string(where));  // "input line 3: not valid JSON at byte 9: ..."
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (!j.is_object()) throw input_error(where, "expected a JSON object, got " + std::string(j.type_name()));
  return j;
}

void check_fields(const nlohmann::json& obj, std::initializer_list<std::string_view> accepted, std::string_view where) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(accepted.begin(), accepted.end(), key) != accepted.end()) continue;
    std::string list;
    for (std::string_view a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
    throw input_error(where,
                      "unknown field " + io::describe_json(nlohmann::json(key)) + " (accepted fields: " + list + ")");
  }
}

bool has_key(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

std::string get_string(const nlohmann::json& obj, const char* key, std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string())
    throw input_error(where, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

bool get_bool(const nlohmann::json& obj, const char* key, std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_boolean())
    throw input_error(where, std::string("\"") + key + "\" must be true or false");
  return it->get<bool>();
}

std::vector<int32_t> get_int_array(const nlohmann::json& obj, const char* key, std::string_view where) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_array())
    throw input_error(where, std::string("\"") + key + "\" must be an array of integers");
  std::vector<int32_t> out;
  out.reserve(it->size());
  for (const auto& v : *it) {
    if (!v.is_number_integer())
      throw input_error(where,
                        std::string("\"") + key + "\" must be an array of integers, found " + io::describe_json(v));
    // Unsigned values above int64 range would wrap in get<int64_t>(), so compare them unsigned.
    const bool big = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{std::numeric_limits<int32_t>::max()};
    const int64_t x = big ? 0 : v.get<int64_t>();
    if (big || x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      throw input_error(where,
                        std::string("\"") + key + "\" holds " + io::describe_json(v) + ", outside the 32-bit range");
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

}  // namespace il::cli
