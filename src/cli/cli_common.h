// Pieces every subcommand shares: the error kinds that pick the exit status, the subcommand
// registration shape, and model loading with the checks a user should see before a long load.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "inferencelayer/engine.h"
#include "inferencelayer/types.h"

namespace CLI {
class App;
}

namespace il::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the engine or the system failed
inline constexpr int kExitUsage = 2;    // the command line or the input is wrong: the user can fix it

// Thrown for anything the user can fix: a bad option value, a missing file, a bad input line.
// main() turns it into exit status 2; every other exception becomes exit status 1.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "input line 3: <what>": the one shape of a per-line input error, so tools can grep for it.
[[nodiscard]] UsageError input_error(std::string_view where, std::string_view what);

// A registered subcommand: its CLI11 node and what to run when it was the one parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<void()> run;
};

Command add_embed_command(CLI::App& app);
Command add_rerank_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_bench_generate_command(CLI::App& app);
Command add_bench_diffusion_command(CLI::App& app);
Command add_ocr_command(CLI::App& app);

// Options every model-running subcommand takes.
struct EngineArgs {
  std::string model;
  std::size_t max_batch_tokens = 16384;
  std::size_t threads = 0;
  std::string device = "auto";
  std::string dtype = "auto";
  // Generating models (add_generation_engine_options).
  std::size_t kv_cache_tokens = 0;
  std::size_t kv_page_size = 64;
};
void add_generation_engine_options(CLI::App& cmd, EngineArgs& args);
void add_engine_options(CLI::App& cmd, EngineArgs& args);

// Refuses a missing folder as a usage error (the library would call it a load failure), then
// loads, and (with `notice`) prints the random-weights notice so nobody mistakes demo vectors
// for real ones.
std::unique_ptr<Engine> load_engine(const EngineArgs& args, bool notice = true);

// "1,4,16" → {1, 4, 16}: comma-separated positive integers (the bench commands' lists); anything
// else is a UsageError naming the option and the entry.
std::vector<std::size_t> parse_count_list(const std::string& s, const char* option);

// "mean" / "cls" / "last" (CLI11 transforms option strings through this map).
const std::map<std::string, PoolingMode>& pooling_names();

}  // namespace il::cli
