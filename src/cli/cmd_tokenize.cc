// `inferencelayer tokenize`: the folder's tokenizer.json alone (no weights are loaded), one JSONL
// line per input: {"ids": [...], "type_ids": [...], "offsets": [[begin, end], ...]} with offsets
// as UTF-8 byte ranges into the token's own text ([0, 0] for added special tokens).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/jsonl_io.h"
#include "cli/progress.h"
#include "cli/text_inputs.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace il::cli {
namespace {

constexpr std::size_t kFlushLines = 256;

struct TokenizeArgs {
  std::string model;
  std::vector<std::string> texts;
  std::string input;
  std::string output = "-";
  InputFormat format = InputFormat::kAuto;
  std::optional<std::string> pair;
  bool no_special_tokens = false;
  std::size_t max_length = 0;
  text::TruncationDirection direction = text::TruncationDirection::kRight;
  text::TruncationStrategy strategy = text::TruncationStrategy::kLongestFirst;
  bool tokens = false;
  bool offsets_in_chars = false;  // code points instead of UTF-8 bytes
  bool bench = false;
  bool no_progress = false;
};

// Byte offset -> code point index in `text` (offsets always fall on character boundaries).
uint32_t char_index(std::string_view text, uint32_t byte) {
  uint32_t chars = 0;
  for (uint32_t i = 0; i < byte && i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++chars;
  return chars;
}

// Offsets as code point ranges into each token's own text (what the Python and Node bindings
// report), for comparing with tools that count characters.
void offsets_to_chars(text::Encoding& e, std::string_view first, std::string_view second) {
  for (std::size_t i = 0; i < e.offsets.size(); ++i) {
    if (e.sequence_ids[i] < 0) continue;  // added special tokens stay [0, 0]
    const std::string_view t = e.sequence_ids[i] == 1 ? second : first;
    e.offsets[i] = {char_index(t, e.offsets[i].first), char_index(t, e.offsets[i].second)};
  }
}

// A folder holding tokenizer.json, or the tokenizer.json file itself.
text::Tokenizer load_tokenizer(const std::string& model) {
  std::filesystem::path p(model);
  if (std::filesystem::is_directory(p)) p /= "tokenizer.json";
  else if (!std::filesystem::exists(p)) throw UsageError("model folder " + model + " does not exist");
  if (!std::filesystem::exists(p)) throw UsageError(model + " has no tokenizer.json");
  return text::Tokenizer::from_file(p);
}

void write_encoding(const text::Encoding& e, const text::Tokenizer& tok, bool with_tokens, OutputSink& out) {
  std::string& b = out.buffer();
  b += "{\"ids\":";
  append_ints(b, e.ids);
  b += ",\"type_ids\":";
  append_ints(b, e.type_ids);
  b += ",\"offsets\":[";
  for (std::size_t i = 0; i < e.offsets.size(); ++i) {
    if (i) b += ',';
    b += '[' + std::to_string(e.offsets[i].first) + ',' + std::to_string(e.offsets[i].second) + ']';
  }
  b += ']';
  if (with_tokens) {
    b += ",\"tokens\":[";
    for (std::size_t i = 0; i < e.ids.size(); ++i) {
      if (i) b += ',';
      const std::optional<std::string> t = tok.id_to_token(e.ids[i]);
      if (t) append_json_string(b, *t);
      else b += "null";
    }
    b += ']';
  }
  b += '}';
  out.end_line();
}

// --bench: every line of a text file encoded on this thread, timed, nothing written but one JSON
// line of figures (bench/tokenizer_speed.sh compares it with the reference library's).
void run_tokenize_bench(const TokenizeArgs& a, const text::Tokenizer& tok,
                        const text::EncodeOptions& options, double load_ms) {
  if (a.input.empty() || a.input == "-") throw UsageError("--bench needs --input FILE (one text per line)");
  std::ifstream in(a.input, std::ios::binary);
  if (!in) throw UsageError("cannot read " + a.input);
  std::vector<std::string> lines;
  std::size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    bytes += line.size() + 1;
    lines.push_back(std::move(line));
  }
  std::size_t tokens = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    try {
      tokens += tok.encode(lines[i], options).ids.size();
    } catch (const Error& e) {
      throw input_error("line " + std::to_string(i + 1), e.what());
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"impl\":\"inferencelayer\",\"lines\":%zu,\"bytes\":%zu,\"tokens\":%zu,"
              "\"seconds\":%.4f,\"tokens_per_s\":%.0f,\"mb_per_s\":%.2f,\"load_ms\":%.1f}\n",
              lines.size(), bytes, tokens, s, tokens / s, bytes / s / 1e6, load_ms);
}

void run_tokenize(const TokenizeArgs& a) {
  if (!a.texts.empty() && !a.input.empty()) throw UsageError("give texts as arguments or --input, not both");
  const auto load_start = std::chrono::steady_clock::now();
  const text::Tokenizer tok = load_tokenizer(a.model);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  text::EncodeOptions base;
  base.add_special_tokens = !a.no_special_tokens;
  base.max_length = a.max_length;
  base.direction = a.direction;
  base.strategy = a.strategy;
  if (a.bench) return run_tokenize_bench(a, tok, base, load_ms);

  RecordSource src = a.texts.empty() ? RecordSource::from_input(a.input.empty() ? "-" : a.input, a.format)
                                     : RecordSource::from_texts(a.texts);
  OutputSink out(a.output);
  Progress progress("tokenize", src.total_bytes(), !a.no_progress);
  InputRecord r;
  std::size_t pending = 0;
  while (true) {
    bool more = false;
    try {
      more = src.next(r);
    } catch (const UsageError&) {
      out.flush();  // the lines before the bad one are complete results
      throw;
    }
    if (!more) break;
    std::string text = r.text;
    std::optional<std::string> pair = a.pair;
    text::EncodeOptions o = base;
    try {
      if (r.is_json) {
        check_fields(r.json, {"text", "pair", "add_special_tokens"}, r.where);
        text = get_string(r.json, "text", r.where);
        if (has_key(r.json, "pair")) pair = get_string(r.json, "pair", r.where);
        if (has_key(r.json, "add_special_tokens")) o.add_special_tokens = get_bool(r.json, "add_special_tokens", r.where);
      }
      try {
        text::Encoding e = pair ? tok.encode_pair(text, *pair, o) : tok.encode(text, o);
        if (a.offsets_in_chars) offsets_to_chars(e, text, pair ? std::string_view(*pair) : std::string_view());
        write_encoding(e, tok, a.tokens, out);
      } catch (const Error& e) {
        throw input_error(r.where, e.what());  // invalid UTF-8, a pair too long to truncate
      }
    } catch (const UsageError&) {
      out.flush();
      throw;
    }
    if (++pending >= kFlushLines) {
      out.flush();
      pending = 0;
      progress.update(src.records_read(), src.bytes_read());
    }
  }
  out.flush();
  progress.finish();
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Tokenize texts with a folder's tokenizer.json (no weights needed)");
  cmd->footer(
      "Inputs: TEXT arguments, or --input FILE ('-' or nothing = stdin) with one input per line:\n"
      "  a text (txt format) or {\"text\": \"...\", \"pair\": \"...\", \"add_special_tokens\": false}\n"
      "  (jsonl format; pair and add_special_tokens are optional and override the options; any\n"
      "  other field is refused).\n"
      "Output, one line per input: {\"ids\": [...], \"type_ids\": [...], \"offsets\": [[b, e], ...]}\n"
      "  offsets are UTF-8 byte ranges into the token's own text (the text or the pair), [0, 0]\n"
      "  for added special tokens (--offsets chars: code point ranges instead); --tokens adds\n"
      "  \"tokens\": [...] (the vocabulary strings).\n"
      "Truncation: none unless --max-length is given (the model's own limit is not applied here;\n"
      "  embed and rerank apply it).");
  cmd->add_option("-m,--model", a->model, "Model folder holding tokenizer.json, or a tokenizer.json file")->required();
  cmd->add_option("text", a->texts, "Texts to tokenize (instead of --input)");
  cmd->add_option("-i,--input", a->input, "Input file, '-' for stdin (the default when no TEXT is given)");
  cmd->add_option("-o,--output", a->output, "Output JSONL file, '-' for stdout")->capture_default_str();
  add_format_option(*cmd, a->format);
  cmd->add_option_function<std::string>(
      "--pair", [a](const std::string& p) { a->pair = p; }, "Second text of a pair, used with every input");
  cmd->add_flag("--no-special-tokens", a->no_special_tokens, "Do not add [CLS]/[SEP] (<s>/</s>) tokens");
  cmd->add_option("--max-length", a->max_length, "Truncate to N tokens, special tokens included")
      ->check(CLI::PositiveNumber);
  static const std::map<std::string, text::TruncationDirection> directions = {
      {"right", text::TruncationDirection::kRight}, {"left", text::TruncationDirection::kLeft}};
  cmd->add_option_function<std::string>(
         "--truncation-direction", [a](const std::string& d) { a->direction = directions.at(d); },
         "Which end --max-length cuts: right (default) or left")
      ->transform(CLI::IsMember(directions, CLI::ignore_case))
      ->type_name("SIDE");
  static const std::map<std::string, text::TruncationStrategy> strategies = {
      {"longest_first", text::TruncationStrategy::kLongestFirst},
      {"only_first", text::TruncationStrategy::kOnlyFirst},
      {"only_second", text::TruncationStrategy::kOnlySecond}};
  cmd->add_option_function<std::string>(
         "--truncation-strategy", [a](const std::string& st) { a->strategy = strategies.at(st); },
         "Which text of a pair --max-length cuts: longest_first (default), only_first or only_second")
      ->transform(CLI::IsMember(strategies, CLI::ignore_case))
      ->type_name("STRATEGY");
  cmd->add_flag("--tokens", a->tokens, "Also write the token strings (\"tokens\": [...])");
  cmd->add_option_function<std::string>(
         "--offsets",
         [a](const std::string& v) {
           if (v != "bytes" && v != "chars") throw CLI::ValidationError("--offsets", "must be bytes or chars");
           a->offsets_in_chars = v == "chars";
         },
         "Offset units: bytes (UTF-8, the default) or chars (code points)")
      ->type_name("bytes|chars");
  cmd->add_flag("--bench", a->bench,
                "Time encoding every line of --input on one thread and print tokens/s (no output)");
  cmd->add_flag("--no-progress", a->no_progress, "Never draw the progress line on stderr");
  return {cmd, [a] { run_tokenize(*a); }};
}

}  // namespace il::cli
