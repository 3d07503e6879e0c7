#include "server/metrics.h"

#include "server/http_server.h"

#include <algorithm>
#include <cstdio>

namespace il::server {
namespace {

constexpr std::array<double, Histogram::kBuckets> kSecondsBuckets = {
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0};
constexpr std::array<double, Histogram::kBuckets> kTokenBuckets = {
    1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536};

void append_number(std::string& out, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  out += buf;
}

}  // namespace

void Histogram::observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  std::lock_guard lock(mutex_);
  counts_[static_cast<std::size_t>(it - bounds_.begin())] += 1;
  sum_ += value;
  count_ += 1;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard lock(mutex_);
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"";
    append_number(out, bounds_[i]);
    out += "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum ";
  append_number(out, sum_);
  out += "\n" + name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : tokenization_(kSecondsBuckets),
      queue_(kSecondsBuckets),
      inference_(kSecondsBuckets),
      request_(kSecondsBuckets),
      batch_tokens_(kTokenBuckets),
      batch_sequences_(kTokenBuckets),
      first_token_(kSecondsBuckets),
      inter_token_(kSecondsBuckets) {}

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard lock(counts_mutex_);
  requests_[{route, status}] += 1;
}

void Metrics::observe_batch(std::size_t tokens, std::size_t sequences) {
  batches_.fetch_add(1);
  batch_tokens_.observe(static_cast<double>(tokens));
  batch_sequences_.observe(static_cast<double>(sequences));
}

std::string Metrics::render() const {
  std::string out;
  out += "# HELP il_request_count Finished HTTP requests by route and status.\n"
         "# TYPE il_request_count counter\n";
  {
    std::lock_guard lock(counts_mutex_);
    for (const auto& [key, n] : requests_)
      out += "il_request_count{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
             "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP il_queue_size Requests waiting for the inference thread.\n# TYPE il_queue_size gauge\n";
  out += "il_queue_size " + std::to_string(queue_size_.load()) + "\n";
  out += "# HELP il_requests_in_flight Compute requests being served.\n# TYPE il_requests_in_flight gauge\n";
  out += "il_requests_in_flight " + std::to_string(in_flight_.load()) + "\n";
  out += "# HELP il_cuda_graphs CUDA graphs captured (one per batch-shape bucket, at most 256; 0 on the CPU).\n"
         "# TYPE il_cuda_graphs gauge\n";
  out += "il_cuda_graphs " + std::to_string(cuda_graphs_.load()) + "\n";
  if (const double joules = device_energy_.load(); joules >= 0.0) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3f", joules);
    out += "# HELP il_device_energy_joules_total Energy the GPU has used since the server started (the "
           "driver's counter, read at most every 100 ms after a forward pass).\n"
           "# TYPE il_device_energy_joules_total counter\n";
    out += std::string("il_device_energy_joules_total ") + value + "\n";
  }
  out += "# HELP il_batch_count Forward passes run.\n# TYPE il_batch_count counter\n";
  out += "il_batch_count " + std::to_string(batches_.load()) + "\n";
  out += "# HELP il_dropped_count Queued requests dropped because their client disconnected.\n"
         "# TYPE il_dropped_count counter\n";
  out += "il_dropped_count " + std::to_string(dropped_.load()) + "\n";
  if (http_ != nullptr) {
    out += "# HELP il_http_connections Open HTTP connections.\n# TYPE il_http_connections gauge\n";
    out += "il_http_connections " + std::to_string(http_->open.load()) + "\n";
    out += "# HELP il_http_connections_refused_total Connections answered 503 over --max-connections.\n"
           "# TYPE il_http_connections_refused_total counter\n";
    out += "il_http_connections_refused_total " + std::to_string(http_->refused.load()) + "\n";
    out += "# HELP il_http_timeouts_total Connections closed for a head, body or write timeout.\n"
           "# TYPE il_http_timeouts_total counter\n";
    out += "il_http_timeouts_total " + std::to_string(http_->timed_out.load()) + "\n";
  }
  batch_tokens_.render(out, "il_batch_tokens", "Real (unpadded) tokens per forward pass.");
  batch_sequences_.render(out, "il_batch_sequences", "Sequences per forward pass.");
  tokenization_.render(out, "il_request_tokenization_duration_seconds", "Tokenization time per request.");
  queue_.render(out, "il_request_queue_duration_seconds", "Time from queued to the first forward pass.");
  inference_.render(out, "il_request_inference_duration_seconds", "Forward-pass time per request.");
  request_.render(out, "il_request_duration_seconds", "Whole request time.");
  if (generating_.load()) {
    first_token_.render(out, "il_time_to_first_token_seconds", "From a generation request's arrival to its first token.");
    inter_token_.render(out, "il_inter_token_latency_seconds", "Between two tokens of one generation request.");
    const auto gauge = [&](const char* name, const char* help, const char* type, std::uint64_t v) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " +
             std::to_string(v) + "\n";
    };
    gauge("il_generated_tokens_total", "Tokens generated.", "counter", generated_.load());
    gauge("il_prompt_tokens_total", "Prompt tokens prefilled.", "counter", prompt_tokens_.load());
    gauge("il_generation_cancelled_total", "Generation requests dropped because their client left.", "counter",
          cancelled_.load());
    gauge("il_generation_loop_guard_total",
          "Tokens where the anti-loop guard (no-repeat n-gram) banned the most likely next token.", "counter",
          guarded_.load());
    gauge("il_generation_backfilled_total",
          "Generation requests started before an older one waiting for KV cache pages (backfilling).",
          "counter", backfilled_.load());
    gauge("il_generation_running", "Sequences decoding (holding KV cache pages).", "gauge", gen_running_.load());
    gauge("il_generation_prefilling",
          "Of the running sequences, those whose prompt is still being prefilled in chunks (per-step prefill budget).",
          "gauge", gen_prefilling_.load());
    gauge("il_generation_waiting", "Generation requests waiting for room in the KV cache.", "gauge",
          gen_waiting_.load());
    gauge("il_kv_cache_pages_used", "KV cache pages held by sequences.", "gauge", kv_used_.load());
    gauge("il_kv_cache_pages_total", "KV cache pages.", "gauge", kv_total_.load());
  }
  return out;
}

}  // namespace il::server
