#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <thread>
#include <vector>

#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.h"
#include "server/api_error.h"
#include "server/batcher.h"
#include "server/connection_pool.h"
#include "server/context.h"
#include "server/metrics.h"
#include "server/routes.h"
#include "server/worker_pool.h"

namespace il::server {
namespace {

constexpr std::size_t kReserveHttpThreads = 16;
// Beyond this many requests in flight, connections wait for a thread rather than each getting
// one (and an 8 MiB stack reservation): a limit that high is a mistake more likely than a need.
constexpr std::size_t kMaxHttpThreads = 4096;
constexpr std::chrono::milliseconds kHttpThreadIdleExit{30'000};

// The local port of a TCP socket, or -1 for anything else.
int tcp_local_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int type = 0;
  socklen_t type_len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) return -1;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return -1;
}

// After the listener has stopped: ends the reading side of every connection accepted on `port`.
// A connection thread idling in httplib's keep-alive wait (up to 5 s, and httplib 0.11 looks at
// the stop flag only between requests) then sees end-of-file at once and closes; a request whose
// handler is running still writes its whole answer, as only reading is shut. Accepted sockets
// are the process's TCP sockets whose local port is the listening one (/proc/self/fd).
void end_reading_of_connections(int port) {
  if (port <= 0) return;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  std::vector<int> fds;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && fd != dirfd(dir)) fds.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  for (int fd : fds)
    if (tcp_local_port(fd) == port) ::shutdown(fd, SHUT_RD);
}

std::size_t or_hardware(std::size_t n) {
  return n ? n : std::max(1u, std::thread::hardware_concurrency());
}

std::string default_model_name(const ServeOptions& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  std::filesystem::path p(o.model.empty() ? o.config : o.model);
  if (p.extension() == ".json") return p.stem() == "config" ? p.parent_path().filename().string() : p.stem().string();
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

void send_error(httplib::Response& res, int status, const std::string& type, const std::string& message) {
  res.status = status;
  res.set_content(error_body(message, type), "application/json");
}

}  // namespace

struct Server::Impl final : Router {
  Impl(const ServeOptions& o, std::unique_ptr<Engine> e)
      : options(o),
        engine(std::move(e)),
        tokenizers(or_hardware(o.tokenization_workers)),
        batcher(*engine, o.max_batch_tokens, o.max_batch_requests, metrics),
        ctx{o, *engine, metrics, tokenizers, batcher, default_model_name(o)} {
    // Connection threads (connection_pool.h): a compute request holds its thread while it waits
    // for the inference thread, so reaching the concurrency limit takes that many threads, plus
    // a reserve so that /health, /metrics and the 429s for the excess still find one. The cap is
    // a bound, not a size: threads start as connections need them and leave after idling a
    // while, so the working set follows the clients actually connected (see the RSS notes there).
    const std::size_t http_threads = std::min(o.max_concurrent_requests, kMaxHttpThreads) + kReserveHttpThreads;
    http.new_task_queue = [http_threads] { return new ConnectionPool(http_threads, kHttpThreadIdleExit); };
    http.set_payload_max_length(o.payload_limit);
    // Without it, a small answer can wait for the client's delayed ACK (~40 ms on Linux).
    http.set_tcp_nodelay(true);
    // Remember the listening socket: httplib 0.11 listens with a backlog of 5, and a burst of
    // clients then loses connections (SYN retried after 1 s, then reset); bind() raises it.
    http.set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      listen_fd = sock;
    });
    http.set_keep_alive_max_count(1000);
    http.set_keep_alive_timeout(o.keep_alive_timeout);
    // Errors httplib answers itself (413 over the payload limit, 404, 400) get our JSON shape.
    http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      const std::string type = res.status == 413 ? "PayloadTooLarge" : res.status == 404 ? "NotFound" : "Validation";
      const std::string message = res.status == 413 ? "the request body is larger than the payload limit (--payload-limit)"
                                  : res.status == 404 ? "no such route"
                                                      : "bad request";
      res.set_content(error_body(message, type), "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }));
    add_embed_routes(*this, ctx);
    add_openai_routes(*this, ctx);
    add_rerank_routes(*this, ctx);
    add_token_routes(*this, ctx);
    add_info_routes(*this, ctx);
  }

  void add(Method method, const std::string& path, bool compute, Handler handler) override {
    auto wrapped = [this, path, compute, handler = std::move(handler)](const httplib::Request& req,
                                                                      httplib::Response& res) {
      const auto start = std::chrono::steady_clock::now();
      serve(path, compute, handler, req, res);
      metrics.count_request(path, res.status);
      metrics.observe_request(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    };
    if (method == Method::kGet) http.Get(path, wrapped);
    else http.Post(path, wrapped);
  }

  bool authorized(const httplib::Request& req) const {
    if (options.api_key.empty()) return true;
    return req.get_header_value("Authorization") == "Bearer " + options.api_key;
  }

  void serve(const std::string& path, bool compute, const Handler& handler, const httplib::Request& req,
             httplib::Response& res) {
    if (compute && !authorized(req)) {
      res.set_header("WWW-Authenticate", "Bearer");
      return send_error(res, 401, "Unauthorized", "missing or wrong API key (Authorization: Bearer KEY)");
    }
    // The limit counts requests being served, whatever their batch size.
    if (compute && in_flight.fetch_add(1) >= options.max_concurrent_requests) {
      in_flight.fetch_sub(1);
      res.set_header("Retry-After", "1");
      // The client is told to come back later; until then its keep-alive connection would hold
      // a connection thread idle (5 s) that the requests being served may need. httplib 0.11
      // only sends the header; HTTP/1.1 clients close on it (RFC 9112, 9.6), which frees it.
      res.set_header("Connection", "close");
      return send_error(res, 429, "Overloaded",
                        "too many concurrent requests (--max-concurrent-requests " +
                            std::to_string(options.max_concurrent_requests) + ")");
    }
    if (compute) metrics.add_in_flight(1);
    Timings timings;
    try {
      handler(req, res, timings);
      if (res.status == -1) res.status = 200;  // httplib would fill it in only after us
      set_timing_headers(res, timings, engine->info().backend);
    } catch (const ApiError& e) {
      send_error(res, e.status(), e.type(), e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 500, "Backend", "out of memory");
    } catch (const std::exception& e) {
      send_error(res, 500, "Backend", std::string("internal error on ") + path + ": " + e.what());
    }
    if (compute) {
      in_flight.fetch_sub(1);
      metrics.add_in_flight(-1);
    }
  }

  ServeOptions options;
  std::unique_ptr<Engine> engine;
  Metrics metrics;
  WorkerPool tokenizers;
  Batcher batcher;
  Context ctx;
  httplib::Server http;
  std::atomic<std::size_t> in_flight{0};
  int listen_fd = -1;
  std::atomic<int> port{-1};
};

Server::Server(const ServeOptions& options, std::unique_ptr<Engine> engine)
    : impl_(std::make_unique<Impl>(options, std::move(engine))) {}

Server::~Server() = default;

int Server::bind() {
  const ServeOptions& o = impl_->options;
  int port = o.port;
  if (port == 0) {
    port = impl_->http.bind_to_any_port(o.host);
    check(port > 0, "cannot listen on ", o.host, " (any port)");
  } else {
    check(impl_->http.bind_to_port(o.host, o.port), "cannot listen on ", o.host, ":", o.port,
          " (in use, or not an address of this machine)");
  }
  // listen() again on a listening socket only changes its backlog (Linux, BSD).
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, SOMAXCONN);
  impl_->port = port;
  return port;
}

void Server::run() {
  impl_->http.listen_after_bind();  // returns after stop(), once the connection threads finished
  impl_->batcher.stop();
}

void Server::stop() {
  impl_->http.stop();
  end_reading_of_connections(impl_->port.load());
}

}  // namespace il::server
