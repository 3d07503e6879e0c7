// What a backend offers the runtime: take a batch, run named programs of a plan over it, read
// named outputs back. One executor per loaded plan; not thread-safe (the runtime serialises).
// A backend whose device runs several small passes faster side by side than one after another
// offers more lanes of the same plan (another_lane): each its own executor, used by one thread
// at a time, sharing the first one's weights.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/canvas_sample.h"
#include "plan/plan.h"

namespace il::plan {

class Executor {
 public:
  virtual ~Executor() = default;
  // Largest batch (in tokens) the scratch was sized for.
  virtual std::size_t max_tokens() const = 0;
  // Makes `batch` current (uploads ids, type ids, sequence offsets). The batch must fit.
  virtual void set_batch(const Batch& batch) = 0;
  virtual void run(const std::string& program) = 0;
  // Copies the current rows of `view` (T or B rows, view.cols wide) into dst, densely packed;
  // an int32 buffer's values are converted to float.
  virtual void read(const View& view, float* dst) = 0;
  // For each current row of `view` (the rows read() would give), the index of its first largest
  // value (ops/logits.h's row argmax: the host sampler's greedy scan) into dst: greedy decoding
  // takes one int per sequence off the device instead of its row of logits.
  virtual void argmax_rows(const View& view, int32_t* dst) = 0;
  // Copies `rows` dense rows of view.cols values from src into the first rows of `view`, a view
  // of a persistent buffer (converted to its element type): inputs that outlive a batch, such as
  // DiffusionGemma's self-conditioning logits.
  virtual void write(const View& view, const float* src, std::size_t rows) = 0;
  // Rows [first, first + count) of a persistent f32 buffer's view set to `value`, or copied from
  // rows [from, from + count) of the same view (the two ranges must not overlap): the
  // self-conditioning rows of a canvas that has none, or that moved in the batch.
  virtual void fill_rows(const View& view, std::size_t first, std::size_t count, float value) = 0;
  virtual void copy_rows(const View& view, std::size_t from, std::size_t to, std::size_t count) = 0;
  // DiffusionGemma's sampler rows (ops/canvas_sample.h) where the logits are: for each of the
  // current batch's rows r of `logits` (a token-row f32 buffer), the row divided by temperature[r]
  // into row r of `processed` (a persistent f32 buffer: the next forward's self-conditioning
  // input), then its entropy, first argmax and the inverse-CDF draw of uniform[r] into out[r]
  // (host memory). Synchronises like read().
  virtual void sample_rows(const View& logits, const View& processed, const std::vector<float>& temperature,
                           const std::vector<double>& uniform, ops::RowDraw* out) = 0;
  virtual std::string backend_name() const = 0;
  // The precision the ops compute in: "f32", "f16" or "bf16" (CUDA low-precision modes).
  virtual std::string compute_dtype() const { return "f32"; }
  // Another executor of the same plan and scratch size over the same weights (not copied), for
  // passes in flight beside this one's; null where the backend has no use for one (the CPU's
  // passes already spread over every core). The plan must outlive every lane.
  virtual std::unique_ptr<Executor> another_lane() { return nullptr; }
  // Replays captured as CUDA graphs so far (0 where there are none).
  virtual std::size_t captured_graphs() const { return 0; }
  // The device's cumulative energy counter in joules, where the backend can read one (NVIDIA
  // GPUs, through the driver); nothing elsewhere. A difference over a span of work is its energy.
  virtual std::optional<double> energy_joules() { return std::nullopt; }
  // Late interaction over the current batch (ops/maxsim.h): for each (query, document) pair of
  // its sequences in `pairs` ([n, 2], flattened), Σ over the query's rows of the largest dot
  // product with a document row of `tokens` whose `keep` byte (one per token of the batch) is not
  // 0, into scores[n] (host memory). Computed where the rows are; synchronises like read().
  virtual void maxsim(const View& tokens, const std::vector<int32_t>& pairs, const std::vector<uint8_t>& keep,
                      float* scores) = 0;
};

}  // namespace il::plan
