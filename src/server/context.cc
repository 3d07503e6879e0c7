#include "server/context.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <future>
#include <new>
#include <optional>
#include <string_view>

#include "core/base64.h"
#include "server/api_error.h"
#include "server/url_fetch.h"

namespace il::server {
namespace {

using json = nlohmann::json;

const json *field_of(const json &body, const char *field) {
  const auto it = body.find(field);
  if (it == body.end() || it->is_null())
    return nullptr;
  return &*it;
}

std::vector<int32_t> token_ids(const json &v, const std::string &where) {
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (const json &x : v) {
    if (!x.is_number_integer())
      throw validation_error(where + ": token ids must be integers");
    const auto id = x.get<std::int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      throw validation_error(where + ": token id " + std::to_string(id) +
                             " is out of range");
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

bool all_of_type(const json &arr, bool (json::*pred)() const noexcept) {
  return std::all_of(arr.begin(), arr.end(),
                     [&](const json &x) { return (x.*pred)(); });
}

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

} // namespace

json parse_body(const HttpRequest &req) {
  // Nesting deeper than any route reads is refused while parsing: it can only
  // cost memory and time (and recursion in code that walks the value). The
  // value count is bounded too: the library frees a large array through a
  // temporary list of its elements, allocated inside a destructor, so an array
  // of tens of millions of values cannot even be freed safely when memory is
  // short. No route reads anywhere near this many.
  constexpr int kMaxDepth = 32;
  constexpr std::size_t kMaxValues = 1'000'000;
  std::size_t values = 0;
  const json::parser_callback_t limits =
      [&values](int depth, json::parse_event_t event, json &) {
        if (depth > kMaxDepth)
          throw validation_error("the JSON body is nested deeper than " +
                                 std::to_string(kMaxDepth) + " levels");
        if (event == json::parse_event_t::value && ++values > kMaxValues)
          throw ApiError(413, "PayloadTooLarge",
                         "the JSON body holds more than " +
                             std::to_string(kMaxValues) + " values");
        return true;
      };
  json body;
  try {
    body = json::parse(req.body, limits);
  } catch (const json::exception &e) {
    // parse_error, and out_of_range for a number too large for a double
    // ("1e400"), which is no parse_error: both are the client's mistake (a 422,
    // not a 500). Without the library's "[json.exception.parse_error.101] " tag:
    // the client needs where and what, not the library's internal code.
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0 &&
        what.find("] ") != std::string::npos)
      what.erase(0, what.find("] ") + 2);
    throw validation_error("invalid JSON body: " + what);
  }
  if (!body.is_object())
    throw validation_error("the JSON body must be an object");
  return body;
}

bool get_bool(const json &body, const char *field, bool fallback) {
  const json *v = field_of(body, field);
  if (!v)
    return fallback;
  if (!v->is_boolean())
    throw validation_error(std::string("'") + field + "' must be a boolean");
  return v->get<bool>();
}

std::size_t get_count(const json &body, const char *field,
                      std::size_t fallback) {
  const json *v = field_of(body, field);
  if (!v)
    return fallback;
  if (!v->is_number_integer() || v->get<std::int64_t>() < 0)
    throw validation_error(std::string("'") + field +
                           "' must be a non-negative integer");
  return v->get<std::size_t>();
}

std::string get_string(const json &body, const char *field,
                       const std::string &fallback) {
  const json *v = field_of(body, field);
  if (!v)
    return fallback;
  if (!v->is_string())
    throw validation_error(std::string("'") + field + "' must be a string");
  return v->get<std::string>();
}

std::string require_string(const json &body, const char *field) {
  const json *v = field_of(body, field);
  if (!v)
    throw validation_error(std::string("'") + field + "' is missing");
  if (!v->is_string())
    throw validation_error(std::string("'") + field + "' must be a string");
  return v->get<std::string>();
}

std::vector<std::string> require_strings(const json &body, const char *field) {
  const json *v = field_of(body, field);
  if (!v)
    throw validation_error(std::string("'") + field + "' is missing");
  if (!v->is_array() || !all_of_type(*v, &json::is_string))
    throw validation_error(std::string("'") + field +
                           "' must be an array of strings");
  if (v->empty())
    throw validation_error(std::string("'") + field + "' is empty");
  return v->get<std::vector<std::string>>();
}

namespace {

// An {"image": ...} or {"text": ...} item of an image model's request.
void add_object_item(Inputs &in, const json &item, const std::string &where,
                     const Context &ctx) {
  const bool has_image = item.contains("image"), has_text = item.contains("text");
  if (item.size() != 1 || has_image == has_text)
    throw validation_error(where + " must be {\"image\": \"...\"} or {\"text\": \"...\"}");
  const json &v = has_image ? item["image"] : item["text"];
  if (!v.is_string())
    throw validation_error(where + (has_image ? ": 'image'" : ": 'text'") + " must be a string");
  if (has_text) {
    in.texts.push_back(v.get<std::string>());
    in.is_image.push_back(false);
    return;
  }
  if (!ctx.engine.info().capabilities.image_input)
    throw unsupported_error("the loaded model takes no images");
  in.images.push_back(image_bytes(v.get<std::string>(), where, ctx.options.url_fetch));
  in.is_image.push_back(true);
}

} // namespace

std::vector<std::uint8_t> image_bytes(const std::string &ref, const std::string &where,
                                      const UrlFetchOptions &urls) {
  if (is_http_url(ref))
    return fetch_url(ref, urls, where);
  if (ref.rfind("file:", 0) == 0)
    throw validation_error(where + ": this server reads no files; send the image itself as base64 or a data: URI");
  std::string why;
  const std::optional<std::string> bytes = decode_base64_or_data_uri(ref, why);
  if (!bytes)
    throw validation_error(where + ": the image is " + why);
  if (bytes->empty())
    throw validation_error(where + ": the image is empty");
  return {bytes->begin(), bytes->end()};
}

Inputs parse_inputs(const json &body, const char *field, const Context &ctx) {
  const json *v = field_of(body, field);
  const std::string name = std::string("'") + field + "'";
  if (!v)
    throw validation_error(name + " is missing");
  Inputs in;
  if (v->is_string()) {
    in.texts.push_back(v->get<std::string>());
  } else if (v->is_object()) {
    add_object_item(in, *v, name, ctx);
  } else if (v->is_array()) {
    if (v->empty())
      throw validation_error(name + " is empty");
    if (all_of_type(*v, &json::is_string)) {
      in.batch = true;
      in.texts = v->get<std::vector<std::string>>();
    } else if (all_of_type(*v, &json::is_number)) {
      in.token_ids = true;
      in.ids.push_back(token_ids(*v, name));
    } else if (all_of_type(*v, &json::is_array)) {
      in.batch = true;
      in.token_ids = true;
      for (std::size_t i = 0; i < v->size(); ++i)
        in.ids.push_back(
            token_ids((*v)[i], name + " item " + std::to_string(i)));
    } else if (std::all_of(v->begin(), v->end(), [](const json &x) { return x.is_string() || x.is_object(); })) {
      in.batch = true;
      if (v->size() > ctx.options.max_client_batch_size)
        throw validation_error(name + " holds " + std::to_string(v->size()) + " inputs, more than the " +
                               std::to_string(ctx.options.max_client_batch_size) +
                               " allowed (--max-client-batch-size)");
      for (std::size_t i = 0; i < v->size(); ++i) {
        const json &item = (*v)[i];
        if (item.is_string()) {
          in.texts.push_back(item.get<std::string>());
          in.is_image.push_back(false);
        } else {
          add_object_item(in, item, name + " item " + std::to_string(i), ctx);
        }
      }
    } else {
      throw validation_error(
          name +
          " must be a string, an array of strings, an array of token ids, "
          "an array of arrays of token ids, or (image models) items "
          "{\"image\": ...} / {\"text\": ...}");
    }
  } else {
    throw validation_error(name + " must be a string or an array");
  }
  if (in.items() > ctx.options.max_client_batch_size)
    throw validation_error(name + " holds " + std::to_string(in.items()) +
                           " inputs, more than the " +
                           std::to_string(ctx.options.max_client_batch_size) +
                           " allowed (--max-client-batch-size)");
  if (in.images.empty())
    in.is_image.clear();  // all texts: the plain form
  for (std::size_t i = 0, t = 0; i < in.items(); ++i) {
    if (!in.is_image.empty() && in.is_image[i])
      continue;
    const bool empty = in.token_ids ? in.ids[t].empty() : in.texts[t].empty();
    ++t;
    if (empty)
      throw validation_error(name + " item " + std::to_string(i) + " is empty");
  }
  return in;
}

TextOptions text_options(const json &body, const Context &ctx,
                         bool with_prompt) {
  TextOptions o;
  o.tokenize.truncate = get_bool(body, "truncate", ctx.options.auto_truncate);
  std::string dir = get_string(body, "truncation_direction", "right");
  std::transform(dir.begin(), dir.end(), dir.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (dir != "right" && dir != "left")
    throw validation_error(
        "'truncation_direction' must be \"right\" or \"left\"");
  o.tokenize.truncate_left = dir == "left";
  if (!with_prompt)
    return o;
  const ModelInfo &info = ctx.engine.info();
  const std::string name =
      get_string(body, "prompt_name", info.default_prompt_name);
  if (!name.empty()) {
    const auto it = info.prompts.find(name);
    if (it == info.prompts.end())
      throw validation_error("prompt '" + name +
                             "' is not defined by the model");
    o.prefix = it->second;
  }
  return o;
}

std::vector<TokenInput> to_token_inputs(Context &ctx, const Inputs &inputs,
                                        const TextOptions &options,
                                        Timings &timings) {
  const auto max_len = static_cast<std::size_t>(ctx.engine.info().max_tokens);
  const auto vocab = ctx.engine.info().vocab;
  std::vector<TokenInput> out(inputs.size());
  if (inputs.token_ids) {
    for (std::size_t i = 0; i < inputs.ids.size(); ++i) {
      std::vector<int32_t> ids = inputs.ids[i];
      for (int32_t id : ids)
        if (id >= vocab)
          throw validation_error("input " + std::to_string(i) + ": token id " +
                                 std::to_string(id) +
                                 " is outside the vocabulary of " +
                                 std::to_string(vocab));
      if (max_len > 0 && ids.size() > max_len) {
        if (!options.tokenize.truncate)
          throw validation_error(
              "input " + std::to_string(i) + ": " + std::to_string(ids.size()) +
              " tokens, the model accepts at most " + std::to_string(max_len) +
              " (set \"truncate\": true)");
        if (options.tokenize.truncate_left)
          ids.erase(ids.begin(),
                    ids.end() - static_cast<std::ptrdiff_t>(max_len));
        else
          ids.resize(max_len);
      }
      timings.tokens += ids.size();
      out[i].ids = std::move(ids);
    }
    return out;
  }
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  // Prompted texts carry their prompt's token count: a model pooled without its
  // prompt (include_prompt: false) leaves those tokens out. Left truncation
  // cuts the prompt first.
  const bool count_prompt =
      !options.prefix.empty() && !ctx.engine.info().include_prompt;
  [&] {
    std::size_t prompt = 0;
    try {
      if (count_prompt)
        prompt = ctx.engine.prompt_tokens(options.prefix);
    } catch (const std::bad_alloc &) {
      throw; // a 503, not the input's fault
    } catch (const std::exception &e) {
      failure = std::string("prompt: ") + e.what();
      return;
    }
    for (std::size_t i = 0; i < inputs.texts.size(); ++i) {
      try {
        const std::string text = options.prefix + inputs.texts[i];
        out[i] = ctx.engine.tokenize_with(text, options.tokenize);
        std::size_t cut = 0;
        if (prompt > 0 && options.tokenize.truncate_left &&
            out[i].ids.size() >= max_len) {
          TokenizeOptions whole = options.tokenize;
          whole.limit_length = false;
          cut = ctx.engine.tokenize_with(text, whole).ids.size() -
                out[i].ids.size();
        }
        out[i].prompt_tokens = prompt > cut ? prompt - cut : 0;
      } catch (const std::bad_alloc &) {
        throw; // a 503, not the input's fault
      } catch (const std::exception &e) {
        failure = "input " + std::to_string(i) + ": " + e.what();
        return;
      }
    }
  }();
  timings.tokenization_ms = ms_between(start, std::chrono::steady_clock::now());
  ctx.metrics.observe_tokenization(timings.tokenization_ms / 1000.0);
  if (!failure.empty())
    throw ApiError(422, "Tokenizer", failure);
  for (const TokenInput &t : out)
    timings.tokens += t.ids.size();
  return out;
}

std::vector<TokenInput> tokenize_pairs(Context &ctx, const std::string &query,
                                       const std::vector<std::string> &texts,
                                       const TokenizeOptions &options,
                                       Timings &timings) {
  std::vector<TokenInput> out(texts.size());
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < texts.size() && failure.empty(); ++i) {
    try {
      out[i] = ctx.engine.tokenize_pair_with(query, texts[i], options);
    } catch (const std::bad_alloc &) {
      throw; // a 503, not the input's fault
    } catch (const std::exception &e) {
      failure = "text " + std::to_string(i) + ": " + e.what();
    }
  }
  timings.tokenization_ms = ms_between(start, std::chrono::steady_clock::now());
  ctx.metrics.observe_tokenization(timings.tokenization_ms / 1000.0);
  if (!failure.empty())
    throw ApiError(422, "Tokenizer", failure);
  for (const TokenInput &t : out)
    timings.tokens += t.ids.size();
  return out;
}

void set_timing_headers(HttpResponse &res, const Timings &t,
                        const std::string &device) {
  char buf[32];
  const auto put = [&](const char *name, double ms) {
    std::snprintf(buf, sizeof buf, "%.3f", ms);
    res.set_header(name, buf);
  };
  put("x-tokenization-time", t.tokenization_ms);
  put("x-queue-time", t.queue_ms);
  put("x-inference-time", t.inference_ms);
  put("x-compute-time", t.tokenization_ms + t.queue_ms + t.inference_ms);
  res.set_header("x-compute-tokens", std::to_string(t.tokens));
  res.set_header("x-compute-type", device);
}

void check_finite_rows(const Matrix &rows) {
  for (std::size_t r = 0; r < rows.rows; ++r) {
    const float *row = rows.row(r);
    for (std::size_t c = 0; c < rows.cols; ++c)
      if (!std::isfinite(row[c]))
        throw ApiError(
            500, "Backend",
            "the model produced a non-finite value (NaN or infinity) for "
            "input " +
                std::to_string(r) +
                ": the weights or the precision (--dtype) overflow on it");
  }
}

void require_embedding_model(const Context &ctx) {
  const Capabilities &c = ctx.engine.info().capabilities;
  if (!c.embed && c.multi_vector)
    throw unsupported_error(
        "the loaded model is a multi-vector (ColBERT) model: it gives one "
        "vector per token, not one embedding per input; use /embed_all "
        "(token vectors) or /rerank, /v1/rerank (MaxSim scores)");
  if (!c.embed && !c.image_input)
    throw unsupported_error("the loaded model does not produce embeddings (it "
                            "is a cross-encoder / reranker): use /rerank or "
                            "/predict");
}

void require_cross_encoder(const Context &ctx) {
  if (!ctx.engine.info().capabilities.score)
    throw unsupported_error("the loaded model is an embedding model, not a "
                            "cross-encoder or reranker: use /embed");
}

std::vector<ImageInput> to_image_inputs(Context &ctx, const Inputs &inputs,
                                        const char *field, Timings &timings) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<ImageInput> out(inputs.images.size());
  std::vector<std::string> failures(inputs.images.size());
  std::vector<std::future<void>> done;
  done.reserve(inputs.images.size());
  // Each image on its own worker; the workers never wait on anything, so this
  // thread (a tokenization worker) waiting on them cannot deadlock.
  for (std::size_t i = 0; i < inputs.images.size(); ++i)
    done.push_back(ctx.image_workers.submit([&, i] {
      try {
        out[i] = ctx.engine.load_image(inputs.images[i], "image");
      } catch (const std::bad_alloc &) {
        throw;
      } catch (const std::exception &e) {
        failures[i] = e.what();
      }
    }));
  for (std::future<void> &f : done)
    f.get();  // rethrows bad_alloc: a 503
  timings.tokenization_ms += ms_between(start, std::chrono::steady_clock::now());
  // The request's position of image i, for the error.
  std::size_t image = 0;
  for (std::size_t item = 0; item < inputs.is_image.size(); ++item) {
    if (!inputs.is_image[item])
      continue;
    if (!failures[image].empty())
      throw validation_error(std::string("'") + field + "' item " + std::to_string(item) + ": " + failures[image]);
    ++image;
  }
  return out;
}

} // namespace il::server
