// `inferencelayer ocr`: page images and PDFs in, Markdown (or JSON lines) out, with an OCR model
// (GLM-OCR, DeepSeek-OCR). Pages are prepared (PDF page rendered, image decoded and preprocessed) on worker
// threads a few pages ahead, submitted to the engine's running batch as it has room, and printed
// in input order as they finish, so a long document streams through with bounded memory: at most
// the pages in flight plus the few prepared ahead exist at once (a prepared page's patch rows
// are freed once its prefill has put them in the KV cache).
//
// Markdown: each page's text, pages separated by a blank line and, for several pages, an HTML
// comment naming the page (invisible when rendered). JSON lines: one object per page with its
// source, page, text, token ids, finish reason and timings; for grounding models (DeepSeek-OCR)
// also "blocks": each grounded block's label, boxes in page pixels and text
// (runtime/ocr_grounding.h), the Markdown then without the grounding tags.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/jsonl_io.h"
#include "cli/page_source.h"
#include "cli/progress.h"
#include "core/error.h"
#include "core/float_format.h"
#include "runtime/ocr_grounding.h"

namespace il::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct OcrArgs {
  EngineArgs engine;
  std::vector<std::string> inputs;
  std::string task;  // "": the model's default
  std::string mode;  // "": the model's default (DeepSeek-OCR v1's resolution modes)
  std::string format = "markdown";
  std::string output = "-";
  std::string pages;
  int dpi = 200;
  std::optional<std::size_t> max_new_tokens;  // default: the model's OCR default
  std::size_t in_flight = 64;
  std::size_t prepare_threads = 4;
  std::optional<std::size_t> no_repeat_ngram, ngram_window;
  bool progress = true;
};

// A page ready to submit, or the error that stopped its preparation.
struct Prepared {
  std::optional<GenerationRequest> request;
  std::string error;
  std::array<int, 3> grid{};
  double prepare_ms = 0.0;
};

struct PageOutcome {
  GenerationResult result;
  std::array<int, 3> grid{};
  double prepare_ms = 0.0;
  Clock::time_point submitted;
  double total_ms = 0.0;
};

// Worker threads that prepare pages in order of their index, never more than `ahead` past the
// next page the main thread will take.
class PagePreparer {
 public:
  PagePreparer(const Engine& engine, const OcrArgs& args, const std::vector<PageRef>& pages, std::size_t ahead)
      : engine_(engine), args_(args), pages_(pages), ahead_(ahead) {
    const std::size_t n = std::max<std::size_t>(1, std::min(args.prepare_threads, pages.size()));
    for (std::size_t i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~PagePreparer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // The prepared page `index`: waits for it when `wait`, else nullopt while it is not ready.
  std::optional<Prepared> take(std::size_t index, bool wait) {
    std::unique_lock lock(mutex_);
    taken_ = index;
    cv_.notify_all();
    if (wait) cv_.wait(lock, [&] { return ready_.count(index) > 0; });
    const auto it = ready_.find(index);
    if (it == ready_.end()) return std::nullopt;
    Prepared p = std::move(it->second);
    ready_.erase(it);
    taken_ = index + 1;
    cv_.notify_all();
    return p;
  }

 private:
  void work() {
    for (;;) {
      std::size_t index = 0;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || (next_ < pages_.size() && next_ < taken_ + ahead_); });
        if (stop_) return;
        index = next_++;
      }
      Prepared p = prepare(pages_[index]);
      {
        std::lock_guard lock(mutex_);
        ready_.emplace(index, std::move(p));
      }
      cv_.notify_all();
    }
  }

  Prepared prepare(const PageRef& page) const {
    Prepared p;
    const auto start = Clock::now();
    try {
      const EngineOptions limits;
      const std::vector<std::uint8_t> bytes = read_page(page, args_.dpi, limits.max_image_bytes);
      PatchImage image = engine_.load_prompt_image(bytes, page.name(), args_.mode);
      p.grid = image.grid_thw;
      GenerationRequest r = engine_.ocr_request(std::move(image), args_.task);
      if (args_.max_new_tokens) r.options.max_new_tokens = *args_.max_new_tokens;
      if (args_.no_repeat_ngram) r.options.no_repeat_ngram = *args_.no_repeat_ngram;
      if (args_.ngram_window) r.options.ngram_window = *args_.ngram_window;
      p.request = std::move(r);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      p.error = what.rfind(page.source, 0) == 0 ? what : page.name() + ": " + what;
    }
    p.prepare_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return p;
  }

  const Engine& engine_;
  const OcrArgs& args_;
  const std::vector<PageRef>& pages_;
  const std::size_t ahead_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::size_t, Prepared> ready_;
  std::size_t next_ = 0;   // the next page a worker starts
  std::size_t taken_ = 0;  // the next page the main thread takes
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// Markdown: the page's text, separated from the previous page by a blank line.
void write_markdown(OutputSink& out, const PageRef& page, std::size_t index, std::size_t total,
                    const std::string& text) {
  std::string& b = out.buffer();
  if (index > 0) b += '\n';
  if (total > 1) b += "<!-- page " + std::to_string(index + 1) + ": " + page.name() + " -->\n\n";
  std::size_t end = text.find_last_not_of(" \t\r\n");
  b.append(text, 0, end == std::string::npos ? 0 : end + 1);
  out.end_line();
}

void write_json(OutputSink& out, const PageRef& page, const runtime::OcrPageText& text, const PageOutcome& o) {
  std::string& b = out.buffer();
  b += "{\"source\":";
  append_json_string(b, page.source);
  b += ",\"page\":" + std::to_string(page.page ? page.page : 1);
  b += ",\"text\":";
  append_json_string(b, text.text);
  if (text.blocks) {
    b += ",\"blocks\":[";
    for (std::size_t i = 0; i < text.blocks->size(); ++i) {
      const runtime::GroundedBlock& k = (*text.blocks)[i];
      b += i ? ",{\"label\":" : "{\"label\":";
      append_json_string(b, k.label);
      b += ",\"boxes\":[";
      for (std::size_t j = 0; j < k.boxes.size(); ++j) {
        const auto& x = k.boxes[j];
        b += (j ? ",[" : "[") + std::to_string(x[0]) + "," + std::to_string(x[1]) + "," + std::to_string(x[2]) + "," +
             std::to_string(x[3]) + "]";
      }
      b += "],\"text\":";
      append_json_string(b, k.text);
      b += '}';
    }
    b += ']';
  }
  b += ",\"tokens\":";
  append_ints(b, o.result.tokens);
  b += ",\"finish_reason\":\"";
  b += finish_reason_name(o.result.finish);
  b += "\",\"prompt_tokens\":" + std::to_string(o.result.prompt_tokens);
  b += ",\"image_grid_thw\":[" + std::to_string(o.grid[0]) + "," + std::to_string(o.grid[1]) + "," +
       std::to_string(o.grid[2]) + "]";
  const auto ms = [&](const char* key, double v, bool last = false) {
    b += '"';
    b += key;
    b += "\":";
    append_float(b, static_cast<float>(v));
    if (!last) b += ',';
  };
  b += ",\"timings_ms\":{";
  ms("prepare", o.prepare_ms);
  ms("prefill", o.result.prefill_ms);
  ms("decode", o.result.decode_ms);
  ms("total", o.total_ms, true);
  b += "}}";
  out.end_line();
}

void run_ocr(const OcrArgs& a) {
  if (a.in_flight == 0) throw UsageError("--max-pages-in-flight must be at least 1");
  if (a.dpi < 36 || a.dpi > 1200) throw UsageError("--dpi must be within 36..1200");
  if (a.max_new_tokens && *a.max_new_tokens == 0) throw UsageError("--max-new-tokens must be at least 1");
  const image::PageRanges selection = parse_page_option(a.pages);
  std::vector<PageRef> pages;
  try {
    pages = list_pages(a.inputs, selection);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (pages.empty()) throw UsageError("no pages to read (check --pages)");
  auto engine = load_engine(a.engine);
  if (!engine->info().capabilities.ocr)
    throw UsageError(a.engine.model + " is not an OCR model (it cannot read pages; see `inferencelayer info`)");
  if (!a.mode.empty()) {
    const std::vector<std::string>& modes = engine->info().ocr_modes;
    if (modes.empty()) throw UsageError("--mode: " + a.engine.model + " has no resolution modes");
    if (std::find(modes.begin(), modes.end(), a.mode) == modes.end()) {
      std::string list;
      for (const std::string& m : modes) list += (list.empty() ? "" : ", ") + m;
      throw UsageError("--mode '" + a.mode + "' is not one of " + list);
    }
  }
  OutputSink out(a.output);
  Progress progress("ocr", pages.size(), a.progress && pages.size() > 1, "pages");

  PagePreparer preparer(*engine, a, pages, a.prepare_threads + 2);
  std::map<GenerationId, std::size_t> in_flight;   // engine id → page index
  std::map<std::size_t, PageOutcome> running, done;  // page index → outcome so far
  std::size_t next_submit = 0, next_emit = 0;
  while (next_emit < pages.size()) {
    // Keep the engine's queue short (its pages hold their patch rows until admitted) and the
    // batch as full as --max-pages-in-flight allows.
    while (next_submit < pages.size() && in_flight.size() < a.in_flight && engine->generation_load().waiting < 8) {
      std::optional<Prepared> p = preparer.take(next_submit, in_flight.empty());
      if (!p) break;
      if (!p->request) throw UsageError(p->error);
      PageOutcome& o = running[next_submit];
      o.grid = p->grid;
      o.prepare_ms = p->prepare_ms;
      o.submitted = Clock::now();
      GenerationId id = 0;
      try {
        id = engine->submit_generation(std::move(*p->request));
      } catch (const Error& e) {
        throw UsageError(pages[next_submit].name() + ": " + e.what());
      }
      in_flight[id] = next_submit++;
    }
    if (!in_flight.empty()) {
      for (const GenerationEvent& e : engine->step_generation()) {
        if (!e.finished) continue;
        const std::size_t index = in_flight.at(e.id);
        in_flight.erase(e.id);
        PageOutcome o = std::move(running.at(index));
        running.erase(index);
        o.result = engine->take_generation_result(e.id);
        o.total_ms = o.prepare_ms + std::chrono::duration<double, std::milli>(Clock::now() - o.submitted).count();
        done.emplace(index, std::move(o));
      }
    }
    for (auto it = done.find(next_emit); it != done.end(); it = done.find(next_emit)) {
      // DeepSeek-OCR pages' grid_thw is [1, height, width] in pixels (the boxes' scale).
      const runtime::OcrPageText text =
          runtime::ocr_page_text(*engine, it->second.result, it->second.grid[2], it->second.grid[1]);
      if (a.format == "json")
        write_json(out, pages[next_emit], text, it->second);
      else
        write_markdown(out, pages[next_emit], next_emit, pages.size(), text.text);
      out.flush();
      done.erase(it);
      ++next_emit;
      progress.update(next_emit, next_emit);
    }
  }
  progress.finish();
}

}  // namespace

Command add_ocr_command(CLI::App& app) {
  auto a = std::make_shared<OcrArgs>();
  CLI::App* cmd = app.add_subcommand("ocr", "Read page images and PDFs with an OCR model (GLM-OCR, DeepSeek-OCR, DeepSeek-OCR-2): Markdown or JSON "
                                            "lines on stdout");
  add_engine_options(*cmd, a->engine);
  add_generation_engine_options(*cmd, a->engine);
  cmd->add_option("pages", a->inputs, "Page images (PNG, JPEG, WebP) and PDFs, read in this order")->required();
  cmd->add_option("--task", a->task,
                  "What to read (default: the model's): GLM-OCR text (default), table or formula; DeepSeek-OCR "
                  "markdown (default), text, ocr, figure or describe");
  cmd->add_option("--mode", a->mode,
                  "Resolution mode, for models that have them (DeepSeek-OCR v1: gundam (default: a 1024-pixel "
                  "view plus 640-pixel tiles), tiny 512, small 640, base 1024, large 1280)");
  cmd->add_option("--format", a->format, "markdown: the pages' text; json: a JSON line per page (text, tokens, "
                                         "timings)")
      ->capture_default_str()
      ->check(CLI::IsMember({"markdown", "json"}));
  cmd->add_option("-o,--output", a->output, "Output file, or - for stdout")->capture_default_str();
  cmd->add_option("--pages", a->pages, "PDF pages to read, e.g. 1-3,7,10- (default: all)");
  cmd->add_option("--dpi", a->dpi, "Resolution PDF pages are rendered at (by poppler's pdftoppm)")
      ->capture_default_str();
  cmd->add_option("--max-new-tokens", a->max_new_tokens,
                  "Tokens a page may produce at most (default 4096, less where the model's context is shorter)");
  cmd->add_option("--max-pages-in-flight", a->in_flight,
                  "Pages decoded together (fewer when the KV cache is full: see --kv-cache-tokens)")
      ->capture_default_str();
  cmd->add_option("--prepare-threads", a->prepare_threads, "Threads that render, decode and preprocess pages ahead")
      ->capture_default_str();
  cmd->add_option("--no-repeat-ngram", a->no_repeat_ngram,
                  "Anti-loop guard: n-gram size (default 30; 0 turns the guard off)");
  cmd->add_option("--ngram-window", a->ngram_window, "Anti-loop guard: tokens it looks back over (default 90)");
  cmd->add_flag("!--no-progress", a->progress, "No progress bar on stderr");
  return {cmd, [a]() { run_ocr(*a); }};
}

}  // namespace il::cli
