// CPU GEMM microbenchmark: the packed-weight GEMM on the shapes of a model's layers, in the order
// a forward runs them, over as many distinct weight copies as layers (so a model that does not fit
// the caches streams its weights as it does in a forward). Prints p50 time and GFLOP/s per shape.
//
//   il_gemm_cpu_bench --threads 16 --layers 12 --iters 20 64x2304x768 64x768x768 64x3072x768 64x768x3072
//
// A shape is MxNxK, optionally +P: x rows padded by P floats (ldx = K + P), to see whether a row
// stride that is a multiple of 4 KB costs anything.
#include <algorithm>
#include <new>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/thread_pool.h"
#include "ops/gemm_packed.h"

namespace {

struct Shape {
  std::size_t m = 0, n = 0, k = 0, pad = 0;
  std::string text;
};

// Empty string when the text is a valid shape, else why not.
std::string parse_shape(const std::string& s, Shape& sh) {
  static const std::regex form(R"(([0-9]{1,9})x([0-9]{1,9})x([0-9]{1,9})(\+([0-9]{1,9}))?)");
  std::smatch m;
  sh.text = s;
  if (std::regex_match(s, m, form)) {
    sh.m = std::stoul(m[1]);
    sh.n = std::stoul(m[2]);
    sh.k = std::stoul(m[3]);
    sh.pad = m[5].matched ? std::stoul(m[5]) : 0;
    if (sh.m > 0 && sh.n > 0 && sh.k > 0) return {};
  }
  return "expected MxNxK or MxNxK+PAD with positive sizes, got '" + s + "'";
}

}  // namespace

int run(const std::vector<std::string>& shape_texts, std::size_t threads, std::size_t layers,
        std::size_t iters, std::size_t warmup, const std::string& kernel);

int main(int argc, char** argv) {
  CLI::App app{"Packed-weight CPU GEMM on model-shaped sequences"};
  std::vector<std::string> shape_texts;
  std::size_t threads = 0, layers = 1, iters = 20, warmup = 3;
  std::string kernel;
  app.add_option("shapes", shape_texts, "MxNxK[+PAD] per GEMM of one layer, in forward order")
      ->required()
      ->check([](const std::string& s) {
        Shape sh;
        return parse_shape(s, sh);
      });
  app.add_option("--threads", threads, "worker threads (0: one per hardware thread)");
  app.add_option("--layers", layers, "distinct weight copies of every shape, run in turn")
      ->check(CLI::Range(1, 1000));
  app.add_option("--iters", iters, "timed passes over all layers")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", warmup, "untimed passes first");
  app.add_option("--kernel", kernel, "tile kernel (default: the fastest this CPU runs)")
      ->check(CLI::IsMember(il::ops::gemm_packed_kernels()));
  CLI11_PARSE(app, argc, argv);

  try {
    return run(shape_texts, threads, layers, iters, warmup, kernel);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "il_gemm_cpu_bench: cannot allocate the operands of these shapes\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "il_gemm_cpu_bench: %s\n", e.what());
    return 1;
  }
}

int run(const std::vector<std::string>& shape_texts, std::size_t threads, std::size_t layers,
        std::size_t iters, std::size_t warmup, const std::string& kernel) {
  std::vector<Shape> shapes;
  for (const auto& s : shape_texts) {
    Shape sh;
    parse_shape(s, sh);  // validated by the option's check
    shapes.push_back(sh);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  struct Slot {
    std::vector<il::ops::PackedWeight> weights;  // one per layer
    std::vector<float> x, y, bias;
    std::vector<double> seconds;
  };
  std::vector<Slot> slots(shapes.size());
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const Shape& sh = shapes[s];
    std::vector<float> w(sh.n * sh.k);
    for (std::size_t l = 0; l < layers; ++l) {
      for (auto& v : w) v = dist(rng);
      slots[s].weights.emplace_back(w.data(), sh.n, sh.k);
    }
    slots[s].x.resize(sh.m * (sh.k + sh.pad));
    for (auto& v : slots[s].x) v = dist(rng);
    slots[s].y.resize(sh.m * sh.n);
    slots[s].bias.resize(sh.n);
    for (auto& v : slots[s].bias) v = dist(rng);
  }
  il::ThreadPool pool(threads);
  std::vector<double> pass_seconds;
  for (std::size_t it = 0; it < warmup + iters; ++it) {
    const auto pass0 = std::chrono::steady_clock::now();
    for (std::size_t l = 0; l < layers; ++l) {
      for (std::size_t s = 0; s < shapes.size(); ++s) {
        const Shape& sh = shapes[s];
        Slot& slot = slots[s];
        il::ops::PackedGemmArgs a;
        a.x = il::ops::f32_view(slot.x.data(), sh.k + sh.pad);
        a.w = &slot.weights[l];
        a.bias = il::ops::f32_view(slot.bias.data());
        a.y = il::ops::f32_view(slot.y.data(), sh.n);
        a.m = sh.m;
        const auto t0 = std::chrono::steady_clock::now();
        if (kernel.empty())
          il::ops::gemm_packed_cpu(a, pool);
        else
          il::ops::gemm_packed_cpu(a, pool, kernel);
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (it >= warmup) slot.seconds.push_back(sec);
      }
    }
    const double pass = std::chrono::duration<double>(std::chrono::steady_clock::now() - pass0).count();
    if (it >= warmup) pass_seconds.push_back(pass);
  }
  const auto p50 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("threads %zu, layers %zu, iters %zu, kernel %s\n", pool.size(), layers, iters,
              kernel.empty() ? il::ops::gemm_packed_default_kernel().c_str() : kernel.c_str());
  double total_flop = 0;
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const Shape& sh = shapes[s];
    const double flop = 2.0 * sh.m * sh.n * sh.k;
    total_flop += flop * layers;
    const double t = p50(slots[s].seconds);
    const double weight_mb = sh.n * sh.k * 4.0 / 1e6;
    std::printf("%-18s p50 %8.1f us  %7.1f GFLOP/s  %6.1f GB/s of weight\n", sh.text.c_str(), t * 1e6,
                flop / t / 1e9, weight_mb / 1e3 / t);
  }
  const double pass = p50(pass_seconds);
  std::printf("pass p50 %.3f ms  %.1f GFLOP/s\n", pass * 1e3, total_flop / pass / 1e9);
  return 0;
}
