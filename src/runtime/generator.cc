#include "runtime/generator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "runtime/merge_window_vision_batch.h"
#include "runtime/view_vision.h"

namespace il::runtime {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

}  // namespace

KvCacheLayout size_kv_cache(models::BuiltModel& model, std::size_t tokens, std::size_t page_size,
                            std::size_t max_batch_tokens) {
  check(model.generation.has_value(), "this model does not generate");
  check(page_size > 0 && tokens >= page_size, "KV cache: ", tokens, " tokens do not make one page of ", page_size);
  KvCacheLayout layout{page_size, tokens / page_size};
  for (plan::BufferId b : model.generation->kv_cache) model.plan.set_fixed_rows(b, layout.pages * page_size);
  // The vision program's output: the merged rows of the largest vision batch (its launched rows
  // may be rounded up: the bucket never passes max_batch_tokens).
  if (model.generation->image_rows >= 0)
    model.plan.set_fixed_rows(model.generation->image_rows,
                              ceil_div(max_batch_tokens, model.generation->image_row_divisor));
  // View vision (DeepSeek-OCR): each stage's rows, for the largest batch of views.
  if (const auto& v = model.generation->views)
    for (plan::BufferId b : {v->neck, v->down1, v->down2}) model.plan.set_fixed_rows(b, max_batch_tokens);
  return layout;
}

Generator::Generator(const models::BuiltModel& model, plan::Executor& exec, KvCacheLayout layout,
                     std::size_t max_batch_tokens, const text::Tokenizer* tokenizer, std::size_t prefill_per_step)
    : model_(model), spec_(*model.generation), exec_(exec), layout_(layout), max_tokens_(max_batch_tokens),
      prefill_per_step_(prefill_per_step), tokenizer_(tokenizer) {
  free_pages_.reserve(layout.pages);
  // Handed out from the back: lowest page numbers first.
  for (std::size_t p = layout.pages; p > 0; --p) free_pages_.push_back(static_cast<int32_t>(p - 1));
}

std::size_t Generator::pages_needed(const GenerationRequest& r) const {
  return ceil_div(r.input_ids.size() + r.options.max_new_tokens, layout_.page_size);
}

void Generator::validate(const GenerationRequest& r) const {
  check(!r.input_ids.empty(), "the prompt is empty");
  const int vocab = model_.limits.vocab;
  for (std::size_t i = 0; i < r.input_ids.size(); ++i)
    check(r.input_ids[i] >= 0 && r.input_ids[i] < vocab, "input_ids[", i, "] = ", r.input_ids[i],
          " is outside the vocabulary of ", vocab);
  check_sampling_options(r.options);
  const std::size_t total = r.input_ids.size() + r.options.max_new_tokens;
  check(spec_.max_positions == 0 || total <= spec_.max_positions, "a prompt of ", r.input_ids.size(),
        " tokens and max_new_tokens ", r.options.max_new_tokens, " pass the model's context of ", spec_.max_positions,
        " tokens");
  check(r.input_ids.size() <= max_tokens_, "a prompt of ", r.input_ids.size(), " tokens does not fit one batch of ",
        max_tokens_, " tokens (raise the batch token budget)");
  check(pages_needed(r) <= layout_.pages, "a prompt of ", r.input_ids.size(), " tokens and max_new_tokens ",
        r.options.max_new_tokens, " need ", pages_needed(r) * layout_.page_size, " KV cache entries; the cache holds ",
        layout_.pages * layout_.page_size);
  if (spec_.views) {
    // Each page fills one run of image placeholders with its views' query rows and a separator.
    std::size_t rows = 0, placeholders = 0;
    for (std::size_t i = 0; i < r.images.size(); ++i) rows += view_page_rows(*spec_.views, r.images[i], max_tokens_);
    for (int32_t id : r.input_ids) placeholders += id == spec_.image_token ? 1 : 0;
    check(rows == placeholders, "the prompt holds ", placeholders, " image placeholders (id ", spec_.image_token,
          ") but its ", r.images.size(), " image(s) give ", rows, " rows");
    check(rows <= max_tokens_, "the prompt's images give ", rows, " rows, more than one batch of ", max_tokens_,
          " tokens");
    return;
  }
  std::size_t patches = 0;
  for (std::size_t i = 0; i < r.images.size(); ++i) {
    const PatchImage& im = r.images[i];
    check(spec_.image_rows >= 0, "this model takes no images");
    const auto [t, h, w] = im.grid_thw;
    check(t >= 1 && h >= 1 && w >= 1, "image ", i, ": grid [", t, ", ", h, ", ", w, "] must be positive");
    const std::size_t n = static_cast<std::size_t>(t) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
    check(im.patch_dim == spec_.patch_dim, "image ", i, ": patch rows of ", im.patch_dim, " values; the model takes ",
          spec_.patch_dim);
    check(im.rows.size() == n * im.patch_dim, "image ", i, ": ", im.rows.size(), " values for a grid of ", n,
          " patches of ", im.patch_dim);
    for (std::size_t k = 0; k < im.rows.size(); ++k)
      check(std::isfinite(im.rows[k]), "image ", i, ": pixel value ", k, " (patch ", k / im.patch_dim,
            ") is not finite");
    patches += n;
  }
  check(patches <= max_tokens_, "the prompt's images hold ", patches, " patches, more than one batch of ",
        max_tokens_, " tokens");
  if (spec_.position_axes == 3) {
    std::vector<std::array<int, 3>> grids;
    for (const PatchImage& im : r.images) grids.push_back(im.grid_thw);
    (void)spec_.prompt_positions(r.input_ids, grids);  // throws on a mismatch
  } else {
    check(r.images.empty(), "this model takes no images");
  }
}

Generator::Id Generator::submit(GenerationRequest request) {
  validate(request);
  auto s = std::make_unique<Sequence>();
  s->id = next_id_++;
  s->request = std::move(request);
  s->history = s->request.input_ids;
  s->result.prompt_tokens = s->history.size();
  s->start = std::chrono::steady_clock::now();
  queue_.push_back(std::move(s));
  return queue_.back()->id;
}

int32_t Generator::row_of(const Sequence& s, std::size_t index) const {
  const std::size_t P = layout_.page_size;
  return static_cast<int32_t>(static_cast<std::size_t>(s.pages.at(index / P)) * P + index % P);
}

// The steps after which the running sequences are sure to have freed enough pages for a request
// needing `need` (each ends at the latest when it reaches its max_new_tokens), and the pages then
// free beyond `need`: the oldest waiting request's reservation, which backfilling respects.
Generator::Reservation Generator::reserve(std::size_t need) const {
  std::vector<std::pair<std::size_t, std::size_t>> ends;  // (steps left at most, pages held)
  // A prompt still prefilling in chunks adds the steps its rest and the rest of those before it
  // (served oldest first) take at the fewest tokens a step gives them.
  const std::size_t per_step =
      prefill_per_step_ > 0 ? std::max<std::size_t>(1, std::min(prefill_per_step_, max_tokens_ - std::min(max_tokens_ - 1, running_.size())))
                            : max_tokens_;
  std::size_t unprefilled = 0;
  for (const auto& r : running_) {
    const std::size_t made = r->result.tokens.size(), most = r->request.options.max_new_tokens;
    std::size_t steps = r->done || made >= most ? 0 : most - made;
    if (!r->done && prefilling(*r)) {
      unprefilled += r->result.prompt_tokens - r->cached;
      steps += ceil_div(unprefilled, per_step);
    }
    ends.emplace_back(steps, r->pages.size());
  }
  std::sort(ends.begin(), ends.end());
  Reservation res;
  std::size_t free = free_pages_.size();
  for (const auto& [steps, pages] : ends) {
    if (free >= need) break;
    free += pages;
    res.steps = steps;
  }
  res.spare_pages = free > need ? free - need : 0;
  return res;
}

// From the queue, in order, as many requests as fit one prefill batch, one vision batch, the free
// pages and, while others decode, the per-step prefill budget. When the oldest waiting request is
// short of pages, later ones may start before it (backfilling, unless `backfill` is false) if
// they fit the free pages now and either end (at their max_new_tokens) before its reservation's
// step or use only pages its reservation leaves spare, and leave a decode slot. So short requests
// do not wait behind a long one for no reason, and the long one starts no later than its
// reservation's step: the step by which the running sequences are sure to have freed its pages
// (recomputed every step, it only comes earlier). That is a worst-case bound: when sequences stop
// early on an end id, strict first-come-first-served could have started it sooner.
std::size_t Generator::unsplit_head(const GenerationRequest& r) const {
  if (r.images.empty()) return 1;
  std::size_t head = 1;
  for (std::size_t i = 0; i < r.input_ids.size(); ++i)
    if (r.input_ids[i] == spec_.image_token) head = i + 1;
  return head;
}

std::vector<Generator::Sequence*> Generator::admit(bool backfill, std::size_t budget, bool chunked) {
  std::vector<Sequence*> group;
  std::size_t tokens = 0, patches = 0;
  const bool others_decoding = std::any_of(running_.begin(), running_.end(), [](const auto& r) { return !r->done; });
  const bool bounded = budget != std::numeric_limits<std::size_t>::max() && others_decoding;
  std::optional<Reservation> oldest;  // set once the oldest waiting request is short of pages
  for (auto it = queue_.begin(); it != queue_.end();) {
    Sequence& s = **it;
    std::size_t p = 0;
    for (const PatchImage& im : s.request.images) p += im.rows.size() / im.patch_dim;
    // Within the budget: the whole prompt, which waits for a step with room for it when it fits
    // the budget (chunks cost more device time than one prefill: each chunk token reads its
    // prefix); a prompt larger than the whole budget starts with what is left of it (at least
    // its unsplit head, which runs alone over the budget when nothing else prefills this step).
    std::size_t first = s.history.size();
    if (bounded) {
      const std::size_t used = tokens + patches + p;
      const std::size_t room = used < budget ? budget - used : 0;
      if (first > room) {
        const std::size_t head = unsplit_head(s.request);
        const bool alone = group.empty() && !chunked;  // nothing else prefills this step
        if (first + p <= budget && !alone)
          break;
        if (room >= head)
          first = room;
        else if (alone)
          first = head;
        else
          break;
      }
    }
    // This step's batch is full: the rest wait for the next, in order. (A page's patches alone may
    // pass the batch: view vision groups its views into batches itself; validate() holds the rest.)
    if (tokens + first > max_tokens_ || (!group.empty() && patches + p > max_tokens_) ||
        running_.size() + 1 > max_tokens_)
      break;
    const std::size_t need = pages_needed(s.request);
    if (!oldest && need > free_pages_.size()) {
      if (!backfill) break;
      oldest = reserve(need);
      ++it;
      continue;
    }
    if (oldest) {
      // Only a whole prompt backfills: one split into chunks takes steps more than its
      // max_new_tokens, which the bound below does not count.
      const bool ends_first = s.request.options.max_new_tokens <= oldest->steps;
      if (need > free_pages_.size() || (!ends_first && need > oldest->spare_pages) ||
          running_.size() + 2 > max_tokens_ || first < s.history.size()) {
        ++it;
        continue;
      }
      if (!ends_first) oldest->spare_pages -= need;
      ++backfilled_;
    }
    tokens += first;
    patches += p;
    s.first_chunk = first;
    for (std::size_t i = 0; i < need; ++i) {
      s.pages.push_back(free_pages_.back());
      free_pages_.pop_back();
    }
    s.sampler.emplace(s.request.options);
    if (tokenizer_) s.detok.emplace(*tokenizer_);
    running_.push_back(std::move(*it));
    it = queue_.erase(it);
    group.push_back(running_.back().get());
  }
  return group;
}

void Generator::run_vision(const std::vector<const PatchImage*>& images) {
  if (spec_.views) {
    // The pages' rows back to back into the image buffer, in the order the prompts list them.
    const ViewVisionResult r = run_view_vision(*spec_.views, exec_, images);
    std::vector<float> all;
    for (const Matrix& m : r.pages) all.insert(all.end(), m.data.begin(), m.data.end());
    const plan::View view = model_.plan.whole(spec_.image_rows);
    exec_.write(view, all.data(), all.size() / view.cols);
    return;
  }
  // The images' patch rows back to back, one sequence per frame, (h, w) rotary positions.
  std::vector<float> rows;
  std::vector<std::array<int, 3>> grids;
  for (const PatchImage* im : images) {
    rows.insert(rows.end(), im->rows.begin(), im->rows.end());
    grids.push_back(im->grid_thw);
  }
  exec_.set_batch(make_merge_window_vision_batch(rows, spec_.patch_dim, grids, static_cast<int>(spec_.spatial_merge)));
  exec_.run("vision");
}

void Generator::prefill(const std::vector<Sequence*>& group, bool sample, std::vector<Event>* events,
                        std::vector<std::vector<float>>* logits_out) {
  // Images first: their rows land in the plan's image buffer, in the order the prompts list them.
  std::vector<const PatchImage*> images;
  for (Sequence* s : group)
    for (const PatchImage& im : s->request.images) images.push_back(&im);
  if (!images.empty()) run_vision(images);

  plan::Batch b;
  b.seq_starts.push_back(0);
  const bool mrope = spec_.position_axes == 3;
  std::vector<int32_t> axes[3];
  int32_t image_row = 0;
  for (Sequence* s : group) {
    // The prompt, or its first chunk (the rest follows in later steps' decode batches).
    const std::vector<int32_t>& prompt = s->history;
    const std::size_t n = s->first_chunk, whole = prompt.size();
    b.tokens.insert(b.tokens.end(), prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t i = 0; i < n; ++i) b.cache_rows.push_back(row_of(*s, i));
    if (mrope) {
      std::vector<std::array<int, 3>> grids;
      for (const PatchImage& im : s->request.images) grids.push_back(im.grid_thw);
      const models::PromptPositions p = spec_.prompt_positions(prompt, grids);
      for (std::size_t a = 0; a < 3; ++a)
        axes[a].insert(axes[a].end(), p.axes.begin() + static_cast<std::ptrdiff_t>(a * whole),
                       p.axes.begin() + static_cast<std::ptrdiff_t>(a * whole + n));
      s->delta = p.delta;
    } else {
      for (std::size_t i = 0; i < n; ++i) axes[0].push_back(static_cast<int32_t>(i));
    }
    if (spec_.image_rows >= 0)
      for (std::size_t i = 0; i < n; ++i)
        b.inject_rows.push_back(!images.empty() && prompt[i] == spec_.image_token ? image_row++ : -1);
    s->cached = n;
    b.seq_starts.push_back(static_cast<int32_t>(b.tokens.size()));
  }
  b.positions = axes[0];
  if (mrope)
    for (const auto& a : axes) b.rope_positions.insert(b.rope_positions.end(), a.begin(), a.end());
  exec_.set_batch(b);
  exec_.run("prefill");
  exec_.run("logits");
  std::vector<Sequence*> takers;  // a first chunk's sequence takes its first token with its last
  for (Sequence* s : group) takers.push_back(prefilling(*s) ? nullptr : s);
  take_tokens(takers, sample, events, logits_out);
  // The images are in the KV cache now: a page's patch rows (tens of MB) need not wait for its
  // last token.
  for (Sequence* s : group) std::vector<PatchImage>().swap(s->request.images);
}

std::size_t Generator::decode(std::vector<Event>& events, std::size_t& budget) {
  // The sequences generating (a token each), then the prompts prefilling in chunks, oldest first.
  std::vector<Sequence*> live, chunking;
  for (auto& s : running_) {
    if (s->done || s->cached == 0) continue;
    if (prefilling(*s))
      chunking.push_back(s.get());
    else if (!s->result.tokens.empty())
      live.push_back(s.get());
  }
  if (prefill_per_step_ > 0 && !live.empty()) budget = prefill_per_step_;
  std::vector<std::pair<Sequence*, std::size_t>> rows;  // (sequence, its tokens this step)
  for (Sequence* s : live) rows.emplace_back(s, 1);
  std::size_t width = live.size(), chunked = 0;
  for (Sequence* s : chunking) {
    const std::size_t n = std::min({s->result.prompt_tokens - s->cached, budget, max_tokens_ - width});
    if (n == 0) break;
    rows.emplace_back(s, n);
    width += n;
    chunked += n;
    if (budget != std::numeric_limits<std::size_t>::max()) budget -= n;
  }
  if (rows.empty()) return 0;
  plan::Batch b;
  b.seq_starts.push_back(0);
  b.kv_page_starts.push_back(0);
  b.kv_page_size = layout_.page_size;
  const bool mrope = spec_.position_axes == 3;
  for (const auto& [s, n] : rows) {
    // A chunk's tokens attend, as a decode token does, to the cache up to their own entries,
    // which the step writes before the attention reads them. A chunk lies past the prompt's last
    // image (admit keeps the head whole), where M-RoPE's positions run on by one on every axis,
    // as the generated tokens' do: cache index + delta.
    for (std::size_t index = s->cached; index < s->cached + n; ++index) {
      b.tokens.push_back(s->history[index]);
      b.cache_rows.push_back(row_of(*s, index));
      b.cache_lengths.push_back(static_cast<int32_t>(index + 1));
      b.positions.push_back(static_cast<int32_t>(index) + s->delta);
    }
    b.kv_pages.insert(b.kv_pages.end(), s->pages.begin(), s->pages.end());
    b.kv_page_starts.push_back(static_cast<int32_t>(b.kv_pages.size()));
    b.seq_starts.push_back(static_cast<int32_t>(b.tokens.size()));
    s->cached += n;
  }
  if (mrope)
    for (int a = 0; a < 3; ++a) b.rope_positions.insert(b.rope_positions.end(), b.positions.begin(), b.positions.end());
  if (spec_.image_rows >= 0) b.inject_rows.assign(b.tokens.size(), -1);
  exec_.set_batch(b);
  exec_.run("decode");
  exec_.run("logits");
  std::vector<Sequence*> takers;  // a sequence with more of its prompt to come takes none yet
  for (const auto& row : rows) takers.push_back(prefilling(*row.first) ? nullptr : row.first);
  take_tokens(takers, true, &events, nullptr);
  return chunked;
}

// The sampler's pick is a plain argmax for most greedy rows: those take it where the logits are
// (one int a row off the device: at 64 sequences of a 129,280-token vocabulary the logits were
// 16 MB to copy and scan on one host thread every step); the logits come back only when some
// row needs them (sampling, penalties, an n-gram the guard bans now, or the caller keeps them).
void Generator::take_tokens(const std::vector<Sequence*>& takers, bool sample, std::vector<Event>* events,
                            std::vector<std::vector<float>>* logits_out) {
  const plan::View view = model_.plan.output("logits");
  const std::size_t vocab = static_cast<std::size_t>(model_.limits.vocab);
  std::vector<uint8_t> plain(takers.size(), 0);
  bool any_plain = false, need_logits = logits_out != nullptr;
  for (std::size_t i = 0; i < takers.size(); ++i) {
    if (takers[i] == nullptr || !sample) continue;
    plain[i] = logits_out == nullptr && takers[i]->sampler->picks_plain_argmax(takers[i]->history);
    any_plain |= plain[i] != 0;
    need_logits |= plain[i] == 0;
  }
  if (any_plain) {
    argmax_.resize(takers.size());
    exec_.argmax_rows(view, argmax_.data());
  }
  if (need_logits) {
    logits_.resize(takers.size() * vocab);
    exec_.read(view, logits_.data());
  }
  for (std::size_t i = 0; i < takers.size(); ++i) {
    if (takers[i] == nullptr) continue;
    Sequence& s = *takers[i];
    if (plain[i]) {
      accept(s, argmax_[i], events);
      continue;
    }
    std::span<float> row(logits_.data() + i * vocab, vocab);
    if (logits_out) logits_out->emplace_back(row.begin(), row.end());
    if (sample) accept(s, pick(s, row), events);
  }
}

int32_t Generator::pick(Sequence& s, std::span<float> logits) {
  const std::size_t before = s.sampler->guarded();
  const int32_t token = s.sampler->pick(logits, s.history);
  guarded_tokens_ += s.sampler->guarded() - before;
  return token;
}

void Generator::accept(Sequence& s, int32_t token, std::vector<Event>* events) {
  const auto now = std::chrono::steady_clock::now();
  if (s.result.tokens.empty()) s.first = now;
  s.result.tokens.push_back(token);
  s.history.push_back(token);
  Event e;
  e.id = s.id;
  e.token = token;
  if (s.detok) e.text = s.detok->push(token);
  const std::vector<int32_t>& stops = s.request.options.stop_ids ? *s.request.options.stop_ids : spec_.end_ids;
  if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
    s.done = true;
    s.result.finish = FinishReason::kStopId;
  } else if (!s.request.options.stop_strings.empty()) {
    s.text += e.text;
    for (const std::string& stop : s.request.options.stop_strings)
      if (s.text.find(stop) != std::string::npos) {
        s.done = true;
        s.result.finish = FinishReason::kStopString;
      }
  }
  if (!s.done && s.result.tokens.size() >= s.request.options.max_new_tokens) {
    s.done = true;
    s.result.finish = FinishReason::kLength;
  }
  e.finished = s.done;
  if (s.done) {
    s.result.prefill_ms = ms_between(s.start, s.first);
    s.result.decode_ms = ms_between(s.first, now);
  }
  if (events) events->push_back(std::move(e));
}

void Generator::release(Sequence& s) {
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it) free_pages_.push_back(*it);
  s.pages.clear();
}

std::vector<Generator::Event> Generator::step() {
  std::vector<Event> events;
  // Decode first for the sequences already running, then admit: a new prompt's first token comes
  // from its prefill's logits.
  std::size_t budget = std::numeric_limits<std::size_t>::max();
  const bool chunked = decode(events, budget) > 0;
  const std::vector<Sequence*> group = admit(true, budget, chunked);
  if (!group.empty()) prefill(group, true, &events, nullptr);
  check(!group.empty() || !running_.empty() || queue_.empty(),
        "generation: the next request does not fit the free KV cache");
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->done) {
      release(**it);
      finished_[(*it)->id] = std::move((*it)->result);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return events;
}

GenerationResult Generator::take_result(Id id) {
  const auto it = finished_.find(id);
  check(it != finished_.end(), "generation: request ", id, " has not finished");
  GenerationResult r = std::move(it->second);
  finished_.erase(it);
  return r;
}

void Generator::cancel(Id id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if ((*it)->id == id) {
      queue_.erase(it);
      return;
    }
  for (auto it = running_.begin(); it != running_.end(); ++it)
    if ((*it)->id == id) {
      release(**it);
      running_.erase(it);
      return;
    }
  finished_.erase(id);
}

void Generator::reset() {
  queue_.clear();
  running_.clear();
  finished_.clear();
  free_pages_.clear();
  for (std::size_t p = layout_.pages; p > 0; --p) free_pages_.push_back(static_cast<int32_t>(p - 1));
}

GenerationLoad Generator::load() const {
  GenerationLoad l;
  l.running = running_.size();
  l.waiting = queue_.size();
  l.prefilling = static_cast<std::size_t>(
      std::count_if(running_.begin(), running_.end(), [](const auto& s) { return !s->done && prefilling(*s); }));
  l.kv_pages_total = layout_.pages;
  l.kv_pages_used = layout_.pages - free_pages_.size();
  l.kv_page_size = layout_.page_size;
  l.guarded_tokens = guarded_tokens_;
  l.backfilled = backfilled_;
  return l;
}

std::vector<std::vector<float>> Generator::prompt_logits(const std::vector<GenerationRequest>& requests) {
  check(idle(), "generation: prompt logits while requests run");
  std::vector<std::vector<float>> out;
  for (const GenerationRequest& r : requests) {
    GenerationRequest one = r;
    one.options.max_new_tokens = 1;
    submit(std::move(one));
  }
  while (!queue_.empty()) {
    // In request order: the rows go out as they are prefilled.
    const std::vector<Sequence*> group = admit(false, std::numeric_limits<std::size_t>::max(), false);
    check(!group.empty(), "generation: a prompt does not fit the KV cache");
    prefill(group, false, nullptr, &out);
    for (auto& s : running_) release(*s);
    running_.clear();
  }
  return out;
}

std::vector<Matrix> Generator::vision_rows(const std::vector<PatchImage>& images) {
  check(spec_.image_rows >= 0, "this model takes no images");
  if (spec_.views) {
    std::vector<const PatchImage*> pages;
    for (const PatchImage& im : images) pages.push_back(&im);
    return run_view_vision(*spec_.views, exec_, pages).pages;
  }
  std::vector<Matrix> out;
  const plan::View view = model_.plan.whole(spec_.image_rows);
  std::vector<float> all;
  for (std::size_t first = 0; first < images.size();) {
    std::vector<const PatchImage*> group;
    std::size_t patches = 0;
    while (first < images.size()) {
      const PatchImage& im = images[first];
      const auto [t, h, w] = im.grid_thw;
      check(im.patch_dim == spec_.patch_dim && t >= 1 && h >= 1 && w >= 1 &&
                im.rows.size() == static_cast<std::size_t>(t * h * w) * im.patch_dim,
            "image ", first, ": its rows do not match its grid and the model's patch size");
      const std::size_t n = static_cast<std::size_t>(t * h * w);
      check(n <= max_tokens_, "image ", first, ": ", n, " patches exceed one batch of ", max_tokens_, " tokens");
      if (!group.empty() && patches + n > max_tokens_) break;
      patches += n;
      group.push_back(&im);
      ++first;
    }
    run_vision(group);
    all.resize(static_cast<std::size_t>(model_.plan.buffers().at(static_cast<std::size_t>(spec_.image_rows)).fixed_rows) *
               view.cols);
    exec_.read(view, all.data());
    std::size_t row = 0;
    for (const PatchImage* im : group) {
      const std::size_t n = static_cast<std::size_t>(im->grid_thw[0] * im->grid_thw[1] * im->grid_thw[2]) /
                            spec_.image_row_divisor;
      Matrix m(n, view.cols);
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(row * view.cols), n * view.cols, m.data.begin());
      row += n;
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::vector<Matrix> Generator::sam_features(const std::vector<PatchImage>& pages) {
  check(spec_.views.has_value(), "this model has no SAM encoder (DeepSeek-OCR's)");
  std::vector<const PatchImage*> p;
  for (const PatchImage& im : pages) p.push_back(&im);
  return run_view_vision(*spec_.views, exec_, p, true).sam;
}

}  // namespace il::runtime
