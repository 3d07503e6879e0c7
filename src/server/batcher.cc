#include "server/batcher.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

namespace il::server {
namespace {

double ms_since(Job::Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Job::Clock::now() - t)
      .count();
}

// The engine calls a pass of one kind makes; rows / hidden come back in input
// order.
void run_engine(Engine &engine, JobKind kind,
                const std::vector<TokenInput> &inputs,
                const std::vector<ImageInput> &images, Matrix &rows,
                std::vector<Matrix> &hidden) {
  EmbedOptions raw;
  raw.normalize = false; // routes normalise per request
  switch (kind) {
  case JobKind::kPooled:
    rows = engine.embed(inputs, raw);
    return;
  case JobKind::kImagePooled:
    rows = engine.embed_images(images, raw);
    return;
  case JobKind::kImageHidden:
    hidden = engine.image_hidden_states(images);
    return;
  case JobKind::kImageText: {
    Matrix image_rows = images.empty() ? Matrix() : engine.embed_images(images, raw);
    Matrix text_rows = inputs.empty() ? Matrix() : engine.embed(inputs, raw);
    if (!images.empty() && !inputs.empty() && image_rows.cols != text_rows.cols)
      throw std::runtime_error("image embeddings (" + std::to_string(image_rows.cols) +
                               " wide) and text embeddings (" + std::to_string(text_rows.cols) +
                               " wide) differ in width");
    rows = Matrix(image_rows.rows + text_rows.rows, std::max(image_rows.cols, text_rows.cols));
    std::copy(image_rows.data.begin(), image_rows.data.end(), rows.data.begin());
    std::copy(text_rows.data.begin(), text_rows.data.end(),
              rows.data.begin() + static_cast<std::ptrdiff_t>(image_rows.data.size()));
    return;
  }
  case JobKind::kHidden:
    hidden = engine.hidden_states(inputs);
    return;
  case JobKind::kScores:
    rows = engine.score(inputs);
    return;
  case JobKind::kTokens:
    hidden = engine.token_vectors(inputs);
    return;
  case JobKind::kMaxSim: {
    const std::vector<TokenInput> docs(inputs.begin() + 1, inputs.end());
    const std::vector<float> scores = engine.late_interaction(inputs.at(0), docs);
    rows = Matrix(inputs.size(), 1);
    std::copy(scores.begin(), scores.end(), rows.row(1));
    return;
  }
  }
}

} // namespace

Batcher::Batcher(Engine &engine, std::size_t max_batch_tokens,
                 std::size_t max_batch_requests, Metrics &metrics)
    : engine_(engine),
      image_tokens_([&engine] {
        const ModelInfo &i = engine.info();
        return i.patch_size > 0 ? static_cast<std::size_t>(i.image_height / i.patch_size) *
                                      static_cast<std::size_t>(i.image_width / i.patch_size)
                                : std::size_t{0};
      }()),
      max_tokens_(std::max<std::size_t>(max_batch_tokens, 1)),
      max_requests_(max_batch_requests), metrics_(metrics) {
  const std::size_t lanes = std::max<std::size_t>(engine.lanes(), 1);
  for (std::size_t i = 0; i < lanes; ++i)
    threads_.emplace_back([this, i] { loop(i == 0); });
}

Batcher::~Batcher() { stop(); }

std::future<void> Batcher::submit(const std::shared_ptr<Job> &job) {
  auto fut = job->done.get_future();
  job->queued_at = Job::Clock::now();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      job->error = "the server is shutting down";
      job->finished = true;
      job->done.set_value();
      if (job->on_done)
        job->on_done();
      return fut;
    }
    queue_.push_back(job);
    metrics_.set_queue_size(queue_.size());
  }
  ready_.notify_one();
  return fut;
}

void Batcher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread &t : threads_)
    if (t.joinable())
      t.join();
}

void Batcher::cancel_queued(const std::string &why) {
  std::lock_guard lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->started) {
      ++it;
      continue;
    }
    finish(**it, why);
    it = queue_.erase(it);
  }
  metrics_.set_queue_size(queue_.size());
}

std::size_t Batcher::cost(const Job &job, std::size_t i) const {
  return carries_images(job.kind) ? image_tokens_ : job.inputs[i].ids.size();
}

void Batcher::finish(Job &job, const std::string &error) {
  if (job.finished)
    return;
  job.error = error;
  job.finished = true;
  job.done.set_value();
  if (job.on_done)
    job.on_done();
}

bool Batcher::has_work() const {
  return std::any_of(queue_.begin(), queue_.end(),
                     [](const std::shared_ptr<Job> &j) { return !j->in_flight; });
}

void Batcher::loop(bool reads_energy) {
  // The device's energy counter at start, where it has one: /metrics reports
  // the energy since. Read by the first thread after its passes, at most every
  // kEnergyPeriod (a read costs tens of microseconds, a sizeable share of a
  // small request's pass).
  constexpr auto kEnergyPeriod = std::chrono::milliseconds(100);
  const std::optional<double> energy_start =
      reads_energy ? engine_.device_energy_joules() : std::nullopt;
  if (energy_start)
    metrics_.set_device_energy(0.0);
  auto energy_read = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<Piece> pieces;
    {
      std::unique_lock lock(mutex_);
      // Stopping waits for the jobs in other threads' passes too: a job split
      // over passes comes back to the queue when its piece is done.
      ready_.wait(lock, [this] { return has_work() || (stopping_ && queue_.empty()); });
      if (queue_.empty())
        return; // stopping, and everything queued has run
      pieces = take_pieces(lock);
      for (const Piece &p : pieces)
        p.job->in_flight = true;
      metrics_.set_queue_size(queue_.size());
    }
    if (!pieces.empty()) {
      run_pieces(pieces);
      {
        std::lock_guard lock(mutex_);
        for (const Piece &p : pieces)
          p.job->in_flight = false;
      }
      // A job with inputs left can go to the next pass now, on any thread.
      ready_.notify_all();
      metrics_.set_cuda_graphs(engine_.cuda_graphs());
      if (energy_start &&
          std::chrono::steady_clock::now() - energy_read >= kEnergyPeriod) {
        energy_read = std::chrono::steady_clock::now();
        if (const std::optional<double> joules = engine_.device_energy_joules())
          metrics_.set_device_energy(*joules - *energy_start);
      }
    }
  }
}

// Packs from the head of the queue: jobs of the head's kind, in order, until
// the token or sequence budget is full. Called with the lock held.
std::vector<Batcher::Piece>
Batcher::take_pieces(std::unique_lock<std::mutex> &) {
  std::vector<Piece> pieces;
  std::size_t tokens = 0, sequences = 0;
  JobKind kind = queue_.front()->kind;
  auto it = queue_.begin();
  while (it != queue_.end()) {
    const std::shared_ptr<Job> &job = *it;
    if (job->in_flight) { // its earlier piece is in another thread's pass
      ++it;
      continue;
    }
    if (job->finished) { // failed in an earlier pass while partly done
      it = queue_.erase(it);
      continue;
    }
    if (!job->started && job->client_gone && job->client_gone()) {
      finish(*job, "the client disconnected");
      metrics_.count_dropped();
      it = queue_.erase(it);
      continue;
    }
    if (pieces.empty())
      kind = job->kind;
    if (job->kind != kind)
      break; // the next pass starts with it: order is kept
    if (kind == JobKind::kMaxSim || kind == JobKind::kImageText) {
      // Whole and alone: a query must be encoded with its documents, which
      // the engine splits into batches itself; images and texts go to two
      // engine calls, each batched by the engine.
      if (!pieces.empty())
        break;
      for (const TokenInput &in : job->inputs)
        tokens += in.ids.size();
      tokens += job->images.size() * image_tokens_;
      sequences += job->inputs.size() + job->images.size();
      job->next_input = job->size();
      job->started = true;
      job->queue_ms = ms_since(job->queued_at);
      metrics_.observe_queue(job->queue_ms / 1000.0);
      pieces.push_back(Piece{job, 0, job->size()});
      queue_.erase(it);
      break;
    }
    Piece piece{job, job->next_input, 0};
    while (job->next_input < job->size()) {
      const std::size_t n = cost(*job, job->next_input);
      const bool budget_full = tokens + n > max_tokens_ ||
                               (max_requests_ && sequences + 1 > max_requests_);
      // The first input of a pass always goes in: the engine sizes its scratch
      // for a whole sequence.
      if (budget_full && sequences > 0)
        break;
      tokens += n;
      sequences += 1;
      piece.count += 1;
      job->next_input += 1;
    }
    if (piece.count > 0) {
      if (!job->started) {
        job->started = true;
        job->queue_ms = ms_since(job->queued_at);
        metrics_.observe_queue(job->queue_ms / 1000.0);
      }
      pieces.push_back(piece);
    }
    if (job->next_input < job->size())
      break; // the pass is full
    it = queue_.erase(it);
  }
  if (sequences > 0)
    metrics_.observe_batch(tokens, sequences);
  return pieces;
}

void Batcher::run_pieces(std::vector<Piece> &pieces) {
  const JobKind kind = pieces.front().job->kind;
  try {
    run_one_pass(kind, pieces);
  } catch (const std::exception &e) {
    if (pieces.size() == 1) {
      finish(*pieces.front().job, e.what());
      return;
    }
    // Re-run job by job: the failure belongs to one of them, not to the whole
    // pass.
    for (Piece &p : pieces) {
      std::vector<Piece> alone{p};
      try {
        run_one_pass(kind, alone);
      } catch (const std::exception &e2) {
        finish(*p.job, e2.what());
      }
    }
  }
}

void Batcher::run_one_pass(JobKind kind, std::vector<Piece> &pieces) {
  std::vector<TokenInput> inputs;
  std::vector<ImageInput> images;
  for (const Piece &p : pieces) {
    if (p.job->finished)
      continue;
    if (kind == JobKind::kImageText) { // whole: its images and its texts
      images = p.job->images;
      inputs = p.job->inputs;
      continue;
    }
    for (std::size_t i = 0; i < p.count; ++i) {
      if (carries_images(kind))
        images.push_back(p.job->images[p.first + i]);
      else
        inputs.push_back(p.job->inputs[p.first + i]);
    }
  }
  if (inputs.empty() && images.empty())
    return;
  const auto start = Job::Clock::now();
  Matrix rows;
  std::vector<Matrix> hidden;
  run_engine(engine_, kind, inputs, images, rows, hidden);
  const double ms = ms_since(start);
  metrics_.observe_inference(ms / 1000.0);
  std::size_t at = 0;
  for (Piece &p : pieces) {
    Job &job = *p.job;
    if (job.finished)
      continue;
    if (kind == JobKind::kImageText) {
      job.rows = std::move(rows);
    } else if (kind == JobKind::kHidden || kind == JobKind::kTokens ||
               kind == JobKind::kImageHidden) {
      if (job.hidden.empty())
        job.hidden.resize(job.size());
      for (std::size_t i = 0; i < p.count; ++i)
        job.hidden[p.first + i] = std::move(hidden[at + i]);
    } else {
      if (job.rows.rows == 0)
        job.rows = Matrix(job.size(), rows.cols);
      std::copy(rows.row(at), rows.row(at) + p.count * rows.cols,
                job.rows.row(p.first));
    }
    at += p.count;
    job.inference_ms += ms;
    if (p.first + p.count == job.size())
      finish(job, "");
  }
}

} // namespace il::server
