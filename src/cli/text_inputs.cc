#include "cli/text_inputs.h"

#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

namespace il::cli {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool looks_like_json(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  return first != std::string::npos && line[first] == '{';
}

}  // namespace

const std::map<std::string, InputFormat>& input_format_names() {
  static const std::map<std::string, InputFormat> names = {
      {"auto", InputFormat::kAuto}, {"txt", InputFormat::kTxt}, {"jsonl", InputFormat::kJsonl}};
  return names;
}

void add_format_option(CLI::App& cmd, InputFormat& format) {
  cmd.add_option_function<std::string>(
         "--format", [&format](const std::string& f) { format = input_format_names().at(f); }, kFormatHelp)
      ->transform(CLI::IsMember(input_format_names(), CLI::ignore_case))
      ->type_name("FORMAT");
}

RecordSource RecordSource::from_texts(std::vector<std::string> texts) {
  RecordSource s;
  s.texts_ = std::move(texts);
  return s;
}

RecordSource RecordSource::from_images(std::vector<std::string> files) {
  RecordSource s;
  s.texts_ = std::move(files);
  s.images_ = true;
  return s;
}

RecordSource RecordSource::from_input(const std::string& path, InputFormat format) {
  RecordSource s;
  s.reader_ = std::make_unique<LineReader>(path);
  if (format == InputFormat::kAuto) {
    if (ends_with(path, ".jsonl") || ends_with(path, ".ndjson")) format = InputFormat::kJsonl;
    else if (ends_with(path, ".txt")) format = InputFormat::kTxt;
  }
  if (format == InputFormat::kAuto) {
    // Decide from the first non-blank line; the lines read to get there are replayed by next().
    format = InputFormat::kTxt;
    std::string line;
    while (s.reader_->next(line)) {
      const bool blank = line.find_first_not_of(" \t") == std::string::npos;
      if (!blank && looks_like_json(line)) format = InputFormat::kJsonl;
      s.lookahead_.push_back(std::move(line));
      if (!blank) break;
    }
  }
  s.format_ = format;
  return s;
}

bool RecordSource::next(InputRecord& record) {
  std::string line;
  if (!reader_) {
    if (count_ >= texts_.size()) return false;
    record.where = (images_ ? "image argument " : "text argument ") + std::to_string(count_ + 1);
    record.is_json = images_;
    record.text = images_ ? std::string() : texts_[count_];
    record.json = images_ ? nlohmann::json{{"image", texts_[count_]}} : nlohmann::json(nullptr);
    ++count_;
    return true;
  }
  if (!lookahead_.empty()) {
    line = std::move(lookahead_.front());
    lookahead_.pop_front();
  } else if (!reader_->next(line)) {
    return false;
  }
  ++count_;
  record.where = "input line " + std::to_string(count_);
  if (format_ == InputFormat::kJsonl) {
    record.is_json = true;
    record.json = parse_json_object(line, record.where);
    resolve_npy_fields(record.json, *reader_, record.where);
    record.text.clear();
  } else {
    record.is_json = false;
    record.text = std::move(line);
    record.json = nullptr;
  }
  return true;
}

std::uint64_t RecordSource::bytes_read() const { return reader_ ? reader_->bytes_read() : 0; }
std::uint64_t RecordSource::total_bytes() const { return reader_ ? reader_->total_bytes() : 0; }

}  // namespace il::cli
