// What every route shares: the engine, the options, the worker pools, the metrics, and the
// request helpers (fields, inputs, tokenization on the workers, a job on the inference thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferencelayer/engine.h"
#include "server/batcher.h"
#include "server/gen_scheduler.h"
#include "server/http_message.h"
#include "server/metrics.h"
#include "server/serve_options.h"
#include "server/worker_pool.h"
#include "text/chat_template.h"

namespace il::server {

struct Context {
  ServeOptions options;
  Engine& engine;
  Metrics& metrics;
  WorkerPool& tokenizers;
  WorkerPool& image_workers;  // decode + preprocess images in parallel (never on the inference thread)
  Batcher& batcher;
  std::string model_name;  // --served-model-name, or the folder's name
  GenScheduler* generation = nullptr;  // generating models: the step scheduler
  std::shared_ptr<const text::ChatTemplate> chat_template;  // the folder's, when it has one
};

// The per-response breakdown sent as x-tokenization-time / x-queue-time / x-inference-time.
struct Timings {
  double tokenization_ms = 0.0;
  double queue_ms = 0.0;
  double inference_ms = 0.0;
  std::size_t tokens = 0;
};

// The body as a JSON object; 422 naming the problem otherwise.
nlohmann::json parse_body(const HttpRequest& req);

// Optional typed fields: absent or null gives the default; a wrong type is a 422 naming the field.
bool get_bool(const nlohmann::json& body, const char* field, bool fallback);
std::size_t get_count(const nlohmann::json& body, const char* field, std::size_t fallback);
std::string get_string(const nlohmann::json& body, const char* field, const std::string& fallback);
std::string require_string(const nlohmann::json& body, const char* field);
std::vector<std::string> require_strings(const nlohmann::json& body, const char* field);

// `inputs` / `input` of the embedding routes: a text, a batch of texts, one token-id sequence,
// or a batch of token-id sequences; on an image model also items {"image": "<data: URI or
// base64>"} and {"text": "..."} (alone or in an array, mixed with plain texts).
struct Inputs {
  bool batch = false;       // the client sent an array of inputs (the answer is shaped alike)
  bool token_ids = false;
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  // Image items: their encoded bytes, and for every item of the request in order whether it is
  // an image (empty when none is).
  std::vector<std::vector<std::uint8_t>> images;
  std::vector<bool> is_image;
  std::size_t size() const { return token_ids ? ids.size() : texts.size(); }  // text items
  std::size_t items() const { return size() + images.size(); }
};
Inputs parse_inputs(const nlohmann::json& body, const char* field, const Context& ctx);
// The encoded bytes of an image sent as a data: URI (base64), bare base64, or an http(s) URL the
// server fetches when `urls` allows it (server/url_fetch.h). 422 naming `where` otherwise.
std::vector<std::uint8_t> image_bytes(const std::string& ref, const std::string& where, const UrlFetchOptions& urls);

// truncate (default --auto-truncate), truncation_direction ("right"/"left", any case),
// prompt_name (a prompt of config_sentence_transformers.json put before every text).
struct TextOptions {
  TokenizeOptions tokenize;
  std::string prefix;
};
TextOptions text_options(const nlohmann::json& body, const Context& ctx, bool with_prompt);

// Tokenizes (on the calling worker; 422 naming the input on failure) or checks token ids
// (vocabulary, length: cut when truncating, 422 otherwise).
std::vector<TokenInput> to_token_inputs(Context& ctx, const Inputs& inputs, const TextOptions& options,
                                        Timings& timings);
std::vector<TokenInput> tokenize_pairs(Context& ctx, const std::string& query,
                                       const std::vector<std::string>& texts, const TokenizeOptions& options,
                                       Timings& timings);

// Decodes and preprocesses the images on the image workers, in parallel (Engine::load_image);
// a 422 naming the first item that fails ("<field> item <i>: ...", i its place in the request).
std::vector<ImageInput> to_image_inputs(Context& ctx, const Inputs& inputs, const char* field, Timings& timings);

void set_timing_headers(HttpResponse& res, const Timings& timings, const std::string& device);

// 500 naming the first row holding NaN or infinity: JSON cannot carry them, and a vector of
// nulls would pass for an answer.
void check_finite_rows(const Matrix& rows);

// 424 unless the loaded model is of this kind.
void require_embedding_model(const Context& ctx);
void require_cross_encoder(const Context& ctx);

}  // namespace il::server
