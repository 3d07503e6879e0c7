// `inferencelayer embed`: texts or token ids in, one JSONL line per input out
// ({"embedding": [...]} or, with --output-kind hidden, {"hidden": [[...] per token]}, or with
// --output-kind tokens on a multi-vector (ColBERT) model, {"tokens": [[...] per kept token]}).
// The input is read in chunks (a token budget or 256 lines), so memory stays flat on any size.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/chunked.h"
#include "cli/image_inputs.h"
#include "cli/cli_common.h"
#include "cli/jsonl_io.h"
#include "cli/non_finite.h"
#include "cli/progress.h"
#include "cli/text_inputs.h"
#include "cli/token_inputs.h"
#include "core/base64.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace il::cli {
namespace {

struct EmbedArgs {
  EngineArgs engine;
  std::vector<std::string> texts;
  std::string input;
  std::string output = "-";
  InputFormat format = InputFormat::kAuto;
  std::string output_kind = "pooled";
  std::optional<bool> normalize;
  PoolingMode pooling = PoolingMode::kMean;
  bool pooling_given = false;
  std::size_t dimensions = 0;
  std::string prompt_name;
  std::string prompt;
  bool prompt_given = false;
  bool no_truncate = false;
  bool no_progress = false;
  std::string role;  // --role: query or document (tokens only; PyLate's default is a query)
  std::vector<std::string> images;  // --image files
};

// The encoded bytes of an image line: {"image": "path"} (read here, relative to the working
// directory) or {"image_base64": "..."} (standard base64, or a data: URI).
std::vector<std::uint8_t> encoded_image(const InputRecord& r) {
  if (has_key(r.json, "image")) {
    const std::string path = get_string(r.json, "image", r.where);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw input_error(r.where, "image file '" + path + "' does not exist or is not a regular file");
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in && !in.eof()) throw input_error(r.where, "cannot read image file '" + path + "'");
    return bytes;
  }
  if (!r.json.at("image_base64").is_string()) throw input_error(r.where, "\"image_base64\" must be a string");
  std::string why;
  const std::optional<std::string> bytes =
      decode_base64_or_data_uri(r.json.at("image_base64").get_ref<const std::string&>(), why);
  if (!bytes) throw input_error(r.where, "\"image_base64\" is " + why);
  return {bytes->begin(), bytes->end()};
}

// The text put before every text input: --prompt, --prompt-name, or the folder's default
// prompt (sentence-transformers applies default_prompt_name when none is asked for).
std::string resolve_prompt(const EmbedArgs& a, const ModelInfo& info) {
  if (a.prompt_given) return a.prompt;
  std::string name = a.prompt_name.empty() ? info.default_prompt_name : a.prompt_name;
  if (name.empty()) return "";
  const auto it = info.prompts.find(name);
  if (it != info.prompts.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : info.prompts) known += (known.empty() ? "" : ", ") + k;
  throw UsageError("prompt '" + name + "' is not defined by " + a.engine.model +
                   (known.empty() ? std::string(" (it defines no prompts)") : " (it defines: " + known + ")"));
}

// prompt_tokens: engine.prompt_tokens(prefix), counted once per run.
TokenInput record_to_input(const InputRecord& r, const Engine& engine, const std::string& prefix,
                           std::size_t prompt_tokens, bool truncate, TextRole role) {
  std::string text;
  if (r.is_json) {
    for (const char* key : {"pixel_values", "image", "image_base64"})
      if (has_key(r.json, key))
        throw input_error(r.where, std::string("\"") + key + "\" given, but this model takes no images");
    check_fields(r.json, {"text", "input_ids", "token_type_ids"}, r.where);
    const bool has_text = has_key(r.json, "text");
    const bool has_ids = has_key(r.json, "input_ids");
    if (has_text && has_ids) throw input_error(r.where, "give either \"text\" or \"input_ids\", not both");
    if (has_ids) return token_input_from_json(r.json, r.where);
    if (!has_text) throw input_error(r.where, "expected a \"text\" or an \"input_ids\" field");
    check_no_types_with_text(r.json, "\"text\"", r.where);
    text = get_string(r.json, "text", r.where);
  } else {
    text = r.text;
  }
  if (text.empty()) throw input_error(r.where, "empty text");
  try {
    if (role != TextRole::kNone) {  // a multi-vector model's query or document, as PyLate tokenizes it
      TokenizeOptions o;
      o.truncate = truncate;
      o.role = role;
      return engine.tokenize_with(prefix.empty() ? text : prefix + text, o);
    }
    TokenInput in = engine.tokenize(prefix.empty() ? text : prefix + text, truncate);
    in.prompt_tokens = prompt_tokens;
    return in;
  } catch (const Error& e) {
    throw input_error(r.where, e.what());  // too long with --no-truncate, invalid UTF-8
  }
}

// One output line per matrix, {"<key>": [[...] per row]}, and per embedding row,
// {"embedding": [...]}; non-finite values reported against the input's `where`.
void write_matrices(const char* key, const std::vector<Matrix>& states, const std::vector<std::string>& where,
                    NonFiniteReport& report, OutputSink& out) {
  for (std::size_t i = 0; i < states.size(); ++i) {
    const Matrix& m = states[i];
    report.check(m.data.data(), m.data.size(), where[i]);
    std::string& b = out.buffer();
    b += "{\"";
    b += key;
    b += "\":[";
    for (std::size_t t = 0; t < m.rows; ++t) {
      if (t) b += ',';
      append_floats(b, m.row(t), m.cols);
    }
    b += "]}";
    out.end_line();
  }
}

void write_embeddings(const Matrix& m, const std::vector<std::string>& where, NonFiniteReport& report,
                      OutputSink& out) {
  for (std::size_t r = 0; r < m.rows; ++r) {
    report.check(m.row(r), m.cols, where[r]);
    std::string& b = out.buffer();
    b += "{\"embedding\":";
    append_floats(b, m.row(r), m.cols);
    b += '}';
    out.end_line();
  }
}

void write_chunk(Engine& engine, const EmbedArgs& a, const std::vector<TokenInput>& inputs,
                 const std::vector<std::string>& where, NonFiniteReport& report, OutputSink& out) {
  if (a.output_kind == "hidden" || a.output_kind == "tokens") {
    const bool tokens = a.output_kind == "tokens";
    write_matrices(tokens ? "tokens" : "hidden",
                   tokens ? engine.token_vectors(inputs) : engine.hidden_states(inputs), where, report, out);
  } else {
    EmbedOptions o;
    o.normalize = a.normalize;
    if (a.pooling_given) o.pooling = a.pooling;
    o.dimensions = a.dimensions;
    write_embeddings(engine.embed(inputs, o), where, report, out);
  }
  out.flush();
}

// What an image model's lines may be: with a text tower (SigLIP's joint folders) texts and token
// ids as for any embedder (`text` set: how a text record becomes an input), else images only.
struct TextLines {
  std::string prefix;
  std::size_t prompt_tokens = 0;
  const InputChecker* checker = nullptr;
};

// An image model: each line is one image's pixel_values ({"embedding": [...]} out: the image
// embedding; with --output-kind hidden {"hidden": [[...] per patch]}), or, where the model has a
// text tower, a text or token ids as usual. Runs of lines of one kind are embedded together, in
// order, so the output lines follow the input's.
void run_image_embed(Engine& engine, const EmbedArgs& a, RecordSource& src, const std::optional<TextLines>& text) {
  const ModelInfo& info = engine.info();
  if (a.output_kind == "tokens") throw UsageError(a.engine.model + " has no per-token vectors");
  if (a.output_kind == "pooled" && info.image_embedding_dim == 0)
    throw UsageError(a.engine.model + " has no image pooling head: use --output-kind hidden");
  OutputSink out(a.output);
  Progress progress("embed", src.total_bytes(), !a.no_progress);
  NonFiniteReport report("null");
  const std::size_t patches = static_cast<std::size_t>(info.image_height / info.patch_size) *
                              static_cast<std::size_t>(info.image_width / info.patch_size);
  const std::size_t per_chunk =
      std::max<std::size_t>(1, std::min<std::size_t>(kChunkLines, a.engine.max_batch_tokens / patches));
  std::vector<ImageInput> images;
  // Encoded images of the chunk (image files, base64), decoded and preprocessed together on every
  // core when the chunk is flushed: (index in `images`, bytes).
  std::vector<std::pair<std::size_t, std::vector<std::uint8_t>>> encoded;
  std::vector<TokenInput> texts;
  std::size_t text_tokens = 0;
  std::vector<std::string> where;
  std::unique_ptr<ThreadPool> decoders;
  const auto flush_images = [&] {
    if (images.empty()) return;
    std::optional<std::pair<std::size_t, std::string>> failed;  // the first bad image: its index, why
    if (!encoded.empty()) {
      if (!decoders) decoders = std::make_unique<ThreadPool>(a.engine.threads);
      std::vector<std::string> errors(encoded.size());
      decoders->parallel_for(encoded.size(), 1, [&](std::size_t i0, std::size_t i1) {
        for (std::size_t i = i0; i < i1; ++i) {
          try {
            images[encoded[i].first] = engine.load_image(encoded[i].second, where[encoded[i].first]);
          } catch (const Error& e) {
            errors[i] = e.what();
          }
        }
      });
      for (std::size_t i = 0; i < encoded.size() && !failed; ++i)
        if (!errors[i].empty()) failed.emplace(encoded[i].first, errors[i]);
      encoded.clear();
      // Lines before the bad one are answered: the output stays an exact prefix of the input's.
      if (failed) {
        images.resize(failed->first);
        if (images.empty()) throw input_error(where[failed->first], failed->second);
      }
    }
    if (a.output_kind == "hidden") {
      write_matrices("hidden", engine.image_hidden_states(images), where, report, out);
    } else {
      EmbedOptions o;
      o.normalize = a.normalize;
      o.dimensions = a.dimensions;
      write_embeddings(engine.embed_images(images, o), where, report, out);
    }
    out.flush();
    images.clear();
    if (failed) throw input_error(where[failed->first], failed->second);
    where.clear();
  };
  const auto flush_texts = [&] {
    if (texts.empty()) return;
    write_chunk(engine, a, texts, where, report, out);
    texts.clear();
    where.clear();
    text_tokens = 0;
  };
  const auto flush = [&] {
    flush_images();
    flush_texts();
    progress.update(src.records_read(), src.bytes_read());
  };
  InputRecord rec;
  while (true) {
    try {
      if (!src.next(rec)) break;
      const bool image_line = rec.is_json && (has_key(rec.json, "pixel_values") || has_key(rec.json, "image") ||
                                              has_key(rec.json, "image_base64"));
      if (!image_line) {
        if (!text)
          throw input_error(rec.where, a.engine.model + " takes images only: expected {\"pixel_values\": "
                                       "[[[...]]]} (one image's channels × height × width values)");
        if (!images.empty()) flush();
        TokenInput in = record_to_input(rec, engine, text->prefix, text->prompt_tokens, !a.no_truncate,
                                        TextRole::kNone);
        text->checker->check(in, rec.where);
        text_tokens += in.ids.size();
        texts.push_back(std::move(in));
        where.push_back(rec.where);
        if (texts.size() >= kChunkLines || text_tokens >= a.engine.max_batch_tokens) flush();
        continue;
      }
      if (has_key(rec.json, "text") || has_key(rec.json, "input_ids"))
        throw input_error(rec.where, "give either an image or a text (\"text\" / \"input_ids\"), not both");
      check_fields(rec.json, {"pixel_values", "image", "image_base64"}, rec.where);
      if (rec.json.size() != 1)
        throw input_error(rec.where, "give one of \"pixel_values\", \"image\" or \"image_base64\"");
      if (!has_key(rec.json, "pixel_values")) {  // encoded: decoded with the chunk
        std::vector<std::uint8_t> bytes = encoded_image(rec);
        if (!texts.empty()) flush();
        encoded.emplace_back(images.size(), std::move(bytes));
        images.emplace_back();
        where.push_back(rec.where);
        if (images.size() >= per_chunk) flush();
        continue;
      }
      ImageInput im = image_input_from_json(rec.json, rec.where);
      if (im.channels != static_cast<std::size_t>(info.image_channels) ||
          im.height != static_cast<std::size_t>(info.image_height) ||
          im.width != static_cast<std::size_t>(info.image_width))
        throw input_error(rec.where, "pixel_values of " + std::to_string(im.channels) + " × " +
                                         std::to_string(im.height) + " × " + std::to_string(im.width) +
                                         ", but the model takes " + std::to_string(info.image_channels) + " × " +
                                         std::to_string(info.image_height) + " × " +
                                         std::to_string(info.image_width));
      for (float v : im.pixels)
        if (!std::isfinite(v)) throw input_error(rec.where, "\"pixel_values\" holds a value that is not finite");
      if (!texts.empty()) flush();
      images.push_back(std::move(im));
      where.push_back(rec.where);
      if (images.size() >= per_chunk) flush();
    } catch (const UsageError&) {
      flush();  // everything before the bad line is written: the output is an exact prefix
      throw;
    }
  }
  flush();
  progress.finish();
  report.finish(src.records_read());
}

void run_embed(const EmbedArgs& a) {
  if (!a.texts.empty() && !a.input.empty()) throw UsageError("give texts as arguments or --input, not both");
  if (!a.images.empty() && (!a.texts.empty() || !a.input.empty()))
    throw UsageError("give --image files, texts as arguments or --input, one of them");
  const bool pooled = a.output_kind == "pooled";
  if (!pooled && (a.pooling_given || a.normalize.has_value() || a.dimensions > 0))
    throw UsageError("--pooling, --normalize and --dimensions apply to --output-kind pooled only");

  auto engine = load_engine(a.engine);
  const ModelInfo& info = engine->info();
  if (info.capabilities.image_input && !info.capabilities.embed && !info.capabilities.hidden_states) {
    if (!a.texts.empty())
      throw UsageError(a.engine.model + " takes images only: give {\"pixel_values\": ...} lines with --input");
    if (a.pooling_given) throw UsageError("--pooling does not apply to image embeddings (the model's own head pools)");
    if (a.dimensions > static_cast<std::size_t>(info.image_embedding_dim))
      throw UsageError("--dimensions " + std::to_string(a.dimensions) + " is larger than the image embedding size " +
                       std::to_string(info.image_embedding_dim));
    RecordSource src = !a.images.empty() ? RecordSource::from_images(a.images)
                                         : RecordSource::from_input(a.input.empty() ? "-" : a.input, a.format);
    return run_image_embed(*engine, a, src, std::nullopt);
  }
  if (pooled && info.capabilities.multi_vector && !info.capabilities.embed)
    throw UsageError(a.engine.model + " is a multi-vector (ColBERT) model: use --output-kind tokens (one vector "
                     "per token) or 'inferencelayer rerank' (MaxSim scores)");
  if (pooled && !info.capabilities.embed)
    throw UsageError(a.engine.model + " does not produce embeddings" +
                     (info.capabilities.score ? " (it is a cross-encoder / reranker): use 'inferencelayer rerank'" : ""));
  const bool tokens = a.output_kind == "tokens";
  if (!a.role.empty() && !tokens) throw UsageError("--role applies to --output-kind tokens only");
  if (tokens && !info.capabilities.multi_vector)
    throw UsageError(a.engine.model + " is not a multi-vector (ColBERT) model: it has no per-token vectors");
  if (a.output_kind == "hidden" && !info.capabilities.hidden_states)
    throw UsageError(a.engine.model + " does not report hidden states");
  const TextRole role = !tokens ? TextRole::kNone : a.role == "document" ? TextRole::kDocument : TextRole::kQuery;
  if (a.dimensions > static_cast<std::size_t>(info.output_dim))
    throw UsageError("--dimensions " + std::to_string(a.dimensions) + " is larger than the embedding size " +
                     std::to_string(info.output_dim));
  const std::string prefix = resolve_prompt(a, info);
  const std::size_t prompt_tokens = engine->prompt_tokens(prefix);
  const InputChecker checker(info, static_cast<std::size_t>(info.max_tokens));

  if (!a.images.empty() && !info.capabilities.image_input)
    throw UsageError(a.engine.model + " takes no images");
  RecordSource src = !a.images.empty() ? RecordSource::from_images(a.images)
                     : a.texts.empty() ? RecordSource::from_input(a.input.empty() ? "-" : a.input, a.format)
                                       : RecordSource::from_texts(a.texts);
  if (info.capabilities.image_input) {  // texts and images (SigLIP's joint folders)
    if (a.dimensions > static_cast<std::size_t>(info.image_embedding_dim))
      throw UsageError("--dimensions " + std::to_string(a.dimensions) + " is larger than the image embedding size " +
                       std::to_string(info.image_embedding_dim));
    return run_image_embed(*engine, a, src, TextLines{prefix, prompt_tokens, &checker});
  }
  OutputSink out(a.output);
  Progress progress("embed", src.total_bytes(), !a.no_progress);
  NonFiniteReport report("null");

  run_in_chunks(
      src, a.engine.max_batch_tokens, progress,
      [&](const InputRecord& r) {
        TokenInput in = record_to_input(r, *engine, prefix, prompt_tokens, !a.no_truncate, role);
        checker.check(in, r.where);
        return in;
      },
      [&](const std::vector<TokenInput>& chunk, const std::vector<std::string>& where) {
        write_chunk(*engine, a, chunk, where, report, out);
      });
  report.finish(src.records_read());
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto a = std::make_shared<EmbedArgs>();
  CLI::App* cmd = app.add_subcommand("embed", "Embed texts: one JSONL line {\"embedding\": [...]} per input");
  cmd->footer(
      std::string("Inputs: TEXT arguments, or --input FILE ('-' or nothing = stdin) with one input per line:\n"
                  "  a text (txt format), or a JSON object {\"text\": \"...\"} or {\"input_ids\": [...],\n"
                  "  \"token_type_ids\": [...]} (jsonl format; token ids are used as given, no prompt).\n"
                  "  Image models also take {\"image\": \"photo.jpg\"} (a file), {\"image_base64\": \"...\"} (or a\n"
                  "  data: URI) and {\"pixel_values\": [[[...]]]} (one preprocessed channels × height × width image).\n"
                  "  Any other field is refused.\n"
                  "Output: one line per input, in input order. A bad line stops the run with an error naming\n"
                  "its line number and exit status 2.\n") +
      kNonFiniteHelp +
      "\n"
      "Examples:\n"
      "  inferencelayer embed -m ./bge-small \"hello world\" \"good morning\"\n"
      "  inferencelayer embed -m ./bge-small -i docs.jsonl -o vectors.jsonl --dimensions 256\n"
      "  inferencelayer embed -m ./siglip-base-patch16-224 --image cat.jpg dog.png");
  add_engine_options(*cmd, a->engine);
  cmd->add_option("text", a->texts, "Texts to embed (instead of --input)");
  cmd->add_option("--image", a->images,
                  "Image files to embed (JPEG, PNG, WebP; an image model: decoded and preprocessed as the folder's "
                  "preprocessor_config.json says, in parallel)");
  cmd->add_option("-i,--input", a->input, "Input file, '-' for stdin (the default when no TEXT is given)");
  cmd->add_option("-o,--output", a->output, "Output JSONL file, '-' for stdout")->capture_default_str();
  add_format_option(*cmd, a->format);
  cmd->add_option("--output-kind", a->output_kind,
                  "pooled: the sentence embedding; hidden: the final hidden state of every token "
                  "({\"hidden\": [[...] per token]}); tokens: a multi-vector (ColBERT) model's normalised "
                  "vector of every kept token ({\"tokens\": [[...] per token]}; see --role)")
      ->transform(CLI::IsMember({"pooled", "hidden", "tokens"}))
      ->capture_default_str();
  cmd->add_flag_callback("--normalize", [a] { a->normalize = true; }, "L2-normalise (default: as the folder says)");
  cmd->add_flag_callback("--no-normalize", [a] { a->normalize = false; }, "Do not L2-normalise");
  cmd->add_option_function<std::string>(
         "--pooling",
         [a](const std::string& p) {
           a->pooling = pooling_names().at(p);
           a->pooling_given = true;
         },
         "Pooling: mean, cls or last (default: the folder's pooling config)")
      ->transform(CLI::IsMember(pooling_names(), CLI::ignore_case))
      ->type_name("MODE");
  cmd->add_option("--dimensions", a->dimensions,
                  "Keep the first N dimensions (Matryoshka), re-normalised when normalising")
      ->check(CLI::PositiveNumber);
  auto* pn = cmd->add_option("--prompt-name", a->prompt_name,
                             "Prefix texts with this named prompt of the folder (config_sentence_transformers.json); "
                             "by default its default_prompt_name, if any, is used");
  auto* pt = cmd->add_option_function<std::string>(
      "--prompt", [a](const std::string& p) { a->prompt = p; a->prompt_given = true; },
      "Prefix every text with this literal text ('' for none, overriding a default prompt)");
  pn->excludes(pt);
  cmd->add_option("--role", a->role,
                  "With --output-kind tokens: tokenize texts as PyLate does for a query (the default, as "
                  "PyLate's encode: query marker, expanded to query_length) or a document (document marker, "
                  "cut to document_length, skiplist tokens left out)")
      ->transform(CLI::IsMember({"query", "document"}));
  cmd->add_flag("--no-truncate", a->no_truncate,
                "Refuse texts longer than the model's maximum (error naming the line) instead of cutting them");
  cmd->add_flag("--no-progress", a->no_progress, "Never draw the progress line on stderr");
  return {cmd, [a] { run_embed(*a); }};
}

}  // namespace il::cli
