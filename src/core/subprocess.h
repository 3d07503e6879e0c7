// Runs a helper program (no shell: arguments are passed as they are) and captures what it
// writes, with limits: the PDF rasteriser of the ocr command runs this way, so its licence stays
// its own and a crash or hang in it cannot take the engine down.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace il {

struct SubprocessLimits {
  std::size_t max_stdout = 256u << 20;  // more is an error (the child is killed)
  std::chrono::milliseconds timeout{120'000};
};

struct SubprocessResult {
  int exit_code = -1;  // the child's exit status; 128 + signal when a signal ended it
  std::string out;     // its standard output
  std::string err;     // the first 64 KiB of its standard error
};

// Runs argv[0] (looked up on PATH) with argv. Throws il::Error when it cannot be started (naming
// the program and saying how to install it when `install_hint` is given), runs past the
// timeout, or writes more than max_stdout.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessLimits& limits = {},
                                const std::string& install_hint = "");

}  // namespace il
