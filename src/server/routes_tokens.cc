// TEI's /tokenize (tokens with their text and byte spans) and /decode (ids back to text).
#include <chrono>
#include <exception>

#include "server/api_error.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

void tokenize(Context& ctx, const httplib::Request& req, httplib::Response& res, Timings& t) {
  const json body = parse_body(req);
  Inputs inputs = parse_inputs(body, "inputs", ctx);
  if (inputs.token_ids) throw validation_error("'inputs' must be a text or an array of texts");
  TextOptions options = text_options(body, ctx, true);
  options.tokenize.limit_length = false;  // TEI shows the whole tokenization here
  options.tokenize.add_special_tokens = get_bool(body, "add_special_tokens", true);
  std::vector<std::vector<TokenDetail>> tokens(inputs.texts.size());
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  ctx.tokenizers.submit([&] {
    for (std::size_t i = 0; i < inputs.texts.size() && failure.empty(); ++i) {
      try {
        tokens[i] = ctx.engine.token_details(options.prefix + inputs.texts[i], options.tokenize);
      } catch (const std::exception& e) {
        failure = "input " + std::to_string(i) + ": " + e.what();
      }
    }
  }).get();
  t.tokenization_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!failure.empty()) throw ApiError(422, "Tokenizer", failure);
  json out = json::array();
  for (const auto& seq : tokens) {
    json arr = json::array();
    for (const TokenDetail& d : seq) {
      t.tokens += 1;
      json tok{{"id", d.id}, {"text", d.text}, {"special", d.special}, {"start", nullptr}, {"stop", nullptr}};
      if (!d.special) {
        tok["start"] = d.start;
        tok["stop"] = d.stop;
      }
      arr.push_back(std::move(tok));
    }
    out.push_back(std::move(arr));
  }
  reply_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

void decode(Context& ctx, const httplib::Request& req, httplib::Response& res, Timings&) {
  const json body = parse_body(req);
  Inputs ids = parse_inputs(body, "ids", ctx);
  if (!ids.token_ids) throw validation_error("'ids' must be an array of token ids or an array of such arrays");
  const bool skip = get_bool(body, "skip_special_tokens", true);
  const int vocab = ctx.engine.info().vocab;
  json out = json::array();
  for (std::size_t i = 0; i < ids.ids.size(); ++i) {
    for (int32_t id : ids.ids[i])
      if (id >= vocab)
        throw validation_error("'ids' item " + std::to_string(i) + ": token id " + std::to_string(id) +
                               " is outside the vocabulary of " + std::to_string(vocab));
    try {
      out.push_back(ctx.engine.decode(ids.ids[i], skip));
    } catch (const std::exception& e) {
      throw validation_error("'ids' item " + std::to_string(i) + ": " + e.what());
    }
  }
  reply_json(res, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

void add_token_routes(Router& router, Context& ctx) {
  router.add(Method::kPost, "/tokenize", true, [&ctx](auto& req, auto& res, auto& t) { tokenize(ctx, req, res, t); });
  router.add(Method::kPost, "/decode", true, [&ctx](auto& req, auto& res, auto& t) { decode(ctx, req, res, t); });
}

}  // namespace il::server
