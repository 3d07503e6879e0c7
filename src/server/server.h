// The HTTP server: the event-driven transport (http_server.h) in front of the tokenization
// workers, which run the routes' handlers, and the one inference thread (batcher.h).
#pragma once

#include <memory>
#include <string>

#include "inferencelayer/engine.h"
#include "server/serve_options.h"

namespace il::server {

class Server {
 public:
  Server(const ServeOptions& options, std::unique_ptr<Engine> engine);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; returns the port (the chosen one for port 0). Throws il::Error,
  // also for a port another process listens on (unless --reuse-port).
  int bind();
  // Serves until stop() or abort(); after stop(), returns once every request received is answered.
  void run();
  // Graceful: stop accepting, close idle connections, answer what was received. Any thread.
  void stop();
  // At once: close every connection and drop queued work. Any thread.
  void abort();
  // Requests received and not answered yet.
  std::size_t unanswered() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace il::server
