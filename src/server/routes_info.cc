// GET /info (TEI's shape), /health (a one-sequence forward pass on the
// inference thread, so a wedged or broken engine answers 503), /metrics
// (Prometheus text).
#include <exception>

#include "server/api_error.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

json model_type(const ModelInfo &info) {
  // Not one of TEI's kinds: a model that writes text (chat, completions, OCR).
  if (info.capabilities.generate)
    return {{"generation", {{"ocr", info.capabilities.ocr}}}};
  if (!info.capabilities.score)
    return {
        {"embedding", {{"pooling", std::string(pooling_name(info.pooling))}}}};
  json id2label = json::object(), label2id = json::object();
  for (std::size_t i = 0; i < info.labels.size(); ++i) {
    id2label[std::to_string(i)] = info.labels[i];
    label2id[info.labels[i]] = i;
  }
  const char *kind = info.num_labels == 1 ? "reranker" : "classifier";
  return {{kind, {{"id2label", id2label}, {"label2id", label2id}}}};
}

std::optional<ModelCall> info(Context &ctx, HttpResponse &res) {
  const ModelInfo &m = ctx.engine.info();
  const ServeOptions &o = ctx.options;
  json out{{"model_id", ctx.model_name},
           {"model_sha", nullptr},
           {"model_dtype", m.compute_dtype == "f16"    ? "float16"
                           : m.compute_dtype == "bf16" ? "bfloat16"
                                                       : "float32"},
           {"model_type", model_type(m)},
           {"max_concurrent_requests", o.max_concurrent_requests},
           {"max_input_length", m.max_tokens},
           {"max_batch_tokens", o.max_batch_tokens},
           {"max_batch_requests",
            o.max_batch_requests ? json(o.max_batch_requests) : json(nullptr)},
           {"max_client_batch_size", o.max_client_batch_size},
           {"auto_truncate", o.auto_truncate},
           {"tokenization_workers", ctx.tokenizers.size()},
           {"lanes", ctx.engine.lanes()},
           {"version", "0.1.0"},
           {"sha", nullptr},
           {"docker_label", nullptr},
           {"device", m.backend},
           {"hidden_size", m.hidden},
           {"output_dim", m.output_dim},
           {"prompts", m.prompts},
           {"include_prompt", m.include_prompt}};
  if (m.capabilities.image_input) {
    out["image"] = {{"channels", m.image_channels}, {"height", m.image_height}, {"width", m.image_width},
                    {"patch_size", m.patch_size}, {"embedding_dim", m.image_embedding_dim},
                    {"image_workers", ctx.image_workers.size()}};
    // Whether http(s) image URLs are fetched, and from which hosts (empty: any).
    if (ctx.options.url_fetch.enabled) out["image"]["fetch_url_hosts"] = ctx.options.url_fetch.hosts;
    out["image"]["fetch_image_urls"] = ctx.options.url_fetch.enabled;
    if (m.has_logit) out["image"]["logit"] = {{"scale", m.logit_scale}, {"bias", m.logit_bias}};
  }
  reply_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
  return std::nullopt;
}

std::optional<ModelCall> health(Context &ctx) {
  // Token ids 0 and 1 exist in every vocabulary; no tokenizer is involved, so
  // the answer speaks for the engine and the inference thread alone.
  // A model of images alone (a vision tower) gets a black image of its size.
  const ModelInfo &info = ctx.engine.info();
  const Capabilities &c = info.capabilities;
  ModelCall call;
  if (c.embed || c.score || c.multi_vector || c.hidden_states) {
    TokenInput probe;
    probe.ids = {0, 1 < info.vocab ? 1 : 0};
    call.kind = c.embed ? JobKind::kPooled
                : c.score ? JobKind::kScores
                : c.multi_vector ? JobKind::kTokens
                                 : JobKind::kHidden;
    call.inputs = {probe};
  } else {
    ImageInput black;
    black.channels = static_cast<std::size_t>(info.image_channels);
    black.height = static_cast<std::size_t>(info.image_height);
    black.width = static_cast<std::size_t>(info.image_width);
    black.pixels.assign(black.channels * black.height * black.width, 0.0f);
    call.kind = info.image_embedding_dim > 0 ? JobKind::kImagePooled : JobKind::kImageHidden;
    call.images = {std::move(black)};
  }
  call.answer = [](Job &, HttpResponse &res, Timings &) { res.status = 200; };
  call.failure_status = 503;
  call.failure_type = "Unhealthy";
  call.failure_prefix = "the model failed a forward pass: ";
  return call;
}

std::optional<ModelCall> metrics(Context &ctx, HttpResponse &res) {
  res.content_type = "text/plain; version=0.0.4";
  res.body = ctx.metrics.render();
  return std::nullopt;
}

} // namespace

void add_info_routes(Router &router, Context &ctx) {
  router.add(Method::kGet, "/info", false,
             [&ctx](auto &, auto &res, auto &) { return info(ctx, res); });
  router.add(Method::kGet, "/health", false,
             [&ctx](auto &, auto &, auto &) { return health(ctx); });
  router.add(Method::kGet, "/metrics", false,
             [&ctx](auto &, auto &res, auto &) { return metrics(ctx, res); });
}

} // namespace il::server
