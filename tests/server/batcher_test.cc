// The batcher with several engine lanes (Engine::lanes): passes run side by side, each job's
// pieces one after another and in order, every job answered, stop() drains the queue. A fake
// engine stands in for the model: its pooled row for an input is the input's ids, and it records
// how many passes run at once, overall and per job.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "inferencelayer/engine.h"
#include "server/batcher.h"
#include "server/metrics.h"

namespace il::server {
namespace {

class FakeEngine final : public Engine {
 public:
  FakeEngine(std::size_t lanes, std::chrono::milliseconds pass_time) : lanes_(lanes), pass_time_(pass_time) {}

  const ModelInfo& info() const override { return info_; }
  TokenInput tokenize(std::string_view, bool) const override { return {}; }
  TokenInput tokenize_pair(std::string_view, std::string_view, bool) const override { return {}; }
  std::size_t lanes() const override { return lanes_; }

  // Input ids are {job, index}: the row echoes them.
  Matrix embed(const std::vector<TokenInput>& inputs, const EmbedOptions&) override {
    std::vector<int32_t> jobs;
    for (const TokenInput& in : inputs) jobs.push_back(in.ids.at(0));
    std::sort(jobs.begin(), jobs.end());
    jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
    {
      std::lock_guard lock(mutex_);
      most_passes_ = std::max(most_passes_, ++passes_);
      for (int32_t j : jobs) most_per_job_ = std::max(most_per_job_, ++per_job_[j]);
    }
    std::this_thread::sleep_for(pass_time_);
    Matrix rows(inputs.size(), 2);
    for (std::size_t r = 0; r < inputs.size(); ++r) {
      rows.row(r)[0] = static_cast<float>(inputs[r].ids.at(0));
      rows.row(r)[1] = static_cast<float>(inputs[r].ids.at(1));
    }
    std::lock_guard lock(mutex_);
    --passes_;
    for (int32_t j : jobs) --per_job_[j];
    return rows;
  }
  std::vector<Matrix> hidden_states(const std::vector<TokenInput>&) override { return {}; }
  Matrix score(const std::vector<TokenInput>&) override { return {}; }

  int most_passes() const {
    std::lock_guard lock(mutex_);
    return most_passes_;
  }
  int most_per_job() const {
    std::lock_guard lock(mutex_);
    return most_per_job_;
  }

 private:
  ModelInfo info_;
  std::size_t lanes_;
  std::chrono::milliseconds pass_time_;
  mutable std::mutex mutex_;
  int passes_ = 0, most_passes_ = 0, most_per_job_ = 0;
  std::map<int32_t, int> per_job_;
};

std::shared_ptr<Job> make_job(int32_t id, std::size_t inputs) {
  auto job = std::make_shared<Job>();
  job->kind = JobKind::kPooled;
  for (std::size_t i = 0; i < inputs; ++i) job->inputs.push_back(TokenInput{{id, static_cast<int32_t>(i)}, {}});
  return job;
}

void expect_answered(const Job& job, int32_t id) {
  ASSERT_TRUE(job.finished);
  ASSERT_EQ(job.error, "");
  ASSERT_EQ(job.rows.rows, job.inputs.size());
  for (std::size_t i = 0; i < job.inputs.size(); ++i) {
    EXPECT_EQ(job.rows.row(i)[0], static_cast<float>(id)) << "job " << id << " input " << i;
    EXPECT_EQ(job.rows.row(i)[1], static_cast<float>(i)) << "job " << id << " input " << i;
  }
}

// Submits jobs 0 .. sizes.size() − 1 (job i of sizes[i] inputs), waits for them and checks that
// each got its own rows.
void run_jobs(Batcher& batcher, const std::vector<std::size_t>& sizes) {
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<std::future<void>> done;
  for (std::size_t id = 0; id < sizes.size(); ++id) {
    jobs.push_back(make_job(static_cast<int32_t>(id), sizes[id]));
    done.push_back(batcher.submit(jobs.back()));
  }
  for (auto& f : done) f.get();
  for (std::size_t id = 0; id < sizes.size(); ++id) expect_answered(*jobs[id], static_cast<int32_t>(id));
}

TEST(BatcherLanes, PassesRunSideBySideUpToTheLanes) {
  FakeEngine engine(2, std::chrono::milliseconds(30));
  Metrics metrics;
  // One sequence a pass: eight jobs make eight passes, at most two of them at once.
  Batcher batcher(engine, 1000, 1, metrics);
  run_jobs(batcher, std::vector<std::size_t>(8, 1));
  EXPECT_EQ(engine.most_passes(), 2);
}

TEST(BatcherLanes, OneLaneRunsOnePassAtATime) {
  FakeEngine engine(1, std::chrono::milliseconds(5));
  Metrics metrics;
  Batcher batcher(engine, 1000, 1, metrics);
  run_jobs(batcher, std::vector<std::size_t>(6, 1));
  EXPECT_EQ(engine.most_passes(), 1);
}

// A job larger than a pass is split; its pieces must not run at once on two lanes (they write
// the same rows and the last one finishes the job), while other jobs use the free lane.
TEST(BatcherLanes, AJobsPiecesRunOneAfterAnother) {
  FakeEngine engine(3, std::chrono::milliseconds(10));
  Metrics metrics;
  Batcher batcher(engine, 1000, 2, metrics);  // two sequences a pass
  run_jobs(batcher, {9, 5, 5, 5});  // 5 and 3 passes' worth
  EXPECT_EQ(engine.most_per_job(), 1);
  EXPECT_GE(engine.most_passes(), 2);  // the other lanes took other jobs meanwhile
}

TEST(BatcherLanes, StopAnswersEverythingQueued) {
  FakeEngine engine(2, std::chrono::milliseconds(5));
  Metrics metrics;
  auto batcher = std::make_unique<Batcher>(engine, 1000, 1, metrics);
  std::vector<std::shared_ptr<Job>> jobs;
  for (int32_t id = 0; id < 10; ++id) {
    jobs.push_back(make_job(id, 3));
    batcher->submit(jobs.back());
  }
  batcher->stop();
  for (int32_t id = 0; id < 10; ++id) expect_answered(*jobs[static_cast<std::size_t>(id)], id);
  batcher.reset();
}

}  // namespace
}  // namespace il::server
