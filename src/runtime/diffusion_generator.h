// The block-diffusion generation loop (docs/diffusion-gemma.md §6) over DiffusionRunner: each
// request's prompt is encoded into its cache, then block after block a canvas of uniform random
// ids is denoised step by step (temperature schedule, per-position draws, entropy-bounded
// acceptance, renoising, the stability-and-confidence stop) and its argmax committed, encoded,
// and streamed. Several requests are denoised together: one canvas forward holds every running
// request's canvas. The same incremental interface as runtime::Generator (submit, step,
// take_result, cancel), so the engine and the server drive either.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferencelayer/generation.h"
#include "models/diffusion_gemma_config.h"
#include "runtime/detokenizer.h"
#include "runtime/diffusion_runner.h"
#include "runtime/diffusion_sampler.h"
#include "text/tokenizer.h"

namespace il::runtime {

// How many canvases a prompt of `prompt` tokens gets, as transformers' block-diffusion generate
// counts them: ceil(max_new_tokens / C), except that a max_length in the settings (the whole
// sequence's cap) replaces max_new_tokens by max_length − prompt while max_new_tokens holds its
// default 256 (_prepare_generated_length), and otherwise stops generation after the first
// canvas that brings the sequence to max_length (MaxLengthCriteria, checked after each canvas).
// 0 when the prompt alone reaches max_length under the default. One difference: transformers
// cannot tell a request's own 256 from the default; here a request's count is never replaced
// (so a server's limit on it holds).
std::size_t diffusion_blocks(const models::DiffusionSettings& s, std::size_t prompt, std::size_t C);

// The folder's settings overridden by a request's (DiffusionOptions; stop ids from its
// SamplingOptions), checked. Throws il::Error naming the setting.
models::DiffusionSettings resolve_diffusion_settings(const models::DiffusionSettings& folder,
                                                     const GenerationRequest& r);

class DiffusionGenerator {
 public:
  DiffusionGenerator(DiffusionRunner& runner, const models::DiffusionSettings& defaults, std::size_t max_positions,
                     const text::Tokenizer* tokenizer);

  using Id = std::size_t;
  void validate(const GenerationRequest& r) const;
  // `draws` replaces the request's seeded draws (tests inject recorded ones); null: seeded.
  Id submit(GenerationRequest request, std::unique_ptr<DiffusionDraws> draws = nullptr);

  struct Event {
    Id id = 0;
    int32_t token = 0;
    std::string text;
    bool finished = false;
  };
  // Admits what fits (encoding its prompt), runs one denoising step of every running canvas
  // together, and commits the blocks that finished denoising. Returns the committed tokens.
  // At most one forward's canvases run (DiffusionRunner::slots()); later requests wait: each
  // running canvas keeps its processed logits on the device, in its slot.
  std::vector<Event> step();
  bool idle() const { return queue_.empty() && running_.empty(); }
  GenerationResult take_result(Id id);
  void cancel(Id id);
  void reset();
  GenerationLoad load() const;

  // What each denoising step decided, per request (tests compare it with transformers' trace).
  struct StepTrace {
    std::size_t block = 0;
    int step = 0;  // n, counting down
    float temperature = 0.0f;
    std::vector<int32_t> canvas_in, argmax, sampled, canvas_out;
    std::vector<std::uint8_t> accepted;
    float mean_entropy = 0.0f;
    bool finished = false;
  };
  void set_trace(std::function<void(Id, const StepTrace&)> trace) { trace_ = std::move(trace); }

 private:
  struct Sequence {
    Id id = 0;
    GenerationRequest request;
    models::DiffusionSettings settings;
    std::unique_ptr<DiffusionDraws> draws;
    DiffusionRunner::Cache cache;
    std::size_t blocks = 0, block = 0;
    int n = 0;                          // the step to run next, N … 1
    std::vector<int32_t> canvas, argmax;
    // The canvas slot whose self-conditioning rows hold its previous step's processed logits
    // (−1: none, the block's first step). Slots only move down, as sequences before it leave.
    std::ptrdiff_t sc_slot = -1;
    std::optional<StopRule> stop;
    std::optional<Detokenizer> detok;
    std::string text;  // what was committed, as text (kept only to find stop strings)
    GenerationResult result;
    std::chrono::steady_clock::time_point start, first;
    bool done = false;
  };

  std::size_t entries_needed(const GenerationRequest& r, const models::DiffusionSettings& s) const;
  void admit();
  void start_block(Sequence& s);
  float temperature(const Sequence& s) const;
  // One step's decisions for a sequence from its canvas's rows; true when the block is done.
  bool denoise(Sequence& s, std::span<const ops::RowDraw> rows);
  void commit(Sequence& s, std::vector<Event>& events);

  DiffusionRunner& runner_;
  models::DiffusionSettings defaults_;
  std::size_t max_positions_;
  const text::Tokenizer* tokenizer_;
  std::deque<std::unique_ptr<Sequence>> queue_;
  std::vector<std::unique_ptr<Sequence>> running_;
  std::map<Id, GenerationResult> finished_;
  Id next_id_ = 0;
  std::vector<ops::RowDraw> rows_;  // the last forward's sampler rows
  std::function<void(Id, const StepTrace&)> trace_;
};

}  // namespace il::runtime
