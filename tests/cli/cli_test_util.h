// Helpers for the CLI tests: run the binary through the shell, scratch folders, fixture access.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace il::cli_test {

struct RunResult {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string out;
  std::string err;
  std::vector<std::string> lines() const;  // stdout split on '\n', no trailing empty line
};

// Single-quotes one argument for /bin/sh.
std::string quote(const std::string& arg);

// Runs `inferencelayer <args>` (args already quoted / joined), optionally with `stdin_file` on
// stdin, or with the shell text `pipe_from` piped in ("cat file |"), capturing both streams.
RunResult run_cli(const std::string& args, const std::string& stdin_file = "", const std::string& pipe_from = "");
std::string cli_args(const std::vector<std::string>& args);  // quote + join

// A folder under the system temp dir, removed when the object goes away.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes lines (each followed by '\n') and returns the file's path.
  std::string write(const std::string& name, const std::vector<std::string>& lines) const;

 private:
  std::filesystem::path path_;
};

// Runs `inferencelayer <args>` with `lines` written to a file of `dir` on stdin (no lines:
// /dev/null). A run that blocks is killed after 30 s, status 124, instead of hanging the suite.
RunResult run_cli_bounded(const std::vector<std::string>& args, const ScratchDir& dir,
                          const std::vector<std::string>& lines = {});

// Every string of `parts` occurs in `text`; a failure names the missing one.
void expect_contains(const std::string& text, const std::vector<std::string>& parts);

// A copy of fixture `name` in a fresh folder under `dir`, for a test to edit.
std::filesystem::path copy_fixture(const std::string& name, const ScratchDir& dir);

// Reads, edits and rewrites a JSON file of such a copy.
void edit_json_file(const std::filesystem::path& path, const std::function<void(nlohmann::json&)>& edit);

// tests/fixtures/<name>; a missing folder fails the calling test (fixtures are committed).
std::filesystem::path fixture_dir(const std::string& name);
nlohmann::json load_expected(const std::string& name);
std::string fixture_path(const std::string& name);  // fixture_dir(name).string()

nlohmann::json parse_line(const std::string& line);  // fails the test with the line on error
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);  // inf on size mismatch

inline constexpr double kTolerance = 1e-4;  // the oracle gate: max-abs on pooled vectors and scores

// A minimal PDF of our own: one page per text, each with a filled rectangle and the text.
std::string tiny_pdf(const std::vector<std::string>& texts);
// A PDF file of these objects (object i + 1 is objects[i]; object 1 the catalog): the header,
// the cross-reference table with each object's offset, and the trailer.
std::string pdf_from_objects(const std::vector<std::string>& objects);

}  // namespace il::cli_test
