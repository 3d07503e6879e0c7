#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace il::cli {

Progress::Progress(std::string label, std::uint64_t total_bytes, bool enabled, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_bytes_(total_bytes),
      active_(enabled && isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { finish(); }

void Progress::update(std::size_t items, std::uint64_t bytes_done) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  // The first half second stays quiet: short runs should not flash a bar.
  if (now - start_ < std::chrono::milliseconds(500) || now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  draw(items, bytes_done);
}

void Progress::draw(std::size_t items, std::uint64_t bytes_done) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(items) / secs : 0.0;
  if (total_bytes_ > 0) {
    const double frac = std::min(1.0, static_cast<double>(bytes_done) / static_cast<double>(total_bytes_));
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r\033[K%s [%s] %3.0f%%  %zu %s  %.1f/s", label_.c_str(), bar.c_str(),
                 frac * 100.0, items, unit_.c_str(), rate);
  } else {
    std::fprintf(stderr, "\r\033[K%s %zu %s  %.1f/s", label_.c_str(), items, unit_.c_str(), rate);
  }
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
  active_ = false;
}

}  // namespace il::cli
