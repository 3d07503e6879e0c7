// CPU GEMM microbenchmark: the packed-weight GEMM on the shapes of a model's layers, in the order
// a forward runs them, over as many distinct weight copies as layers (so a model that does not fit
// the caches streams its weights as it does in a forward). Prints p50 time and GFLOP/s per shape.
//
//   il_gemm_cpu_bench --threads 16 --layers 12 --iters 20 64x2304x768 64x768x768 64x3072x768 64x768x3072
//
// A shape is MxNxK, optionally +P: x rows padded by P floats (ldx = K + P), to see whether a row
// stride that is a multiple of 4 KB costs anything.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
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

Shape parse_shape(const std::string& s) {
  Shape sh;
  sh.text = s;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%zux%zux%zu+%zu%c", &sh.m, &sh.n, &sh.k, &sh.pad, &tail) < 3 ||
      sh.m == 0 || sh.n == 0 || sh.k == 0)
    throw CLI::ValidationError("shape", "expected MxNxK or MxNxK+PAD, got '" + s + "'");
  return sh;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Packed-weight CPU GEMM on model-shaped sequences"};
  std::vector<std::string> shape_texts;
  std::size_t threads = 0, layers = 1, iters = 20, warmup = 3;
  std::string kernel;
  app.add_option("shapes", shape_texts, "MxNxK[+PAD] per GEMM of one layer, in forward order")->required();
  app.add_option("--threads", threads, "worker threads (0: one per hardware thread)");
  app.add_option("--layers", layers, "distinct weight copies of every shape, run in turn");
  app.add_option("--iters", iters, "timed passes over all layers");
  app.add_option("--warmup", warmup, "untimed passes first");
  app.add_option("--kernel", kernel, "tile kernel (default: the fastest this CPU runs)");
  CLI11_PARSE(app, argc, argv);

  std::vector<Shape> shapes;
  for (const auto& s : shape_texts) shapes.push_back(parse_shape(s));
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
        a.x = slot.x.data();
        a.ldx = sh.k + sh.pad;
        a.w = &slot.weights[l];
        a.bias = slot.bias.data();
        a.y = slot.y.data();
        a.ldy = sh.n;
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
