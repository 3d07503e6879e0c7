#include "cli/cli_common.h"

#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace il::cli {

UsageError input_error(std::string_view where, std::string_view what) {
  std::string msg(where);
  msg += ": ";
  msg += what;
  return UsageError(msg);
}

void add_engine_options(CLI::App& cmd, EngineArgs& args) {
  cmd.add_option("-m,--model", args.model, "Hugging Face model folder (config.json, *.safetensors, tokenizer.json)")
      ->required();
  cmd.add_option("--max-batch-tokens", args.max_batch_tokens,
                 "Token budget of one forward pass; also how many tokens are read ahead from the input")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--threads", args.threads, "Compute threads (0 = one per hardware thread)")
      ->capture_default_str();
  cmd.add_option("--device", args.device,
                 "auto (a CUDA GPU when present, else the CPU), cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd.add_option("--dtype", args.dtype,
                 "Compute precision: f32, f16 or bf16 (f16/bf16 on CUDA only), or auto (the device's default)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}));
}

void add_generation_engine_options(CLI::App& cmd, EngineArgs& args) {
  cmd.add_option("--kv-cache-tokens", args.kv_cache_tokens,
                 "KV cache budget in tokens, shared by the sequences in flight (0 = 8192 on the CPU, 131072 on a GPU)")
      ->capture_default_str();
  cmd.add_option("--kv-page-size", args.kv_page_size, "Tokens per KV cache page")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
}

std::unique_ptr<Engine> load_engine(const EngineArgs& args, bool notice) {
  const std::filesystem::path dir(args.model);
  if (!std::filesystem::is_directory(dir))
    throw UsageError("model folder " + args.model + " does not exist or is not a folder");
  if (!std::filesystem::exists(dir / "config.json"))
    throw UsageError("model folder " + args.model + " has no config.json");
  EngineOptions options;
  options.max_batch_tokens = args.max_batch_tokens;
  options.threads = args.threads;
  options.device = args.device;
  options.dtype = args.dtype;
  options.kv_cache_tokens = args.kv_cache_tokens;
  options.kv_page_size = args.kv_page_size;
  auto engine = Engine::load(dir, options);
  if (notice && engine->info().random_weights)
    std::fprintf(stderr, "note: %s holds random weights (a demo/test model): its vectors carry no meaning\n",
                 args.model.c_str());
  return engine;
}

const std::map<std::string, PoolingMode>& pooling_names() {
  static const std::map<std::string, PoolingMode> names = {
      {"mean", PoolingMode::kMean}, {"cls", PoolingMode::kCls}, {"last", PoolingMode::kLastToken}};
  return names;
}

std::vector<std::size_t> parse_count_list(const std::string& s, const char* option) {
  std::vector<std::size_t> out;
  std::size_t at = 0;
  while (at <= s.size()) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, comma - at);
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1)
      throw UsageError(std::string(option) + ": '" + item + "' is not a positive integer");
    out.push_back(static_cast<std::size_t>(v));
    at = comma + 1;
  }
  return out;
}

}  // namespace il::cli
