// TEI's /tokenize (tokens with their text and byte spans) and /decode (ids back
// to text).
#include <chrono>
#include <exception>
#include <new>

#include "server/api_error.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

std::optional<ModelCall> tokenize(Context &ctx, const HttpRequest &req,
                                  HttpResponse &res, Timings &t) {
  const json body = parse_body(req);
  Inputs inputs = parse_inputs(body, "inputs", ctx);
  if (inputs.token_ids)
    throw validation_error("'inputs' must be a text or an array of texts");
  TextOptions options = text_options(body, ctx, true);
  options.tokenize.limit_length =
      false; // TEI shows the whole tokenization here
  options.tokenize.add_special_tokens =
      get_bool(body, "add_special_tokens", true);
  std::vector<std::vector<TokenDetail>> tokens(inputs.texts.size());
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < inputs.texts.size() && failure.empty(); ++i) {
    try {
      tokens[i] = ctx.engine.token_details(options.prefix + inputs.texts[i],
                                           options.tokenize);
    } catch (const std::bad_alloc &) {
      throw; // a 503, not the input's fault
    } catch (const std::exception &e) {
      failure = "input " + std::to_string(i) + ": " + e.what();
    }
  }
  t.tokenization_ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  if (!failure.empty())
    throw ApiError(422, "Tokenizer", failure);
  // Written out directly: a JSON value per token costs hundreds of bytes, the
  // text a few dozen.
  std::string out = "[";
  for (std::size_t s = 0; s < tokens.size(); ++s) {
    if (s)
      out += ',';
    out += '[';
    for (std::size_t k = 0; k < tokens[s].size(); ++k) {
      const TokenDetail &d = tokens[s][k];
      t.tokens += 1;
      if (k)
        out += ',';
      out += "{\"id\":" + std::to_string(d.id) + ",\"text\":";
      out += json(d.text).dump(-1, ' ', false, json::error_handler_t::replace);
      out += d.special
                 ? ",\"special\":true,\"start\":null,\"stop\":null}"
                 : ",\"special\":false,\"start\":" + std::to_string(d.start) +
                       ",\"stop\":" + std::to_string(d.stop) + "}";
    }
    out += ']';
    std::vector<TokenDetail>().swap(tokens[s]); // free as we go
  }
  out += ']';
  reply_json(res, std::move(out));
  return std::nullopt;
}

std::optional<ModelCall> decode(Context &ctx, const HttpRequest &req,
                                HttpResponse &res) {
  const json body = parse_body(req);
  Inputs ids = parse_inputs(body, "ids", ctx);
  if (!ids.token_ids)
    throw validation_error(
        "'ids' must be an array of token ids or an array of such arrays");
  const bool skip = get_bool(body, "skip_special_tokens", true);
  const int vocab = ctx.engine.info().vocab;
  json out = json::array();
  for (std::size_t i = 0; i < ids.ids.size(); ++i) {
    for (int32_t id : ids.ids[i])
      if (id >= vocab)
        throw validation_error("'ids' item " + std::to_string(i) +
                               ": token id " + std::to_string(id) +
                               " is outside the vocabulary of " +
                               std::to_string(vocab));
    try {
      out.push_back(ctx.engine.decode(ids.ids[i], skip));
    } catch (const std::exception &e) {
      throw validation_error("'ids' item " + std::to_string(i) + ": " +
                             e.what());
    }
  }
  reply_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
  return std::nullopt;
}

} // namespace

void add_token_routes(Router &router, Context &ctx) {
  router.add(Method::kPost, "/tokenize", true,
             [&ctx](auto &req, auto &res, auto &t) {
               return tokenize(ctx, req, res, t);
             });
  router.add(
      Method::kPost, "/decode", true,
      [&ctx](auto &req, auto &res, auto &) { return decode(ctx, req, res); });
}

} // namespace il::server
