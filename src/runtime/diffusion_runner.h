// The forwards of a block-diffusion model (models/model.h, DiffusionSpec) over a paged KV cache:
// encode a sequence's tokens into its cache, and run denoising forwards of several sequences'
// canvases together. The sampler loop (runtime/diffusion_generator.h) is built on these.
//
// KV cache: per layer a persistent buffer of pages × page_size rows, as the autoregressive
// generator's. A sequence reserves the pages for its prompt plus every block it may commit when
// it is admitted; a canvas's own keys and values go to the rows after the committed entries (the
// entries the block takes once committed), so a forward never needs a page it does not hold.
// Sliding layers keep every entry and read a window of them (CachedAttentionStep::window).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/model.h"
#include "plan/executor.h"

namespace il::runtime {

struct DiffusionCacheLayout {
  std::size_t page_size = 0;
  std::size_t pages = 0;
};

// Sizes the plan's cache buffers for `tokens` entries (pages of page_size) and the
// self-conditioning rows for batches of max_batch_tokens; call before building the executor.
DiffusionCacheLayout size_diffusion_cache(models::BuiltModel& model, std::size_t tokens, std::size_t page_size,
                                          std::size_t max_batch_tokens);

class DiffusionRunner {
 public:
  DiffusionRunner(const models::BuiltModel& model, plan::Executor& exec, DiffusionCacheLayout layout,
                  std::size_t max_batch_tokens);

  // One sequence's cache: its pages and how many entries are committed.
  struct Cache {
    std::vector<int32_t> pages;
    std::size_t committed = 0;
  };
  std::size_t free_pages() const { return free_pages_.size(); }
  std::size_t total_pages() const { return layout_.pages; }
  std::size_t page_size() const { return layout_.page_size; }
  std::size_t pages_for(std::size_t entries) const { return (entries + layout_.page_size - 1) / layout_.page_size; }
  // Reserves room for `entries` cache entries; false (nothing taken) when the pages are not free.
  bool reserve(Cache& c, std::size_t entries);
  void release(Cache& c);

  // Appends `ids` to the sequence's cache at positions committed, committed + 1, … (in batches of
  // at most max_batch_tokens).
  void encode(Cache& c, std::span<const int32_t> ids);
  // One denoising forward of each sequence's canvas (canvas_length ids each, at positions
  // committed … committed + C − 1). Sequence k's self-conditioning input is what canvas slot k's
  // rows of the self-conditioning buffer hold: the processed logits sample() left there, or
  // none after clear_sc(k). `program`: "canvas", or a prefix of it a test added to the plan.
  void forward(const std::vector<Cache*>& seqs, std::span<const int32_t> canvases,
               const std::string& program = "canvas");
  // The sampler's rows over the last forward (ops/canvas_sample.h): each row's logits divided by
  // its temperature into the same row of the self-conditioning buffer (slot k's for sequence
  // k's next forward), its entropy, argmax and inverse-CDF draw of its uniform. Only `out` comes
  // back to the host.
  void sample(const std::vector<float>& temperature, const std::vector<double>& uniform,
              std::vector<ops::RowDraw>& out);
  // Canvas slot `slot` gets no self-conditioning (−inf rows), or slot `from`'s rows.
  void clear_sc(std::size_t slot);
  void move_sc(std::size_t from, std::size_t to);
  // The check form: self-conditioning rows `sc` ([Σ C, vocab], −inf rows for none; empty: none
  // for any) written from the host, one forward, the softcapped logits [Σ C, vocab] read back.
  void canvas(const std::vector<Cache*>& seqs, std::span<const int32_t> canvases, std::span<const float> sc,
              std::vector<float>& logits, const std::string& program = "canvas");
  // Canvases one forward holds (its slots).
  std::size_t slots() const { return max_tokens_ / spec_.canvas_length; }

  std::size_t canvas_length() const { return spec_.canvas_length; }
  std::size_t vocab() const { return spec_.vocab; }
  std::size_t max_batch_tokens() const { return max_tokens_; }

 private:
  int32_t row_of(const Cache& c, std::size_t index) const;
  void fill_pages(plan::Batch& b, const std::vector<const Cache*>& seqs) const;

  const models::DiffusionSpec& spec_;
  const models::BuiltModel& model_;
  plan::Executor& exec_;
  DiffusionCacheLayout layout_;
  std::size_t max_tokens_;
  std::vector<int32_t> free_pages_;
  std::size_t last_rows_ = 0;  // the canvas rows of the last forward (0: none since, or an encode)
};

}  // namespace il::runtime
