// Everything `inferencelayer serve` can be told, with text-embeddings-inference's defaults.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace il::server {

// Image URLs in requests (src/server/url_fetch.h): refused unless enabled.
struct UrlFetchOptions {
  bool enabled = false;                 // --fetch-image-urls
  std::vector<std::string> hosts;       // --fetch-url-hosts: exact host names; empty = any host
  int timeout_s = 10;                   // --fetch-url-timeout: the whole fetch, redirects included
  std::size_t max_bytes = 20'000'000;   // --fetch-url-max-bytes: one image's body
  int max_redirects = 3;
};

struct ServeOptions {
  std::string model;                         // model folder
  std::string config;                        // or: config.json alone, random weights (benchmarks)
  std::string tokenizer;                     // with config: a folder or tokenizer.json to use
  std::string host = "127.0.0.1";
  int port = 8080;                           // 0 = any free port (printed on stdout)
  std::string api_key;                       // empty = no authentication
  std::size_t max_batch_tokens = 16384;      // real (unpadded) tokens of one forward pass
  std::size_t max_batch_requests = 0;        // sequences of one forward pass; 0 = no limit
  std::size_t max_concurrent_requests = 512; // over this: 429
  std::size_t max_client_batch_size = 32;    // inputs of one request
  std::size_t payload_limit = 2'000'000;     // request body bytes; over this: 413
  int keep_alive_timeout = 5;                // seconds an idle connection stays open
  int header_timeout = 10;                   // seconds from a request's first byte to its last header
  int request_timeout = 30;                  // seconds for a request body, and for each answer write
  std::size_t max_connections = 16384;       // open at once; more: 503 and closed
  int shutdown_timeout = 30;                 // seconds SIGTERM waits for answers before closing all
  bool reuse_port = false;                   // SO_REUSEPORT: share the port with other servers
  std::size_t http_threads = 1;              // event-loop threads (connections, reads, writes)
  bool auto_truncate = false;                // default of the `truncate` request field
  std::string device = "auto";
  std::string dtype = "auto";                // f32, f16, bf16 or auto (see EngineOptions)
  std::size_t threads = 0;                   // compute threads, 0 = one per hardware thread
  std::size_t lanes = 0;                     // encoder passes in flight; 0: 2 on a GPU, 1 on the CPU
  std::size_t tokenization_workers = 0;      // 0 = a quarter of the hardware threads, 2 to 8
  std::size_t image_workers = 0;             // image decoding threads, 0 = one per hardware thread
  std::string served_model_name;             // default: the folder name
  // Generating models.
  std::size_t kv_cache_tokens = 0;           // 0: the engine's default
  std::size_t kv_page_size = 64;
  // Prompt tokens + image patches a step prefills while others decode (EngineOptions); 0: no bound.
  std::size_t prefill_tokens_per_step = 0;
  std::size_t max_new_tokens_limit = 16384;  // a request asking more: 422
  std::size_t max_images_per_request = 8;    // more: 413
  UrlFetchOptions url_fetch;
};

}  // namespace il::server
