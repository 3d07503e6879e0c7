// Streaming line input and buffered JSONL output. Inputs of any size are read one line at a
// time (memory stays flat); outputs are written as they are produced and flushed per chunk so a
// pipe downstream sees results while the input is still being read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/float_format.h"

namespace il::cli {

// Lines of a file, or of stdin for "-", with 1-based line numbers. A trailing '\r' is dropped
// so files written on Windows read the same.
class LineReader {
 public:
  explicit LineReader(const std::string& path);  // throws UsageError when it cannot be opened
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool next(std::string& line);
  std::size_t line_number() const { return line_number_; }
  std::uint64_t bytes_read() const { return bytes_read_; }
  std::uint64_t total_bytes() const { return total_bytes_; }  // 0 when unknown (stdin)
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ifstream file_;
  std::istream* in_ = nullptr;
  std::size_t line_number_ = 0;
  std::uint64_t bytes_read_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// A file, or stdout for "-". Lines are appended to a buffer and written on flush() or when the
// buffer grows past a few MB; write failures (disk full, closed pipe) throw.
class OutputSink {
 public:
  explicit OutputSink(const std::string& path);  // throws UsageError when it cannot be created
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;
  ~OutputSink();

  std::string& buffer() { return buf_; }  // append one line's text, then call end_line()
  void end_line();
  void flush();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::string buf_;
};

// Floats: il::append_float / il::append_floats (core/float_format.h, shared with the server).
void append_ints(std::string& out, const std::vector<int32_t>& values);
// A JSON string literal with escapes.
void append_json_string(std::string& out, std::string_view s);

// Parses one line as a JSON object; anything else is an input error naming `where`.
nlohmann::json parse_json_object(const std::string& line, std::string_view where);

// Any top-level field given as {"npy": "file.npy"} (a NumPy array, float32 / float64 / int32 /
// int64, C order; the path relative to the input file's folder, or to the working folder for
// stdin) becomes the nested array it holds, so every array field of a JSON line may come from a
// file: a 1024-pixel view is millions of values. Errors name the line, the field and the file.
void resolve_npy_fields(nlohmann::json& obj, const LineReader& in, std::string_view where);

// Refuses a key outside `accepted` with an input error naming the line and the key and listing
// the accepted ones: a field we would not read (an attention_mask, a misspelt name) must not be
// dropped silently, since the output would then not be what the user asked for.
void check_fields(const nlohmann::json& obj, std::initializer_list<std::string_view> accepted, std::string_view where);

// Typed field access with errors naming the line and the key.
bool has_key(const nlohmann::json& obj, const char* key);
std::string get_string(const nlohmann::json& obj, const char* key, std::string_view where);
bool get_bool(const nlohmann::json& obj, const char* key, std::string_view where);
std::vector<int32_t> get_int_array(const nlohmann::json& obj, const char* key, std::string_view where);

}  // namespace il::cli
