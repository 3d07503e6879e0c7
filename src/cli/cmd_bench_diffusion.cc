// `inferencelayer bench-diffusion`: the speed of a block-diffusion model (DiffusionGemma) with
// random weights from a config alone. Per point: one canvas forward after a prompt (the prompt
// encoded, one denoising forward, its logits read back), and whole generations of one block per
// request at a fixed number of denoising steps (no early stop) with B requests denoised
// together: tokens per second and the step time. bench/diffusion_gemma_torch.py times
// transformers on the same config. Timed numbers belong in docs/perf.md, never in tests.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/error.h"
#include "io/json_util.h"

namespace il::cli {
namespace {

struct BenchDiffusionArgs {
  std::string config;
  std::string device = "cuda";
  std::string dtype = "bf16";
  std::size_t prompt_tokens = 64;
  std::string steps = "48,24";
  std::string batches = "1,4,16";
  std::size_t forwards = 3;
  std::size_t threads = 0;
  std::size_t max_batch_tokens = 4096;
  std::size_t kv_cache_tokens = 0;
  bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run(const BenchDiffusionArgs& a) {
  // The lists first: a bad entry is refused before minutes of loading.
  const std::vector<std::size_t> step_list = parse_count_list(a.steps, "--steps");
  const std::vector<std::size_t> batch_list = parse_count_list(a.batches, "--batches");
  const nlohmann::json cfg = io::read_json_file(a.config);
  const std::size_t canvas = cfg.value("canvas_length", 256);
  const int vocab = cfg.at("text_config").value("vocab_size", 262144);
  EngineOptions o;
  o.device = a.device;
  o.dtype = a.dtype;
  o.threads = a.threads;
  o.max_batch_tokens = a.max_batch_tokens;
  o.kv_cache_tokens = a.kv_cache_tokens;
  const auto t_load = std::chrono::steady_clock::now();
  auto engine = Engine::load_random(a.config, "", o);
  std::fprintf(stderr, "bench-diffusion: %s on %s (%s), loaded in %.1f s\n", a.config.c_str(),
               engine->info().backend.c_str(), engine->info().compute_dtype.c_str(), seconds_since(t_load));
  std::vector<int32_t> prompt(a.prompt_tokens), ids(canvas);
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(100 + (i * 7919) % (vocab - 100));
  for (std::size_t i = 0; i < canvas; ++i) ids[i] = static_cast<int32_t>(50 + (i * 104729) % (vocab - 50));
  // One forward (the prompt encoded into a fresh cache, one canvas, the logits back).
  (void)engine->canvas_logits(prompt, ids, nullptr);
  double best = 1e30, total = 0;
  for (std::size_t i = 0; i < a.forwards; ++i) {
    const auto t = std::chrono::steady_clock::now();
    (void)engine->canvas_logits(prompt, ids, nullptr);
    const double s = seconds_since(t);
    best = std::min(best, s);
    total += s;
  }
  if (a.json) {
    nlohmann::json j{{"point", "forward"}, {"prompt_tokens", prompt.size()}, {"canvas", canvas},
                     {"best_ms", best * 1e3}, {"mean_ms", total / static_cast<double>(a.forwards) * 1e3}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("forward: prompt %zu + canvas %zu, best %.2f ms, mean %.2f ms (logits read back)\n", prompt.size(),
                canvas, best * 1e3, total / static_cast<double>(a.forwards) * 1e3);
  }
  std::fflush(stdout);
  for (const std::size_t steps : step_list)
    for (const std::size_t batch : batch_list) {
      std::vector<GenerationRequest> rs(batch);
      for (std::size_t b = 0; b < batch; ++b) {
        rs[b].input_ids = prompt;
        rs[b].input_ids[0] = static_cast<int32_t>((200 + b) % static_cast<std::size_t>(vocab));
        rs[b].options.seed = b + 1;
        rs[b].options.stop_ids = std::vector<int32_t>{};  // random weights: no early end
        rs[b].diffusion.max_new_tokens = canvas;           // one block
        rs[b].diffusion.max_denoising_steps = static_cast<int>(steps);
        rs[b].diffusion.no_early_stop = true;
      }
      const auto t = std::chrono::steady_clock::now();
      const std::vector<GenerationResult> out = engine->generate(rs);
      const double wall = seconds_since(t);
      std::size_t tokens = 0;
      for (const GenerationResult& g : out) tokens += g.tokens.size();
      const double rate = static_cast<double>(tokens) / wall, step_ms = wall / static_cast<double>(steps) * 1e3;
      if (a.json) {
        nlohmann::json j{{"point", "generate"}, {"steps", steps}, {"batch", batch}, {"tokens", tokens},
                         {"wall_s", wall}, {"tokens_per_s", rate}, {"step_ms", step_ms}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("generate: %zu steps, batch %zu: %zu tokens in %.2f s, %.1f tokens/s, %.2f ms a step\n", steps,
                    batch, tokens, wall, rate, step_ms);
      }
      std::fflush(stdout);
    }
}

}  // namespace

Command add_bench_diffusion_command(CLI::App& app) {
  auto a = std::make_shared<BenchDiffusionArgs>();
  CLI::App* cmd = app.add_subcommand("bench-diffusion",
                                     "Block-diffusion speed (DiffusionGemma) with random weights from a config alone");
  cmd->add_option("--config", a->config, "config.json of a block-diffusion model (random weights)")->required();
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "f32, f16, bf16 (CUDA) or auto")->capture_default_str();
  cmd->add_option("--prompt-tokens", a->prompt_tokens, "Prompt length")->capture_default_str();
  cmd->add_option("--steps", a->steps, "Comma-separated denoising steps per canvas (each run to the end)")
      ->capture_default_str();
  cmd->add_option("--batches", a->batches, "Comma-separated requests denoised together")->capture_default_str();
  cmd->add_option("--forwards", a->forwards, "Timed single forwards")->capture_default_str();
  cmd->add_option("--threads", a->threads, "CPU threads (0 = one per hardware thread)")->capture_default_str();
  cmd->add_option("--max-batch-tokens", a->max_batch_tokens, "Token budget of one forward")->capture_default_str();
  cmd->add_option("--kv-cache-tokens", a->kv_cache_tokens, "KV cache budget (0 = the device default)")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "One JSON line per point");
  return {cmd, [a]() { run(*a); }};
}

}  // namespace il::cli
