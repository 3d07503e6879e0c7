// `inferencelayer generate`: text generation from JSON lines of token ids (and, for a multimodal
// model, the processor's pixel_values and image grids), the check form of generating models:
//   {"input_ids": [...], "pixel_values": [[...] per patch], "image_grid_thw": [[t, h, w]],
//    "max_new_tokens": N}
// prints {"tokens": [...]} (the new tokens only; greedy unless the options or the line ask for
// sampling); --output-kind vision prints {"vision": [[...]]} (the vision tower's rows for the
// line's images), --output-kind logits {"logits": [...]} (the prompt's last position).
// DeepSeek-OCR-2 pages take its processor's names instead, one page a line:
//   {"input_ids": [...], "pixel_values": [[[[...]]]] (1 × 3 × S × S, the global view),
//    "pixel_values_local": [...] (n × 3 × s × s, the tiles; optional), "num_local_patches": [n]}
// DeepSeek-OCR (v1) the names of its reference processor: the same pixel_values and
// pixel_values_local, "num_local_crops": [n] and "image_spatial_crop": [[columns, rows]] (the
// tiles' grid);
// and --output-kind sam prints {"sam": [[...] per view]} (SAM after its down-sampling
// convolutions, NCHW, the tiles then the global view). Any array field may be given as
// {"npy": "file.npy"}, relative to the input file.
// Block-diffusion models (DiffusionGemma): --output-kind canvas-logits reads
//   {"prompt_ids": [...], "canvas_ids": [...], "sc_logits": [[...] per canvas position]}
// (sc_logits optional) and prints {"logits": [[...] per canvas position]}: the softcapped logits
// of one denoising forward of the canvas after the prompt is encoded.
// --prompt "text" generates from one text instead (the folder's chat template applied around it
// as one user message unless --raw), streaming the text as it is produced (a block-diffusion
// model: each committed canvas).
#include <array>
#include <cmath>
#include <functional>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/jsonl_io.h"
#include "runtime/view_vision.h"
#include "core/error.h"
#include "core/float_format.h"
#include "io/json_util.h"
#include "text/chat_template.h"

namespace il::cli {
namespace {

struct GenerateArgs {
  EngineArgs engine;
  std::string input = "-";
  std::string output = "-";
  std::string output_kind = "tokens";
  SamplingOptions sampling;
  bool details = false;
  std::size_t chunk = 64;
  std::optional<std::string> prompt;
  bool raw = false;
  DiffusionOptions diffusion;
  bool max_new_tokens_given = false;
};

double get_number(const nlohmann::json& obj, const char* key, std::string_view where) {
  const auto& v = obj.at(key);
  if (!v.is_number()) throw input_error(where, std::string("\"") + key + "\" must be a number");
  return v.get<double>();
}

std::size_t get_count(const nlohmann::json& obj, const char* key, std::string_view where) {
  const auto& v = obj.at(key);
  if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > (1LL << 30))
    throw input_error(where, std::string("\"") + key + "\" must be an integer in 0..2^30, got " + io::describe_json(v));
  return static_cast<std::size_t>(v.get<long long>());
}

// pixel_values: one row per patch, every row as long as the first, all numbers finite.
std::vector<std::vector<float>> patch_rows(const nlohmann::json& obj, std::string_view where) {
  const auto& v = obj.at("pixel_values");
  if (!v.is_array() || v.empty()) throw input_error(where, "\"pixel_values\" must be a non-empty array of rows");
  std::vector<std::vector<float>> rows;
  rows.reserve(v.size());
  for (const auto& r : v) {
    if (!r.is_array() || r.empty() || (!rows.empty() && r.size() != rows.front().size()))
      throw input_error(where, "\"pixel_values\" must hold rows of numbers of one length (one row per patch)");
    std::vector<float> row;
    row.reserve(r.size());
    for (const auto& x : r) {
      if (!x.is_number()) throw input_error(where, "\"pixel_values\" holds " + io::describe_json(x));
      const double d = x.get<double>();
      if (!std::isfinite(d)) throw input_error(where, "\"pixel_values\" holds a value that is not finite");
      row.push_back(static_cast<float>(d));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// A nested array of numbers of `dims` dimensions: its shape and its values, row-major.
std::pair<std::vector<std::size_t>, std::vector<float>> dense_array(const nlohmann::json& v, std::size_t dims,
                                                                   std::string_view where, const std::string& key) {
  std::vector<std::size_t> shape;
  const nlohmann::json* p = &v;
  for (std::size_t d = 0; d < dims; ++d) {
    if (!p->is_array() || p->empty())
      throw input_error(where, "\"" + key + "\" must be a " + std::to_string(dims) + "-dimensional array of numbers");
    shape.push_back(p->size());
    p = &p->front();
  }
  std::vector<float> values;
  const std::function<void(const nlohmann::json&, std::size_t)> walk = [&](const nlohmann::json& x, std::size_t d) {
    if (d == dims) {
      if (!x.is_number()) throw input_error(where, "\"" + key + "\" holds " + io::describe_json(x));
      const double f = x.get<double>();
      if (!std::isfinite(f)) throw input_error(where, "\"" + key + "\" holds a value that is not finite");
      values.push_back(static_cast<float>(f));
      return;
    }
    if (!x.is_array() || x.size() != shape[d])
      throw input_error(where, "\"" + key + "\" is not a dense array (its rows differ in length)");
    for (const auto& y : x) walk(y, d + 1);
  };
  walk(v, 0);
  return {shape, values};
}

// DeepSeek-OCR-2's processor outputs: pixel_values [1, 3, S, S] (the global view),
// pixel_values_local [n, 3, s, s] (the tiles) with num_local_patches [n] — one page a line. v1's:
// num_local_crops [n] in place of num_local_patches, and image_spatial_crop [[columns, rows]].
PatchImage view_page(const nlohmann::json& j, std::string_view where, std::size_t patch, bool v1) {
  const std::string count_key = v1 ? "num_local_crops" : "num_local_patches";
  const auto [g_shape, global] = dense_array(j.at("pixel_values"), 4, where, "pixel_values");
  if (g_shape[0] != 1 || g_shape[1] != 3 || g_shape[2] != g_shape[3])
    throw input_error(where, "\"pixel_values\" must be [1, 3, S, S] (one page's global view)");
  std::vector<float> tiles;
  std::size_t count = 0, side = 0;
  if (has_key(j, "pixel_values_local")) {
    const auto [l_shape, local] = dense_array(j.at("pixel_values_local"), 4, where, "pixel_values_local");
    if (l_shape[1] != 3 || l_shape[2] != l_shape[3])
      throw input_error(where, "\"pixel_values_local\" must be [n, 3, s, s] (the page's tiles)");
    tiles = local;
    count = l_shape[0];
    side = l_shape[2];
  }
  if (has_key(j, count_key.c_str())) {
    const std::vector<int32_t> n = get_int_array(j, count_key.c_str(), where);
    if (n.size() != 1 || static_cast<std::size_t>(n[0]) != count)
      throw input_error(where, "\"" + count_key + "\" must be [" + std::to_string(count) +
                                   "] (one page a line, as many tiles as pixel_values_local holds)");
  } else if (count > 0) {
    throw input_error(where, "give \"" + count_key + "\" with \"pixel_values_local\"");
  }
  std::array<int, 2> grid{};
  if (v1 && count > 0) {
    const auto it = j.find("image_spatial_crop");
    if (it == j.end() || !it->is_array() || it->size() != 1 || !(*it)[0].is_array() || (*it)[0].size() != 2 ||
        !(*it)[0][0].is_number_integer() || !(*it)[0][1].is_number_integer())
      throw input_error(where, "give \"image_spatial_crop\": [[columns, rows]] (the tiles' grid) with "
                               "\"pixel_values_local\"");
    grid = {(*it)[0][0].get<int>(), (*it)[0][1].get<int>()};
    if (grid[0] < 1 || grid[1] < 1 || static_cast<std::size_t>(grid[0]) * static_cast<std::size_t>(grid[1]) != count)
      throw input_error(where, "\"image_spatial_crop\" [[" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) +
                                   "]] does not hold the " + std::to_string(count) + " tiles of pixel_values_local");
  }
  if (g_shape[2] % patch != 0 || (count > 0 && side % patch != 0))
    throw input_error(where, "views of " + std::to_string(g_shape[2]) + " and " + std::to_string(side) +
                                 " pixels are not whole patches of " + std::to_string(patch));
  PatchImage page = runtime::make_view_page(global.data(), g_shape[2], tiles.data(), count, side, patch);
  page.tile_grid = grid;
  return page;
}

GenerationRequest parse_line(const nlohmann::json& j, std::string_view where, const GenerateArgs& a,
                             const ModelInfo& info) {
  const bool v1 = info.layout == "deepseek-ocr", views = v1 || info.layout == "deepseek-ocr2";
  if (v1)
    check_fields(j,
                 {"input_ids", "pixel_values", "pixel_values_local", "num_local_crops", "image_spatial_crop",
                  "attention_mask", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "repetition_penalty",
                  "no_repeat_ngram_size", "stop_ids"},
                 where);
  else if (views)
    check_fields(j,
                 {"input_ids", "pixel_values", "pixel_values_local", "num_local_patches", "attention_mask",
                  "max_new_tokens", "temperature", "top_k", "top_p", "seed", "repetition_penalty",
                  "no_repeat_ngram_size", "stop_ids"},
                 where);
  else
    check_fields(j,
                 {"input_ids", "pixel_values", "image_grid_thw", "mm_token_type_ids", "attention_mask",
                  "max_new_tokens", "temperature", "top_k", "top_p", "seed", "repetition_penalty",
                  "no_repeat_ngram_size", "stop_ids"},
                 where);
  GenerationRequest r;
  r.input_ids = get_int_array(j, "input_ids", where);
  r.options = a.sampling;
  if (has_key(j, "attention_mask")) {
    for (int32_t m : get_int_array(j, "attention_mask", where))
      if (m != 1) throw input_error(where, "\"attention_mask\" must be all ones (one unpadded prompt per line)");
  }
  r.diffusion = a.diffusion;
  if (a.max_new_tokens_given) r.diffusion.max_new_tokens = a.sampling.max_new_tokens;
  if (has_key(j, "max_new_tokens")) {
    r.options.max_new_tokens = get_count(j, "max_new_tokens", where);
    r.diffusion.max_new_tokens = r.options.max_new_tokens;  // block diffusion reads this one
  }
  if (has_key(j, "temperature")) r.options.temperature = static_cast<float>(get_number(j, "temperature", where));
  if (has_key(j, "top_k")) r.options.top_k = get_count(j, "top_k", where);
  if (has_key(j, "top_p")) r.options.top_p = static_cast<float>(get_number(j, "top_p", where));
  if (has_key(j, "seed")) r.options.seed = get_count(j, "seed", where);
  if (has_key(j, "repetition_penalty"))
    r.options.repetition_penalty = static_cast<float>(get_number(j, "repetition_penalty", where));
  if (has_key(j, "no_repeat_ngram_size")) r.options.no_repeat_ngram = get_count(j, "no_repeat_ngram_size", where);
  if (has_key(j, "stop_ids")) r.options.stop_ids = get_int_array(j, "stop_ids", where);
  if (views) {
    if (has_key(j, "pixel_values"))
      r.images.push_back(view_page(j, where, static_cast<std::size_t>(info.patch_size), v1));
    else if (has_key(j, "pixel_values_local")) throw input_error(where, "\"pixel_values_local\" needs \"pixel_values\"");
    return r;
  }
  const bool has_pixels = has_key(j, "pixel_values"), has_grid = has_key(j, "image_grid_thw");
  if (has_pixels != has_grid) throw input_error(where, "give \"pixel_values\" and \"image_grid_thw\" together");
  if (has_pixels) {
    const auto rows = patch_rows(j, where);
    const auto& g = j.at("image_grid_thw");
    if (!g.is_array() || g.empty()) throw input_error(where, "\"image_grid_thw\" must be a list of [t, h, w]");
    std::size_t next = 0;
    for (const auto& thw : g) {
      if (!thw.is_array() || thw.size() != 3)
        throw input_error(where, "\"image_grid_thw\" must be a list of [t, h, w], found " + io::describe_json(thw));
      PatchImage im;
      for (std::size_t k = 0; k < 3; ++k) {
        if (!thw[k].is_number_integer() || thw[k].get<long long>() < 1 || thw[k].get<long long>() > 65536)
          throw input_error(where, "\"image_grid_thw\" holds " + io::describe_json(thw));
        im.grid_thw[k] = thw[k].get<int>();
      }
      const std::size_t n = static_cast<std::size_t>(im.grid_thw[0]) * im.grid_thw[1] * im.grid_thw[2];
      if (next + n > rows.size())
        throw input_error(where, "\"image_grid_thw\" needs more patch rows than the " + std::to_string(rows.size()) +
                                     " \"pixel_values\" holds");
      im.patch_dim = rows.front().size();
      im.rows.reserve(n * im.patch_dim);
      for (std::size_t i = 0; i < n; ++i) im.rows.insert(im.rows.end(), rows[next + i].begin(), rows[next + i].end());
      next += n;
      r.images.push_back(std::move(im));
    }
    if (next != rows.size())
      throw input_error(where, "\"pixel_values\" holds " + std::to_string(rows.size()) + " rows; the grids take " +
                                   std::to_string(next));
  }
  return r;
}

void write_result(const GenerateArgs& a, const GenerationRequest& r, const GenerationResult* g, const Matrix* logits,
                  std::size_t row, const std::vector<Matrix>* vision, OutputSink& out) {
  std::string& b = out.buffer();
  if (a.output_kind == "logits") {
    b += "{\"logits\":";
    append_floats(b, logits->row(row), logits->cols);
    b += '}';
  } else if (a.output_kind == "sam") {
    // NCHW per view: channel-major, then the view's rows and columns.
    b += "{\"sam\":[";
    for (std::size_t v = 0; v < vision->size(); ++v) {
      const Matrix& m = (*vision)[v];
      std::vector<float> nchw(m.data.size());
      for (std::size_t p = 0; p < m.rows; ++p)
        for (std::size_t c = 0; c < m.cols; ++c) nchw[c * m.rows + p] = m.data[p * m.cols + c];
      if (v > 0) b += ',';
      append_floats(b, nchw.data(), nchw.size());
    }
    b += "]}";
  } else if (a.output_kind == "vision") {
    b += "{\"vision\":[";
    bool first = true;
    for (const Matrix& m : *vision)
      for (std::size_t i = 0; i < m.rows; ++i) {
        if (!first) b += ',';
        first = false;
        append_floats(b, m.row(i), m.cols);
      }
    b += "]}";
  } else {
    b += "{\"tokens\":";
    append_ints(b, g->tokens);
    if (a.details) {
      b += ",\"finish_reason\":\"";
      b += finish_reason_name(g->finish);
      b += "\",\"prompt_tokens\":" + std::to_string(r.input_ids.size());
      b += ",\"prefill_ms\":";
      append_float(b, static_cast<float>(g->prefill_ms));
      b += ",\"decode_ms\":";
      append_float(b, static_cast<float>(g->decode_ms));
    }
    b += '}';
  }
  out.end_line();
}

// sc_logits: canvas rows of vocab finite numbers.
Matrix logit_rows(const nlohmann::json& v, std::string_view where) {
  if (!v.is_array() || v.empty()) throw input_error(where, "\"sc_logits\" must be a non-empty array of rows");
  Matrix m;
  m.rows = v.size();
  for (const auto& r : v) {
    if (!r.is_array() || r.empty() || (m.cols != 0 && r.size() != m.cols))
      throw input_error(where, "\"sc_logits\" must hold rows of numbers of one length (one row per canvas position)");
    m.cols = r.size();
    for (const auto& x : r) {
      if (!x.is_number()) throw input_error(where, "\"sc_logits\" holds " + io::describe_json(x));
      const double d = x.get<double>();
      if (!std::isfinite(d)) throw input_error(where, "\"sc_logits\" holds a value that is not finite");
      m.data.push_back(static_cast<float>(d));
    }
  }
  return m;
}

void run_canvas_logits(Engine& engine, const GenerateArgs& a) {
  LineReader in(a.input);
  OutputSink out(a.output);
  std::string line;
  while (in.next(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string w = "input line " + std::to_string(in.line_number());
    nlohmann::json j = parse_json_object(line, w);
    resolve_npy_fields(j, in, w);
    Matrix logits;
    try {
      check_fields(j, {"prompt_ids", "canvas_ids", "sc_logits"}, w);
      const std::vector<int32_t> prompt = get_int_array(j, "prompt_ids", w);
      const std::vector<int32_t> canvas = get_int_array(j, "canvas_ids", w);
      std::optional<Matrix> sc;
      if (has_key(j, "sc_logits")) sc = logit_rows(j.at("sc_logits"), w);
      logits = engine.canvas_logits(prompt, canvas, sc ? &*sc : nullptr);
    } catch (const Error& e) {
      throw input_error(w, e.what());
    }
    std::string& b = out.buffer();
    b += "{\"logits\":[";
    for (std::size_t i = 0; i < logits.rows; ++i) {
      if (i) b += ',';
      append_floats(b, logits.row(i), logits.cols);
    }
    b += "]}";
    out.end_line();
    out.flush();
  }
}

// One text in, its continuation streamed to the output as it is produced.
void run_prompt(Engine& engine, const GenerateArgs& a) {
  std::string text = *a.prompt;
  if (!a.raw) {
    text::ChatTemplate tmpl = text::ChatTemplate::from_folder(a.engine.model);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    messages.push_back({{"role", "user"}, {"content", *a.prompt}});
    text = tmpl.render(messages, true);
  }
  TokenizeOptions t;
  t.add_special_tokens = a.raw;  // a rendered template wrote its special tokens itself
  t.limit_length = false;
  GenerationRequest r;
  r.input_ids = engine.tokenize_with(text, t).ids;
  r.options = a.sampling;
  r.diffusion = a.diffusion;
  if (a.max_new_tokens_given) r.diffusion.max_new_tokens = a.sampling.max_new_tokens;
  OutputSink out(a.output);
  const std::vector<GenerationResult> results =
      engine.generate({r}, [&](std::size_t, int32_t, const std::string& piece) {
        out.buffer() += piece;
        out.flush();
      });
  out.buffer() += '\n';
  out.flush();
  if (a.details) {
    const GenerationResult& g = results.front();
    std::fprintf(stderr, "%zu prompt tokens, %zu new tokens (%s), first block / token after %.1f ms, then %.1f ms\n",
                 r.input_ids.size(), g.tokens.size(), finish_reason_name(g.finish), g.prefill_ms, g.decode_ms);
  }
}

void run_generate(const GenerateArgs& a) {
  auto engine = load_engine(a.engine);
  if (a.output_kind == "canvas-logits") return run_canvas_logits(*engine, a);
  if (a.prompt) {
    if (!engine->info().capabilities.generate) throw UsageError(a.engine.model + " is not a generating model");
    return run_prompt(*engine, a);
  }
  const ModelInfo& info = engine->info();
  if (!info.capabilities.generate) throw UsageError(a.engine.model + " is not a generating model");
  LineReader in(a.input);
  OutputSink out(a.output);
  std::vector<GenerationRequest> chunk;
  std::vector<std::string> where;
  const auto flush_chunk = [&]() {
    if (chunk.empty()) return;
    if (a.output_kind == "tokens") {
      const std::vector<GenerationResult> results = engine->generate(chunk);
      for (std::size_t i = 0; i < chunk.size(); ++i) write_result(a, chunk[i], &results[i], nullptr, 0, nullptr, out);
    } else if (a.output_kind == "logits") {
      const Matrix logits = engine->prompt_logits(chunk);
      for (std::size_t i = 0; i < chunk.size(); ++i) write_result(a, chunk[i], nullptr, &logits, i, nullptr, out);
    } else {
      for (std::size_t i = 0; i < chunk.size(); ++i) {
        if (chunk[i].images.empty())
          throw input_error(where[i], "--output-kind " + a.output_kind + " needs \"pixel_values\"");
        const std::vector<Matrix> rows =
            a.output_kind == "sam" ? engine->sam_features(chunk[i].images) : engine->vision_rows(chunk[i].images);
        write_result(a, chunk[i], nullptr, nullptr, 0, &rows, out);
      }
    }
    out.flush();
    chunk.clear();
    where.clear();
  };
  std::string line;
  while (in.next(line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string w = "input line " + std::to_string(in.line_number());
    nlohmann::json j = parse_json_object(line, w);
    resolve_npy_fields(j, in, w);
    try {
      chunk.push_back(parse_line(j, w, a, info));
      engine->check_generation_request(chunk.back());
    } catch (const Error& e) {
      throw input_error(w, e.what());
    }
    where.push_back(w);
    if (chunk.size() >= a.chunk) flush_chunk();
  }
  flush_chunk();
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text from JSON lines of token ids (and pixel_values + image_grid_thw for images)");
  add_engine_options(*cmd, a->engine);
  add_generation_engine_options(*cmd, a->engine);
  cmd->add_option("-i,--input", a->input, "JSONL input file, or - for stdin")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "JSONL output file, or - for stdout")->capture_default_str();
  cmd->add_option("--output-kind", a->output_kind,
                  "tokens: {\"tokens\": [...]} the new tokens; vision: {\"vision\": [[...]]} the vision tower's rows; "
                  "logits: {\"logits\": [...]} the prompt's last position; canvas-logits (block diffusion): "
                  "{\"logits\": [[...]]} one denoising forward of a line's canvas_ids after its prompt_ids; sam "
                  "(DeepSeek-OCR): {\"sam\": [[...] per view]} SAM's output after its down-sampling convolutions, NCHW, "
                  "the page's tiles then its global view. Any array field of a line may be {\"npy\": \"file.npy\"}")
      ->capture_default_str()
      ->check(CLI::IsMember({"tokens", "vision", "logits", "canvas-logits", "sam"}));
  cmd->add_option("--max-new-tokens", a->sampling.max_new_tokens, "New tokens at most (a line's max_new_tokens wins)")
      ->capture_default_str();
  cmd->add_option("--temperature", a->sampling.temperature, "0 = greedy; else sample at this temperature")
      ->capture_default_str();
  cmd->add_option("--top-k", a->sampling.top_k, "Sample among the k most likely tokens (0 = all)")->capture_default_str();
  cmd->add_option("--top-p", a->sampling.top_p, "Sample from the smallest set whose probability reaches p")
      ->capture_default_str();
  cmd->add_option("--seed", a->sampling.seed, "Seed of a request's draws")->capture_default_str();
  cmd->add_option("--repetition-penalty", a->sampling.repetition_penalty,
                  "Divide the logits of tokens already seen by this (transformers' repetition_penalty)")
      ->capture_default_str();
  cmd->add_option("--no-repeat-ngram", a->sampling.no_repeat_ngram,
                  "Anti-loop guard: ban a token that repeats an n-gram of this size (0 = off)")
      ->capture_default_str();
  cmd->add_option("--ngram-window", a->sampling.ngram_window,
                  "The guard looks at the last this many tokens (0 = the whole sequence)")
      ->capture_default_str();
  cmd->add_flag("--details", a->details, "Add finish_reason, prompt_tokens and timings to each output line");
  cmd->add_option("--prompt", a->prompt,
                  "Generate from this text (the folder's chat template around it unless --raw), streaming the output");
  cmd->add_flag("--raw", a->raw, "With --prompt: the text as the model's whole input, no chat template");
  // Block-diffusion models (DiffusionGemma): the folder's generation_config.json unless given.
  cmd->add_option("--max-denoising-steps", a->diffusion.max_denoising_steps,
                  "Block diffusion: denoising steps per canvas at most");
  cmd->add_option("--t-min", a->diffusion.t_min, "Block diffusion: the temperature at the last step");
  cmd->add_option("--t-max", a->diffusion.t_max, "Block diffusion: the temperature at the first step");
  cmd->add_option("--entropy-bound", a->diffusion.entropy_bound,
                  "Block diffusion: the entropy budget of the positions accepted per step");
  cmd->add_option("--stability-threshold", a->diffusion.stability_threshold,
                  "Block diffusion: argmax canvases that must repeat before a block may stop early");
  cmd->add_option("--confidence-threshold", a->diffusion.confidence_threshold,
                  "Block diffusion: the mean entropy under which a stable block stops early");
  cmd->add_flag("--no-early-stop", a->diffusion.no_early_stop, "Block diffusion: run every denoising step");
  CLI::Option* max_new = cmd->get_option("--max-new-tokens");
  return {cmd, [a, max_new]() {
            a->max_new_tokens_given = max_new->count() > 0;
            run_generate(*a);
          }};
}

}  // namespace il::cli
