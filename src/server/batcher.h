// The inference queue. One thread per engine lane (Engine::lanes: one, or on a
// GPU a few passes in flight at once) packs queued jobs into ragged forward
// passes of at most --max-batch-tokens real tokens and
// --max-batch-requests sequences, and runs them on the Engine. A job larger than one pass is split across
// passes (its later inputs wait at the head of the queue while others may join
// the pass); a job whose client went away before its first pass is dropped; a
// pass that fails is re-run job by job so that only the job that caused the
// failure sees it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "inferencelayer/engine.h"
#include "server/metrics.h"

namespace il::server {

enum class JobKind {
  kPooled, // raw pooled embedding (not normalised, every dimension): routes
           // post-process it
  kHidden, // final hidden states per token
  kScores, // cross-encoder logits
  kTokens, // multi-vector models: one vector per kept token (in `hidden`)
  kMaxSim, // multi-vector models: inputs[0] is a query, the rest its documents;
           // rows[0] = 0, rows[1 + d] = document d's MaxSim score. A job runs
           // whole, alone in its pass (the engine batches the documents).
  kImagePooled, // image models: raw pooled image embeddings, one row per image
  kImageHidden, // image models: the vision tower's last hidden states per image
  kImageText,   // image-text models: the images' raw embeddings, then the texts'
                // (rows: images first); whole, alone in its pass
};

// Whether a job of this kind carries images (Job::images) rather than token inputs.
constexpr bool carries_images(JobKind k) {
  return k == JobKind::kImagePooled || k == JobKind::kImageHidden || k == JobKind::kImageText;
}

struct Job {
  using Clock = std::chrono::steady_clock;

  JobKind kind = JobKind::kPooled;
  std::vector<TokenInput> inputs;
  std::vector<ImageInput> images; // image kinds (preprocessed on the workers)
  std::function<bool()> client_gone; // may be empty
  std::function<void()>
      on_done; // may be empty; runs on the inference thread when finished

  // Results (valid once the future is ready and error is empty).
  Matrix rows;                // kPooled / kScores: one row per input
  std::vector<Matrix> hidden; // kHidden
  std::string error;          // why the job failed
  double queue_ms = 0.0;      // queued → first pass started
  double inference_ms = 0.0;  // time of the passes that carried this job

  // The inputs a pass may split the job into: its images (image kinds), else
  // its token inputs.
  std::size_t size() const {
    return carries_images(kind) ? images.size() : inputs.size();
  }

  // Inference-thread state.
  Clock::time_point queued_at;
  std::size_t next_input = 0;
  bool started = false;
  bool finished = false;
  // One of its pieces is in a pass: its next piece waits for that one (a job's
  // state is touched by one inference thread at a time).
  bool in_flight = false;
  std::promise<void> done;
};

class Batcher {
public:
  Batcher(Engine &engine, std::size_t max_batch_tokens,
          std::size_t max_batch_requests, Metrics &metrics);
  ~Batcher();
  Batcher(const Batcher &) = delete;
  Batcher &operator=(const Batcher &) = delete;

  // Queues the job; the future is ready (and on_done has run) when it finished
  // or failed (see Job::error).
  std::future<void> submit(const std::shared_ptr<Job> &job);
  // Runs what is queued, then stops the threads. Idempotent.
  void stop();
  // Fails every queued job that has not started with `why` (a shutdown that
  // cannot wait).
  void cancel_queued(const std::string &why);

private:
  struct Piece {
    std::shared_ptr<Job> job;
    std::size_t first = 0;
    std::size_t count = 0;
  };

  void loop(bool reads_energy);
  // Whether a thread has something to take: a queued job not in a pass.
  bool has_work() const;
  std::vector<Piece> take_pieces(std::unique_lock<std::mutex> &lock);
  void run_pieces(std::vector<Piece> &pieces);
  void run_one_pass(JobKind kind, std::vector<Piece> &pieces);
  void finish(Job &job, const std::string &error);

  // Token rows of input i of a job in a pass: its token count, or an image's
  // patch count.
  std::size_t cost(const Job &job, std::size_t i) const;

  Engine &engine_;
  std::size_t image_tokens_; // patches per image (0: the model takes none)
  std::size_t max_tokens_;
  std::size_t max_requests_;
  Metrics &metrics_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

} // namespace il::server
