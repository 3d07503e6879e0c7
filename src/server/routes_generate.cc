// OpenAI's generation routes on a generating model: POST /v1/completions, POST
// /v1/chat/completions (server/chat_prompt.h builds the prompt from the messages), GET
// /v1/models. Requests go to the step scheduler (server/gen_scheduler.h) and join the running
// batch; `stream: true` answers as server-sent events in OpenAI's chunk format, each chunk
// carrying the text its tokens completed, then a last chunk with the finish reason and the usage
// counts (and, with stream_options.include_usage, OpenAI's separate usage chunk), then
// `data: [DONE]`. Errors are in OpenAI's shape (route_table.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>

#include "core/error.h"
#include "io/json_util.h"
#include "models/generation_config.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/http_server.h"
#include "server/route_table.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

using SamplingDefaults = models::SamplingDefaults;

float get_float(const json& body, const char* field, float fallback, float lo, float hi) {
  if (!body.contains(field) || body[field].is_null()) return fallback;
  const json& v = body[field];
  if (!v.is_number()) throw validation_error(std::string("'") + field + "' must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    throw validation_error(std::string("'") + field + "' must be within " + std::to_string(lo) + ".." +
                           std::to_string(hi));
  return static_cast<float>(d);
}

// `stop`: a string or up to 4 strings (OpenAI's limit), none empty.
std::vector<std::string> stop_strings(const json& body) {
  std::vector<std::string> out;
  if (!body.contains("stop") || body["stop"].is_null()) return out;
  const json& v = body["stop"];
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array() && v.size() <= 4) {
    for (const json& s : v) {
      if (!s.is_string()) throw validation_error("'stop' must be a string or a list of up to 4 strings");
      out.push_back(s.get<std::string>());
    }
  } else {
    throw validation_error("'stop' must be a string or a list of up to 4 strings");
  }
  for (const std::string& s : out)
    if (s.empty()) throw validation_error("'stop' holds an empty string");
  return out;
}

// A block-diffusion model reads its new-token limit from DiffusionOptions: the request's when it
// names one, else the folder's generation_config.json (not the autoregressive defaults above).
void diffusion_limit(const json& body, GenerationRequest& r) {
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (body.contains(key) && !body[key].is_null()) r.diffusion.max_new_tokens = r.options.max_new_tokens;
}

// The options every generation route shares. `default_max` applies when the request names no
// limit (OpenAI: 16 for completions, the rest of the context for chat: capped here).
SamplingOptions sampling_options(const json& body, const SamplingDefaults& d, std::size_t default_max,
                                 std::size_t max_limit) {
  SamplingOptions o;
  std::size_t max_tokens = default_max;
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (body.contains(key) && !body[key].is_null()) {
      max_tokens = get_count(body, key, default_max);
      if (max_tokens == 0) throw validation_error(std::string("'") + key + "' must be at least 1");
    }
  if (max_tokens > max_limit)
    throw ApiError(422, "Validation",
                   "'max_tokens' " + std::to_string(max_tokens) + " is over this server's limit of " +
                       std::to_string(max_limit) + " (--max-new-tokens-limit)");
  o.max_new_tokens = max_tokens;
  o.temperature = get_float(body, "temperature", d.temperature, 0.0f, 2.0f);
  o.top_p = get_float(body, "top_p", d.top_p, 0.0f, 1.0f);
  if (o.top_p == 0.0f) throw validation_error("'top_p' must be above 0");
  o.top_k = d.top_k;
  if (body.contains("top_k") && !body["top_k"].is_null()) {
    if (!body["top_k"].is_number_integer()) throw validation_error("'top_k' must be an integer");
    const long long k = body["top_k"].get<long long>();
    o.top_k = k <= 0 ? 0 : static_cast<std::size_t>(k);  // vLLM: -1 (or 0) = no cut
  }
  o.repetition_penalty = get_float(body, "repetition_penalty", d.repetition_penalty, 0.01f, 100.0f);
  if (body.contains("seed") && !body["seed"].is_null()) {
    if (!body["seed"].is_number_integer()) throw validation_error("'seed' must be an integer");
    o.seed = static_cast<std::uint64_t>(body["seed"].get<long long>());
  } else {
    // A fresh seed per request: two unseeded requests do not draw alike.
    static std::atomic<std::uint64_t> counter{0x9E3779B97F4A7C15ull};
    o.seed = counter.fetch_add(0x9E3779B97F4A7C15ull) ^
             static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  o.stop_strings = stop_strings(body);
  // vLLM's extension: generate to max_tokens whatever ids come (load tests force lengths so).
  if (get_bool(body, "ignore_eos", false)) o.stop_ids = std::vector<int32_t>{};
  if (body.contains("n") && !body["n"].is_null() && !(body["n"].is_number_integer() && body["n"].get<long long>() == 1))
    throw validation_error("'n' must be 1 (one choice per request)");
  return o;
}

// Text a stream may send now: all but a tail that could still become one of the stop strings
// (OpenAI's output never contains the stop string; a stream must not send it either).
class StopFilter {
 public:
  explicit StopFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds generated text; returns what is safe to send.
  std::string push(const std::string& text) {
    pending_ += text;
    if (stopped_) return {};
    for (const std::string& s : stops_) {
      const std::size_t at = pending_.find(s);
      if (at != std::string::npos) {
        stopped_ = true;
        std::string out = pending_.substr(0, at);
        pending_.clear();
        return out;
      }
    }
    std::size_t keep = 0;
    for (const std::string& s : stops_)
      for (std::size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n)
        if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
    std::string out = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }
  // At the end: what was held back (nothing when a stop string was found).
  std::string flush() {
    std::string out = stopped_ ? std::string() : pending_;
    pending_.clear();
    return out;
  }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

std::string random_id(const char* prefix) {
  static std::atomic<std::uint64_t> counter{0};
  const auto t = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%016llx%04llx", prefix, static_cast<unsigned long long>(t),
                static_cast<unsigned long long>(counter.fetch_add(1) & 0xffff));
  return buf;
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* openai_finish(FinishReason r) { return r == FinishReason::kLength ? "length" : "stop"; }

struct GenerationCall {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool continuous_usage = false;  // vLLM's stream_options.continuous_usage_stats: a chunk per token, with usage
  std::string id, model;
  long long created = 0;
  GenerationRequest request;
};

json usage_json(std::size_t prompt, std::size_t completion) {
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

// One streamed chunk: a piece of text (chat: as the delta's content) or the finish.
std::string chunk_json(const GenerationCall& c, const std::string* text, const char* finish, const json* usage,
                       bool first) {
  json choice = {{"index", 0}};
  if (c.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (text) delta["content"] = *text;
    choice["delta"] = delta;
    choice["logprobs"] = nullptr;
  } else {
    choice["text"] = text ? *text : std::string();
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = finish ? json(finish) : json(nullptr);
  json j = {{"id", c.id},
            {"object", c.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", c.created},
            {"model", c.model},
            {"choices", json::array({choice})}};
  if (usage) j["usage"] = *usage;
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string whole_json(const GenerationCall& c, const std::string& text, const GenerationResult& r) {
  json choice = {{"index", 0}, {"finish_reason", openai_finish(r.finish)}, {"logprobs", nullptr}};
  if (c.chat)
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  json j = {{"id", c.id},
            {"object", c.chat ? "chat.completion" : "text_completion"},
            {"created", c.created},
            {"model", c.model},
            {"choices", json::array({choice})},
            {"usage", usage_json(r.prompt_tokens, r.tokens.size())}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpResponse error_answer(int status, const std::string& message) {
  HttpResponse res = error_response(status, status >= 500 ? "Backend" : "Validation", message);
  to_openai_error(res);
  return res;
}

// Hands the call to the scheduler; answers whole or streams.
ModelCall start_call(Context& ctx, std::shared_ptr<GenerationCall> call) {
  ModelCall mc;
  mc.start = [&ctx, call](const Responder& responder, std::function<void(int)> finished) {
    auto task = std::make_shared<GenTask>();
    task->request = std::move(call->request);
    task->client_gone = [responder] { return responder.client_gone(); };
    auto filter = std::make_shared<StopFilter>(task->request.options.stop_strings);
    if (!call->stream) {
      auto text = std::make_shared<std::string>();
      task->on_token = [text, filter](int32_t, const std::string& piece) { *text += filter->push(piece); };
      task->on_done = [call, text, filter, responder, finished](GenerationResult r) {
        *text += filter->flush();
        HttpResponse res;
        res.json(whole_json(*call, *text, r));
        responder.respond(std::move(res));
        finished(200);
      };
      task->on_error = [responder, finished](int status, const std::string& message) {
        responder.respond(error_answer(status, message));
        finished(status);
      };
    } else {
      // The stream opens when the first token (or an error) comes: a request the engine refuses
      // still gets a plain error answer.
      struct StreamState {
        std::shared_ptr<ResponseStream> out;
        bool first = true;
        std::size_t tokens = 0;
      };
      auto st = std::make_shared<StreamState>();
      const auto open = [st, responder]() {
        if (st->out) return;
        HttpResponse head;
        head.content_type = "text/event-stream";
        head.set_header("Cache-Control", "no-cache");
        st->out = responder.stream(std::move(head));
      };
      const std::size_t prompt_tokens = task->request.input_ids.size();
      task->on_token = [call, st, filter, open, prompt_tokens](int32_t, const std::string& piece) {
        open();
        ++st->tokens;
        const std::string text = filter->push(piece);
        if (text.empty() && !st->first && !call->continuous_usage) return;
        const json usage = usage_json(prompt_tokens, st->tokens);
        st->out->write(chunk_json(*call, &text, nullptr, call->continuous_usage ? &usage : nullptr, st->first));
        st->first = false;
      };
      task->on_done = [call, st, filter, open, finished](GenerationResult r) {
        open();
        const std::string tail = filter->flush();
        if (!tail.empty()) st->out->write(chunk_json(*call, &tail, nullptr, nullptr, st->first));
        const json usage = usage_json(r.prompt_tokens, r.tokens.size());
        st->out->write(chunk_json(*call, nullptr, openai_finish(r.finish), &usage, false));
        if (call->include_usage) {
          json j = {{"id", call->id},
                    {"object", call->chat ? "chat.completion.chunk" : "text_completion"},
                    {"created", call->created},
                    {"model", call->model},
                    {"choices", json::array()},
                    {"usage", usage}};
          st->out->write("data: " + j.dump() + "\n\n");
        }
        st->out->write("data: [DONE]\n\n");
        st->out->end();
        finished(200);
      };
      task->on_error = [st, responder, finished](int status, const std::string& message) {
        if (!st->out) {
          responder.respond(error_answer(status, message));
        } else {
          // Mid-stream: the error as an event (OpenAI clients raise it), then the end.
          st->out->write("data: " + error_answer(status, message).body + "\n\n");
          st->out->end();
        }
        finished(status);
      };
    }
    ctx.generation->submit(std::move(task));
  };
  return mc;
}

void require_generating(const Context& ctx) {
  if (!ctx.generation)
    throw unsupported_error("this model does not generate text (it serves " +
                            std::string(ctx.engine.info().capabilities.embed ? "embeddings" : "other routes") + ")");
}

std::shared_ptr<GenerationCall> common_call(Context& ctx, const json& body, bool chat) {
  auto c = std::make_shared<GenerationCall>();
  c->chat = chat;
  c->stream = get_bool(body, "stream", false);
  if (body.contains("stream_options") && body["stream_options"].is_object())
  {
    c->include_usage = get_bool(body["stream_options"], "include_usage", false);
    c->continuous_usage = get_bool(body["stream_options"], "continuous_usage_stats", false);
  }
  (void)get_string(body, "model", "");  // any name is served by the one loaded model
  (void)get_string(body, "user", "");
  c->model = ctx.model_name;
  c->id = random_id(chat ? "chatcmpl" : "cmpl");
  c->created = unix_now();
  return c;
}

// The part of the context a prompt leaves, capped at `cap`.
std::size_t room_after(const Context& ctx, std::size_t prompt, std::size_t cap) {
  const std::size_t context = static_cast<std::size_t>(std::max(ctx.engine.info().max_tokens, 0));
  if (context == 0) return cap;
  if (prompt >= context)
    throw validation_error("the prompt holds " + std::to_string(prompt) + " tokens; the model's context is " +
                           std::to_string(context));
  return std::min(cap, context - prompt);
}

std::optional<ModelCall> completions(Context& ctx, const SamplingDefaults& d, const HttpRequest& req, Timings& t) {
  require_generating(ctx);
  const json body = parse_body(req);
  auto call = common_call(ctx, body, false);
  if (!body.contains("prompt")) throw validation_error("'prompt' is missing");
  const json& p = body["prompt"];
  std::vector<int32_t> ids;
  const auto start = std::chrono::steady_clock::now();
  if (p.is_string() || (p.is_array() && p.size() == 1 && p[0].is_string())) {
    const std::string text = p.is_string() ? p.get<std::string>() : p[0].get<std::string>();
    TokenizeOptions o;
    o.limit_length = false;
    o.truncate = false;
    ids = ctx.engine.tokenize_with(text, o).ids;
  } else if (p.is_array() && !p.empty() && std::all_of(p.begin(), p.end(), [](const json& x) {
               return x.is_number_integer();
             })) {
    for (const json& x : p) {
      const long long v = x.get<long long>();
      if (v < 0 || v >= ctx.engine.info().vocab)
        throw validation_error("'prompt' holds token id " + std::to_string(v) + ", outside the vocabulary");
      ids.push_back(static_cast<int32_t>(v));
    }
  } else {
    throw validation_error("'prompt' must be a string or a list of token ids (one prompt per request)");
  }
  if (ids.empty()) throw validation_error("'prompt' is empty");
  t.tokenization_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  t.tokens = ids.size();
  call->request.options =
      sampling_options(body, d, room_after(ctx, ids.size(), 16), ctx.options.max_new_tokens_limit);
  diffusion_limit(body, call->request);
  call->request.input_ids = std::move(ids);
  return start_call(ctx, call);
}

std::optional<ModelCall> chat_completions(Context& ctx, const SamplingDefaults& d, const HttpRequest& req,
                                          Timings& t) {
  require_generating(ctx);
  const json body = parse_body(req);
  auto call = common_call(ctx, body, true);
  const auto start = std::chrono::steady_clock::now();
  ChatPrompt prompt = build_chat_prompt(ctx, body);
  t.tokenization_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  t.tokens = prompt.input_ids.size();
  call->request.options = sampling_options(body, d, room_after(ctx, prompt.input_ids.size(), 4096),
                                           ctx.options.max_new_tokens_limit);
  diffusion_limit(body, call->request);
  call->request.input_ids = std::move(prompt.input_ids);
  call->request.images = std::move(prompt.images);
  return start_call(ctx, call);
}

std::optional<ModelCall> models(Context& ctx, HttpResponse& res) {
  json m = {{"id", ctx.model_name},
            {"object", "model"},
            {"created", unix_now()},
            {"owned_by", "inferencelayer"},
            {"max_model_len", ctx.engine.info().max_tokens}};
  res.json(json{{"object", "list"}, {"data", json::array({m})}}.dump());
  return std::nullopt;
}

// A generating model's /health: one token generated from a one-token prompt through the step
// scheduler (the path every request takes); 503 when that fails.
std::optional<ModelCall> generation_health(Context& ctx) {
  ModelCall mc;
  mc.start = [&ctx](const Responder& responder, std::function<void(int)> finished) {
    auto task = std::make_shared<GenTask>();
    task->request.input_ids = {0};
    task->request.options.max_new_tokens = 1;
    task->request.options.stop_ids = std::vector<int32_t>{};
    task->request.diffusion.max_new_tokens = 1;  // block diffusion: one canvas, one step
    task->request.diffusion.max_denoising_steps = 1;
    task->on_done = [responder, finished](GenerationResult) {
      HttpResponse res;
      res.status = 200;
      responder.respond(std::move(res));
      finished(200);
    };
    task->on_error = [responder, finished](int, const std::string& message) {
      responder.respond(error_response(503, "Unhealthy", "the model failed to generate: " + message));
      finished(503);
    };
    ctx.generation->submit(std::move(task));
  };
  return mc;
}

}  // namespace

void add_generation_routes(Router& router, Context& ctx) {
  // Registered before the info routes: on a generating model this /health is the one found.
  if (ctx.generation)
    router.add(Method::kGet, "/health", false, [&ctx](auto&, auto&, auto&) { return generation_health(ctx); });
  // What an omitted sampling field means: the folder's generation_config.json
  // (models::SamplingDefaults); a model loaded from a config alone samples greedily.
  const auto defaults = std::make_shared<SamplingDefaults>(
      ctx.generation && !ctx.options.model.empty()
          ? models::read_generation_config(ctx.options.model, ctx.engine.info().vocab).sampling
          : SamplingDefaults{});
  router.add(Method::kPost, "/v1/completions", true,
             [&ctx, defaults](auto& req, auto&, auto& t) { return completions(ctx, *defaults, req, t); });
  router.add(Method::kPost, "/v1/chat/completions", true,
             [&ctx, defaults](auto& req, auto&, auto& t) { return chat_completions(ctx, *defaults, req, t); });
  router.add(Method::kGet, "/v1/models", false, [&ctx](auto&, auto& res, auto&) { return models(ctx, res); });
}

}  // namespace il::server
