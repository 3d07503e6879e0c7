#include "server_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include <gtest/gtest.h>

namespace il::server_test {
namespace {

// Reads stdout until the first line or the deadline.
std::string first_line(int fd, std::chrono::seconds limit) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char c;
    const ssize_t n = read(fd, &c, 1);
    if (n <= 0) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

int wait_exit(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

}  // namespace

ServerProcess::ServerProcess(const std::string& fixture, const std::vector<std::string>& extra,
                             const std::vector<std::string>& env) {
  std::vector<std::string> args = {IL_CLI_PATH, "serve", "--port", "0", "--threads", "1", "--tokenization-workers", "2"};
  if (!fixture.empty()) {
    args.push_back("--model");
    args.push_back(fixture_path(fixture));
  }
  args.insert(args.end(), extra.begin(), extra.end());
  int out[2];
  if (pipe(out) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  const std::string line = first_line(out[0], std::chrono::seconds(30));
  close(out[0]);  // later stdout writes would fail; the server writes only this line there
  const std::string prefix = "listening on http://127.0.0.1:";
  if (line.rfind(prefix, 0) != 0) {
    ADD_FAILURE() << "the server did not print its address; first stdout line: '" << line << "'";
    return;
  }
  port_ = std::stoi(line.substr(prefix.size()));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

httplib::Client ServerProcess::client() const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(60, 0);
  c.set_keep_alive(true);
  return c;
}

int ServerProcess::terminate() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const int status = wait_exit(pid_, std::chrono::seconds(30));
  if (status != -1) pid_ = -1;
  return status;
}

httplib::Result post(httplib::Client& c, const std::string& path, const json& body, const httplib::Headers& headers) {
  return c.Post(path, headers, body.dump(), "application/json");
}

httplib::Result post_raw(httplib::Client& c, const std::string& path, const std::string& body) {
  return c.Post(path, body, "application/json");
}

json body_of(const httplib::Result& r) {
  if (!r) {
    ADD_FAILURE() << "no answer: " << httplib::to_string(r.error());
    return nullptr;
  }
  try {
    return json::parse(r->body);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "status " << r->status << ", body is not JSON: " << r->body.substr(0, 300);
    return nullptr;
  }
}

void expect_error(const httplib::Result& r, int status, const std::string& type) {
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, status) << r->body;
  const json j = body_of(r);
  ASSERT_TRUE(j.is_object()) << r->body;
  ASSERT_TRUE(j.contains("error") && j["error"].is_string()) << r->body;
  EXPECT_FALSE(j["error"].get<std::string>().empty());
  EXPECT_EQ(j.value("error_type", ""), type) << r->body;
}

std::vector<std::vector<float>> cli_embeddings(const std::string& fixture, const std::vector<std::string>& texts,
                                               const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"embed", "--model", fixture_path(fixture), "--no-progress"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), texts.begin(), texts.end());
  const auto r = cli_test::run_cli(cli_test::cli_args(args));
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::vector<float>> v;
  for (const auto& line : r.lines()) v.push_back(cli_test::parse_line(line)["embedding"].get<std::vector<float>>());
  EXPECT_EQ(v.size(), texts.size()) << r.err;
  return v;
}

std::vector<float> cli_scores(const std::string& fixture, const std::string& query,
                              const std::vector<std::string>& docs) {
  cli_test::ScratchDir tmp;
  std::vector<std::string> lines;
  for (const auto& d : docs) lines.push_back(json{{"query", query}, {"document", d}}.dump());
  const std::string file = tmp.write("pairs.jsonl", lines);
  const auto r = cli_test::run_cli(cli_test::cli_args({"rerank", "--model", fixture_path(fixture), "--no-progress",
                                                       "--input", file}));
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<float> v;
  for (const auto& line : r.lines()) {
    const json j = cli_test::parse_line(line);
    v.push_back(j.contains("score") ? j["score"].get<float>() : j["scores"][0].get<float>());
  }
  EXPECT_EQ(v.size(), docs.size()) << r.err;
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  return cli_test::max_abs_diff(a, b);
}

}  // namespace il::server_test
