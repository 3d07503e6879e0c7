// The Engine: a built plan, its executor and the folder's tokenizer, plus the batching that
// turns a list of inputs into ragged batches that fit the scratch.
#include "inferencelayer/engine.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <condition_variable>
#include <mutex>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"
#include "io/json_util.h"
#include "models/embedding_head.h"
#include "models/registry.h"
#include "ops/maxsim.h"
#include "runtime/batching.h"
#include "runtime/colbert_inputs.h"
#include "runtime/diffusion_generator.h"
#include "runtime/diffusion_runner.h"
#include "runtime/generator.h"
#include "runtime/image_batch.h"
#include "runtime/image_loader.h"
#include "runtime/ocr_options.h"
#include "runtime/prompt_image_loader.h"
#include "runtime/view_vision.h"
#include "runtime/model_info.h"
#include "text/siglip_tokenizer.h"
#include "text/tokenizer.h"

namespace il {
namespace {

// The executor `options.device` names: "cpu", "cuda", "cuda:N", or "auto" (CUDA device 0 when
// this build has the backend and a GPU is present, said on stderr; else the CPU). A CUDA request
// where there is none runs on the CPU with a one-line notice.
std::unique_ptr<plan::Executor> make_executor(plan::Plan& plan, std::size_t max_tokens,
                                              const EngineOptions& options) {
  const std::string& d = options.device;
  const bool is_auto = d == "auto";
  int index = 0;
  if (d.rfind("cuda:", 0) == 0) {
    const std::string n = d.substr(5);
    check(!n.empty() && n.size() <= 4 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }),
          "device '", d, "': expected cuda:N with N a device number");
    index = std::stoi(n);
  } else {
    check(d == "cpu" || d == "cuda" || is_auto, "device '", d, "' is not one of cpu, cuda, cuda:N, auto");
  }
  const std::string& t = options.dtype;
  check(t == "auto" || t == "f32" || t == "f16" || t == "bf16", "dtype '", t,
        "' is not one of auto, f32, f16, bf16");
  const auto on_cpu = [&]() -> std::unique_ptr<plan::Executor> {
    check(t == "auto" || t == "f32", "dtype ", t,
          ": the CPU backend computes in f32 only (f16 and bf16 need a CUDA device)");
    return std::make_unique<cpu::CpuExecutor>(plan, max_tokens, options.threads);
  };
  if (d == "cpu") return on_cpu();
  const int count = cuda::device_count();
  if (count > 0) {
    check(index < count, "device '", d, "': only ", count, " CUDA device(s) present");
    if (is_auto) std::fprintf(stderr, "inferencelayer: device auto: %s\n", cuda::describe(index).c_str());
    return cuda::make_executor(plan, max_tokens, index, t);
  }
  if (!is_auto)
    std::fprintf(stderr, "inferencelayer: device '%s' requested, but %s; running on the CPU\n", d.c_str(),
                 cuda::built() ? "no CUDA device is present" : "this build has no CUDA backend");
  return on_cpu();
}

class LocalEngine final : public Engine {
 public:
  LocalEngine(const std::filesystem::path& dir, const EngineOptions& options)
      : LocalEngine(models::build_model_from_folder(dir), dir, dir / "tokenizer.json", false, options) {}

  // A built model (from a folder, or random weights from a config alone) and the tokenizer.json
  // at tok_path when there is one.
  LocalEngine(models::BuiltModel model, const std::filesystem::path& dir, const std::filesystem::path& tok_path,
              bool random_weights, const EngineOptions& options)
      : model_(std::move(model)) {
    if (!tok_path.empty() && std::filesystem::exists(tok_path))
      tokenizer_.emplace(text::Tokenizer::from_file(tok_path));
    // google/siglip folders ship spiece.model and no tokenizer.json: SiglipTokenizer's ids.
    const std::filesystem::path spiece = tok_path.parent_path() / "spiece.model";
    if (!tokenizer_ && !tok_path.empty() && model_.model_type == "siglip" && std::filesystem::exists(spiece))
      siglip_spm_.emplace(text::SiglipSpmTokenizer::load(tok_path.parent_path()));
    if (siglip_spm_)
      check(siglip_spm_->vocab_size() <= static_cast<std::size_t>(model_.limits.vocab), spiece.string(), " holds ",
            siglip_spm_->vocab_size(), " pieces; the model's text vocabulary has ", model_.limits.vocab,
            " (text_config.vocab_size): the tokenizer is not this model's");
    max_len_ = runtime::max_sequence_length(model_);
    info_ = runtime::describe(dir, model_,
                              tokenizer_     ? tokenizer_->model_type()
                              : siglip_spm_ ? "Unigram (spiece.model, SiglipTokenizer)"
                                            : "",
                              max_len_);
    info_.random_weights = info_.random_weights || random_weights;
    if (model_.colbert && tokenizer_) colbert_ = runtime::resolve_colbert_tokens(*model_.colbert, *tokenizer_, dir);
    // The scratch always holds at least one maximal sequence, so any valid input fits a batch
    // (a generating model's context is the KV cache's business: its scratch holds prompts).
    max_batch_tokens_ = model_.generation ? std::max<std::size_t>(options.max_batch_tokens, 1)
                                          : std::max<std::size_t>(options.max_batch_tokens, max_len_);
    // A block-diffusion model's batch holds at least one canvas.
    if (model_.diffusion)
      max_batch_tokens_ = std::max({options.max_batch_tokens, model_.diffusion->canvas_length, std::size_t{1}});
    // ... and one image's patch tokens.
    if (model_.image) max_batch_tokens_ = std::max(max_batch_tokens_, model_.image->patches());
    std::optional<runtime::KvCacheLayout> kv;
    if (model_.generation) kv = runtime::size_kv_cache(model_, kv_cache_tokens(options), options.kv_page_size,
                                                      max_batch_tokens_);
    std::optional<runtime::DiffusionCacheLayout> diffusion_kv;
    if (model_.diffusion)
      diffusion_kv = runtime::size_diffusion_cache(model_, diffusion_cache_tokens(options), options.kv_page_size,
                                                   max_batch_tokens_);
    exec_ = make_executor(model_.plan, max_batch_tokens_, options);
    idle_lanes_.push_back(exec_.get());
    // More lanes for encoders only: a generating model's executor belongs to its generator.
    if (!model_.generation && !model_.diffusion)
      for (std::size_t i = 1; i < options.lanes; ++i) {
        // A lane is its own scratch: where the device has no room for one more, fewer lanes
        // serve (the first one always fits, or loading failed already).
        std::unique_ptr<plan::Executor> lane;
        try {
          lane = exec_->another_lane();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "inferencelayer: %zu lane(s) instead of %zu: %s\n", i, options.lanes, e.what());
          break;
        }
        if (!lane) break;  // the CPU: one lane
        idle_lanes_.push_back(lane.get());
        more_lanes_.push_back(std::move(lane));
      }
    if (diffusion_kv) {
      diffusion_.emplace(model_, *exec_, *diffusion_kv, max_batch_tokens_);
      diffusion_gen_.emplace(*diffusion_, model_.diffusion->defaults, model_.diffusion->max_positions,
                             tokenizer_ ? &*tokenizer_ : nullptr);
    }
    if (kv)
      generator_.emplace(model_, *exec_, *kv, max_batch_tokens_, tokenizer_ ? &*tokenizer_ : nullptr,
                         options.prefill_tokens_per_step);
    info_.backend = exec_->backend_name();
    info_.compute_dtype = exec_->compute_dtype();
    // Encoded images: the folder's preprocessor_config.json; a model built from a config alone
    // (benchmarks) preprocesses as its release folder does.
    if (model_.image)
      image_loader_.emplace(random_weights ? std::filesystem::path() : dir, info_, options,
                            random_weights ? std::optional(runtime::siglip_release_preprocessor(info_.image_height,
                                                                                                 info_.image_width))
                                           : std::nullopt);
    // Page / prompt images of a multimodal generating model: the folder's GLM-V processor.
    if (model_.generation && model_.generation->views) {
      prompt_loader_.emplace(random_weights ? std::filesystem::path() : dir, options, *model_.generation->views);
    } else if (model_.generation && model_.generation->patch_dim > 0) {
      const models::GenerationSpec& g = *model_.generation;
      prompt_loader_.emplace(random_weights ? std::filesystem::path() : dir, options, g.patch_dim, g.spatial_merge,
                             runtime::glm_ocr_release_preprocessor(g.patch_size, g.temporal_patch, g.spatial_merge));
    }
  }

  const ModelInfo& info() const override { return info_; }
  std::size_t lanes() const override { return 1 + more_lanes_.size(); }
  std::size_t cuda_graphs() const override {
    std::size_t n = exec_->captured_graphs();
    for (const auto& lane : more_lanes_) n += lane->captured_graphs();
    return n;
  }
  std::optional<double> device_energy_joules() override { return exec_->energy_joules(); }

  TokenInput tokenize(std::string_view text, bool truncate) const override {
    if (siglip_spm_) return siglip_spm_input(text, encode_options(truncate));
    return padded(to_input(tokenizer().encode(text, encode_options(truncate))));
  }

  TokenInput tokenize_pair(std::string_view first, std::string_view second,
                           bool truncate) const override {
    if (model_.pair_template) return templated_pair(first, second, "", encode_options(truncate));
    return pair_input(tokenizer().encode_pair(first, second, encode_options(truncate)));
  }

  TokenInput tokenize_with(std::string_view text, const TokenizeOptions& options) const override {
    if (options.role != TextRole::kNone) return colbert_tokenize(text, options);
    if (siglip_spm_) return siglip_spm_input(text, encode_options(options));
    return padded(to_input(tokenizer().encode(text, encode_options(options))));
  }

  TokenInput tokenize_pair_with(std::string_view first, std::string_view second,
                                const TokenizeOptions& options) const override {
    if (model_.pair_template) return templated_pair(first, second, options.instruction, encode_options(options));
    check(options.instruction.empty(), "this model takes no instruction (it is not scored through a prompt)");
    return pair_input(tokenizer().encode_pair(first, second, encode_options(options)));
  }

  std::vector<TokenDetail> token_details(std::string_view text,
                                         const TokenizeOptions& options) const override {
    const text::Encoding e = tokenizer().encode(text, encode_options(options));
    std::vector<TokenDetail> out(e.ids.size());
    for (std::size_t i = 0; i < e.ids.size(); ++i) {
      TokenDetail& d = out[i];
      d.id = e.ids[i];
      d.special = i < e.special_tokens_mask.size() && e.special_tokens_mask[i] != 0;
      if (d.special || i >= e.offsets.size()) {
        d.text = tokenizer().id_to_token(d.id).value_or("");
      } else {
        d.start = std::min<std::size_t>(e.offsets[i].first, text.size());
        d.stop = std::clamp<std::size_t>(e.offsets[i].second, d.start, text.size());
        d.text = std::string(text.substr(d.start, d.stop - d.start));
      }
    }
    return out;
  }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override {
    return tokenizer().decode(ids, skip_special_tokens);
  }

  Matrix embed(const std::vector<TokenInput>& inputs, const EmbedOptions& options) override {
    check(info_.capabilities.embed, "this model does not produce embeddings (it scores inputs: use rerank / score)");
    const PoolingMode mode = options.pooling.value_or(model_.pooling);
    const bool normalize = options.normalize.value_or(model_.normalize);
    const std::size_t full = model_.embedding_dim;
    check(options.dimensions <= full, "dimensions ", options.dimensions,
          " is larger than the embedding size ", full);
    const std::size_t dim = options.dimensions ? options.dimensions : full;
    Matrix out(inputs.size(), dim);
    // Whole vectors are normalised by the plan; Matryoshka-truncated ones after truncation, here.
    const bool plan_normalizes = normalize && dim == full;
    std::vector<float> rows;
    // A folder pooled without its prompt (include_prompt: false) leaves each input's
    // prompt_tokens out of mean and last-token pooling, as sentence-transformers does.
    const bool skip_prompts = !model_.st.include_prompt;
    // CLS pooling reads first tokens only: the encoder's last layer runs for those alone.
    const models::Programs programs = models::embedding_programs(model_.plan, mode);
    run_batches(inputs, skip_prompts, programs.encoder,
                [&](plan::Executor& exec, const plan::Batch& batch, std::size_t first) {
      exec.run(programs.head);
      if (plan_normalizes) exec.run("normalize");
      rows.resize(batch.num_seqs() * full);
      exec.read(model_.plan.output("embedding"), rows.data());
      for (std::size_t s = 0; s < batch.num_seqs(); ++s) {
        const float* src = rows.data() + s * full;
        std::copy(src, src + dim, out.row(first + s));
      }
    });
    // Normalising after truncation keeps Matryoshka vectors unit length, as sentence-transformers
    // does.
    if (normalize && !plan_normalizes) {
      for (std::size_t r = 0; r < out.rows; ++r) {
        double sq = 0.0;
        for (std::size_t j = 0; j < dim; ++j) sq += static_cast<double>(out.row(r)[j]) * out.row(r)[j];
        if (sq > 0.0)
          for (std::size_t j = 0; j < dim; ++j) out.row(r)[j] = static_cast<float>(out.row(r)[j] / std::sqrt(sq));
      }
    }
    return out;
  }

  std::vector<Matrix> hidden_states(const std::vector<TokenInput>& inputs) override {
    std::vector<Matrix> out(inputs.size());
    check(info_.capabilities.hidden_states, "this model does not report hidden states");
    const std::size_t h = model_.hidden_size;
    std::vector<float> rows;
    run_batches(inputs, false, "encode", [&](plan::Executor& exec, const plan::Batch& batch, std::size_t first) {
      rows.resize(batch.num_tokens() * h);
      exec.read(model_.plan.output("hidden"), rows.data());
      for (std::size_t s = 0; s < batch.num_seqs(); ++s) {
        const auto b = static_cast<std::size_t>(batch.seq_starts[s]);
        const auto e = static_cast<std::size_t>(batch.seq_starts[s + 1]);
        Matrix m(e - b, h);
        std::copy(rows.begin() + static_cast<std::ptrdiff_t>(b * h),
                  rows.begin() + static_cast<std::ptrdiff_t>(e * h), m.data.begin());
        out[first + s] = std::move(m);
      }
    });
    return out;
  }

  Matrix score(const std::vector<TokenInput>& inputs) override {
    check(info_.capabilities.score, "this model does not score inputs (no classification or reranking head): use embed");
    const std::size_t labels = model_.labels.size();
    Matrix out(inputs.size(), labels);
    // The head reads first tokens only: the encoder's last layer runs for those alone.
    const models::Programs programs = models::scoring_programs(model_.plan);
    run_batches(inputs, false, programs.encoder, [&](plan::Executor& exec, const plan::Batch&, std::size_t first) {
      exec.run(programs.head);
      exec.read(model_.plan.output("scores"), out.row(first));
    });
    return out;
  }

  std::vector<Matrix> token_vectors(const std::vector<TokenInput>& inputs) override {
    check(info_.capabilities.multi_vector, "this model does not produce per-token vectors (it is not a multi-vector "
          "/ ColBERT model)");
    std::vector<Matrix> out(inputs.size());
    const std::size_t dim = model_.embedding_dim;
    std::vector<float> rows;
    run_batches(inputs, false, "encode", [&](plan::Executor& exec, const plan::Batch& batch, std::size_t first) {
      exec.run("tokens");
      rows.resize(batch.num_tokens() * dim);
      exec.read(model_.plan.output("tokens"), rows.data());
      for (std::size_t s = 0; s < batch.num_seqs(); ++s) {
        const TokenInput& in = inputs[first + s];
        const auto b = static_cast<std::size_t>(batch.seq_starts[s]);
        const auto n = static_cast<std::size_t>(batch.seq_starts[s + 1]) - b;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < n; ++i) kept += in.keep.empty() || in.keep[i] != 0;
        Matrix m(kept, dim);
        std::size_t r = 0;
        for (std::size_t i = 0; i < n; ++i)
          if (in.keep.empty() || in.keep[i] != 0)
            std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>((b + i) * dim), dim, m.row(r++));
        out[first + s] = std::move(m);
      }
    });
    return out;
  }

  // SigLIP's image embedding is its MAP head's output as transformers returns it
  // (get_image_features / pooler_output): not normalised unless asked, as the folder has no
  // Normalize module; the model normalises both sides only inside its pair logit.
  ImageInput load_image(const std::vector<std::uint8_t>& bytes, std::string_view name) const override {
    check(image_loader_.has_value(), "this model takes no images");
    return image_loader_->load(bytes, name);
  }

  Matrix embed_images(const std::vector<ImageInput>& images, const EmbedOptions& options) override {
    check(model_.image.has_value(), "this model takes no images");
    check(model_.image_embedding_dim > 0, "this vision model has no pooling head (vision_use_head false): it gives "
          "image hidden states only");
    check(!options.pooling.has_value(), "an image embedding is the model's attention-pooling head: no pooling option");
    const std::size_t full = model_.image_embedding_dim;
    check(options.dimensions <= full, "dimensions ", options.dimensions, " is larger than the image embedding size ",
          full);
    const std::size_t dim = options.dimensions ? options.dimensions : full;
    const bool normalize = options.normalize.value_or(model_.normalize);
    Matrix out(images.size(), dim);
    std::vector<float> rows;
    run_image_batches(images, [&](plan::Executor& exec, const plan::Batch& batch, std::size_t first) {
      exec.run("image_head");
      rows.resize(batch.num_seqs() * full);
      exec.read(model_.plan.output("image_embedding"), rows.data());
      for (std::size_t s = 0; s < batch.num_seqs(); ++s) {
        float* o = out.row(first + s);
        std::copy_n(rows.data() + s * full, dim, o);
        if (!normalize) continue;
        double sq = 0.0;
        for (std::size_t j = 0; j < dim; ++j) sq += static_cast<double>(o[j]) * o[j];
        if (sq > 0.0)
          for (std::size_t j = 0; j < dim; ++j) o[j] = static_cast<float>(o[j] / std::sqrt(sq));
      }
    });
    return out;
  }

  std::vector<Matrix> image_hidden_states(const std::vector<ImageInput>& images) override {
    check(model_.image.has_value(), "this model takes no images");
    std::vector<Matrix> out(images.size());
    const plan::View view = model_.plan.output("image_hidden");
    const std::size_t h = view.cols, n = model_.image->patches();
    std::vector<float> rows;
    run_image_batches(images, [&](plan::Executor& exec, const plan::Batch& batch, std::size_t first) {
      rows.resize(batch.num_tokens() * h);
      exec.read(view, rows.data());
      for (std::size_t s = 0; s < batch.num_seqs(); ++s) {
        Matrix m(n, h);
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(s * n * h), n * h, m.data.begin());
        out[first + s] = std::move(m);
      }
    });
    return out;
  }

  std::vector<GenerationResult> generate(const std::vector<GenerationRequest>& requests,
                                         const TokenCallback& on_token) override {
    if (diffusion_gen_) return generate_with(*diffusion_gen_, requests, on_token);
    return generate_with(generator(), requests, on_token);
  }

  template <typename G>
  std::vector<GenerationResult> generate_with(G& g, const std::vector<GenerationRequest>& requests,
                                              const TokenCallback& on_token) {
    std::vector<runtime::Generator::Id> ids;
    ids.reserve(requests.size());
    // Every request is checked before any is queued: a bad one refuses the call and leaves
    // nothing behind.
    for (std::size_t i = 0; i < requests.size(); ++i) {
      try {
        g.validate(requests[i]);
      } catch (const Error& e) {
        throw Error("request " + std::to_string(i) + ": " + e.what());
      }
    }
    for (const GenerationRequest& r : requests) ids.push_back(g.submit(r));
    std::map<std::size_t, std::size_t> index;
    for (std::size_t i = 0; i < ids.size(); ++i) index[ids[i]] = i;
    try {
      while (!g.idle())
        for (const auto& e : g.step())
          if (on_token) on_token(index.at(e.id), e.token, e.text);
    } catch (...) {
      // A device error (or the callback's) leaves the batch half-stepped: drop it all so the
      // next call starts clean.
      g.reset();
      throw;
    }
    std::vector<GenerationResult> out;
    out.reserve(ids.size());
    for (std::size_t id : ids) out.push_back(g.take_result(id));
    return out;
  }

  void check_generation_request(const GenerationRequest& request) override {
    if (diffusion_gen_) return diffusion_gen_->validate(request);
    generator().validate(request);
  }

  GenerationId submit_generation(GenerationRequest request) override {
    if (diffusion_gen_) return diffusion_gen_->submit(std::move(request));
    return generator().submit(std::move(request));
  }

  std::vector<GenerationEvent> step_generation() override {
    if (diffusion_gen_) return step_with(*diffusion_gen_);
    return step_with(generator());
  }

  template <typename G>
  std::vector<GenerationEvent> step_with(G& g) {
    std::vector<typename G::Event> events;
    try {
      events = g.step();
    } catch (...) {
      g.reset();
      throw;
    }
    std::vector<GenerationEvent> out;
    out.reserve(events.size());
    for (auto& e : events) out.push_back({e.id, e.token, std::move(e.text), e.finished});
    return out;
  }

  GenerationResult take_generation_result(GenerationId id) override {
    if (diffusion_gen_) return diffusion_gen_->take_result(id);
    return generator().take_result(id);
  }
  void cancel_generation(GenerationId id) override {
    if (diffusion_gen_) return diffusion_gen_->cancel(id);
    generator().cancel(id);
  }
  GenerationLoad generation_load() const override {
    if (diffusion_gen_) return diffusion_gen_->load();
    check(generator_.has_value(), "this model does not generate text");
    return generator_->load();
  }

  PatchImage load_prompt_image(const std::vector<std::uint8_t>& bytes, std::string_view name,
                               std::string_view mode) const override {
    check(prompt_loader_.has_value(), "this model takes no images in its prompts");
    return prompt_loader_->load(bytes, name, mode);
  }

  std::vector<int32_t> expand_image_placeholders(const std::vector<int32_t>& ids,
                                                 const std::vector<PatchImage>& images) const override {
    check(model_.generation && model_.generation->image_token >= 0, "this model takes no images in its prompts");
    const models::GenerationSpec& g = *model_.generation;
    std::vector<int32_t> out;
    std::size_t next = 0;
    for (int32_t id : ids) {
      if (id != g.image_token) {
        out.push_back(id);
        continue;
      }
      check(next < images.size(), "the prompt holds more image placeholders than the ", images.size(),
            " images given");
      const PatchImage& im = images[next++];
      const auto [t, h, w] = im.grid_thw;
      const std::size_t n =
          g.views ? runtime::view_page_rows(*g.views, im, max_batch_tokens_)
                  : static_cast<std::size_t>(t) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w) /
                        std::max<std::size_t>(g.image_row_divisor, 1);
      out.insert(out.end(), n, g.image_token);
    }
    check(next == images.size(), "the prompt holds ", next, " image placeholders for ", images.size(), " images");
    return out;
  }

  GenerationRequest ocr_request(PatchImage page, std::string_view task) const override {
    check(model_.generation && model_.generation->ocr_prompt, "this model does not read pages (it is not an OCR model)");
    check(tokenizer_.has_value(), "OCR needs the folder's tokenizer.json (none was found)");
    GenerationRequest r;
    r.input_ids = model_.generation->ocr_prompt(*tokenizer_, page, task);
    r.images.push_back(std::move(page));
    r.options = runtime::ocr_sampling_options(&*tokenizer_);
    // The default budget, within the model's context.
    const std::size_t context = model_.generation->max_positions;
    if (context > 0)
      r.options.max_new_tokens = std::min(r.options.max_new_tokens,
                                          context > r.input_ids.size() ? context - r.input_ids.size() : 1);
    return r;
  }

  std::vector<Matrix> sam_features(const std::vector<PatchImage>& pages) override {
    return generator().sam_features(pages);
  }
  std::vector<Matrix> vision_rows(const std::vector<PatchImage>& images) override {
    return generator().vision_rows(images);
  }

  Matrix canvas_logits(const std::vector<int32_t>& prompt, const std::vector<int32_t>& canvas,
                       const Matrix* sc_logits) override {
    check(diffusion_.has_value(), "this model is not a block-diffusion model (it has no canvas)");
    runtime::DiffusionRunner& r = *diffusion_;
    const std::size_t C = r.canvas_length(), V = r.vocab();
    check(!prompt.empty(), "the prompt is empty");
    check(canvas.size() == C, "the canvas holds ", canvas.size(), " ids; this model's canvas_length is ", C);
    check(!sc_logits || (sc_logits->rows == C && sc_logits->cols == V), "sc_logits must be ", C, " rows of ", V,
          " logits");
    for (const auto* ids : {&prompt, &canvas})
      for (int32_t id : *ids)
        check(id >= 0 && static_cast<std::size_t>(id) < V, "token id ", id, " is outside the vocabulary of ", V);
    check(prompt.size() + C <= model_.diffusion->max_positions, "the prompt and canvas (", prompt.size() + C,
          " positions) exceed the model's ", model_.diffusion->max_positions);
    runtime::DiffusionRunner::Cache cache;
    check(r.reserve(cache, prompt.size() + C), "the KV cache cannot hold ", prompt.size() + C,
          " entries (raise --kv-cache-tokens)");
    Matrix out(C, V);
    try {
      r.encode(cache, prompt);
      r.canvas({&cache}, canvas, sc_logits ? std::span<const float>(sc_logits->data) : std::span<const float>(),
               out.data);
    } catch (...) {
      r.release(cache);
      throw;
    }
    r.release(cache);
    return out;
  }

  Matrix prompt_logits(const std::vector<GenerationRequest>& requests) override {
    const std::vector<std::vector<float>> rows = generator().prompt_logits(requests);
    Matrix out(rows.size(), static_cast<std::size_t>(model_.limits.vocab));
    for (std::size_t r = 0; r < rows.size(); ++r) std::copy(rows[r].begin(), rows[r].end(), out.row(r));
    return out;
  }

  std::vector<float> late_interaction(const TokenInput& query, const std::vector<TokenInput>& documents) override {
    check(info_.capabilities.multi_vector, "this model does not score by late interaction (it is not a "
          "multi-vector / ColBERT model)");
    std::vector<float> scores(documents.size());
    if (documents.empty()) return scores;
    // The query goes first in every batch, then as many documents as fit beside it; each batch's
    // token vectors stay on the device, where MaxSim scores (query, document) pairs.
    runtime::validate_inputs({query}, model_.limits, max_len_);
    runtime::validate_inputs(documents, model_.limits, max_len_);
    std::size_t next = 0;
    std::vector<TokenInput> group;
    std::vector<int32_t> pairs;
    std::vector<uint8_t> keep;
    std::vector<float> out;
    while (next < documents.size()) {
      group.assign(1, query);
      group[0].keep.clear();  // a query's tokens all count
      std::size_t tokens = query.ids.size();
      const std::size_t first = next;
      while (next < documents.size() &&
             (next == first || tokens + documents[next].ids.size() <= max_batch_tokens_)) {
        tokens += documents[next].ids.size();
        group.push_back(documents[next++]);
      }
      check(tokens <= max_batch_tokens_, "a query of ", query.ids.size(), " tokens and a document of ",
            documents[first].ids.size(), " tokens do not fit one batch of ", max_batch_tokens_, " tokens");
      pairs.clear();
      keep.clear();
      for (std::size_t d = 1; d < group.size(); ++d) {
        pairs.push_back(0);
        pairs.push_back(static_cast<int32_t>(d));
      }
      for (const TokenInput& in : group) {
        if (in.keep.empty()) keep.insert(keep.end(), in.ids.size(), uint8_t{1});
        else keep.insert(keep.end(), in.keep.begin(), in.keep.end());
      }
      out.resize(group.size() - 1);
      run_batches(group, false, "encode", [&](plan::Executor& exec, const plan::Batch&, std::size_t) {
        exec.run("tokens");
        exec.maxsim(model_.plan.output("tokens"), pairs, keep, out.data());
      });
      std::copy(out.begin(), out.end(), scores.begin() + static_cast<std::ptrdiff_t>(first));
    }
    return scores;
  }

 private:
  runtime::Generator& generator() {
    check(generator_.has_value(), "this model does not generate text");
    return *generator_;
  }

  // A block-diffusion model's cache budget: asked for, or a default by device.
  std::size_t diffusion_cache_tokens(const EngineOptions& options) const {
    if (options.kv_cache_tokens > 0) return options.kv_cache_tokens;
    const bool gpu = options.device != "cpu" && cuda::device_count() > 0;
    return std::max(options.kv_page_size, std::size_t{gpu ? 131072u : 8192u});
  }

  // The KV cache budget: asked for, or a default by device, never past 64 full contexts.
  std::size_t kv_cache_tokens(const EngineOptions& options) const {
    if (options.kv_cache_tokens > 0) return options.kv_cache_tokens;
    const bool gpu = options.device != "cpu" && cuda::device_count() > 0;
    const std::size_t context = std::max<std::size_t>(model_.generation->max_positions, 1);
    return std::max(options.kv_page_size, std::min<std::size_t>(gpu ? 131072 : 8192, 64 * context));
  }

  // PyLate's tokenization of a query or a document (runtime/colbert_inputs.h).
  TokenInput colbert_tokenize(std::string_view text, const TokenizeOptions& options) const {
    check(colbert_.has_value(), "this model takes no query / document role (it is not a multi-vector / ColBERT "
          "model with a tokenizer)");
    check(options.add_special_tokens && options.limit_length,
          "a query or document is tokenized as the model's PyLate settings say (special tokens and lengths "
          "included)");
    const bool query = options.role == TextRole::kQuery;
    text::EncodeOptions o;
    o.max_length = runtime::colbert_text_budget(*colbert_, query);
    o.truncate = options.truncate;
    o.direction = (options.truncate_left || colbert_->truncate_left) ? text::TruncationDirection::kLeft
                                                                    : text::TruncationDirection::kRight;
    return runtime::colbert_input(tokenizer().encode(text, o).ids, *colbert_, query);
  }

  const text::Tokenizer& tokenizer() const {
    check(!siglip_spm_.has_value(), "model folder ", info_.path,
          " has SigLIP's spiece.model and no tokenizer.json: it tokenizes single texts into ids (no pairs, byte "
          "offsets or decoding)");
    check(tokenizer_.has_value(), "model folder ", info_.path, " has no tokenizer.json");
    return *tokenizer_;
  }

  // A text through SigLIP's spiece.model: over the maximum it is cut as transformers cuts it
  // ("</s>" kept last) or refused, as the tokenizer.json path does; then padded to the length.
  TokenInput siglip_spm_input(std::string_view text, const text::EncodeOptions& o) const {
    std::vector<int32_t> text_ids = siglip_spm_->encode(text, false);  // tokenized once, cut below if need be
    std::vector<int32_t> ids = siglip_spm_->truncate(text_ids, SIZE_MAX, o.add_special_tokens);
    if (o.max_length > 0 && ids.size() > o.max_length) {
      check(o.truncate, "tokenizer: the input has ", ids.size(), " tokens, more than the maximum of ", o.max_length);
      ids = siglip_spm_->truncate(std::move(text_ids), o.max_length, o.add_special_tokens,
                                  o.direction == text::TruncationDirection::kLeft);
    }
    return padded(TokenInput{std::move(ids), {}});
  }

  text::EncodeOptions encode_options(bool truncate) const {
    text::EncodeOptions o;
    o.max_length = max_len_;
    o.truncate = truncate;
    return o;
  }

  text::EncodeOptions encode_options(const TokenizeOptions& options) const {
    text::EncodeOptions o = encode_options(options.truncate);
    o.add_special_tokens = options.add_special_tokens;
    if (!options.limit_length) o.max_length = 0;
    o.direction = options.truncate_left ? text::TruncationDirection::kLeft : text::TruncationDirection::kRight;
    return o;
  }

  static TokenInput to_input(text::Encoding&& e) { return {std::move(e.ids), std::move(e.type_ids)}; }
  // A model that pads its texts (BuiltModel::pad_texts): pad ids up to the length, type ids 0.
  TokenInput padded(TokenInput in) const {
    if (!model_.pad_texts || in.ids.size() >= model_.pad_texts->first) return in;
    if (!in.type_ids.empty()) in.type_ids.resize(model_.pad_texts->first, 0);
    in.ids.resize(model_.pad_texts->first, model_.pad_texts->second);
    return in;
  }
  // A pair for a model without a segment table (ModernBERT): its tokenizer's template may still
  // give the second text type id 1, which transformers never passes to such a model (its
  // tokenizer returns no token_type_ids), so they are dropped rather than refused.
  TokenInput pair_input(text::Encoding&& e) const {
    TokenInput in = to_input(std::move(e));
    if (model_.limits.type_vocab == 0) in.type_ids.clear();
    return in;
  }

  // A pair scored through a prompt (models::PairTemplate): prefix, body and suffix tokenized
  // alone without special tokens, as the model card does; the body is cut to what the prefix
  // and suffix leave of the maximum (from its end, or its start when truncating left), or the
  // whole is refused when truncation is off.
  TokenInput templated_pair(std::string_view query, std::string_view document, std::string_view instruction,
                            text::EncodeOptions options) const {
    const models::PairTemplate& t = *model_.pair_template;
    if (instruction.empty()) instruction = t.default_instruction;
    std::string body;
    body.reserve(t.body.size() + query.size() + document.size() + t.default_instruction.size());
    for (std::size_t i = 0; i < t.body.size();) {
      const auto take = [&](std::string_view field, std::string_view value) {
        if (t.body.compare(i, field.size(), field) != 0) return false;
        body.append(value);
        i += field.size();
        return true;
      };
      if (take("{instruction}", instruction) || take("{query}", query) || take("{document}", document))
        continue;
      body.push_back(t.body[i++]);
    }
    const std::size_t max_length = options.max_length;
    const bool truncate = options.truncate;
    options.add_special_tokens = false;
    options.max_length = 0;
    options.truncate = false;
    const text::Encoding prefix = tokenizer().encode(t.prefix, options);
    const text::Encoding suffix = tokenizer().encode(t.suffix, options);
    text::Encoding middle = tokenizer().encode(body, options);
    const std::size_t fixed = prefix.ids.size() + suffix.ids.size();
    TokenInput out;
    if (max_length > 0 && fixed + middle.ids.size() > max_length) {
      check(truncate, "input of ", fixed + middle.ids.size(), " tokens is longer than the maximum of ",
            max_length, " (truncation is off)");
      check(max_length > fixed, "the reranking prompt alone takes ", fixed, " of the ", max_length, " tokens");
      const std::size_t keep = max_length - fixed;
      if (options.direction == text::TruncationDirection::kLeft)
        middle.ids.erase(middle.ids.begin(), middle.ids.end() - static_cast<std::ptrdiff_t>(keep));
      else
        middle.ids.resize(keep);
    }
    out.ids = prefix.ids;
    out.ids.insert(out.ids.end(), middle.ids.begin(), middle.ids.end());
    out.ids.insert(out.ids.end(), suffix.ids.begin(), suffix.ids.end());
    return out;
  }

  // Validates every input, packs them in order into batches that fit the scratch, runs the
  // encoder program for each and hands it to `consume` with the index of its first input.
  template <typename F>
  void run_batches(const std::vector<TokenInput>& inputs, bool skip_prompts, const std::string& encoder,
                   F&& consume) {
    runtime::validate_inputs(inputs, model_.limits, max_len_);
    const LaneLease lane(*this);
    for (const runtime::BatchRange& range : runtime::pack_batches(inputs, max_batch_tokens_)) {
      plan::Batch batch = runtime::make_batch(inputs, range, skip_prompts);
      lane.exec.set_batch(batch);
      lane.exec.run(encoder);
      consume(lane.exec, batch, range.first);
    }
  }

  // Validates the images, packs them in order into batches of whole images that fit the scratch,
  // runs the vision tower for each and hands it to `consume` with the index of its first image.
  template <typename F>
  void run_image_batches(const std::vector<ImageInput>& images, F&& consume) {
    const models::ImageGeometry& g = *model_.image;
    runtime::validate_images(images, g);
    const LaneLease lane(*this);
    for (const runtime::BatchRange& range : runtime::pack_images(images.size(), g.patches(), max_batch_tokens_)) {
      const plan::Batch batch = runtime::make_image_batch(images, range, g);
      lane.exec.set_batch(batch);
      lane.exec.run("image_encode");
      consume(lane.exec, batch, range.first);
    }
  }

  // An idle lane for the length of one call, waited for when every lane is busy.
  struct LaneLease {
    explicit LaneLease(LocalEngine& e) : engine(e), exec(e.take_lane()) {}
    ~LaneLease() { engine.return_lane(exec); }
    LaneLease(const LaneLease&) = delete;
    LaneLease& operator=(const LaneLease&) = delete;
    LocalEngine& engine;
    plan::Executor& exec;
  };
  plan::Executor& take_lane() {
    std::unique_lock lock(lane_mutex_);
    lane_free_.wait(lock, [this] { return !idle_lanes_.empty(); });
    plan::Executor* e = idle_lanes_.back();
    idle_lanes_.pop_back();
    return *e;
  }
  void return_lane(plan::Executor& e) {
    {
      std::lock_guard lock(lane_mutex_);
      idle_lanes_.push_back(&e);
    }
    lane_free_.notify_one();
  }

  models::BuiltModel model_;
  std::optional<text::Tokenizer> tokenizer_;
  std::optional<text::SiglipSpmTokenizer> siglip_spm_;  // instead of tokenizer_ (SigLIP's spiece.model)
  std::optional<runtime::ImageLoader> image_loader_;  // image models
  std::optional<runtime::PromptImageLoader> prompt_loader_;  // multimodal generating models
  std::optional<runtime::ColbertTokens> colbert_;  // multi-vector folders with a tokenizer
  std::unique_ptr<plan::Executor> exec_;  // the first lane; generation and diffusion run here
  std::vector<std::unique_ptr<plan::Executor>> more_lanes_;  // EngineOptions::lanes − 1 (encoders on a GPU)
  std::optional<runtime::Generator> generator_;  // generating models
  std::optional<runtime::DiffusionRunner> diffusion_;  // block-diffusion models
  std::optional<runtime::DiffusionGenerator> diffusion_gen_;
  ModelInfo info_;
  std::size_t max_len_ = 0;
  std::size_t max_batch_tokens_ = 0;
  std::mutex lane_mutex_;
  std::condition_variable lane_free_;
  std::vector<plan::Executor*> idle_lanes_;
};

}  // namespace

std::unique_ptr<Engine> Engine::load_random(const std::filesystem::path& config_json,
                                            const std::filesystem::path& tokenizer_json,
                                            const EngineOptions& options) {
  const nlohmann::json j = io::read_json_file(config_json);
  return std::make_unique<LocalEngine>(models::build_model_random(j, config_json.string()), config_json,
                                       tokenizer_json, true, options);
}

std::unique_ptr<Engine> Engine::load(const std::filesystem::path& model_dir,
                                     const EngineOptions& options) {
  check(std::filesystem::is_directory(model_dir), "model folder ", model_dir.string(),
        " does not exist or is not a folder");
  return std::make_unique<LocalEngine>(model_dir, options);
}

}  // namespace il
