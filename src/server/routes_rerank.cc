// Cross-encoder routes: TEI's /rerank (query against texts, best first) and
// /predict (scores of single texts or text pairs per label), and the Cohere /
// Jina style /v1/rerank.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <numeric>
#include <optional>

#include "core/float_format.h"
#include "server/api_error.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

float sigmoid(float x) {
  return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
}

std::size_t single_label(const Context &ctx) {
  const int labels = ctx.engine.info().num_labels;
  if (labels != 1)
    throw unsupported_error(
        "the loaded model has " + std::to_string(labels) +
        " labels: it is a classifier, not a reranker (use /predict)");
  return 1;
}

// Indices of the scores, best first (ties keep input order).
std::vector<std::size_t> ranking(const std::vector<float> &scores) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(
      order.begin(), order.end(),
      [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  return order;
}

void check_batch_size(const Context &ctx, std::size_t n, const char *field) {
  if (n > ctx.options.max_client_batch_size)
    throw validation_error(std::string("'") + field + "' holds " +
                           std::to_string(n) + " inputs, more than the " +
                           std::to_string(ctx.options.max_client_batch_size) +
                           " allowed (--max-client-batch-size)");
}

// A multi-vector (ColBERT) model scores by late interaction: the query and
// the documents tokenized as PyLate does, one job whose first input is the
// query (JobKind::kMaxSim). Its scores are MaxSim sums, not logits: no sigmoid.
bool late_interaction(const Context &ctx) {
  const Capabilities &c = ctx.engine.info().capabilities;
  return c.multi_vector && !c.score;
}

std::vector<TokenInput> late_interaction_inputs(Context &ctx,
                                                const std::string &query,
                                                const std::vector<std::string> &docs,
                                                TokenizeOptions options,
                                                Timings &t) {
  if (!options.instruction.empty())
    throw validation_error("'instruction' applies to prompt-scored rerankers, "
                           "not to a multi-vector (ColBERT) model");
  std::vector<TokenInput> out;
  out.reserve(docs.size() + 1);
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i <= docs.size() && failure.empty(); ++i) {
    options.role = i == 0 ? TextRole::kQuery : TextRole::kDocument;
    try {
      out.push_back(ctx.engine.tokenize_with(i == 0 ? query : docs[i - 1], options));
    } catch (const std::bad_alloc &) {
      throw;
    } catch (const std::exception &e) {
      failure = (i == 0 ? std::string("query") : "text " + std::to_string(i - 1)) + ": " + e.what();
    }
  }
  t.tokenization_ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  ctx.metrics.observe_tokenization(t.tokenization_ms / 1000.0);
  if (!failure.empty())
    throw ApiError(422, "Tokenizer", failure);
  for (const TokenInput &in : out)
    t.tokens += in.ids.size();
  return out;
}

std::optional<ModelCall> rerank(Context &ctx, const HttpRequest &req,
                                Timings &t) {
  if (late_interaction(ctx)) {
    const json body = parse_body(req);
    const std::string query = require_string(body, "query");
    const std::vector<std::string> texts = require_strings(body, "texts");
    check_batch_size(ctx, texts.size(), "texts");
    (void)get_bool(body, "raw_scores", false); // MaxSim sums either way
    const bool return_text = get_bool(body, "return_text", false);
    TextOptions options = text_options(body, ctx, false);
    // PyLate always cuts to the folder's query / document lengths (as
    // /embed_all does for this model).
    options.tokenize.truncate = get_bool(body, "truncate", true);
    options.tokenize.instruction = get_string(body, "instruction", "");
    auto inputs = late_interaction_inputs(ctx, query, texts, options.tokenize, t);
    return ModelCall{
        JobKind::kMaxSim, std::move(inputs),
        [texts, return_text](Job &job, HttpResponse &res, Timings &) {
          check_finite_rows(job.rows);
          std::vector<float> scores(texts.size());
          for (std::size_t i = 0; i < texts.size(); ++i)
            scores[i] = job.rows.row(i + 1)[0];
          json out = json::array();
          for (std::size_t i : ranking(scores)) {
            json item{{"index", i}, {"score", scores[i]}};
            if (return_text)
              item["text"] = texts[i];
            out.push_back(std::move(item));
          }
          reply_json(res, out.dump());
        }};
  }
  require_cross_encoder(ctx);
  single_label(ctx);
  const json body = parse_body(req);
  const std::string query = require_string(body, "query");
  const std::vector<std::string> texts = require_strings(body, "texts");
  check_batch_size(ctx, texts.size(), "texts");
  const bool raw = get_bool(body, "raw_scores", false);
  const bool return_text = get_bool(body, "return_text", false);
  TextOptions options = text_options(body, ctx, false);
  // A prompt-scored reranker's task instruction (Qwen3-Reranker); refused by other models.
  options.tokenize.instruction = get_string(body, "instruction", "");
  auto inputs = tokenize_pairs(ctx, query, texts, options.tokenize, t);
  return ModelCall{
      JobKind::kScores, std::move(inputs),
      [texts, raw, return_text](Job &job, HttpResponse &res, Timings &) {
        check_finite_rows(job.rows);
        std::vector<float> scores(texts.size());
        for (std::size_t i = 0; i < texts.size(); ++i)
          scores[i] = raw ? job.rows.row(i)[0] : sigmoid(job.rows.row(i)[0]);
        json out = json::array();
        for (std::size_t i : ranking(scores)) {
          json item{{"index", i}, {"score", scores[i]}};
          if (return_text)
            item["text"] = texts[i];
          out.push_back(std::move(item));
        }
        reply_json(res, out.dump());
      }};
}

std::optional<ModelCall> cohere_rerank(Context &ctx, const HttpRequest &req,
                                       Timings &t) {
  const bool maxsim = late_interaction(ctx);
  if (!maxsim) {
    require_cross_encoder(ctx);
    single_label(ctx);
  }
  const json body = parse_body(req);
  const std::string query = require_string(body, "query");
  const auto docs_it = body.find("documents");
  if (docs_it == body.end() || !docs_it->is_array() || docs_it->empty())
    throw validation_error("'documents' must be a non-empty array of strings "
                           "or {\"text\": ...} objects");
  std::vector<std::string> docs;
  for (const json &d : *docs_it) {
    if (d.is_string())
      docs.push_back(d.get<std::string>());
    else if (d.is_object() && d.contains("text") && d["text"].is_string())
      docs.push_back(d["text"].get<std::string>());
    else
      throw validation_error(
          "'documents' must hold strings or {\"text\": ...} objects");
  }
  check_batch_size(ctx, docs.size(), "documents");
  (void)get_string(body, "model", "");
  const std::size_t top_n =
      std::min(get_count(body, "top_n", docs.size()), docs.size());
  const bool return_documents = get_bool(body, "return_documents", true);
  TextOptions options = text_options(body, ctx, false);
  // Cohere and Jina cut long documents rather than refuse them; "truncate":
  // false still refuses.
  options.tokenize.truncate = get_bool(body, "truncate", true);
  options.tokenize.instruction = get_string(body, "instruction", "");
  auto inputs = maxsim ? late_interaction_inputs(ctx, query, docs,
                                                 options.tokenize, t)
                       : tokenize_pairs(ctx, query, docs, options.tokenize, t);
  const std::string model_name = ctx.model_name;
  // MaxSim: the relevance score is the late-interaction sum itself (row 0 of
  // the job is its query).
  return ModelCall{maxsim ? JobKind::kMaxSim : JobKind::kScores,
                   std::move(inputs),
                   [docs, top_n, return_documents, model_name,
                    maxsim](Job &job, HttpResponse &res, Timings &t) {
                     check_finite_rows(job.rows);
                     std::vector<float> scores(docs.size());
                     for (std::size_t i = 0; i < docs.size(); ++i)
                       scores[i] = maxsim ? job.rows.row(i + 1)[0]
                                          : sigmoid(job.rows.row(i)[0]);
                     json results = json::array();
                     const auto order = ranking(scores);
                     for (std::size_t k = 0; k < top_n; ++k) {
                       const std::size_t i = order[k];
                       json item{{"index", i}, {"relevance_score", scores[i]}};
                       if (return_documents)
                         item["document"] = json{{"text", docs[i]}};
                       results.push_back(std::move(item));
                     }
                     json out{{"model", model_name},
                              {"results", std::move(results)},
                              {"usage", {{"total_tokens", t.tokens}}}};
                     reply_json(res, out.dump());
                   }};
}

// One /predict input: a text, or a pair of texts.
struct Sequence {
  std::string first;
  std::optional<std::string> second;
};

Sequence parse_sequence(const json &v, const std::string &where) {
  if (v.is_string())
    return {v.get<std::string>(), std::nullopt};
  if (v.is_array() && (v.size() == 1 || v.size() == 2) &&
      std::all_of(v.begin(), v.end(),
                  [](const json &x) { return x.is_string(); })) {
    if (v.size() == 1)
      return {v[0].get<std::string>(), std::nullopt};
    return {v[0].get<std::string>(), v[1].get<std::string>()};
  }
  throw validation_error(where +
                         " must be a text or an array of one or two texts");
}

std::optional<ModelCall> predict(Context &ctx, const HttpRequest &req,
                                 Timings &t) {
  require_cross_encoder(ctx);
  const json body = parse_body(req);
  const auto it = body.find("inputs");
  if (it == body.end() || it->is_null())
    throw validation_error("'inputs' is missing");
  // A string or an array of texts is one input; an array of arrays is a batch
  // (as TEI reads it).
  const bool batch = it->is_array() && !it->empty() && (*it)[0].is_array();
  std::vector<Sequence> seqs;
  if (batch) {
    for (std::size_t i = 0; i < it->size(); ++i)
      seqs.push_back(
          parse_sequence((*it)[i], "'inputs' item " + std::to_string(i)));
  } else {
    seqs.push_back(parse_sequence(*it, "'inputs'"));
  }
  check_batch_size(ctx, seqs.size(), "inputs");
  for (const Sequence &s : seqs)
    if (s.first.empty() && !s.second)
      throw validation_error("'inputs' holds an empty text");
  const bool raw = get_bool(body, "raw_scores", false);
  const TextOptions options = text_options(body, ctx, false);

  std::vector<TokenInput> inputs(seqs.size());
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < seqs.size() && failure.empty(); ++i) {
    try {
      inputs[i] =
          seqs[i].second
              ? ctx.engine.tokenize_pair_with(seqs[i].first, *seqs[i].second,
                                              options.tokenize)
              : ctx.engine.tokenize_with(seqs[i].first, options.tokenize);
    } catch (const std::bad_alloc &) {
      throw; // a 503, not the input's fault
    } catch (const std::exception &e) {
      failure = "input " + std::to_string(i) + ": " + e.what();
    }
  }
  t.tokenization_ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  ctx.metrics.observe_tokenization(t.tokenization_ms / 1000.0);
  if (!failure.empty())
    throw ApiError(422, "Tokenizer", failure);
  for (const TokenInput &in : inputs)
    t.tokens += in.ids.size();

  const std::vector<std::string> names =
      ctx.engine.info().labels; // one per output column
  return ModelCall{
      JobKind::kScores, std::move(inputs),
      [names, raw, batch](Job &job, HttpResponse &res, Timings &) {
        check_finite_rows(job.rows);
        json out = json::array();
        for (std::size_t r = 0; r < job.rows.rows; ++r) {
          const float *logits = job.rows.row(r);
          const std::size_t n = job.rows.cols;
          std::vector<float> scores(logits, logits + n);
          if (!raw && n == 1)
            scores[0] = sigmoid(scores[0]);
          if (!raw && n > 1) { // softmax over the labels
            const float top = *std::max_element(scores.begin(), scores.end());
            double sum = 0;
            for (float &s : scores)
              sum += (s = static_cast<float>(
                          std::exp(static_cast<double>(s - top))));
            for (float &s : scores)
              s = static_cast<float>(s / sum);
          }
          json labels = json::array();
          for (std::size_t i : ranking(scores))
            labels.push_back({{"score", scores[i]}, {"label", names.at(i)}});
          out.push_back(std::move(labels));
        }
        reply_json(res, batch ? out.dump() : out[0].dump());
      }};
}

} // namespace

void add_rerank_routes(Router &router, Context &ctx) {
  router.add(
      Method::kPost, "/rerank", true,
      [&ctx](auto &req, auto &, auto &t) { return rerank(ctx, req, t); });
  router.add(
      Method::kPost, "/predict", true,
      [&ctx](auto &req, auto &, auto &t) { return predict(ctx, req, t); });
  router.add(Method::kPost, "/v1/rerank", true,
             [&ctx](auto &req, auto &, auto &t) {
               return cohere_rerank(ctx, req, t);
             });
}

} // namespace il::server
