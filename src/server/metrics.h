// Prometheus metrics: request counts by route and status, queue size, batch sizes, and latency
// histograms split as TEI splits them (tokenization / queue / inference) plus the whole request.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "inferencelayer/generation.h"

namespace il::server {

struct HttpCounters;

// A fixed-bucket histogram (cumulative counts are computed when rendered).
class Histogram {
 public:
  static constexpr std::size_t kBuckets = 14;
  explicit Histogram(std::array<double, kBuckets> bounds) : bounds_(bounds) {}
  void observe(double value);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::array<double, kBuckets> bounds_;
  mutable std::mutex mutex_;
  std::array<std::uint64_t, kBuckets + 1> counts_{};
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void count_request(const std::string& route, int status);
  void observe_tokenization(double seconds) { tokenization_.observe(seconds); }
  void observe_queue(double seconds) { queue_.observe(seconds); }
  void observe_inference(double seconds) { inference_.observe(seconds); }
  void observe_request(double seconds) { request_.observe(seconds); }
  void observe_batch(std::size_t tokens, std::size_t sequences);
  void set_queue_size(std::size_t jobs) { queue_size_.store(jobs); }
  void set_cuda_graphs(std::size_t graphs) { cuda_graphs_.store(graphs); }
  // Joules the device has used since the server started; rendered once set (GPUs that count it).
  void set_device_energy(double joules) { device_energy_.store(joules); }
  void count_dropped() { dropped_.fetch_add(1); }
  void add_in_flight(int delta) { in_flight_.fetch_add(delta); }

  // Generation (the step scheduler): time to first token and between tokens per request, the
  // tokens produced, the sequences running and waiting, the KV cache's pages in use.
  void observe_first_token(double seconds) { first_token_.observe(seconds); }
  void observe_inter_token(double seconds) { inter_token_.observe(seconds); }
  void count_generated(std::size_t tokens) { generated_.fetch_add(tokens); }
  void count_prompt_tokens(std::size_t tokens) { prompt_tokens_.fetch_add(tokens); }
  void set_generation_load(const GenerationLoad& l) {
    guarded_.store(l.guarded_tokens);
    backfilled_.store(l.backfilled);
    gen_running_.store(l.running);
    gen_waiting_.store(l.waiting);
    gen_prefilling_.store(l.prefilling);
    kv_used_.store(l.kv_pages_used);
    kv_total_.store(l.kv_pages_total);
    generating_.store(true);
  }
  void count_cancelled() { cancelled_.fetch_add(1); }

  // The transport's connection counters, rendered with the rest (not owned).
  void set_http_counters(const HttpCounters* counters) { http_ = counters; }

  std::string render() const;

 private:
  mutable std::mutex counts_mutex_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  Histogram tokenization_, queue_, inference_, request_, batch_tokens_, batch_sequences_;
  std::atomic<std::size_t> queue_size_{0};
  std::atomic<std::size_t> cuda_graphs_{0};
  std::atomic<double> device_energy_{-1.0};  // < 0: not counted
  std::atomic<int> in_flight_{0};
  std::atomic<std::uint64_t> batches_{0};
  std::atomic<std::uint64_t> dropped_{0};
  Histogram first_token_, inter_token_;
  std::atomic<std::uint64_t> generated_{0}, prompt_tokens_{0}, cancelled_{0}, guarded_{0}, backfilled_{0};
  std::atomic<std::size_t> gen_running_{0}, gen_waiting_{0}, gen_prefilling_{0}, kv_used_{0}, kv_total_{0};
  std::atomic<bool> generating_{false};
  const HttpCounters* http_ = nullptr;
};

}  // namespace il::server
