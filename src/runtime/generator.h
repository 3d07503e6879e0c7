// The generation loop over a generating model's plan (models/model.h, GenerationSpec): prefill
// of new prompts (their images through the vision program first), then one decode step at a time
// for every running sequence, sequences joining and leaving between steps.
//
// KV cache: paged. Each layer's cache is one persistent buffer of pages × page_size rows; a
// sequence holds a list of pages, so sequences of any lengths share one budget without a
// per-sequence maximum, and the attention reads a sequence's entries through its page list.
// A sequence reserves the pages for its prompt plus its max_new_tokens when it is admitted: it
// can then never run out mid-generation (no preemption needed); the cost is pages reserved but
// unused by sequences that stop early, released as they finish. Admission is first come, first
// served, with backfilling (admit()): a later request may start before an older one that waits
// for pages when that cannot delay the older one past the step by which the running sequences
// are sure to have freed its pages.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inferencelayer/generation.h"
#include "models/model.h"
#include "plan/executor.h"
#include "runtime/detokenizer.h"
#include "runtime/sampling.h"
#include "text/tokenizer.h"

namespace il::runtime {

struct KvCacheLayout {
  std::size_t page_size = 0;  // rows (tokens) per page
  std::size_t pages = 0;
};

// The layout for a budget of `tokens` cache entries (pages of page_size), and the plan's cache
// buffers sized to it; call before building the executor.
KvCacheLayout size_kv_cache(models::BuiltModel& model, std::size_t tokens, std::size_t page_size,
                            std::size_t max_batch_tokens);

class Generator {
 public:
  // `tokenizer` (may be null) decodes streamed text and stop strings.
  // `prefill_per_step` (0: no bound) caps the prompt tokens plus image patches one step prefills
  // while other sequences are decoding: each step's prefill (and vision) then delays the running
  // sequences' next token by a bounded amount (their inter-token latency), at some cost in
  // throughput. A prompt that fits the budget but not what is left of it waits for the next step
  // (chunks cost more than one prefill); one larger than the whole budget is prefilled in chunks
  // (chunked prefill): its first chunk, what is left of the budget, with the newcomers, the next ones in later steps beside the decoding
  // tokens, each attending to the chunks before it through the KV cache; the first token comes
  // from the last chunk. A prompt's images and the tokens up to its last image placeholder are
  // never split (the vision rows are injected in one prefill), so such a head larger than the
  // budget runs whole when nothing else prefills that step. With nothing decoding, a step
  // prefills whatever fits one batch.
  Generator(const models::BuiltModel& model, plan::Executor& exec, KvCacheLayout layout, std::size_t max_batch_tokens,
            const text::Tokenizer* tokenizer, std::size_t prefill_per_step = 0);

  using Id = std::size_t;
  // The checks submit makes (ids, images, options, whether it can ever fit), alone.
  void validate(const GenerationRequest& r) const;
  // Queues a request (checked now: ids, images, options, whether it can ever fit). Throws
  // il::Error naming the problem.
  Id submit(GenerationRequest request);

  struct Event {
    Id id = 0;
    int32_t token = 0;
    std::string text;  // what the token completes of the decoded output
    bool finished = false;
  };
  // Admits what fits (vision and prefill for the new prompts) and runs one decode step for the
  // sequences already running. Returns the tokens produced, in sequence order.
  std::vector<Event> step();
  bool idle() const { return queue_.empty() && running_.empty(); }
  // A finished request's result (once; the request is then forgotten).
  GenerationResult take_result(Id id);
  // Forgets a request wherever it is (queued, running, finished): its pages are free at once.
  // Unknown ids are ignored (it may have finished and been taken).
  void cancel(Id id);
  // Drops every request (after a failed step: the batch's state is unknown).
  void reset();
  GenerationLoad load() const;

  // Prefill alone: the logits of each prompt's last position (no token is generated).
  std::vector<std::vector<float>> prompt_logits(const std::vector<GenerationRequest>& requests);
  // The vision program's rows for these images, one matrix per image.
  std::vector<Matrix> vision_rows(const std::vector<PatchImage>& images);
  // View-vision models (DeepSeek-OCR): SAM's output per view (runtime/view_vision.h).
  std::vector<Matrix> sam_features(const std::vector<PatchImage>& pages);

 private:
  struct Sequence {
    Id id = 0;
    GenerationRequest request;
    std::vector<int32_t> history;  // prompt, then generated tokens
    std::vector<int32_t> pages;
    std::size_t cached = 0;        // cache entries written (below the prompt's length: prefilling in chunks)
    std::size_t first_chunk = 0;   // the prompt tokens its first prefill takes (admit)
    int32_t delta = 0;             // M-RoPE: decode positions are cache index + delta
    std::optional<TokenSampler> sampler;
    std::optional<Detokenizer> detok;
    std::string text;              // decoded output so far (stop strings)
    GenerationResult result;
    std::chrono::steady_clock::time_point start, first;
    bool done = false;
  };

  std::size_t pages_needed(const GenerationRequest& r) const;
  struct Reservation {
    std::size_t steps = 0;        // decode steps until the pages are sure to be free
    std::size_t spare_pages = 0;  // free then beyond the reserved request's need
  };
  Reservation reserve(std::size_t need) const;
  // Whether the sequence's prompt is still being prefilled (in chunks).
  static bool prefilling(const Sequence& s) { return s.cached < s.result.prompt_tokens; }
  // The shortest first chunk of the prompt: through its last image placeholder (1 without images).
  std::size_t unsplit_head(const GenerationRequest& r) const;
  // `budget`: the prompt tokens plus patches this step may still prefill (SIZE_MAX: no bound);
  // `chunked`: whether this step already prefills a chunk of a running sequence.
  std::vector<Sequence*> admit(bool backfill, std::size_t budget, bool chunked);
  void prefill(const std::vector<Sequence*>& group, bool sample, std::vector<Event>* events,
               std::vector<std::vector<float>>* logits_out);
  void run_vision(const std::vector<const PatchImage*>& images);
  // One decode step for the sequences generating, with the next chunk of the prompts being
  // prefilled in chunks (oldest first, within `budget`, which it sets when others decode and
  // lowers by the chunks' tokens). Returns the chunks' tokens.
  std::size_t decode(std::vector<Event>& events, std::size_t& budget);
  // The logits program's rows give takers[i] its next token (null: that row gives none now);
  // with `sample` each is accepted, with logits_out each taker's row is kept there too.
  void take_tokens(const std::vector<Sequence*>& takers, bool sample, std::vector<Event>* events,
                   std::vector<std::vector<float>>* logits_out);
  // Appends the token to the sequence and says whether it finished.
  void accept(Sequence& s, int32_t token, std::vector<Event>* events);
  // The sequence's sampler's next token from its logits row, its guarded picks counted.
  int32_t pick(Sequence& s, std::span<float> logits);
  void release(Sequence& s);
  int32_t row_of(const Sequence& s, std::size_t index) const;

  const models::BuiltModel& model_;
  const models::GenerationSpec& spec_;
  plan::Executor& exec_;
  KvCacheLayout layout_;
  std::size_t max_tokens_;
  std::size_t prefill_per_step_;
  const text::Tokenizer* tokenizer_;
  std::vector<int32_t> free_pages_;
  // Owned by pointer: admit() hands out pointers that must survive the containers growing.
  std::deque<std::unique_ptr<Sequence>> queue_;
  std::vector<std::unique_ptr<Sequence>> running_;
  std::map<Id, GenerationResult> finished_;
  Id next_id_ = 0;
  std::vector<float> logits_;
  std::vector<int32_t> argmax_;
  std::uint64_t guarded_tokens_ = 0;  // GenerationLoad::guarded_tokens
  std::uint64_t backfilled_ = 0;      // GenerationLoad::backfilled
};

}  // namespace il::runtime
