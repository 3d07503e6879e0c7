// OpenAI's POST /v1/embeddings: `input` (text, texts, token ids, batches of
// token ids), `model`, `encoding_format` (float, or base64 of the little-endian
// f32 bytes), `dimensions`; the answer carries `usage` token counts. Vectors
// are normalised, as OpenAI's are.
#include <bit>
#include <cstdint>
#include <cstring>

#include "core/base64.h"
#include "core/float_format.h"
#include "server/api_error.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;

// Little-endian f32 bytes, whatever the host's order.
std::string base64_f32(const std::vector<float> &v) {
  std::vector<unsigned char> bytes(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, &v[i], 4);
    if constexpr (std::endian::native == std::endian::big)
      u = __builtin_bswap32(u);
    for (int b = 0; b < 4; ++b)
      bytes[i * 4 + static_cast<std::size_t>(b)] =
          static_cast<unsigned char>(u >> (8 * b));
  }
  std::string out;
  out.reserve(bytes.size() * 4 / 3 + 4);
  append_base64(out, bytes.data(), bytes.size());
  return out;
}

std::optional<ModelCall> embeddings(Context &ctx, const HttpRequest &req,
                                    Timings &t) {
  require_embedding_model(ctx);
  const json body = parse_body(req);
  const Inputs inputs = parse_inputs(body, "input", ctx);
  (void)get_string(
      body, "model",
      ""); // any name is served by the one loaded model; type-checked only
  (void)get_string(body, "user", "");
  const std::string format = get_string(body, "encoding_format", "float");
  if (format != "float" && format != "base64")
    throw validation_error("'encoding_format' must be \"float\" or \"base64\"");
  const std::size_t dims = requested_dimensions(body, ctx);
  const TextOptions options = text_options(body, ctx, false);
  const std::string model_name = ctx.model_name;
  return pooled_call(
      ctx, inputs, "input", options, t,
      [dims, format, model_name](Job &job, HttpResponse &res, Timings &t) {
        check_finite_rows(job.rows);
        std::string out = "{\"object\":\"list\",\"data\":[";
        for (std::size_t r = 0; r < job.rows.rows; ++r) {
          if (r)
            out += ',';
          const auto v =
              finish_embedding(job.rows.row(r), job.rows.cols, dims, true);
          out += "{\"object\":\"embedding\",\"index\":" + std::to_string(r) +
                 ",\"embedding\":";
          if (format == "base64") {
            out += '"';
            out += base64_f32(v);
            out += '"';
          } else {
            append_floats(out, v.data(), v.size());
          }
          out += '}';
        }
        out += "],\"model\":" + json(model_name).dump() +
               ",\"usage\":{\"prompt_tokens\":" + std::to_string(t.tokens) +
               ",\"total_tokens\":" + std::to_string(t.tokens) + "}}";
        reply_json(res, std::move(out));
      });
}

} // namespace

void add_openai_routes(Router &router, Context &ctx) {
  router.add(
      Method::kPost, "/v1/embeddings", true,
      [&ctx](auto &req, auto &, auto &t) { return embeddings(ctx, req, t); });
}

} // namespace il::server
