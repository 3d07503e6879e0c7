// inferencelayer: the command line. Each subcommand lives in its own cmd_*.cc; this file parses,
// dispatches and turns every failure into one "inferencelayer: error: ..." line on stderr with
// exit status 2 (the user can fix the command line or the input), 3 (every output written, some
// of them NaN or infinite: cli/non_finite.h) or 1 (anything else).
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/non_finite.h"
#include "core/error.h"

namespace {

void print_error(const char* what) { std::fprintf(stderr, "inferencelayer: error: %s\n", what); }

}  // namespace

int main(int argc, char** argv) {
  using namespace il::cli;
  CLI::App app{
      "inferencelayer: embeddings, reranking and tokenization with Hugging Face model folders.\n"
      "Machine-readable commands read and write JSONL (one JSON object per line)."};
  app.name("inferencelayer");
  app.set_version_flag("--version", "inferencelayer 0.1.0");
  app.require_subcommand(1, 1);
  app.fallthrough(false);

  const std::vector<Command> commands = {add_embed_command(app), add_rerank_command(app),
                                         add_tokenize_command(app), add_info_command(app),
                                         add_bench_command(app), add_serve_command(app),
                                         add_generate_command(app), add_bench_generate_command(app), add_bench_diffusion_command(app),
                                         add_ocr_command(app)};
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // Help and --version are "errors" with exit code 0 in CLI11; let it print them.
      if (e.get_exit_code() == 0) return app.exit(e);
      print_error(e.what());
      std::fprintf(stderr, "run 'inferencelayer --help' or 'inferencelayer COMMAND --help' for usage\n");
      return kExitUsage;
    }
    for (const Command& c : commands)
      if (c.app->parsed()) c.run();
    // A full disk or a closed pipe must not look like success.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) throw std::runtime_error("cannot write stdout");
    return kExitOk;
  } catch (const NonFiniteOutputs& e) {
    print_error(e.what());
    return kExitNonFinite;
  } catch (const UsageError& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const il::Error& e) {
    print_error(e.what());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    print_error("out of memory (try a smaller --max-batch-tokens)");
    return kExitFailure;
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitFailure;
  }
}
