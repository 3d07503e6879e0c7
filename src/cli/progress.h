// A one-line progress report on stderr for long inputs. It draws only when stderr is a terminal,
// so logs, pipes and tests never see control characters, and stdout stays pure JSONL.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace il::cli {

class Progress {
 public:
  // total_bytes == 0: the size is unknown (stdin) and only counts are shown.
  // `unit` names what items count ("lines", "pages").
  Progress(std::string label, std::uint64_t total_bytes, bool enabled = true, std::string unit = "lines");
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  void update(std::size_t items, std::uint64_t bytes_done);  // cheap; redraws at most ~10 times a second
  void finish();                                              // erases the line

 private:
  void draw(std::size_t items, std::uint64_t bytes_done);

  std::string label_;
  std::string unit_;
  std::uint64_t total_bytes_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace il::cli
