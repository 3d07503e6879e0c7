// TEI's embedding routes: /embed (pooled vectors), /embed_all (one vector per
// token), /similarity (cosine of a source sentence with others).
#include <cmath>

#include "core/float_format.h"
#include "server/api_error.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

double cosine(const std::vector<float> &a, const std::vector<float> &b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return (aa > 0 && bb > 0) ? ab / std::sqrt(aa * bb) : 0.0;
}

// /embed_all's answer: one array of row vectors per input.
void hidden_answer(Job &job, HttpResponse &res, Timings &) {
  for (const Matrix &m : job.hidden)
    check_finite_rows(m);
  std::string out = "[";
  for (std::size_t i = 0; i < job.hidden.size(); ++i) {
    if (i)
      out += ',';
    out += '[';
    const Matrix &m = job.hidden[i];
    for (std::size_t r = 0; r < m.rows; ++r) {
      if (r)
        out += ',';
      append_floats(out, m.row(r), m.cols);
    }
    out += ']';
  }
  out += ']';
  reply_json(res, std::move(out));
}

std::optional<ModelCall> embed(Context &ctx, const HttpRequest &req,
                               Timings &t) {
  require_embedding_model(ctx);
  const json body = parse_body(req);
  const Inputs inputs = parse_inputs(body, "inputs", ctx);
  const bool normalize = get_bool(body, "normalize", true);
  const std::size_t dims = requested_dimensions(body, ctx);
  const TextOptions options = text_options(body, ctx, true);
  return pooled_call(ctx, inputs, "inputs", options, t,
                   [=](Job &job, HttpResponse &res, Timings &) {
                     check_finite_rows(job.rows);
                     std::string out = "[";
                     for (std::size_t r = 0; r < job.rows.rows; ++r) {
                       if (r)
                         out += ',';
                       const auto v = finish_embedding(
                           job.rows.row(r), job.rows.cols, dims, normalize);
                       append_floats(out, v.data(), v.size());
                     }
                     out += ']';
                     reply_json(res, std::move(out));
                   });
}

std::optional<ModelCall> embed_all(Context &ctx, const HttpRequest &req,
                                   Timings &t) {
  // A multi-vector (ColBERT) model answers with its normalised vector of every
  // kept token, texts tokenized as PyLate does for a query ("is_query": true,
  // PyLate's default) or a document (skiplist tokens left out); token ids are
  // used as given. Other models answer with their hidden states.
  const bool multi_vector = ctx.engine.info().capabilities.multi_vector;
  if (!multi_vector)
    require_embedding_model(ctx);
  const json body = parse_body(req);
  const Inputs inputs = parse_inputs(body, "inputs", ctx);
  TextOptions options = text_options(body, ctx, true);
  if (!inputs.images.empty()) {  // the vision tower's last hidden states
    if (inputs.size() > 0)
      throw validation_error("'inputs' mixes images and texts: send them in separate /embed_all requests");
    ModelCall call{JobKind::kImageHidden, {}, hidden_answer};
    call.images = to_image_inputs(ctx, inputs, "inputs", t);
    return call;
  }
  if (multi_vector) {
    options.tokenize.role = get_bool(body, "is_query", true)
                                ? TextRole::kQuery
                                : TextRole::kDocument;
    // PyLate always cuts queries and documents to the folder's lengths: they
    // are the model's input convention, not a limit on requests
    // ("truncate": false still refuses a longer text).
    options.tokenize.truncate = get_bool(body, "truncate", true);
  }
  else if (body.contains("is_query"))
    throw validation_error("'is_query' applies to multi-vector (ColBERT) "
                           "models only");
  return ModelCall{multi_vector ? JobKind::kTokens : JobKind::kHidden,
                   to_token_inputs(ctx, inputs, options, t), hidden_answer};
}

std::optional<ModelCall> similarity(Context &ctx, const HttpRequest &req,
                                    Timings &t) {
  require_embedding_model(ctx);
  const json body = parse_body(req);
  const auto it = body.find("inputs");
  if (it == body.end() || !it->is_object())
    throw validation_error("'inputs' must be an object {\"source_sentence\": "
                           "..., \"sentences\": [...]}");
  Inputs inputs;
  inputs.texts.push_back(require_string(*it, "source_sentence"));
  for (std::string &s : require_strings(*it, "sentences"))
    inputs.texts.push_back(std::move(s));
  if (inputs.texts.size() - 1 > ctx.options.max_client_batch_size)
    throw validation_error("'sentences' holds more than the " +
                           std::to_string(ctx.options.max_client_batch_size) +
                           " inputs allowed (--max-client-batch-size)");
  for (std::size_t i = 0; i < inputs.texts.size(); ++i)
    if (inputs.texts[i].empty())
      throw validation_error(i == 0 ? "'source_sentence' is empty"
                                    : "a sentence is empty");
  const TextOptions options = text_options(body, ctx, true);
  return ModelCall{
      JobKind::kPooled, to_token_inputs(ctx, inputs, options, t),
      [](Job &job, HttpResponse &res, Timings &) {
        check_finite_rows(job.rows);
        const auto source =
            finish_embedding(job.rows.row(0), job.rows.cols, 0, false);
        std::string out = "[";
        for (std::size_t r = 1; r < job.rows.rows; ++r) {
          if (r > 1)
            out += ',';
          append_float(out,
                       static_cast<float>(cosine(
                           source, finish_embedding(job.rows.row(r),
                                                    job.rows.cols, 0, false))));
        }
        out += ']';
        reply_json(res, std::move(out));
      }};
}

// SigLIP-style image-text scores: {"images": [...], "texts": [...]} →
// {"logits": [[per text] per image], "probabilities": [[...]]}, a pair's logit
// exp(logit_scale) · cos(image, text) + logit_bias and its probability the
// logit's sigmoid (SigLIP scores each pair on its own, no softmax over texts).
std::optional<ModelCall> image_text_scores(Context &ctx, const HttpRequest &req,
                                           Timings &t) {
  const ModelInfo &info = ctx.engine.info();
  if (!info.capabilities.image_input || !info.capabilities.embed || !info.has_logit)
    throw unsupported_error("the loaded model does not score image-text pairs (it needs a vision "
                            "tower, a text tower and a logit scale, as SigLIP has)");
  const json body = parse_body(req);
  for (const auto &[key, value] : body.items())
    if (key != "images" && key != "texts" && key != "truncate")
      throw validation_error("unknown field '" + key + "' (expected 'images', 'texts', 'truncate')");
  const std::vector<std::string> refs = require_strings(body, "images");
  Inputs inputs;
  inputs.texts = require_strings(body, "texts");
  if (refs.size() + inputs.texts.size() > ctx.options.max_client_batch_size)
    throw validation_error("'images' and 'texts' hold " + std::to_string(refs.size() + inputs.texts.size()) +
                           " inputs, more than the " + std::to_string(ctx.options.max_client_batch_size) +
                           " allowed (--max-client-batch-size)");
  for (std::size_t i = 0; i < refs.size(); ++i) {
    inputs.images.push_back(image_bytes(refs[i], "'images' item " + std::to_string(i), ctx.options.url_fetch));
    inputs.is_image.push_back(true);
  }
  for (std::size_t i = 0; i < inputs.texts.size(); ++i)
    if (inputs.texts[i].empty())
      throw validation_error("'texts' item " + std::to_string(i) + " is empty");
  TextOptions options;
  options.tokenize.truncate = get_bool(body, "truncate", true);
  ModelCall call{JobKind::kImageText, to_token_inputs(ctx, inputs, options, t), nullptr};
  call.images = to_image_inputs(ctx, inputs, "images", t);
  const std::size_t images = refs.size(), texts = inputs.texts.size();
  const double scale = std::exp(static_cast<double>(info.logit_scale));
  const double bias = info.logit_bias;
  call.answer = [images, texts, scale, bias](Job &job, HttpResponse &res, Timings &) {
    check_finite_rows(job.rows);
    std::vector<std::vector<float>> unit(job.rows.rows);
    for (std::size_t r = 0; r < job.rows.rows; ++r)
      unit[r] = finish_embedding(job.rows.row(r), job.rows.cols, 0, true);
    std::string logits = "[", probabilities = "[";
    for (std::size_t i = 0; i < images; ++i) {
      logits += i ? ",[" : "[";
      probabilities += i ? ",[" : "[";
      for (std::size_t j = 0; j < texts; ++j) {
        double dot = 0;
        for (std::size_t k = 0; k < job.rows.cols; ++k)
          dot += static_cast<double>(unit[i][k]) * unit[images + j][k];
        const double logit = scale * dot + bias;
        if (j) {
          logits += ',';
          probabilities += ',';
        }
        append_float(logits, static_cast<float>(logit));
        append_float(probabilities, static_cast<float>(1.0 / (1.0 + std::exp(-logit))));
      }
      logits += ']';
      probabilities += ']';
    }
    reply_json(res, "{\"logits\":" + logits + "],\"probabilities\":" + probabilities + "]}");
  };
  return call;
}

} // namespace

ModelCall pooled_call(Context &ctx, const Inputs &inputs, const char *field,
                      const TextOptions &options, Timings &t,
                      std::function<void(Job &, HttpResponse &, Timings &)> answer) {
  if (inputs.size() > 0 && !ctx.engine.info().capabilities.embed)
    throw unsupported_error("the loaded model embeds images only (a vision tower without a text tower)");
  if (inputs.images.empty())
    return ModelCall{JobKind::kPooled, to_token_inputs(ctx, inputs, options, t), std::move(answer)};
  ModelCall call;
  call.images = to_image_inputs(ctx, inputs, field, t);
  if (inputs.size() == 0) {
    call.kind = JobKind::kImagePooled;
    call.answer = std::move(answer);
    return call;
  }
  // Mixed: the job's rows are the images' then the texts'; put them back in
  // the request's order before answering.
  call.kind = JobKind::kImageText;
  call.inputs = to_token_inputs(ctx, inputs, options, t);
  call.answer = [order = inputs.is_image, images = inputs.images.size(),
                 answer = std::move(answer)](Job &job, HttpResponse &res, Timings &timings) {
    Matrix ordered(job.rows.rows, job.rows.cols);
    std::size_t image = 0, text = images;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const float *src = job.rows.row(order[i] ? image++ : text++);
      std::copy(src, src + job.rows.cols, ordered.row(i));
    }
    job.rows = std::move(ordered);
    answer(job, res, timings);
  };
  return call;
}

std::vector<float> finish_embedding(const float *raw, std::size_t width,
                                    std::size_t dims, bool normalize) {
  const std::size_t n = dims ? dims : width;
  std::vector<float> v(raw, raw + n);
  if (normalize) {
    double sq = 0.0;
    for (float x : v)
      sq += static_cast<double>(x) * x;
    if (sq > 0.0)
      for (float &x : v)
        x = static_cast<float>(x / std::sqrt(sq));
  }
  return v;
}

std::size_t requested_dimensions(const json &body, const Context &ctx) {
  const auto it = body.find("dimensions");
  if (it == body.end() || it->is_null())
    return 0;
  const auto width = static_cast<std::size_t>(ctx.engine.info().output_dim);
  if (!it->is_number_integer() || it->get<std::int64_t>() <= 0)
    throw validation_error("'dimensions' must be a positive integer");
  const auto dims = it->get<std::size_t>();
  if (dims > width)
    throw validation_error("'dimensions' " + std::to_string(dims) +
                           " is larger than the embedding size " +
                           std::to_string(width));
  return dims;
}

void add_embed_routes(Router &router, Context &ctx) {
  router.add(Method::kPost, "/embed", true,
             [&ctx](auto &req, auto &, auto &t) { return embed(ctx, req, t); });
  router.add(
      Method::kPost, "/embed_all", true,
      [&ctx](auto &req, auto &, auto &t) { return embed_all(ctx, req, t); });
  router.add(
      Method::kPost, "/similarity", true,
      [&ctx](auto &req, auto &, auto &t) { return similarity(ctx, req, t); });
  router.add(Method::kPost, "/image_text_scores", true,
             [&ctx](auto &req, auto &, auto &t) { return image_text_scores(ctx, req, t); });
}

} // namespace il::server
