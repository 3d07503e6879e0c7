#include "server_test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <strings.h>
#include <limits>
#include <fstream>
#include <iterator>
#include <thread>

#include <gtest/gtest.h>

#include "core/base64.h"

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

int wait_for_exit(pid_t pid, std::chrono::seconds limit) {
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
  const int status = wait_for_exit(pid_, std::chrono::seconds(30));
  if (status != -1) pid_ = -1;
  return status;
}

int ServerProcess::wait_exit() {
  if (pid_ <= 0) return -1;
  const int status = wait_for_exit(pid_, std::chrono::seconds(30));
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

RawConnection::RawConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

bool RawConnection::send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

// The length of the first whole response at the start of `s`, or 0 when it is not all there.
std::size_t response_length(const std::string& s) {
  const auto head_end = s.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  const std::size_t body = head_end + 4;
  const std::string head = s.substr(0, head_end);
  const std::string length = header_of(head + "\r\n", "Content-Length");
  if (!length.empty()) {
    const std::size_t n = std::stoul(length);
    return s.size() >= body + n ? body + n : 0;
  }
  if (header_of(head + "\r\n", "Transfer-Encoding") == "chunked") {
    std::size_t at = body;
    for (;;) {
      const auto eol = s.find("\r\n", at);
      if (eol == std::string::npos) return 0;
      const std::size_t n = std::stoul(s.substr(at, eol - at), nullptr, 16);
      at = eol + 2 + n + 2;
      if (at > s.size()) return 0;
      if (n == 0) return at;
    }
  }
  return body;  // no body (or until close, which these tests do not use)
}

}  // namespace

std::string RawConnection::read_response(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (const std::size_t n = response_length(pending_)) {
      std::string r = pending_.substr(0, n);
      pending_.erase(0, n);
      return r;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {};
    pollfd p{fd_, POLLIN, static_cast<short>(0)};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return {};
    pending_.append(buf, static_cast<std::size_t>(n));
  }
}

bool RawConnection::closed_within(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

std::string header_of(const std::string& response, const std::string& name) {
  std::size_t at = response.find("\r\n");
  while (at != std::string::npos) {
    const std::size_t start = at + 2;
    const std::size_t end = response.find("\r\n", start);
    if (end == std::string::npos || end == start) break;
    const std::string line = response.substr(start, end - start);
    const auto colon = line.find(':');
    if (colon != std::string::npos && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0 &&
        colon == name.size()) {
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(' '));
      return v;
    }
    at = end;
  }
  return {};
}

std::string body_text(const std::string& response) {
  const auto head_end = response.find("\r\n\r\n");
  if (head_end == std::string::npos) return {};
  std::string body = response.substr(head_end + 4);
  if (header_of(response, "Transfer-Encoding") != "chunked") return body;
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const auto eol = body.find("\r\n", at);
    if (eol == std::string::npos) return out;
    const std::size_t n = std::stoul(body.substr(at, eol - at), nullptr, 16);
    if (n == 0) return out;
    out += body.substr(eol + 2, n);
    at = eol + 2 + n + 2;
  }
}

Exit run_with_deadline(const std::vector<std::string>& args, std::chrono::seconds limit) {
  Exit e;
  int err[2];
  if (pipe(err) != 0) return e;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    close(err[0]);
    close(err[1]);
    std::vector<std::string> all = {IL_CLI_PATH};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(err[1]);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    char buf[4096];
    ssize_t n;
    while ((n = read(err[0], buf, sizeof buf)) > 0) e.err.append(buf, static_cast<std::size_t>(n));
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      while ((n = read(err[0], buf, sizeof buf)) > 0) e.err.append(buf, static_cast<std::size_t>(n));
      e.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  close(err[0]);
  return e;
}

std::string base64_of(const std::string& bytes) {
  std::string out;
  il::append_base64(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return out;
}

std::string base64_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << file;
  return base64_of(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

}  // namespace il::server_test
