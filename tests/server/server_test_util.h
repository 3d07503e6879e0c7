// Helpers for the server tests: the real `inferencelayer serve` binary on a free loopback port,
// a cpp-httplib client for it, and the CLI's answers for the same inputs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "../cli/cli_test_util.h"

namespace il::server_test {

using nlohmann::json;
using cli_test::fixture_path;

class ServerProcess {
 public:
  // Runs `inferencelayer serve --model <fixture dir> --port 0 <extra>` and waits (30 s at most)
  // for its "listening on http://127.0.0.1:PORT" line (no --model for an empty fixture name).
  // `env` entries are NAME=VALUE.
  explicit ServerProcess(const std::string& fixture, const std::vector<std::string>& extra = {},
                         const std::vector<std::string>& env = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool started() const { return port_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  httplib::Client client() const;
  // SIGTERM, then the exit status (-1 when killed by a signal or still running after 30 s).
  int terminate();
  // The exit status without sending anything (after a signal the test sent itself).
  int wait_exit();

 private:
  pid_t pid_ = -1;
  int port_ = -1;
};

httplib::Result post(httplib::Client& c, const std::string& path, const json& body,
                     const httplib::Headers& headers = {});
httplib::Result post_raw(httplib::Client& c, const std::string& path, const std::string& body);
json body_of(const httplib::Result& r);  // fails the test when the body is not JSON

// Fails the test unless the answer has this status and {"error": non-empty, "error_type": type}.
void expect_error(const httplib::Result& r, int status, const std::string& type);

// `inferencelayer embed` vectors for texts (extra CLI flags such as --no-normalize).
std::vector<std::vector<float>> cli_embeddings(const std::string& fixture, const std::vector<std::string>& texts,
                                               const std::vector<std::string>& flags = {});
// `inferencelayer rerank` raw logits (first label) for query/document pairs.
std::vector<float> cli_scores(const std::string& fixture, const std::string& query,
                              const std::vector<std::string>& docs);

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

// A plain TCP connection to the server, for what an HTTP client library would not send.
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool connected() const { return fd_ >= 0; }
  // Sends all of it; false when the server closed or reset the connection.
  bool send(const std::string& bytes);
  // One whole response (head, then Content-Length or chunked body); "" when none came in time.
  std::string read_response(std::chrono::milliseconds limit = std::chrono::seconds(30));
  // True when the server closes the connection within the limit (reading and dropping data).
  bool closed_within(std::chrono::milliseconds limit);

 private:
  int fd_ = -1;
  std::string pending_;
};

int status_of(const std::string& response);           // 0 when not a response
std::string header_of(const std::string& response, const std::string& name);
std::string body_text(const std::string& response);   // the body (chunks joined)

// `inferencelayer ARGS...` with a deadline: its exit status (-1 when it was still running and got
// killed) and what it wrote on stderr.
struct Exit {
  int status = -1;
  std::string err;
};
Exit run_with_deadline(const std::vector<std::string>& args, std::chrono::seconds limit);
// Base64 of bytes, and of a file's bytes (the images and PDFs the routes take in JSON bodies).
std::string base64_of(const std::string& bytes);
std::string base64_file(const std::filesystem::path& file);

inline constexpr double kTolerance = 1e-5;  // same engine, same inputs: only summation order differs

}  // namespace il::server_test
