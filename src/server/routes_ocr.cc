// POST /ocr on an OCR model (GLM-OCR, DeepSeek-OCR): page images or a PDF in, each page's text out.
//
//   {"images": ["<base64 or data: URI>", ...]}  or  {"pdf": "<base64 or data: URI>"}
//   "task": the model's (GLM-OCR "text" | "table" | "formula"; DeepSeek-OCR "markdown" | "text" |
//           "ocr" | "figure" | "describe"), default its first
//   "mode": DeepSeek-OCR v1's resolution mode ("gundam" (default) | "tiny" | "small" | "base" | "large")
//   "pages": "1-3,7"                        (PDF pages; default all)
//   "dpi": 200                              (PDF rendering)
//   "max_tokens": N                         (per page; default the model's OCR default)
//   "stream": true                          (default false)
//
// Pages are read like the ocr command reads them: a few at a time per request (rendered and
// preprocessed on the image workers, then submitted to the step scheduler, where they decode in
// the running batch with everyone else's requests), so a long PDF is never held as images whole.
// Streamed, the answer is NDJSON (application/x-ndjson): one line per page, in page order, as
// soon as it and the pages before it are done ({"page", "text", "tokens", "finish_reason",
// "timings_ms"}, and for grounding models (DeepSeek-OCR) "blocks": [{"label", "boxes": [[x1, y1, x2,
// y2] in page pixels], "text"}] with "text" the Markdown without the grounding tags; a page that cannot be read gets {"page", "error"} and the others go on), then a
// last line {"done": true, "pages", "usage"}. Whole, the same page objects in {"pages": [...],
// "text": all pages' text joined by blank lines, "usage"}.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/float_format.h"
#include "image/pdf_pages.h"
#include "runtime/ocr_grounding.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/multipart.h"
#include "server/route_table.h"
#include "server/routes.h"

namespace il::server {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kPagesAheadPerRequest = 4;  // pages of one request prepared or decoding at once

// A PDF kept as a temporary file for poppler's tools, removed with the request.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes) {
    std::string templ = (std::filesystem::temp_directory_path() / "il-ocr-XXXXXX.pdf").string();
    const int fd = mkstemps(templ.data(), 4);
    check(fd >= 0, "cannot create a temporary file for the PDF");
    path = templ;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    check(done == bytes.size(), "cannot write the PDF to a temporary file");
  }
  ~TempFile() { std::remove(path.c_str()); }
};

// Messages about the temporary copy name "the PDF", not a server path.
std::string without_path(std::string message, const std::string& path) {
  for (std::size_t at = message.find(path); at != std::string::npos; at = message.find(path))
    message.replace(at, path.size(), "the PDF");
  return message;
}

struct PageOutcome {
  std::size_t number = 0;  // 1-based (the PDF's page number)
  std::string error;
  std::string text;
  std::optional<std::vector<runtime::GroundedBlock>> blocks;
  std::array<int, 3> grid{};  // the page image's grid_thw (DeepSeek-OCR: [1, height, width] pixels)
  GenerationResult result;
  double prepare_ms = 0.0, total_ms = 0.0;
};

json page_json(const PageOutcome& p) {
  if (!p.error.empty()) return {{"page", p.number}, {"error", p.error}};
  const auto ms = [](double v) { return std::round(v * 1000.0) / 1000.0; };
  json out = {{"page", p.number}, {"text", p.text}};
  if (p.blocks) {
    json blocks = json::array();
    for (const runtime::GroundedBlock& b : *p.blocks)
      blocks.push_back({{"label", b.label}, {"boxes", b.boxes}, {"text", b.text}});
    out["blocks"] = std::move(blocks);
  }
  out.update(json{
          {"tokens", p.result.tokens.size()},
          {"finish_reason", p.result.finish == FinishReason::kLength ? "length" : "stop"},
          {"timings_ms",
           {{"prepare", ms(p.prepare_ms)},
            {"prefill", ms(p.result.prefill_ms)},
            {"decode", ms(p.result.decode_ms)},
            {"total", ms(p.total_ms)}}}});
  return out;
}

// One /ocr request from its first page to its last line.
class OcrJob : public std::enable_shared_from_this<OcrJob> {
 public:
  struct Source {
    std::vector<std::vector<std::uint8_t>> images;  // image pages
    std::shared_ptr<TempFile> pdf;                   // or a PDF's pages
    std::vector<std::size_t> pdf_pages;
    int dpi = 200;
  };

  OcrJob(Context& ctx, Source source, std::string task, std::string mode, std::optional<std::size_t> max_tokens,
         bool stream, Responder responder, std::function<void(int)> finished)
      : ctx_(ctx),
        source_(std::move(source)),
        task_(std::move(task)),
        mode_(std::move(mode)),
        max_tokens_(max_tokens),
        stream_(stream),
        responder_(std::move(responder)),
        finished_(std::move(finished)) {
    total_ = source_.pdf ? source_.pdf_pages.size() : source_.images.size();
  }

  void start() {
    if (stream_) {
      HttpResponse head;
      head.content_type = "application/x-ndjson";
      head.set_header("Cache-Control", "no-cache");
      out_ = responder_.stream(std::move(head));
    }
    pump();
  }

 private:
  std::size_t page_number(std::size_t index) const {
    return source_.pdf ? source_.pdf_pages[index] : index + 1;
  }

  // Starts pages while fewer than kPagesAheadPerRequest are under way.
  void pump() {
    std::vector<std::size_t> start;
    {
      std::lock_guard lock(mutex_);
      while (next_ < total_ && under_way_ < kPagesAheadPerRequest) {
        start.push_back(next_++);
        ++under_way_;
      }
    }
    for (std::size_t index : start) {
      auto self = shared_from_this();
      ctx_.image_workers.post([self, index] { self->prepare(index); });
    }
  }

  void prepare(std::size_t index) {
    const auto begin = Clock::now();
    PageOutcome outcome;
    outcome.number = page_number(index);
    if (responder_.client_gone()) return page_done(index, std::move(outcome), "the client closed the connection");
    auto task = std::make_shared<GenTask>();
    try {
      std::vector<std::uint8_t> bytes;
      if (source_.pdf) {
        const EngineOptions limits;
        bytes = image::render_pdf_page(source_.pdf->path, outcome.number, source_.dpi, limits.max_image_bytes);
      } else {
        bytes = std::move(source_.images[index]);
      }
      const std::string name = "page " + std::to_string(outcome.number);
      PatchImage image = ctx_.engine.load_prompt_image(bytes, name, mode_);
      outcome.grid = image.grid_thw;
      task->request = ctx_.engine.ocr_request(std::move(image), task_);
      if (max_tokens_) task->request.options.max_new_tokens = *max_tokens_;
    } catch (const std::exception& e) {
      return page_done(index, std::move(outcome),
                       source_.pdf ? without_path(e.what(), source_.pdf->path) : std::string(e.what()));
    }
    outcome.prepare_ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
    auto self = shared_from_this();
    auto page = std::make_shared<PageOutcome>(std::move(outcome));
    task->client_gone = [responder = responder_] { return responder.client_gone(); };
    task->on_done = [self, index, page, begin](GenerationResult r) {
      page->result = std::move(r);
      page->total_ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
      self->page_done(index, std::move(*page), "");
    };
    task->on_error = [self, index, page](int, const std::string& message) {
      self->page_done(index, std::move(*page), message);
    };
    ctx_.generation->submit(std::move(task));
  }

  // On the scheduler thread or an image worker: records the page, sends what is ready in page
  // order, starts more pages, and ends the answer after the last.
  void page_done(std::size_t index, PageOutcome page, const std::string& error) {
    page.error = error;
    if (error.empty()) {
      runtime::OcrPageText text = runtime::ocr_page_text(ctx_.engine, page.result, page.grid[2], page.grid[1]);
      page.text = std::move(text.text);
      page.blocks = std::move(text.blocks);
    }
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      --under_way_;
      done_.emplace(index, std::move(page));
      for (auto it = done_.find(emitted_); it != done_.end(); it = done_.find(emitted_)) {
        const PageOutcome& p = it->second;
        if (p.error.empty()) {
          prompt_tokens_ += p.result.prompt_tokens;
          completion_tokens_ += p.result.tokens.size();
        }
        if (stream_) {
          out_->write(page_json(p).dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
        } else {
          pages_.push_back(page_json(p));
          if (p.error.empty()) text_ += (text_.empty() ? "" : "\n\n") + p.text;
        }
        done_.erase(it);
        ++emitted_;
      }
      last = emitted_ == total_;
    }
    if (!last) return pump();
    const json usage = {{"prompt_tokens", prompt_tokens_},
                        {"completion_tokens", completion_tokens_},
                        {"total_tokens", prompt_tokens_ + completion_tokens_}};
    if (stream_) {
      out_->write(json{{"done", true}, {"pages", total_}, {"usage", usage}}.dump() + "\n");
      out_->end();
    } else {
      HttpResponse res;
      res.json(json{{"pages", pages_}, {"text", text_}, {"usage", usage}}.dump(-1, ' ', false,
                                                                               json::error_handler_t::replace));
      responder_.respond(std::move(res));
    }
    finished_(200);
  }

  Context& ctx_;
  Source source_;
  std::string task_;
  std::string mode_;
  std::optional<std::size_t> max_tokens_;
  bool stream_;
  Responder responder_;
  std::function<void(int)> finished_;
  std::shared_ptr<ResponseStream> out_;
  std::mutex mutex_;
  std::size_t total_ = 0, next_ = 0, under_way_ = 0, emitted_ = 0;
  std::map<std::size_t, PageOutcome> done_;
  json pages_ = json::array();
  std::string text_;
  std::size_t prompt_tokens_ = 0, completion_tokens_ = 0;
};

// "1-3,7,10-" over a document of `count` pages (image::PageRanges).
std::vector<std::size_t> select_pages(const std::string& spec, std::size_t count) {
  try {
    return image::PageRanges::parse(spec).pages_of(count);
  } catch (const Error& e) {
    throw validation_error(std::string("'pages': ") + e.what());
  }
}

// A request's options and pages: from a JSON body ({"images": [...]} or {"pdf": ...}, files as
// base64, data: URIs or allowed URLs) or from a multipart/form-data upload (files as parts, the
// options as plain fields: curl -F file=@scan.pdf -F pages=1-3).
struct OcrInput {
  json fields;
  std::vector<std::vector<std::uint8_t>> images;
  std::optional<std::vector<std::uint8_t>> pdf;
};

OcrInput read_json_input(const Context& ctx, const HttpRequest& req) {
  OcrInput in;
  in.fields = parse_body(req);
  const json& body = in.fields;
  const bool has_images = body.contains("images"), has_pdf = body.contains("pdf");
  if (has_images == has_pdf) throw validation_error("give either 'images' (a list) or 'pdf'");
  if (has_images) {
    const json& list = body["images"];
    if (!list.is_array() || list.empty() || !std::all_of(list.begin(), list.end(), [](const json& v) {
          return v.is_string();
        }))
      throw validation_error("'images' must be a non-empty list of base64 images or data: URIs");
    if (list.size() > ctx.options.max_images_per_request)
      throw ApiError(413, "Validation",
                     std::to_string(list.size()) + " images in one request; the limit is " +
                         std::to_string(ctx.options.max_images_per_request) + " (--max-images-per-request)");
    for (std::size_t i = 0; i < list.size(); ++i)
      in.images.push_back(
          image_bytes(list[i].get<std::string>(), "images[" + std::to_string(i) + "]", ctx.options.url_fetch));
  } else {
    if (!body["pdf"].is_string()) throw validation_error("'pdf' must be a base64 string or a data: URI");
    in.pdf = image_bytes(body["pdf"].get<std::string>(), "'pdf'", ctx.options.url_fetch);
  }
  return in;
}

OcrInput read_form_input(const Context& ctx, const HttpRequest& req) {
  OcrInput in;
  in.fields = json::object();
  const std::vector<FormPart> parts = parse_form_data(req.header("Content-Type"), req.body);
  std::size_t files = 0;
  for (const FormPart& p : parts) {
    if (!p.filename.empty()) {
      const std::string where = "the uploaded file '" + p.filename + "'";
      if (p.data.empty()) throw validation_error(where + " is empty");
      std::vector<std::uint8_t> bytes(p.data.begin(), p.data.end());
      if (image::looks_like_pdf(bytes.data(), bytes.size())) {
        if (in.pdf) throw validation_error("upload one PDF per request");
        in.pdf = std::move(bytes);
      } else {
        if (in.images.size() == ctx.options.max_images_per_request)
          throw ApiError(413, "Validation",
                         "more than " + std::to_string(ctx.options.max_images_per_request) +
                             " images in one request (--max-images-per-request)");
        in.images.push_back(std::move(bytes));
      }
      ++files;
      continue;
    }
    // Plain fields, typed as the JSON body would carry them.
    const std::string value(p.data);
    if (p.name == "stream") {
      if (value != "true" && value != "false" && value != "1" && value != "0")
        throw validation_error("'stream' must be true or false");
      in.fields["stream"] = value == "true" || value == "1";
    } else if (p.name == "max_tokens" || p.name == "dpi") {
      if (value.empty() || value.size() > 9 ||
          !std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c); }))
        throw validation_error("'" + p.name + "' must be a whole number");
      in.fields[p.name] = std::stoul(value);
    } else if (p.name == "task" || p.name == "mode" || p.name == "pages") {
      in.fields[p.name] = value;
    } else {
      throw validation_error("multipart field '" + p.name.substr(0, 100) +
                             "' is not read (files, and task, mode, pages, dpi, max_tokens, stream)");
    }
  }
  if (files == 0) throw validation_error("the multipart request holds no file (curl -F file=@page.png)");
  if (in.pdf && !in.images.empty()) throw validation_error("upload either images or one PDF, not both");
  return in;
}

std::optional<ModelCall> ocr(Context& ctx, const HttpRequest& req) {
  if (!ctx.generation || !ctx.engine.info().capabilities.ocr)
    throw unsupported_error("this model does not read pages (it is not an OCR model)");
  std::string type = req.header("Content-Type");
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool form = type.find("multipart/form-data") != std::string::npos;
  OcrInput input = form ? read_form_input(ctx, req) : read_json_input(ctx, req);
  const json& body = input.fields;
  const std::vector<std::string>& tasks = ctx.engine.info().ocr_tasks;
  const std::string task = get_string(body, "task", tasks.empty() ? "" : tasks.front());
  if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) {
    std::string list;
    for (const std::string& t : tasks) list += (list.empty() ? "\"" : ", \"") + t + "\"";
    throw validation_error("'task' must be one of " + list);
  }
  const std::vector<std::string>& modes = ctx.engine.info().ocr_modes;
  const std::string mode = get_string(body, "mode", "");
  if (!mode.empty() && std::find(modes.begin(), modes.end(), mode) == modes.end()) {
    if (modes.empty()) throw validation_error("'mode': this model has no resolution modes");
    std::string list;
    for (const std::string& m : modes) list += (list.empty() ? "\"" : ", \"") + m + "\"";
    throw validation_error("'mode' must be one of " + list);
  }
  const bool stream = get_bool(body, "stream", false);
  std::optional<std::size_t> max_tokens;
  if (body.contains("max_tokens") && !body["max_tokens"].is_null()) {
    max_tokens = get_count(body, "max_tokens", 0);
    if (*max_tokens == 0 || *max_tokens > ctx.options.max_new_tokens_limit)
      throw validation_error("'max_tokens' must be within 1.." + std::to_string(ctx.options.max_new_tokens_limit));
  }
  OcrJob::Source source;
  if (!input.pdf) {
    source.images = std::move(input.images);
  } else {
    const std::vector<std::uint8_t>& bytes = *input.pdf;
    if (!image::looks_like_pdf(bytes.data(), bytes.size())) throw validation_error("'pdf' is not a PDF");
    source.dpi = static_cast<int>(get_count(body, "dpi", 200));
    if (source.dpi < 36 || source.dpi > 600) throw validation_error("'dpi' must be within 36..600");
    source.pdf = std::make_shared<TempFile>(std::string(bytes.begin(), bytes.end()));
    std::size_t count = 0;
    try {
      count = image::pdf_page_count(source.pdf->path);
    } catch (const Error& e) {
      throw validation_error("'pdf': " + without_path(e.what(), source.pdf->path));
    }
    source.pdf_pages = select_pages(get_string(body, "pages", ""), count);
    if (source.pdf_pages.empty()) throw validation_error("the PDF has no pages in the selection");
  }
  ModelCall mc;
  auto shared = std::make_shared<OcrJob::Source>(std::move(source));
  mc.start = [&ctx, shared, task, mode, max_tokens, stream](const Responder& responder,
                                                           std::function<void(int)> finished) {
    auto job = std::make_shared<OcrJob>(ctx, std::move(*shared), task, mode, max_tokens, stream, responder,
                                        std::move(finished));
    job->start();
  };
  return mc;
}

}  // namespace

void add_ocr_routes(Router& router, Context& ctx) {
  router.add(
      Method::kPost, "/ocr", true, [&ctx](auto& req, auto&, auto&) { return ocr(ctx, req); }, BodyKind::kJsonOrForm);
}

}  // namespace il::server
