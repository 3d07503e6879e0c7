// The HTTP/1.1 transport: Boost.Beast on Asio, event-driven. A fixed number of
// I/O threads serve every connection; a connection holds no thread while it
// waits (for a slow client, for the model, or idle between requests).
//
// For each request the transport reads the head within the header limits and
// timeout, asks the application to screen it (route, method, media type,
// credentials: decided before any body byte is read), reads and decodes the
// body within the payload limit, and hands the request to the application with
// a Responder. The application answers on any thread, once, either whole or as
// a stream of chunks (server-sent events). Requests on one connection are
// answered in order (pipelining). On stop() it accepts no more connections,
// closes idle ones, lets every request already received be answered, and run()
// returns when the last one is.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_message.h"
#include "server/http_request.h"

namespace il::server {

class HttpSession;

// Everything the transport can be told beyond the request limits.
struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080; // 0 = any free port
  bool reuse_port =
      false; // SO_REUSEPORT: several servers share the port (on request only)
  std::size_t io_threads = 1; // threads running the event loop
  HttpLimits limits;
};

// A stream of chunks after a head (server-sent events, chunked bodies). Any
// thread may write; chunks go out in order. write() returns false once the
// client is gone or the stream ended.
class ResponseStream {
public:
  virtual ~ResponseStream() = default;
  virtual bool write(std::string chunk) = 0;
  virtual void end() = 0;
  virtual bool client_gone() const = 0;
  virtual std::size_t
  queued_bytes() const = 0; // written but not yet sent (back-pressure)
};

// The one way to answer a request. Copyable; the first respond() or stream()
// wins, later ones are ignored. While one exists for an unanswered request, the
// server does not finish stopping.
class Responder {
public:
  Responder() = default;
  explicit Responder(std::shared_ptr<HttpSession> session);
  void respond(HttpResponse response) const;
  // Sends `head` (status, content type, headers; its body is ignored) and then
  // the chunks.
  std::shared_ptr<ResponseStream> stream(HttpResponse head) const;
  // The client closed its side or reset the connection (a queued job for it can
  // be dropped).
  bool client_gone() const;

private:
  std::shared_ptr<HttpSession> session_;
  std::shared_ptr<void> work_; // keeps the event loop running until answered
};

class HttpApp {
public:
  virtual ~HttpApp() = default;
  // Before the body: a refusal to send instead of reading it (unknown route,
  // wrong method or media type, missing credentials), or nullopt to go on.
  virtual std::optional<HttpResponse> screen(const HttpRequest &head) = 0;
  // The whole request. Must not block: long work goes to other threads, which
  // answer through the responder.
  virtual void handle(HttpRequest request, Responder responder) = 0;
};

struct HttpCounters {
  std::atomic<std::size_t> open{0};      // connections open now
  std::atomic<std::uint64_t> refused{0}; // answered 503 over max_connections
  std::atomic<std::uint64_t> timed_out{
      0}; // closed for a head, body or write timeout
};

class HttpServer {
public:
  HttpServer(HttpOptions options, HttpApp &app);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  // Binds and listens; returns the port. A port in use is an il::Error (no
  // SO_REUSEPORT unless asked for).
  int bind();
  // Runs the event loop on io_threads threads (this one included) until stopped
  // and drained.
  void run();
  // Graceful: stop accepting, close idle connections, finish the requests
  // received. Any thread.
  void stop();
  // Now: close every connection; run() returns without waiting for unanswered
  // requests.
  void abort();
  bool stopping() const;
  // Requests received and not answered yet.
  std::size_t unanswered() const;
  const HttpCounters &counters() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace il::server
