// One file per route family registers its routes through a Router, which wraps each handler
// with what every route shares: authentication and the concurrency limit (compute routes),
// error bodies, timing headers, metrics.
//
// A handler runs on a tokenization worker: it reads the body, checks and tokenizes the inputs,
// and either answers at once or returns a ModelCall: the inputs for the inference thread and how
// to answer from the results (run on a worker afterwards). No thread waits for the model.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/context.h"
#include "server/http_message.h"

namespace il::server {

class Responder;  // server/http_server.h

struct ModelCall {
  JobKind kind = JobKind::kPooled;
  std::vector<TokenInput> inputs;
  // Called with the finished job (its error empty); throws ApiError for an answer other than 200.
  std::function<void(Job&, HttpResponse&, Timings&)> answer;
  // A failed job is answered with this status and type, the message prefixed.
  int failure_status = 500;
  std::string failure_type = "Backend";
  std::string failure_prefix;
  std::vector<ImageInput> images;  // image kinds (preprocessed on the image workers)
  // Generation routes: instead of a batcher job, started with the request's responder; the
  // route answers through it (whole, or as a stream) and calls `finished` once with the status
  // it answered, so the server counts the request and frees its concurrency slot.
  std::function<void(const Responder& responder, std::function<void(int status)> finished)> start;
};

using Handler = std::function<std::optional<ModelCall>(const HttpRequest&, HttpResponse&, Timings&)>;

enum class Method { kGet, kPost };
// What a POST body may be: JSON only, or also multipart/form-data (file uploads).
enum class BodyKind { kJson, kJsonOrForm };

class Router {
 public:
  virtual ~Router() = default;
  // compute = runs the model: needs the API key (when set) and counts toward the concurrency limit.
  virtual void add(Method method, const std::string& path, bool compute, Handler handler,
                   BodyKind body = BodyKind::kJson) = 0;
};

void add_embed_routes(Router& router, Context& ctx);     // /embed /embed_all /similarity /image_text_scores
void add_openai_routes(Router& router, Context& ctx);    // /v1/embeddings
void add_rerank_routes(Router& router, Context& ctx);    // /rerank /predict /v1/rerank
void add_token_routes(Router& router, Context& ctx);     // /tokenize /decode
void add_info_routes(Router& router, Context& ctx);      // /info /health /metrics
void add_generation_routes(Router& router, Context& ctx);  // /v1/completions /v1/chat/completions /v1/models
void add_ocr_routes(Router& router, Context& ctx);         // /ocr

// Shared by the embedding routes: the first `dims` values of a raw pooled row (0 = all),
// L2-normalised after the cut when asked (as sentence-transformers does for Matryoshka).
std::vector<float> finish_embedding(const float* raw, std::size_t width, std::size_t dims, bool normalize);
// `dimensions` of a request: 0 when absent; 422 when 0 or wider than the model's output.
std::size_t requested_dimensions(const nlohmann::json& body, const Context& ctx);

// The pooled call of /embed and /v1/embeddings: texts (or token ids) alone as a kPooled job;
// with images, the images decoded on the image workers and a kImagePooled (images alone) or
// kImageText (mixed) job. `answer` sees job.rows in the request's item order either way.
ModelCall pooled_call(Context& ctx, const Inputs& inputs, const char* field, const TextOptions& options,
                      Timings& timings, std::function<void(Job&, HttpResponse&, Timings&)> answer);

inline void reply_json(HttpResponse& res, std::string body) { res.json(std::move(body)); }

}  // namespace il::server
