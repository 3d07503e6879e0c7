#include "runtime/diffusion_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace il::runtime {

DiffusionCacheLayout size_diffusion_cache(models::BuiltModel& model, std::size_t tokens, std::size_t page_size,
                                          std::size_t max_batch_tokens) {
  check(model.diffusion.has_value(), "this model is not a block-diffusion model");
  check(page_size > 0 && tokens >= page_size, "KV cache: ", tokens, " tokens do not make one page of ", page_size);
  DiffusionCacheLayout layout{page_size, tokens / page_size};
  for (plan::BufferId b : model.diffusion->kv_cache) model.plan.set_fixed_rows(b, layout.pages * page_size);
  model.plan.set_fixed_rows(model.diffusion->sc_logits, max_batch_tokens);
  return layout;
}

DiffusionRunner::DiffusionRunner(const models::BuiltModel& model, plan::Executor& exec, DiffusionCacheLayout layout,
                                 std::size_t max_batch_tokens)
    : spec_(*model.diffusion), model_(model), exec_(exec), layout_(layout), max_tokens_(max_batch_tokens) {
  check(max_batch_tokens >= spec_.canvas_length, "a batch of ", max_batch_tokens,
        " tokens cannot hold one canvas of ", spec_.canvas_length);
  for (std::size_t p = layout.pages; p > 0; --p) free_pages_.push_back(static_cast<int32_t>(p - 1));
}

bool DiffusionRunner::reserve(Cache& c, std::size_t entries) {
  const std::size_t need = pages_for(entries);
  if (need <= c.pages.size()) return true;
  const std::size_t more = need - c.pages.size();
  if (more > free_pages_.size()) return false;
  for (std::size_t i = 0; i < more; ++i) {
    c.pages.push_back(free_pages_.back());
    free_pages_.pop_back();
  }
  return true;
}

void DiffusionRunner::release(Cache& c) {
  free_pages_.insert(free_pages_.end(), c.pages.rbegin(), c.pages.rend());
  c.pages.clear();
  c.committed = 0;
}

int32_t DiffusionRunner::row_of(const Cache& c, std::size_t index) const {
  const std::size_t P = layout_.page_size;
  check(index / P < c.pages.size(), "KV cache: entry ", index, " lies past the ", c.pages.size(),
        " pages the sequence reserved");
  return c.pages[index / P] * static_cast<int32_t>(P) + static_cast<int32_t>(index % P);
}

void DiffusionRunner::fill_pages(plan::Batch& b, const std::vector<const Cache*>& seqs) const {
  b.kv_page_size = layout_.page_size;
  b.kv_page_starts.assign(1, 0);
  for (const Cache* c : seqs) {
    b.kv_pages.insert(b.kv_pages.end(), c->pages.begin(), c->pages.end());
    b.kv_page_starts.push_back(static_cast<int32_t>(b.kv_pages.size()));
  }
}

void DiffusionRunner::encode(Cache& c, std::span<const int32_t> ids) {
  last_rows_ = 0;  // the encode batch replaces the canvas forward's rows
  // Positions are the cache indices (no offset): the prompt at 0 … P − 1, block k after it.
  for (std::size_t done = 0; done < ids.size();) {
    const std::size_t n = std::min(max_tokens_, ids.size() - done);
    plan::Batch b;
    b.tokens.assign(ids.begin() + static_cast<std::ptrdiff_t>(done), ids.begin() + static_cast<std::ptrdiff_t>(done + n));
    b.seq_starts = {0, static_cast<int32_t>(n)};
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t index = c.committed + i;
      b.positions.push_back(static_cast<int32_t>(index));
      b.cache_rows.push_back(row_of(c, index));
      b.cache_lengths.push_back(static_cast<int32_t>(index + 1));  // causal: itself and what precedes it
    }
    fill_pages(b, {&c});
    exec_.set_batch(b);
    exec_.run("encode");
    c.committed += n;
    done += n;
  }
}

void DiffusionRunner::forward(const std::vector<Cache*>& seqs, std::span<const int32_t> canvases,
                              const std::string& program) {
  const std::size_t C = spec_.canvas_length, T = seqs.size() * C;
  check(canvases.size() == T, "canvas forward: ", canvases.size(), " ids for ", seqs.size(), " canvases of ", C);
  check(T <= max_tokens_, "canvas forward: ", seqs.size(), " canvases of ", C, " tokens exceed the batch of ",
        max_tokens_);
  plan::Batch b;
  b.tokens.assign(canvases.begin(), canvases.end());
  std::vector<const Cache*> view;
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    const Cache& c = *seqs[s];
    view.push_back(&c);
    b.seq_starts.push_back(static_cast<int32_t>(s * C));
    for (std::size_t i = 0; i < C; ++i) {
      const std::size_t index = c.committed + i;
      b.positions.push_back(static_cast<int32_t>(index));
      b.cache_rows.push_back(row_of(c, index));
      // Bidirectional over the cache and the whole canvas; sliding layers from the canvas's
      // first entry back.
      b.cache_lengths.push_back(static_cast<int32_t>(c.committed + C));
      b.window_anchors.push_back(static_cast<int32_t>(c.committed));
    }
  }
  b.seq_starts.push_back(static_cast<int32_t>(T));
  fill_pages(b, view);
  exec_.set_batch(b);
  exec_.run(program);
  last_rows_ = T;
}

void DiffusionRunner::sample(const std::vector<float>& temperature, const std::vector<double>& uniform,
                             std::vector<ops::RowDraw>& out) {
  check(last_rows_ > 0, "canvas sample: no forward to sample from");
  out.resize(last_rows_);
  exec_.sample_rows(model_.plan.output("canvas_logits"), model_.plan.whole(spec_.sc_logits), temperature, uniform,
                    out.data());
}

void DiffusionRunner::clear_sc(std::size_t slot) {
  const std::size_t C = spec_.canvas_length;
  exec_.fill_rows(model_.plan.whole(spec_.sc_logits), slot * C, C, -std::numeric_limits<float>::infinity());
}

void DiffusionRunner::move_sc(std::size_t from, std::size_t to) {
  const std::size_t C = spec_.canvas_length;
  exec_.copy_rows(model_.plan.whole(spec_.sc_logits), from * C, to * C, C);
}

void DiffusionRunner::canvas(const std::vector<Cache*>& seqs, std::span<const int32_t> canvases,
                             std::span<const float> sc, std::vector<float>& logits, const std::string& program) {
  const std::size_t V = spec_.vocab, T = seqs.size() * spec_.canvas_length;
  check(sc.empty() || sc.size() == T * V, "canvas forward: self-conditioning of ", sc.size(), " values for ", T,
        " rows of ", V);
  check(T <= max_tokens_, "canvas forward: ", T, " canvas rows exceed the batch of ", max_tokens_);
  if (sc.empty()) {
    exec_.fill_rows(model_.plan.whole(spec_.sc_logits), 0, T, -std::numeric_limits<float>::infinity());
  } else {
    exec_.write(model_.plan.whole(spec_.sc_logits), sc.data(), T);
  }
  forward(seqs, canvases, program);
  logits.resize(T * V);
  exec_.read(model_.plan.output("canvas_logits"), logits.data());
}

}  // namespace il::runtime
