// Outputs holding NaN or an infinity (overflowing weights, an f16 overflow): JSON has no number
// for them, so they are written as null, which a reader could take for a missing value. Every
// such output is named on stderr and the run ends with exit status 3.
//
// Warn and go on rather than stop: one output line per input is the contract of embed and
// rerank, and a NaN usually comes from the model rather than from one input line, so stopping at
// the first would leave a long run undone for nothing. The status tells a script that the output,
// though complete, is not all usable.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace il::cli {

inline constexpr int kExitNonFinite = 3;

// Thrown once every output is written; main() prints it as the error line and exits with
// kExitNonFinite.
class NonFiniteOutputs : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The footer line the subcommands' --help shows.
inline constexpr const char* kNonFiniteHelp =
    "An output holding NaN or infinite values is still written (null in JSONL), a warning on\n"
    "stderr names its input, and the run ends with exit status 3 once every line is written.";

class NonFiniteReport {
 public:
  // `written_as`: how the output shows such a value ("null", "nan").
  explicit NonFiniteReport(std::string written_as) : written_as_(std::move(written_as)) {}

  // Checks one output (n floats) of the input called `where` ("input line 3"); warns when any
  // value is not finite (the first few outputs by name, then a count).
  void check(const float* values, std::size_t n, std::string_view where);

  // After all `outputs` are written: throws NonFiniteOutputs when any was reported.
  void finish(std::size_t outputs) const;

 private:
  std::string written_as_;
  std::size_t count_ = 0;
};

}  // namespace il::cli
