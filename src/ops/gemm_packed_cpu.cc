#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/mman.h>

#include "core/env.h"
#include "core/error.h"
#include "ops/activation.h"
#include "ops/gemm_kernel.h"
#include "ops/gemm_packed.h"

namespace il::ops {
namespace {

using gemm_kernel::kPanel;
using gemm_kernel::Kernel;

constexpr std::size_t kDepthBlock = 256;       // k per pass: a 32 KB panel slice stays in L1
constexpr std::size_t kRowBlockTarget = 128;   // rows of packed A per task (in L2 with C)
constexpr std::size_t kMaxPanelsPerTask = 8;   // 256 columns
constexpr std::size_t kSerialWork = 1u << 17;  // m·n·k below which threads cost more than they save

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// PackedGemmArgs with its f32 arrays checked and unwrapped.
struct F32Gemm {
  const float* x;
  std::size_t ldx;
  const PackedWeight* w;
  const float* bias;
  float* y;
  std::size_t ldy;
  std::size_t m;
  Activation act;
};

// Where a task's kernel tiles read A from. A short batch (one row block) reads x where it lies:
// packing it once for all tasks cost a parallel section (a synchronisation of every thread) per
// GEMM, and was slower at every 1×16 … 1×64 point measured on 16 cores (docs/perf-history.md).
enum class ASource {
  kPackPerTask,  // each task packs its own rows (several row blocks)
  kInPlace,      // x read where it lies (Tile::lda): no packing at all
};

// Tile::prefetch of the next weight block; IL_GEMM_PREFETCH=0 turns it off (for measurements).
bool prefetch_next_block() {
  static const bool on = env::on_unless_zero("IL_GEMM_PREFETCH");
  return on;
}

// Rows [r0, r0 + rows) × depth [k0, k0 + kc) of x into micro-panels of mr rows, k-major, the
// missing rows of the last micro-panel zero.
void pack_rows(const F32Gemm& a, std::size_t r0, std::size_t rows, std::size_t k0,
               std::size_t kc, std::size_t mr, float* dst) {
  for (std::size_t i0 = 0; i0 < rows; i0 += mr) {
    const std::size_t h = std::min(mr, rows - i0);
    for (std::size_t i = 0; i < h; ++i) {
      const float* src = a.x + (r0 + i0 + i) * a.ldx + k0;
      for (std::size_t k = 0; k < kc; ++k) dst[k * mr + i] = src[k];
    }
    for (std::size_t i = h; i < mr; ++i)
      for (std::size_t k = 0; k < kc; ++k) dst[k * mr + i] = 0.0f;
    dst += kc * mr;
  }
}

// Work is cut into tasks of (row block) × (a run of column units). A unit is a 32-column panel,
// or half of one when the batch is too short to give every thread whole panels: a small batch
// is bound by streaming the weight, so it pays to spread that over all threads.
struct Blocking {
  std::size_t kc;           // depth per pass
  std::size_t row_block;    // rows per task (a multiple of mr when A is packed)
  std::size_t unit;         // columns per unit: kPanel or kPanel / 2
  std::size_t units;        // units per task
  std::size_t row_tasks, unit_tasks;
  bool in_place = false;     // A read where it lies (ASource::kInPlace)
  // Task t covers row block t % row_tasks of unit run t / row_tasks, so the row blocks that share
  // a weight panel are claimed together and stream it from memory once, at the same time.
  bool panel_major = false;
};

// 2, 4 and 6 tasks per thread measured no better than 3 (docs/perf-history.md, fourth CPU session).
constexpr std::size_t kShortTasksPerThread = 3;
constexpr std::size_t kMinGroupRows = 16;

Blocking choose_blocking(std::size_t m, std::size_t n, std::size_t k, std::size_t mr,
                         std::size_t threads) {
  Blocking b;
  const std::size_t passes = ceil_div(std::max<std::size_t>(k, 1), kDepthBlock);
  b.kc = ceil_div(std::max<std::size_t>(k, 1), passes);
  b.row_block = std::min(ceil_div(m, mr), ceil_div(kRowBlockTarget, mr)) * mr;
  b.row_tasks = ceil_div(m, b.row_block);
  b.in_place = b.row_tasks == 1;
  if (b.in_place && threads > 1 && m > 2 * mr) {
    // A short batch of a few dozen rows: whole-panel tasks, claimed dynamically, about three per
    // thread, the rows cut into groups when there are too few panels for that. On a shared
    // 16-core host the cores run at different speeds (up to 2× apart, measured), so an equal
    // static share per thread waits for the slowest; whole panels keep the wide tile kernel.
    const std::size_t panels = ceil_div(n, kPanel);
    const std::size_t groups = std::clamp<std::size_t>(
        ceil_div(kShortTasksPerThread * threads, panels), 1, std::max<std::size_t>(m / kMinGroupRows, 1));
    b.row_block = ceil_div(m, groups);
    b.row_tasks = ceil_div(m, b.row_block);
    b.unit = kPanel;
    b.units = 1;
    b.unit_tasks = panels;
    b.panel_major = true;
    return b;
  }
  const bool short_batch = m <= 2 * mr || b.row_tasks * ceil_div(n, kPanel) < 2 * threads;
  b.unit = threads > 1 && short_batch ? kPanel / 2 : kPanel;
  const std::size_t all_units = ceil_div(n, b.unit);
  if (b.row_tasks == 1) {
    // One task per thread with an equal share of the columns: the batch is bound by streaming
    // the weight, and fewer, larger tasks measured faster than dynamic balancing here.
    b.units = ceil_div(all_units, threads);
  } else {
    // Enough tasks for every thread to take a few (uneven ragged batches balance dynamically),
    // but as many units per task as that allows, so each packed A block serves many of them.
    const std::size_t per_row = ceil_div(threads * 3, b.row_tasks);
    b.units = std::clamp<std::size_t>(all_units / std::max<std::size_t>(per_row, 1), 1,
                                      kMaxPanelsPerTask * kPanel / b.unit);
  }
  b.unit_tasks = ceil_div(all_units, b.units);
  return b;
}

// Dynamic short-batch tasks claim their successor early: a thread takes its next task when it
// starts the last depth pass of the current one, and that pass prefetches the next task's first
// weight block. Without it every task began by waiting for 32 KB from memory. Measured on 16
// threads of a shared Xeon: GEMMs of bge-base 1×64 5–10 % faster; on the 2-core AMD
// development machine 12 % slower (there one thread's share of the memory bandwidth is large
// and the hardware prefetcher keeps up), hence only from kLookaheadThreads on.
constexpr std::size_t kLookaheadThreads = 8;

struct Lookahead {
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::atomic<std::size_t>* next = nullptr;  // the next unclaimed task
  std::size_t tasks = 0;
  std::size_t claimed = kNone;               // the task this thread claimed for after this one
};

// First column of a task.
std::size_t task_col0(const Blocking& blk, std::size_t task) {
  const std::size_t unit_task = blk.panel_major ? task / blk.row_tasks : task % blk.unit_tasks;
  return unit_task * blk.units * blk.unit;
}

void run_task(const F32Gemm& a, const Kernel& kern, const Blocking& blk, std::size_t task,
              ASource source, Lookahead* ahead = nullptr) {
  const PackedWeight& w = *a.w;
  const std::size_t row_task = blk.panel_major ? task % blk.row_tasks : task / blk.unit_tasks;
  const std::size_t r0 = row_task * blk.row_block;
  const std::size_t rows = std::min(blk.row_block, a.m - r0);
  const std::size_t col0 = task_col0(blk, task);
  const std::size_t col1 = std::min(w.n(), col0 + blk.units * blk.unit);
  const std::size_t mr = kern.mr;
  const std::size_t rows_pad = ceil_div(rows, mr) * mr;

  thread_local std::vector<float> packed_a;
  if (source == ASource::kPackPerTask) packed_a.resize(rows_pad * blk.kc);

  // Column chunks: whole panels where the task's columns allow, half panels at its edges.
  const auto chunk_width = [&](std::size_t c0) {
    return c0 % kPanel == 0 && col1 - c0 > kPanel / 2 ? kPanel : kPanel / 2;
  };
  const auto block_b = [&](std::size_t k0, std::size_t c0) { return w.panel(c0 / kPanel) + c0 % kPanel + k0 * kPanel; };

  const std::size_t depth = std::max<std::size_t>(w.k(), 1);
  for (std::size_t k0 = 0; k0 < depth; k0 += blk.kc) {
    const std::size_t kc = std::min(blk.kc, w.k() - std::min(k0, w.k()));
    if (source == ASource::kPackPerTask) pack_rows(a, r0, rows, k0, kc, mr, packed_a.data());
    const bool last_pass = k0 + blk.kc >= w.k();
    if (ahead && last_pass) ahead->claimed = ahead->next->fetch_add(1, std::memory_order_relaxed);
    for (std::size_t c0 = col0, width = chunk_width(col0); c0 < col1; c0 += width, width = chunk_width(c0)) {
      gemm_kernel::Tile t;
      t.b = block_b(k0, c0);
      // The block after this one: the next chunk of this pass, else the first of the next pass.
      if (!prefetch_next_block()) {
        // no prefetch
      } else if (c0 + width < col1) {
        t.prefetch = block_b(k0, c0 + width);
        t.prefetch_wide = chunk_width(c0 + width) == kPanel;
      } else if (!last_pass) {
        t.prefetch = block_b(k0 + blk.kc, col0);
        t.prefetch_wide = chunk_width(col0) == kPanel;
      } else if (ahead && ahead->claimed < ahead->tasks) {
        const std::size_t next_col0 = task_col0(blk, ahead->claimed);
        t.prefetch = block_b(0, next_col0);
        t.prefetch_wide = next_col0 % kPanel == 0 && std::min(w.n(), next_col0 + blk.units * blk.unit) - next_col0 > kPanel / 2;
      }
      t.ldc = a.ldy;
      t.kc = kc;
      t.cols = std::min(width, col1 - c0);
      t.init = a.bias ? a.bias + c0 : nullptr;
      t.accumulate = k0 > 0;
      // The row tiles share the next block's rows between them: tile i asks for rows
      // i·kc/T … (i+1)·kc/T − 1, one every T steps, so the requests span the whole block.
      const std::size_t row_tiles = ceil_div(rows, mr);
      const float* next_block = t.prefetch;
      t.prefetch_every = row_tiles;
      // Packed A comes in micro-panels of mr rows. Rows read in place are spread evenly over
      // the tiles instead (64 rows: 13+13+13+13+12, not 14+14+14+14+8), so no tile is short.
      const std::size_t even = rows / row_tiles, extra = rows % row_tiles;
      for (std::size_t i = 0, i0 = 0; i < row_tiles; ++i) {
        const std::size_t h = source == ASource::kInPlace ? even + (i < extra ? 1 : 0) : std::min(mr, rows - i0);
        if (next_block) t.prefetch = next_block + i * ceil_div(kc, row_tiles) * kPanel;
        if (source == ASource::kInPlace) {
          t.a = a.x + (r0 + i0) * a.ldx + k0;
          t.lda = a.ldx;
        } else {
          t.a = packed_a.data() + i * mr * kc;
        }
        t.c = a.y + (r0 + i0) * a.ldy + c0;
        t.rows = h;
        kern.tile(t);
        i0 += h;
      }
    }
  }
  if (a.act != Activation::kNone)
    bias_activation_cpu({f32_view(a.y + r0 * a.ldy + col0, a.ldy), {}, rows, col1 - col0, a.act});
}

void run(const PackedGemmArgs& args, ThreadPool& pool, const Kernel& kern) {
  check(args.x.data && args.w && args.y.data, "gemm: null operand");
  const F32Gemm a{f32_data(args.x, "gemm"), args.x.ld, args.w,   f32_data(args.bias, "gemm"),
                  f32_data(args.y, "gemm"), args.y.ld, args.m, args.act};
  check(a.ldx >= a.w->k() && a.ldy >= a.w->n(), "gemm: row stride smaller than the row (ldx ",
        a.ldx, " k ", a.w->k(), " ldy ", a.ldy, " n ", a.w->n(), ")");
  if (a.m == 0 || a.w->n() == 0) return;
  const std::size_t work = a.m * a.w->n() * std::max<std::size_t>(a.w->k(), 1);
  const std::size_t threads = work < kSerialWork ? 1 : pool.size();
  const Blocking blk = choose_blocking(a.m, a.w->n(), a.w->k(), kern.mr, threads);
  const std::size_t tasks = blk.row_tasks * blk.unit_tasks;
  const ASource source = blk.in_place ? ASource::kInPlace : ASource::kPackPerTask;
  if (threads == 1) {
    for (std::size_t t = 0; t < tasks; ++t) run_task(a, kern, blk, t, source);
    return;
  }
  if (blk.panel_major && threads >= kLookaheadThreads) {
    // Each pool thread runs a claim loop of its own (see Lookahead); a thread that arrives after
    // every task is claimed finds nothing to do.
    std::atomic<std::size_t> next{0};
    pool.parallel_for(pool.size(), 1, [&](std::size_t, std::size_t) {
      Lookahead ahead{&next, tasks};
      for (std::size_t t = next.fetch_add(1, std::memory_order_relaxed); t < tasks;) {
        ahead.claimed = Lookahead::kNone;
        run_task(a, kern, blk, t, source, &ahead);
        t = ahead.claimed != Lookahead::kNone ? ahead.claimed : next.fetch_add(1, std::memory_order_relaxed);
      }
    });
    return;
  }
  pool.parallel_for(tasks, 1, [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t) run_task(a, kern, blk, t, source);
  });
}

}  // namespace

PackedWeight::PackedWeight(const float* w, std::size_t n, std::size_t k)
    : n_(n), k_(k), panels_(ceil_div(n, kPanel)) {
  const std::size_t floats = std::max<std::size_t>(panels_ * k * kPanel, kPanel);
  // Large weights on 2 MB pages where the kernel allows it: streaming a weight that does not fit
  // the caches otherwise takes a TLB miss every 4 KB.
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  const std::size_t align = floats * sizeof(float) >= 2 * kHugePage ? kHugePage : 64;
  const std::size_t bytes = ceil_div(floats * sizeof(float), align) * align;
  data_.reset(static_cast<float*>(std::aligned_alloc(align, bytes)));
  check(data_ != nullptr, "gemm: cannot allocate ", bytes, " bytes for a packed weight");
#ifdef MADV_HUGEPAGE
  if (align == kHugePage) madvise(data_.get(), bytes, MADV_HUGEPAGE);  // a hint; failure is fine
#endif
  pack_panels(w, k, n, k, data_.get());
}

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void pack_panels(
    const float* src, std::size_t ld, std::size_t count, std::size_t width, float* dst) {
  for (std::size_t p = 0; p < ceil_div(count, kPanel); ++p) {
    float* panel = dst + p * width * kPanel;
    for (std::size_t j = 0; j < kPanel; ++j) {
      const std::size_t row = p * kPanel + j;
      if (row < count) {
        const float* s = src + row * ld;
        for (std::size_t d = 0; d < width; ++d) panel[d * kPanel + j] = s[d];
      } else {
        for (std::size_t d = 0; d < width; ++d) panel[d * kPanel + j] = 0.0f;
      }
    }
  }
}

void gemm_packed_cpu(const PackedGemmArgs& a, ThreadPool& pool) {
  run(a, pool, gemm_kernel::default_kernel());
}

void gemm_packed_cpu(const PackedGemmArgs& a, ThreadPool& pool, const std::string& kernel) {
  run(a, pool, gemm_kernel::kernel_named(kernel));
}

std::vector<std::string> gemm_packed_kernels() {
  std::vector<std::string> names;
  for (const Kernel& k : gemm_kernel::runnable_kernels()) names.push_back(k.name);
  return names;
}

std::string gemm_packed_default_kernel() { return gemm_kernel::default_kernel().name; }

}  // namespace il::ops
