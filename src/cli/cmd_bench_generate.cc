// `inferencelayer bench-generate`: generation speed of a multimodal generating model (GLM-OCR,
// DeepSeek-OCR) with random weights from a config alone: P pages of a given patch grid, or for
// DeepSeek-OCR of given views (random pixel rows, the prompt the model's processor builds around
// them), each generating exactly N new tokens (no stop
// id, so random weights cannot stop early), all submitted together and decoded in flight. Prints
// per point: the mean time to first token, the aggregate decode rate, the wall time and pages per
// minute. bench/torch_glm_ocr_bench.py times transformers' generate the same way. Timed numbers
// belong in docs/perf.md, never in tests.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/error.h"
#include "io/json_util.h"
#include "io/regular_file.h"

namespace il::cli {
namespace {

struct BenchGenerateArgs {
  std::string config;
  std::string device = "cuda";
  std::string dtype = "bf16";
  std::string grid = "72x100";  // patch rows x columns of one page (1000 x 1400 pixels at patch 14)
  std::string views = "64";     // DeepSeek-OCR: view sides in patches, tiles first (64: a 1024-pixel page)
  std::string pages = "1,64";
  std::size_t new_tokens = 128;
  std::size_t text_tokens = 0;  // > 0: text-only prompts of this length (no page image)
  std::string image;            // a page image file: timed from its bytes (decode + preprocess per page)
  std::size_t threads = 0;
  std::size_t max_batch_tokens = 16384;
  std::size_t kv_cache_tokens = 0;
  std::size_t prefill_tokens_per_step = 0;
  int warmup = 1;
  bool json = false;
};

void run(const BenchGenerateArgs& a) {
  const std::vector<std::size_t> page_list = parse_count_list(a.pages, "--pages");  // before loading
  if (a.config.empty()) throw UsageError("--config is required");
  const nlohmann::json cfg = io::read_json_file(a.config);
  const auto& vc = cfg.at("vision_config");
  // DeepSeek-OCR pages are square views (SAM patches), not one patch grid.
  const bool view_pages = vc.contains("sam_config") || cfg.value("model_type", "") == "deepseek_vl_v2";
  const int patch = view_pages ? vc.value("sam_config", nlohmann::json::object()).value("patch_size", 16)
                               : vc.value("patch_size", 14);
  const int temporal = view_pages ? 1 : vc.value("temporal_patch_size", 2),
            merge = view_pages ? 1 : vc.value("spatial_merge_size", 2), channels = vc.value("in_channels", 3);
  std::vector<std::uint8_t> image_bytes;
  std::string grid = view_pages ? "views " + a.views : a.grid;
  if (!a.image.empty()) {
    const std::string b = io::read_regular_file(a.image);
    image_bytes.assign(b.begin(), b.end());
  }
  std::size_t gh = 0, gw = 0;
  std::vector<int> sides;
  if (view_pages) {
    for (std::size_t s : parse_count_list(a.views, "--views")) sides.push_back(static_cast<int>(s));
  } else {
    const std::size_t x = grid.find('x');
    if (x == std::string::npos) throw UsageError("--grid: expected ROWSxCOLS");
    gh = parse_count_list(grid.substr(0, x), "--grid")[0];
    gw = parse_count_list(grid.substr(x + 1), "--grid")[0];
    if (gh % static_cast<std::size_t>(merge) || gw % static_cast<std::size_t>(merge))
      throw UsageError("--grid: rows and columns must be multiples of the merge size");
  }
  EngineOptions o;
  o.device = a.device;
  o.dtype = a.dtype;
  o.threads = a.threads;
  o.max_batch_tokens = a.max_batch_tokens;
  o.kv_cache_tokens = a.kv_cache_tokens;
  o.prefill_tokens_per_step = a.prefill_tokens_per_step;
  auto engine = Engine::load_random(a.config, "", o);

  // A page image: its grid (views) is what the release processor makes of it (the timed runs
  // preprocess it again for every page).
  PatchImage probe;
  if (!image_bytes.empty()) {
    probe = engine->load_prompt_image(image_bytes, a.image);
    gh = static_cast<std::size_t>(probe.grid_thw[1]);
    gw = static_cast<std::size_t>(probe.grid_thw[2]);
    sides = probe.view_sides;
    grid = view_pages ? "views " : std::to_string(gh) + "x" + std::to_string(gw);
    if (view_pages)
      for (std::size_t i = 0; i < sides.size(); ++i) grid += (i ? "," : "") + std::to_string(sides[i]);
  }
  // One page of random normalised pixel rows.
  const std::size_t patch_dim = static_cast<std::size_t>(channels * temporal * patch * patch);
  PatchImage page;
  page.patch_dim = patch_dim;
  std::size_t patches = gh * gw;
  if (view_pages) {
    page.view_sides = sides;
    // DeepSeek-OCR v1 lays its tiles out on a grid: here one row of them.
    if (sides.size() > 1) page.tile_grid = {static_cast<int>(sides.size() - 1), 1};
    patches = 0;
    for (int s : sides) patches += static_cast<std::size_t>(s) * static_cast<std::size_t>(s);
    page.grid_thw = {1, sides.back(), sides.back()};
  } else {
    page.grid_thw = {1, static_cast<int>(gh), static_cast<int>(gw)};
  }
  page.rows.resize(patches * patch_dim);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.79f, 2.15f);  // CLIP-normalised pixel range
  for (float& v : page.rows) v = u(rng);
  if (!image_bytes.empty()) page = probe;
  GenerationRequest r;
  if (view_pages) {
    // DeepSeek-OCR's prompt: <bos> <image>\n<|grounding|>Convert the document to markdown. with
    // stand-in text ids; the image token expanded to the page's rows as the processor does.
    const int32_t image_token = cfg.value("image_token_id", 128815);
    const nlohmann::json& text = cfg.contains("text_config") ? cfg["text_config"]
                                 : cfg.contains("language_config") ? cfg["language_config"] : cfg;
    const int32_t vocab = text.value("vocab_size", 129280);
    std::vector<int32_t> ids = {0, image_token};
    for (int32_t id : {201, 128820, 35644, 254, 3640, 276, 37759, 16}) ids.push_back(id % vocab);
    r.input_ids = engine->expand_image_placeholders(ids, {page});
  } else {
    // GLM-OCR: [gMASK]<sop><|user|>\n <image run> "Text Recognition:"<|assistant|>\n with stand-in
    // text ids.
    const int image_token = cfg.value("image_token_id", 59280), start = cfg.value("image_start_token_id", 59256),
              end = cfg.value("image_end_token_id", 59257);
    r.input_ids = {59248, 59250, 59253, 198, start};
    r.input_ids.insert(r.input_ids.end(), gh * gw / static_cast<std::size_t>(merge * merge), image_token);
    r.input_ids.insert(r.input_ids.end(), {end, 1178, 47473, 25, 59254, 198});
  }
  r.images.push_back(page);
  if (a.text_tokens > 0) {
    // Text alone (what bench/load_generate.py sends the server): stand-in ids below the
    // special tokens, the same sequence as the load client's.
    r.images.clear();
    r.input_ids.clear();
    for (std::size_t i = 0; i < a.text_tokens; ++i) r.input_ids.push_back(static_cast<int32_t>(100 + (i * 7919) % 50000));
  }
  r.options.max_new_tokens = a.new_tokens;
  r.options.stop_ids = std::vector<int32_t>{};

  // From image bytes: every page decoded and preprocessed on all hardware threads, then generated.
  double prepare_ms = 0.0;
  const auto prepare = [&](std::size_t pages) {
    std::vector<GenerationRequest> requests(pages, r);
    if (image_bytes.empty()) return requests;
    const auto t = std::chrono::steady_clock::now();
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    const std::size_t n = std::max(1u, std::thread::hardware_concurrency());
    for (std::size_t w = 0; w < std::min(n, pages); ++w)
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < pages; i = next++)
          requests[i].images[0] = engine->load_prompt_image(image_bytes, a.image);
      });
    for (auto& w : workers) w.join();
    prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    return requests;
  };
  for (std::size_t pages : page_list) {
    for (int w = 0; w < a.warmup; ++w) (void)engine->generate(prepare(pages));
    // The vision tower alone over the point's pages (its rows copied back to the host at the end,
    // as transformers' get_image_features returns them), per page.
    double vision_ms = 0.0;
    if (!r.images.empty()) {
      const std::vector<PatchImage> batch(pages, r.images[0]);
      const auto v0 = std::chrono::steady_clock::now();
      (void)engine->vision_rows(batch);
      vision_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - v0).count() /
                  static_cast<double>(pages);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<GenerationResult> res = engine->generate(prepare(pages));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double ttft = 0, decode = 0;
    std::size_t tokens = 0;
    for (const GenerationResult& g : res) {
      ttft += g.prefill_ms / static_cast<double>(pages);
      decode = std::max(decode, g.decode_ms);
      tokens += g.tokens.size();
    }
    // Decode rate: the tokens after each first one, over the longest first-to-last span.
    const double rate = decode > 0 ? static_cast<double>(tokens - pages) / (decode / 1000.0) : 0.0;
    if (a.json) {
      nlohmann::ordered_json j;
      j["engine"] = "inferencelayer";
      j["device"] = engine->info().backend;
      j["dtype"] = engine->info().compute_dtype;
      j["pages"] = pages;
      j["grid"] = a.text_tokens > 0 ? std::string("none") : grid;
      if (!image_bytes.empty()) {
        j["image"] = a.image;
        j["prepare_ms"] = prepare_ms;
      }
      if (!r.images.empty()) j["vision_ms_per_page"] = vision_ms;
      j["prompt_tokens"] = r.input_ids.size();
      j["new_tokens"] = a.new_tokens;
      j["ttft_ms_mean"] = ttft;
      j["decode_tokens_per_s"] = rate;
      j["wall_s"] = wall;
      j["pages_per_min"] = static_cast<double>(pages) / wall * 60.0;
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%zu page(s) of %s patches (%zu prompt tokens), %zu new tokens each: time to first token %.1f ms "
                  "(mean), decode %.0f tokens/s, wall %.2f s, %.1f pages/min\n",
                  pages, grid.c_str(), r.input_ids.size(), a.new_tokens, ttft, rate, wall,
                  static_cast<double>(pages) / wall * 60.0);
    }
    std::fflush(stdout);
  }
}

}  // namespace

Command add_bench_generate_command(CLI::App& app) {
  auto a = std::make_shared<BenchGenerateArgs>();
  CLI::App* cmd = app.add_subcommand("bench-generate",
                                     "Time generation (time to first token, decode tokens/s) with random weights");
  cmd->add_option("--config", a->config, "config.json of a generating model (random weights)")->required();
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "f32, f16, bf16 (CUDA) or auto")->capture_default_str();
  cmd->add_option("--grid", a->grid, "A page's patch grid, ROWSxCOLS")->capture_default_str();
  cmd->add_option("--views", a->views,
                  "DeepSeek-OCR: a page's view sides in patches, tiles first, then the global view "
                  "(64: one 1024-pixel view; 48,48,64: two 768-pixel tiles and the global view)")
      ->capture_default_str();
  cmd->add_option("--pages", a->pages, "Comma-separated page counts in flight")->capture_default_str();
  cmd->add_option("--new-tokens", a->new_tokens, "New tokens per page (forced: no stop id)")->capture_default_str();
  cmd->add_option("--image", a->image,
                  "A page image (PNG, JPEG, WebP): every timed run decodes and preprocesses it once per page, so "
                  "wall time and pages/min are end to end from the file's bytes")
      ->check(CLI::ExistingFile);
  cmd->add_option("--text-tokens", a->text_tokens,
                  "Text-only prompts of this many tokens instead of pages (the load client's prompts)")
      ->capture_default_str();
  cmd->add_option("--threads", a->threads, "CPU threads (0 = one per hardware thread)")->capture_default_str();
  cmd->add_option("--max-batch-tokens", a->max_batch_tokens, "Token budget of one forward")->capture_default_str();
  cmd->add_option("--kv-cache-tokens", a->kv_cache_tokens, "KV cache budget (0 = the device default)")
      ->capture_default_str();
  cmd->add_option("--prefill-tokens-per-step", a->prefill_tokens_per_step,
                  "Prompt tokens + image patches a step prefills while others decode, longer prompts in chunks (0 = no bound, as "
                  "the ocr command and serve by default)")
      ->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "Untimed runs per point")->capture_default_str();
  cmd->add_flag("--json", a->json, "One JSON line per point");
  return {cmd, [a]() { run(*a); }};
}

}  // namespace il::cli
