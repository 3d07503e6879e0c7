// Cost of one tokenizer call on a large hostile text: peak resident memory above what the process
// held before the call, the memory still held after it returns, and the time. One case per
// process, so the peak is this call's own (the high-water mark is reset once the tokenizer is
// loaded and the text built).
//
//   il_tokenizer_cost TOKENIZER_JSON CASE MEGABYTES [--details CONFIG_JSON] [--repeat N]
//
// CASE: english (ordinary prose), word (one word of random letters, no spaces), unicode (random
// letters, emoji, CJK and combining marks, a space now and then), spaces (whitespace only),
// punct (ASCII punctuation only), bytes (every printable ASCII character at random, one token a
// byte for byte-level BPE). With --details the call is Engine::token_details (what /tokenize
// runs) on an engine with random weights built from CONFIG_JSON; else Tokenizer::encode without
// a length limit. Prints one JSON line: wall and CPU time (the best of --repeat runs), the peak
// of live C++ heap bytes during the call (counted by the operator new below: exact, whatever
// the allocator keeps cached) and what is still live after the call returned, the peak resident
// set above the level before the call (which undercounts when memory freed earlier, by the load,
// is still resident), and the resident set still held after the call returned (the live heap
// plus what the allocator did not give back).
#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "core/error.h"
#include "inferencelayer/engine.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace {

std::atomic<long long> g_live{0};
std::atomic<long long> g_peak{0};

void count(long long delta) {
  const long long now = g_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  long long peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  count(static_cast<long long>(malloc_usable_size(p)));
  return p;
}

void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  count(-static_cast<long long>(malloc_usable_size(p)));
  std::free(p);
}

void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace {

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

// Resident set and its high-water mark, in bytes, from /proc/self/status.
struct Rss {
  long long now = 0;
  long long peak = 0;
};

Rss read_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  Rss r;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) r.now = std::stoll(line.substr(6)) * 1024;
    if (line.rfind("VmHWM:", 0) == 0) r.peak = std::stoll(line.substr(6)) * 1024;
  }
  return r;
}

// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

std::string make_text(const std::string& kind, std::size_t bytes) {
  std::mt19937_64 rng(42);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  std::string s;
  s.reserve(bytes + 8);
  if (kind == "english") {
    static const char* const kWords[] = {
        "the", "of", "and", "to", "in", "is", "was", "that", "for", "on", "with", "as", "by",
        "tokenizer", "inference", "engine", "model", "running", "quickly", "although", "people",
        "government", "international", "understanding", "it's", "don't", "1984", "3.14", "U.S.",
        "Hugging", "Face", "embeddings", "reranking", "e-mail", "co-operate", "naïve", "café"};
    constexpr std::size_t kN = sizeof kWords / sizeof kWords[0];
    std::size_t in_sentence = 0;
    while (s.size() < bytes) {
      std::string w = kWords[pick(kN)];
      if (in_sentence == 0 && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 32);
      s += w;
      ++in_sentence;
      if (in_sentence > 8 + pick(12)) {
        s += pick(4) == 0 ? "?\n" : ". ";
        in_sentence = 0;
      } else {
        s += pick(10) == 0 ? ", " : " ";
      }
    }
  } else if (kind == "word") {
    while (s.size() < bytes) s += static_cast<char>('a' + pick(26));
  } else if (kind == "unicode") {
    while (s.size() < bytes) {
      const std::size_t r = pick(100);
      char32_t c;
      if (r < 25) {
        c = static_cast<char32_t>(0x1F300 + pick(0x350));  // emoji and pictographs
      } else if (r < 45) {
        c = static_cast<char32_t>(0x4E00 + pick(0x5000));  // CJK ideographs
      } else if (r < 70) {
        c = static_cast<char32_t>(0x300 + pick(0x70));  // combining diacritics
      } else if (r < 80) {
        c = static_cast<char32_t>(0x400 + pick(0x100));  // Cyrillic
      } else if (r < 88) {
        c = static_cast<char32_t>(0x600 + pick(0x100));  // Arabic
      } else if (r < 92) {
        c = U' ';
      } else if (r < 96) {
        c = static_cast<char32_t>(0xAC00 + pick(0x2BA4));  // Hangul syllables
      } else {
        c = static_cast<char32_t>(0x20 + pick(0x5F));  // ASCII
      }
      il::text::unicode::append_utf8(s, c);
    }
  } else if (kind == "spaces") {
    static const char kSpace[] = {' ', ' ', ' ', ' ', '\t', '\n'};
    while (s.size() < bytes) s += kSpace[pick(sizeof kSpace)];
  } else if (kind == "punct") {
    static const char kPunct[] = ".,;:!?-()[]{}'\"/\\*&^%$#@~`|<>=+_";
    while (s.size() < bytes) s += kPunct[pick(sizeof kPunct - 1)];
  } else if (kind == "bytes") {
    while (s.size() < bytes) s += static_cast<char>(0x21 + pick(0x5E));
  } else {
    throw il::make_error("unknown case \"", kind,
                         "\" (english, word, unicode, spaces, punct, bytes)");
  }
  return s;
}

int run(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: il_tokenizer_cost TOKENIZER_JSON CASE MEGABYTES [--details CONFIG_JSON]"
                 " [--repeat N]\n";
    return 2;
  }
  const std::string tokenizer_json = argv[1];
  const std::string kind = argv[2];
  const auto bytes = static_cast<std::size_t>(std::stod(argv[3]) * 1024 * 1024);
  std::string config;
  int repeat = 1;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--details") == 0) config = argv[i + 1];
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::stoi(argv[i + 1]);
  }

  std::unique_ptr<il::Engine> engine;
  std::optional<il::text::Tokenizer> tokenizer;
  if (!config.empty()) {
    engine = il::Engine::load_random(config, tokenizer_json, {});
  } else {
    tokenizer.emplace(il::text::Tokenizer::from_file(tokenizer_json));
  }
  const std::string text = make_text(kind, bytes);
  if (!reset_peak()) throw il::make_error("cannot reset the peak RSS (/proc/self/clear_refs)");
  const Rss before = read_rss();
  const long long live_before = g_live.load();
  g_peak.store(live_before);

  std::size_t tokens = 0;
  double best_ms = 1e300;
  double best_cpu_ms = 1e300;
  for (int r = 0; r < repeat; ++r) {
    const double c0 = cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    if (engine) {
      il::TokenizeOptions o;
      o.limit_length = false;
      tokens = engine->token_details(text, o).size();
    } else {
      tokens = tokenizer->encode(text).ids.size();
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best_ms = std::min(best_ms, ms);
    best_cpu_ms = std::min(best_cpu_ms, cpu_ms() - c0);
  }
  const double heap_peak = static_cast<double>(g_peak.load() - live_before);
  const double heap_kept = static_cast<double>(g_live.load() - live_before);
  const Rss after = read_rss();
  const double peak = static_cast<double>(after.peak - before.now);
  const double kept = static_cast<double>(after.now - before.now);
  std::printf(
      "{\"case\":\"%s\",\"bytes\":%zu,\"tokens\":%zu,\"call\":\"%s\",\"ms\":%.0f,"
      "\"cpu_ms\":%.0f,\"heap_peak_per_byte\":%.1f,\"heap_kept_mb\":%.1f,\"rss_peak_mb\":%.1f,"
      "\"rss_kept_mb\":%.1f}\n",
      kind.c_str(), text.size(), tokens, engine ? "token_details" : "encode", best_ms, best_cpu_ms,
      heap_peak / static_cast<double>(text.size()), heap_kept / 1048576.0, peak / 1048576.0,
      kept / 1048576.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "il_tokenizer_cost: " << e.what() << "\n";
    return 1;
  }
}
