#include "runtime/diffusion_generator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace il::runtime {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

std::size_t diffusion_blocks(const models::DiffusionSettings& s, std::size_t prompt, std::size_t C) {
  const auto ceil_div = [C](std::size_t n) { return (n + C - 1) / C; };
  if (!s.max_length) return ceil_div(static_cast<std::size_t>(s.max_new_tokens));
  const auto cap = static_cast<std::size_t>(*s.max_length);
  if (s.max_new_tokens == 256 && !s.max_new_tokens_from_request) return cap > prompt ? ceil_div(cap - prompt) : 0;
  // The criterion is checked after a canvas is committed: at least one canvas is made.
  const std::size_t by_cap = cap > prompt ? ceil_div(cap - prompt) : 1;
  return std::min(ceil_div(static_cast<std::size_t>(s.max_new_tokens)), by_cap);
}

models::DiffusionSettings resolve_diffusion_settings(const models::DiffusionSettings& folder,
                                                     const GenerationRequest& r) {
  models::DiffusionSettings s = folder;
  const DiffusionOptions& o = r.diffusion;
  if (o.max_new_tokens) {
    check(*o.max_new_tokens > 0 && *o.max_new_tokens <= (1u << 30), "max_new_tokens must be in 1..2^30, got ",
          *o.max_new_tokens);
    s.max_new_tokens = static_cast<int>(*o.max_new_tokens);
    s.max_new_tokens_from_request = true;
  }
  if (o.max_denoising_steps) s.max_denoising_steps = *o.max_denoising_steps;
  if (o.t_min) s.t_min = o.t_min;
  if (o.t_max) s.t_max = o.t_max;
  if (o.entropy_bound) s.entropy_bound = *o.entropy_bound;
  if (o.stability_threshold) s.stability_threshold = *o.stability_threshold;
  if (o.confidence_threshold) s.confidence_threshold = o.confidence_threshold;
  if (o.no_early_stop) s.confidence_threshold.reset();
  if (r.options.stop_ids) s.end_ids = *r.options.stop_ids;
  check_diffusion_settings(s, "diffusion settings");
  return s;
}

DiffusionGenerator::DiffusionGenerator(DiffusionRunner& runner, const models::DiffusionSettings& defaults,
                                       std::size_t max_positions, const text::Tokenizer* tokenizer)
    : runner_(runner), defaults_(defaults), max_positions_(max_positions), tokenizer_(tokenizer) {}

std::size_t DiffusionGenerator::entries_needed(const GenerationRequest& r, const models::DiffusionSettings& s) const {
  const std::size_t C = runner_.canvas_length();
  return r.input_ids.size() + diffusion_blocks(s, r.input_ids.size(), C) * C;
}

void DiffusionGenerator::validate(const GenerationRequest& r) const {
  check(!r.input_ids.empty(), "the prompt is empty");
  check(r.images.empty(), "this model takes no images in its prompts (text generation only)");
  check(r.options.stop_strings.empty() || tokenizer_, "stop strings need the model folder's tokenizer");
  for (const std::string& stop : r.options.stop_strings) check(!stop.empty(), "a stop string is empty");
  const std::size_t V = runner_.vocab();
  for (std::size_t i = 0; i < r.input_ids.size(); ++i)
    check(r.input_ids[i] >= 0 && static_cast<std::size_t>(r.input_ids[i]) < V, "input_ids[", i, "] = ",
          r.input_ids[i], " is outside the vocabulary of ", V);
  const models::DiffusionSettings s = resolve_diffusion_settings(defaults_, r);
  for (int32_t id : s.end_ids)
    check(id >= 0 && static_cast<std::size_t>(id) < V, "stop id ", id, " is outside the vocabulary of ", V);
  // transformers returns the prompt alone here; an answer with nothing generated is refused.
  check(diffusion_blocks(s, r.input_ids.size(), runner_.canvas_length()) > 0, "the prompt (", r.input_ids.size(),
        " tokens) already reaches the folder's max_length of ", s.max_length.value_or(0),
        " (generation_config.json): there is nothing to generate");
  const std::size_t need = entries_needed(r, s);
  check(need <= max_positions_, "the prompt (", r.input_ids.size(), " tokens) and ", need - r.input_ids.size(),
        " new tokens in canvases of ", runner_.canvas_length(), " need ", need, " positions; the model has ",
        max_positions_);
  check(runner_.pages_for(need) <= runner_.total_pages(), "the prompt and its canvases need ", need,
        " KV cache entries; the cache holds ", runner_.total_pages() * runner_.page_size(),
        " (raise --kv-cache-tokens)");
}

DiffusionGenerator::Id DiffusionGenerator::submit(GenerationRequest request, std::unique_ptr<DiffusionDraws> draws) {
  validate(request);
  auto s = std::make_unique<Sequence>();
  s->id = next_id_++;
  s->settings = resolve_diffusion_settings(defaults_, request);
  s->draws = draws ? std::move(draws) : std::make_unique<SeededDraws>(request.options.seed);
  s->request = std::move(request);
  const std::size_t C = runner_.canvas_length();
  s->blocks = diffusion_blocks(s->settings, s->request.input_ids.size(), C);
  s->start = std::chrono::steady_clock::now();
  if (tokenizer_) s->detok.emplace(*tokenizer_);
  s->result.prompt_tokens = s->request.input_ids.size();
  const Id id = s->id;
  queue_.push_back(std::move(s));
  return id;
}

void DiffusionGenerator::start_block(Sequence& s) {
  const std::size_t C = runner_.canvas_length();
  s.canvas.assign(C, 0);
  s.draws->uniform_ids(s.canvas, runner_.vocab());
  s.argmax = s.canvas;
  s.sc_slot = -1;
  if (s.stop) s.stop->restart(s.settings.stability_threshold, C);
  else s.stop.emplace(s.settings.stability_threshold, C);
  s.n = s.settings.max_denoising_steps;
}

// First come, first served: a request waits until the pages for its prompt and every canvas it
// may commit are free (never preempted after).
void DiffusionGenerator::admit() {
  while (!queue_.empty() && running_.size() < runner_.slots()) {
    Sequence& s = *queue_.front();
    if (!runner_.reserve(s.cache, entries_needed(s.request, s.settings))) break;
    try {
      runner_.encode(s.cache, s.request.input_ids);
    } catch (...) {
      runner_.release(s.cache);
      throw;
    }
    start_block(s);
    running_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

float DiffusionGenerator::temperature(const Sequence& s) const {
  const models::DiffusionSettings& st = s.settings;
  return st.t_min ? diffusion_temperature(s.n, st.max_denoising_steps, *st.t_min, *st.t_max) : 1.0f;
}

bool DiffusionGenerator::denoise(Sequence& s, std::span<const ops::RowDraw> rows) {
  const std::size_t C = runner_.canvas_length(), V = runner_.vocab();
  const models::DiffusionSettings& st = s.settings;
  StepTrace t;
  t.block = s.block;
  t.step = s.n;
  t.canvas_in = s.canvas;
  t.temperature = temperature(s);
  std::vector<float> entropies(C);
  t.argmax.resize(C);
  t.sampled.resize(C);
  double total = 0.0;
  for (std::size_t i = 0; i < C; ++i) {
    entropies[i] = rows[i].entropy;
    t.argmax[i] = rows[i].argmax;
    t.sampled[i] = rows[i].sample;
    total += entropies[i];
  }
  s.draws->imposed(t.sampled);
  t.accepted = accept_by_entropy(entropies, st.entropy_bound);
  std::vector<int32_t> noise(C);
  s.draws->uniform_ids(noise, V);
  t.canvas_out.resize(C);
  for (std::size_t i = 0; i < C; ++i) t.canvas_out[i] = t.accepted[i] ? t.sampled[i] : noise[i];
  t.mean_entropy = static_cast<float>(total / static_cast<double>(C));
  t.finished = s.stop->check(t.argmax, t.mean_entropy, st.confidence_threshold);
  s.canvas = t.canvas_out;
  s.argmax = t.argmax;
  --s.n;
  if (trace_) trace_(s.id, t);
  return t.finished || s.n == 0;
}

void DiffusionGenerator::commit(Sequence& s, std::vector<Event>& events) {
  const auto now = std::chrono::steady_clock::now();
  if (s.block == 0) s.first = now;
  std::vector<int32_t> block = s.argmax;
  const std::optional<std::size_t> end = finalize_block(block, s.settings.end_ids, s.settings.pad_id);
  ++s.block;
  bool last = end.has_value() || s.block == s.blocks;
  const std::size_t keep = end ? *end + 1 : block.size();
  // A stop string ends the answer at the token that completes it (the rest of the block is
  // dropped); only the text's tail can hold a new match.
  const std::vector<std::string>& stops = s.request.options.stop_strings;
  std::size_t longest = 0;
  for (const std::string& stop : stops) longest = std::max(longest, stop.size());
  bool stopped = false;
  for (std::size_t i = 0; i < keep && !stopped; ++i) {
    s.result.tokens.push_back(block[i]);
    std::string piece = s.detok ? s.detok->push(block[i]) : std::string();
    if (!stops.empty()) {
      const std::size_t from = s.text.size() >= longest ? s.text.size() - longest + 1 : 0;
      s.text += piece;
      for (const std::string& stop : stops) stopped = stopped || s.text.find(stop, from) != std::string::npos;
    }
    events.push_back(Event{s.id, block[i], std::move(piece), stopped || (last && i + 1 == keep)});
  }
  last = last || stopped;
  if (last) {
    s.result.finish = stopped ? FinishReason::kStopString : end ? FinishReason::kStopId : FinishReason::kLength;
    s.result.prefill_ms = ms_between(s.start, s.first);
    s.result.decode_ms = ms_between(s.first, now);
    s.done = true;
    return;
  }
  runner_.encode(s.cache, block);  // the committed canvas (after padding) joins the cache
  start_block(s);
}

std::vector<DiffusionGenerator::Event> DiffusionGenerator::step() {
  admit();
  std::vector<Event> events;
  if (running_.empty()) {
    check(queue_.empty(), "generation: the KV cache cannot hold the next request (it was checked to fit alone)");
    return events;
  }
  // Every running canvas in one forward, sequence k in slot k. Its self-conditioning rows move
  // to slot k first (from a higher slot: sequences before it left; ascending k never overwrites
  // rows still to be moved), or become −inf on a block's first step.
  const std::size_t C = runner_.canvas_length(), count = running_.size();
  std::vector<DiffusionRunner::Cache*> caches;
  std::vector<int32_t> canvases;
  std::vector<float> temperatures(count * C);
  std::vector<double> uniforms(count * C);
  for (std::size_t k = 0; k < count; ++k) {
    Sequence& s = *running_[k];
    const auto slot = static_cast<std::ptrdiff_t>(k);
    if (s.sc_slot < 0) runner_.clear_sc(k);
    else if (s.sc_slot != slot) runner_.move_sc(static_cast<std::size_t>(s.sc_slot), k);
    caches.push_back(&s.cache);
    canvases.insert(canvases.end(), s.canvas.begin(), s.canvas.end());
    std::fill_n(temperatures.begin() + slot * static_cast<std::ptrdiff_t>(C), C, temperature(s));
    s.draws->uniforms(std::span<double>(uniforms).subspan(k * C, C));
  }
  runner_.forward(caches, canvases);
  runner_.sample(temperatures, uniforms, rows_);
  for (std::size_t k = 0; k < count; ++k) {
    Sequence& s = *running_[k];
    s.sc_slot = static_cast<std::ptrdiff_t>(k);
    if (denoise(s, std::span<const ops::RowDraw>(rows_).subspan(k * C, C))) commit(s, events);
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->done) {
      runner_.release((*it)->cache);
      finished_[(*it)->id] = std::move((*it)->result);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return events;
}

GenerationResult DiffusionGenerator::take_result(Id id) {
  const auto it = finished_.find(id);
  check(it != finished_.end(), "generation ", id, " has not finished (or its result was taken)");
  GenerationResult r = std::move(it->second);
  finished_.erase(it);
  return r;
}

void DiffusionGenerator::cancel(Id id) {
  finished_.erase(id);
  std::erase_if(queue_, [&](const std::unique_ptr<Sequence>& s) { return s->id == id; });
  for (auto it = running_.begin(); it != running_.end(); ++it)
    if ((*it)->id == id) {
      runner_.release((*it)->cache);
      running_.erase(it);
      return;
    }
}

void DiffusionGenerator::reset() {
  for (auto& s : running_) runner_.release(s->cache);
  running_.clear();
  queue_.clear();
  finished_.clear();
}

GenerationLoad DiffusionGenerator::load() const {
  GenerationLoad l;
  l.running = running_.size();
  l.waiting = queue_.size();
  l.kv_pages_total = runner_.total_pages();
  l.kv_pages_used = runner_.total_pages() - runner_.free_pages();
  l.kv_page_size = runner_.page_size();
  return l;
}

}  // namespace il::runtime
