// Where the inputs of embed / rerank / tokenize come from: positional arguments, or the lines of
// a file or stdin, each either a plain text or a JSON object. One input line = one output line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/jsonl_io.h"

namespace CLI {
class App;
}

namespace il::cli {

enum class InputFormat { kAuto, kTxt, kJsonl };
const std::map<std::string, InputFormat>& input_format_names();

// The --format rule, for --help.
inline constexpr const char* kFormatHelp =
    "Input format: txt (every line is one text, taken verbatim), jsonl (every line is one JSON "
    "object), or auto (default): a file ending in .jsonl/.ndjson is jsonl, one ending in .txt is "
    "txt, anything else (stdin included) is jsonl when its first non-blank character is '{' and "
    "txt otherwise. The rule picks one format for the whole input, never per line.";

// --format auto|txt|jsonl.
void add_format_option(CLI::App& cmd, InputFormat& format);

struct InputRecord {
  std::string where;     // "input line 3" / "text argument 2": the prefix of any error about it
  bool is_json = false;  // json holds the parsed object; otherwise text holds the text
  std::string text;
  nlohmann::json json;
};

class RecordSource {
 public:
  // Positional arguments: always texts, never parsed as JSON.
  static RecordSource from_texts(std::vector<std::string> texts);
  // --image arguments: each a record {"image": path}, named "image argument N".
  static RecordSource from_images(std::vector<std::string> files);
  // A file, or stdin for "-", read line by line.
  static RecordSource from_input(const std::string& path, InputFormat format);

  // False at the end. Invalid JSON throws an input error naming the line.
  bool next(InputRecord& record);
  std::uint64_t bytes_read() const;
  std::uint64_t total_bytes() const;  // 0 when unknown
  std::size_t records_read() const { return count_; }

 private:
  std::vector<std::string> texts_;
  bool images_ = false;  // texts_ holds --image files
  std::unique_ptr<LineReader> reader_;
  InputFormat format_ = InputFormat::kTxt;
  std::deque<std::string> lookahead_;  // lines read ahead to decide the format of stdin
  std::size_t count_ = 0;
};

}  // namespace il::cli
