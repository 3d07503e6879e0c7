// The HTTP server: cpp-httplib's listener and connection threads in front of the tokenization
// workers and the one inference thread (see batcher.h).
#pragma once

#include <atomic>
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

  // Binds the listening socket; returns the port (the chosen one for port 0). Throws il::Error.
  int bind();
  // Serves until stop(); then lets in-flight requests finish and the queue drain.
  void run();
  // Stops accepting. Safe from any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace il::server
