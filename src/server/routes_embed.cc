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

std::optional<ModelCall> embed(Context &ctx, const HttpRequest &req,
                               Timings &t) {
  require_embedding_model(ctx);
  const json body = parse_body(req);
  const Inputs inputs = parse_inputs(body, "inputs", ctx);
  const bool normalize = get_bool(body, "normalize", true);
  const std::size_t dims = requested_dimensions(body, ctx);
  const TextOptions options = text_options(body, ctx, true);
  return ModelCall{JobKind::kPooled, to_token_inputs(ctx, inputs, options, t),
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
                   }};
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
                   to_token_inputs(ctx, inputs, options, t),
                   [](Job &job, HttpResponse &res, Timings &) {
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
                   }};
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

} // namespace

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
}

} // namespace il::server
