// `inferencelayer bench`: times the forward pass (set_batch + encode + pooling or CE head + read
// back) on random token ids, for a grid of batch × length points. Weights come from a folder
// (--model) or are random from a config alone (--config), so a large model's speed can be
// measured without downloading it. Timed numbers belong in docs/perf.md, never in tests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_backend.h"
#include "cli/cli_common.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "io/json_util.h"
#include "models/embedding_head.h"
#include "models/registry.h"
#include "image/decode.h"
#include "image/preprocess.h"
#include "runtime/image_batch.h"
#include "runtime/image_loader.h"

namespace il::cli {
namespace {

struct BenchArgs {
  std::string model;
  std::string config;
  std::string name;
  std::string grid;
  std::vector<std::string> mixed;
  std::size_t threads = 0;
  std::string device = "cpu";  // cpu, cuda, cuda:N
  std::string dtype = "auto";  // f32, f16, bf16 (CUDA), auto
  std::optional<PoolingMode> pooling;  // --pooling; else the config's "_inferencelayer_pooling", else mean
  int warmup = 2;
  int iters = 10;
  bool json = false;
  unsigned seed = 1234;
  std::vector<std::string> images;  // --images: encoded files for the end-to-end points
  std::string image_input = "bytes";  // --image-input: bytes (compact ImageInputs) or f32 pixel_values
};

struct Point {
  std::size_t batch = 0;
  std::size_t min_len = 0, max_len = 0;  // equal except for --mixed
  bool mixed = false;
};

std::size_t parse_size(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v == 0) throw UsageError("bad " + what + ": '" + s + "'");
  return v;
}

std::vector<Point> parse_grid(const std::string& grid) {
  std::vector<Point> points;
  std::size_t pos = 0;
  while (pos <= grid.size()) {
    const std::size_t comma = std::min(grid.find(',', pos), grid.size());
    const std::string item = grid.substr(pos, comma - pos);
    const std::size_t x = item.find('x');
    if (x == std::string::npos) throw UsageError("bad --grid point '" + item + "': expected BxL, e.g. 32x128");
    const std::size_t len = parse_size(item.substr(x + 1), "--grid length");
    points.push_back({parse_size(item.substr(0, x), "--grid batch"), len, len, false});
    pos = comma + 1;
  }
  return points;
}

Point parse_mixed(const std::string& spec) {
  const std::size_t a = spec.find(':');
  const std::size_t b = a == std::string::npos ? a : spec.find(':', a + 1);
  if (b == std::string::npos) throw UsageError("bad --mixed '" + spec + "': expected B:min:max, e.g. 32:16:256");
  Point p{parse_size(spec.substr(0, a), "--mixed batch"), parse_size(spec.substr(a + 1, b - a - 1), "--mixed min"),
          parse_size(spec.substr(b + 1), "--mixed max"), true};
  if (p.min_len > p.max_len) throw UsageError("bad --mixed '" + spec + "': min is larger than max");
  return p;
}

models::BuiltModel build(const BenchArgs& a, std::string& name) {
  if (!a.model.empty()) {
    if (!std::filesystem::is_directory(a.model))
      throw UsageError("model folder " + a.model + " does not exist or is not a folder");
    name = std::filesystem::path(a.model).lexically_normal().filename().string();
    if (name.empty()) name = std::filesystem::path(a.model).lexically_normal().parent_path().filename().string();
    models::BuiltModel m = models::build_model_from_folder(a.model);
    if (a.pooling) m.pooling = *a.pooling;
    return m;
  }
  std::filesystem::path p(a.config);
  if (std::filesystem::is_directory(p)) p /= "config.json";
  nlohmann::json j;
  try {
    j = io::read_json_file(p);
  } catch (const Error& e) {
    throw UsageError(e.what());  // a config the user named: theirs to fix
  }
  // bench/configs/bge-small.json → "bge-small"; some-model/config.json → "some-model".
  name = p.stem() == "config" ? p.parent_path().filename().string() : p.stem().string();
  if (name.empty()) name = "config";
  models::BuiltModel m = models::build_model_random(j, p.string());
  // A random-weight model pools as the model it imitates would (bench/configs name it), so the
  // forward is the one that model's users run.
  if (a.pooling) {
    m.pooling = *a.pooling;
  } else if (const auto it = j.find("_inferencelayer_pooling"); it != j.end()) {
    const auto found = it->is_string() ? pooling_names().find(it->get<std::string>()) : pooling_names().end();
    if (found == pooling_names().end())
      throw UsageError(p.string() + ": _inferencelayer_pooling must be \"mean\", \"cls\" or \"last\"");
    m.pooling = found->second;
  }
  return m;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

plan::Batch random_batch(const Point& p, int vocab, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> id(0, vocab - 1);
  std::uniform_int_distribution<std::size_t> len(p.min_len, p.max_len);
  plan::Batch b;
  b.seq_starts.push_back(0);
  for (std::size_t s = 0; s < p.batch; ++s) {
    const std::size_t n = len(rng);
    for (std::size_t t = 0; t < n; ++t) b.tokens.push_back(id(rng));
    b.seq_starts.push_back(static_cast<int32_t>(b.tokens.size()));
  }
  return b;
}

// B images of uniform random pixel_values in [-1, 1] (SigLIP's normalised range), cut into patch
// rows as the engine cuts them.
// With `bytes`: random uint8 images with the release processor's byte values instead, the
// compact form Engine::load_image gives (uploaded as bytes, cut on the device).
plan::Batch random_image_batch(std::size_t images, const models::ImageGeometry& g, std::mt19937& rng, bool bytes) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  const auto table = std::make_shared<const std::vector<float>>(image::byte_value_table(
      runtime::siglip_release_preprocessor(static_cast<int>(g.height), static_cast<int>(g.width))));
  std::vector<ImageInput> in(images);
  for (ImageInput& im : in) {
    im.channels = static_cast<std::size_t>(g.channels);
    im.height = static_cast<std::size_t>(g.height);
    im.width = static_cast<std::size_t>(g.width);
    if (bytes && im.channels == 3) {
      im.bytes.resize(im.channels * im.height * im.width);
      for (std::uint8_t& v : im.bytes) v = static_cast<std::uint8_t>(byte(rng));
      im.byte_values = table;
    } else {
      im.pixels.resize(im.channels * im.height * im.width);
      for (float& v : im.pixels) v = value(rng);
    }
  }
  return runtime::make_image_batch(in, {0, images}, g);
}

// The encoded image files of --images (files, or every regular file of a folder, sorted), in memory.
std::vector<std::vector<std::uint8_t>> read_image_files(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> files;
  for (const std::string& s : args) {
    if (std::filesystem::is_directory(s)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(s))
        if (e.is_regular_file()) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::is_regular_file(s)) {
      files.emplace_back(s);
    } else {
      throw UsageError("--images " + s + ": no such file or folder");
    }
  }
  if (files.empty()) throw UsageError("--images: no files");
  std::vector<std::vector<std::uint8_t>> out;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

void run_bench(const BenchArgs& a) {
  if (a.model.empty() == a.config.empty()) throw UsageError("give exactly one of --model DIR or --config FILE");
  std::string name;
  models::BuiltModel model = build(a, name);
  if (!a.name.empty()) name = a.name;
  // An image model (SigLIP) runs its vision tower on random images: a point's B is the number of
  // images, its length the model's patch count (the only one an image has).
  const bool images = model.image.has_value() && model.image_embedding_dim > 0;
  const std::size_t patches = images ? model.image->patches() : 0;
  if (images && !a.mixed.empty()) throw UsageError("--mixed does not apply to an image model (every image has " +
                                                   std::to_string(patches) + " patches)");
  std::vector<Point> points;
  const std::string p_str = std::to_string(patches);
  const std::string default_grid = images ? "1x" + p_str + ",8x" + p_str + ",32x" + p_str : "1x16,1x64,32x128";
  if (!a.grid.empty() || a.mixed.empty()) points = parse_grid(a.grid.empty() ? default_grid : a.grid);
  for (const std::string& m : a.mixed) points.push_back(parse_mixed(m));

  const int max_len = images ? static_cast<int>(patches)
                             : static_cast<int>(std::min<std::size_t>(model.limits.max_tokens, 1u << 30));
  std::size_t max_tokens = 1;
  for (const Point& p : points) {
    if (images && p.max_len != patches)
      throw UsageError("--grid length " + std::to_string(p.max_len) + ": an image of this model is " + p_str +
                       " patch tokens (give Bx" + p_str + ")");
    if (p.max_len > static_cast<std::size_t>(max_len))
      throw UsageError("length " + std::to_string(p.max_len) + " is longer than the model's " +
                       std::to_string(max_len) + " positions");
    max_tokens = std::max(max_tokens, p.batch * p.max_len);
  }
  // The executor straight, not through an Engine: the timing is the plan's alone, with the same
  // upload (set_batch) and readback an Engine would do.
  std::unique_ptr<plan::Executor> exec;
  if (a.device == "cpu") {
    if (a.dtype != "auto" && a.dtype != "f32") throw UsageError("--dtype " + a.dtype + ": the CPU computes in f32 only");
    exec = std::make_unique<cpu::CpuExecutor>(model.plan, max_tokens, a.threads);
  } else if (a.device == "cuda" || a.device.rfind("cuda:", 0) == 0) {
    const int index = a.device == "cuda" ? 0 : std::stoi(a.device.substr(5));
    if (cuda::device_count() <= index)
      throw UsageError("--device " + a.device + ": " +
                       (cuda::built() ? "no such CUDA device" : "this build has no CUDA backend"));
    exec = cuda::make_executor(model.plan, max_tokens, index, a.dtype);
  } else {
    throw UsageError("--device must be cpu, cuda or cuda:N");
  }
  const bool ce = !model.capabilities.embed && model.capabilities.score;
  // What an Engine runs for this model's default task (CLS pooling and cross-encoder heads run
  // the last layer for first tokens only, unless IL_FIRST_TOKEN=0).
  const models::Programs programs = images ? models::Programs{"image_encode", "image_head"}
                                   : ce   ? models::scoring_programs(model.plan)
                                          : models::embedding_programs(model.plan, model.pooling);
  const plan::View out_view = model.plan.output(images ? "image_embedding" : ce ? "scores" : "embedding");
  const std::size_t threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());

  // Energy of the timed runs, where the device counts it (NVIDIA GPUs): reported when they last
  // at least kMeteredSeconds, since the counter advances in steps of tens of milliseconds.
  constexpr double kMeteredSeconds = 1.0;
  const bool metered = exec->energy_joules().has_value();
  const std::string task = images ? "image embedding, random pixels"
                           : ce   ? "cross-encoder"
                                  : "embedding, " + std::string(pooling_name(model.pooling)) + " pooling";
  if (!a.json) {
    std::printf("model %s (%s, %d layers, hidden %d)  programs %s + %s  device %s  dtype %s  threads %zu  iters %d\n%6s %6s %8s %10s %10s %12s",
                name.c_str(), task.c_str(), model.layers, model.hidden, programs.encoder.c_str(),
                programs.head.c_str(), a.device.c_str(), exec->compute_dtype().c_str(), threads, a.iters, "batch",
                "len", "tokens", "p50 ms", "p90 ms", "tokens/s");
    std::printf(metered ? " %8s %10s\n" : "\n", "W", "J/forward");
  }
  std::mt19937 rng(a.seed);
  std::vector<float> readback;
  // End to end from encoded files (--images): per point, B files (cycling through them) decoded
  // and preprocessed as the model's release processor does, in parallel on every hardware thread
  // (the server's image workers), then the vision tower; the clock runs from bytes in memory to
  // vectors on the host.
  std::vector<std::vector<std::uint8_t>> files;
  std::unique_ptr<ThreadPool> decoders;
  if (!a.images.empty()) {
    if (!images) throw UsageError("--images applies to an image model with a pooling head");
    files = read_image_files(a.images);
    decoders = std::make_unique<ThreadPool>(0);
  }
  for (const Point& p : points) {
    if (!files.empty()) {
      const models::ImageGeometry& g = *model.image;
      const image::PreprocessorConfig pre = runtime::siglip_release_preprocessor(
          static_cast<int>(g.height), static_cast<int>(g.width));
      const image::DecodeLimits limits{64u << 20, 89'478'485};
      // As the engine's image loader: compact images, one byte value table (f32 pixel_values
      // with --image-input f32).
      const auto table = std::make_shared<const std::vector<float>>(image::byte_value_table(pre));
      const bool compact = a.image_input == "bytes";
      std::vector<ImageInput> in(p.batch);
      std::vector<double> ms;
      for (int i = 0; i < a.warmup + a.iters; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::string> errors(p.batch);  // a worker must not throw: said after the loop
        decoders->parallel_for(p.batch, 1, [&](std::size_t b0, std::size_t b1) {
          for (std::size_t b = b0; b < b1; ++b) {
            try {
              const auto& bytes = files[b % files.size()];
              const image::RgbImage rgb =
                  image::decode_image(bytes, "--images file " + std::to_string(b % files.size() + 1), limits);
              in[b] = compact ? image::preprocess_compact(rgb, pre, table) : image::preprocess(rgb, pre);
            } catch (const std::exception& e) {
              errors[b] = e.what();
            }
          }
        });
        for (const std::string& e : errors)
          if (!e.empty()) throw UsageError(e);
        const plan::Batch batch = runtime::make_image_batch(in, {0, p.batch}, g);
        readback.resize(batch.num_seqs() * out_view.cols);
        exec->set_batch(batch);
        exec->run(programs.encoder);
        exec->run(programs.head);
        exec->read(out_view, readback.data());
        const auto t1 = std::chrono::steady_clock::now();
        if (i >= a.warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      const double p50 = percentile(ms, 0.5), p90 = percentile(ms, 0.9);
      const double ips = static_cast<double>(p.batch) / (p50 / 1000.0);
      if (a.json) {
        const nlohmann::ordered_json j = {{"impl", "inferencelayer"}, {"model", name}, {"device", a.device},
                                          {"dtype", exec->compute_dtype()}, {"threads", threads},
                                          {"batch", p.batch}, {"len", patches}, {"e2e", true},
                                          {"files", files.size()}, {"image_input", a.image_input},
                                          {"p50_ms", p50}, {"p90_ms", p90},
                                          {"images_per_s", ips}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("%6zu %6s %8s %10.3f %10.3f %12.0f  images/s end to end from %zu files\n", p.batch, "e2e", "-",
                    p50, p90, ips, files.size());
      }
      std::fflush(stdout);
    }

    const plan::Batch batch = images ? random_image_batch(p.batch, *model.image, rng, a.image_input == "bytes")
                                     : random_batch(p, model.limits.vocab, rng);
    readback.resize(batch.num_seqs() * out_view.cols);
    std::vector<double> ms;
    std::optional<double> joules_start;
    std::chrono::steady_clock::time_point timed_start;
    for (int i = 0; i < a.warmup + a.iters; ++i) {
      if (i == a.warmup && metered) {
        joules_start = exec->energy_joules();
        timed_start = std::chrono::steady_clock::now();
      }
      const auto t0 = std::chrono::steady_clock::now();
      exec->set_batch(batch);
      exec->run(programs.encoder);
      exec->run(programs.head);
      exec->read(out_view, readback.data());
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= a.warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    // Mean power and energy per forward over the timed runs (upload and readback included).
    std::optional<double> watts, joules_per_forward;
    if (joules_start) {
      const std::optional<double> joules_end = exec->energy_joules();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_start).count();
      if (joules_end && seconds >= kMeteredSeconds) {
        watts = (*joules_end - *joules_start) / seconds;
        joules_per_forward = (*joules_end - *joules_start) / a.iters;
      }
    }
    const double p50 = percentile(ms, 0.5), p90 = percentile(ms, 0.9);
    const double tps = static_cast<double>(batch.num_tokens()) / (p50 / 1000.0);
    // Mixed points report the mean length; "tokens" is exact either way.
    const std::size_t len = (batch.num_tokens() + p.batch / 2) / p.batch;
    if (a.json) {
      nlohmann::ordered_json j = {{"impl", "inferencelayer"}, {"model", name},      {"device", a.device}, {"dtype", exec->compute_dtype()},
                          {"threads", threads},       {"batch", p.batch},  {"len", len},
                          {"p50_ms", p50},            {"p90_ms", p90},     {"tokens_per_s", tps},
                          {"tokens", batch.num_tokens()}, {"encoder", programs.encoder}};
      if (p.mixed) j["mixed"] = {p.min_len, p.max_len};
      if (images) {
        j["images_per_s"] = static_cast<double>(p.batch) / (p50 / 1000.0);
        j["image_input"] = batch.image_bytes.empty() ? "f32" : "bytes";
      }
      if (metered) {
        j["watts"] = watts ? nlohmann::ordered_json(*watts) : nlohmann::ordered_json(nullptr);
        j["joules_per_forward"] = joules_per_forward ? nlohmann::ordered_json(*joules_per_forward) : nlohmann::ordered_json(nullptr);
      }
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%6zu %6s %8zu %10.3f %10.3f %12.0f", p.batch,
                  p.mixed ? (std::to_string(p.min_len) + "-" + std::to_string(p.max_len)).c_str()
                          : std::to_string(len).c_str(),
                  batch.num_tokens(), p50, p90, tps);
      if (!metered)
        std::printf("\n");
      else if (watts)
        std::printf(" %8.0f %10.4f\n", *watts, *joules_per_forward);
      else
        std::printf(" %8s %10s\n", "-", "-");  // the timed runs were too short to meter
    }
    std::fflush(stdout);
  }
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Time the forward pass on random token ids (CPU or CUDA)");
  cmd->footer(
      "Each point runs --warmup untimed and --iters timed forwards (set_batch + encode + pooling or\n"
      "cross-encoder head + read back); p50/p90 are over the timed ones and tokens/s = tokens / p50.\n"
      "--json writes one line per point: {\"impl\":\"inferencelayer\",\"model\",\"device\",\"threads\",\n"
      "\"batch\",\"len\",\"p50_ms\",\"p90_ms\",\"tokens_per_s\",\"tokens\",\"encoder\"} (+ \"mixed\": [min, max] for --mixed\n"
      "points, whose \"len\" is the mean length). On a GPU whose driver counts energy (NVIDIA, through\n"
      "NVML) the mean power and the energy per forward over the timed runs are added (W, J/forward;\n"
      "\"watts\", \"joules_per_forward\"), when those runs last at least a second (else - / null).\n"
      "Examples:\n"
      "  inferencelayer bench --config bench/configs/bge-small.json --grid 1x16,32x128 --json\n"
      "  inferencelayer bench --model ./bge-small --mixed 32:16:256");
  auto* m = cmd->add_option("-m,--model", a->model, "Model folder (its own weights)");
  auto* c = cmd->add_option("--config", a->config, "config.json (or a folder holding one): random weights");
  m->excludes(c);
  cmd->add_option("--name", a->name, "Model name to report (default: the folder or config file name)");
  cmd->add_option("--grid", a->grid, "Comma-separated BxL points (default 1x16,1x64,32x128 unless --mixed)");
  cmd->add_option("--mixed", a->mixed, "B:min:max: B sequences of random lengths in [min, max] (repeatable)");
  cmd->add_option("--pooling", a->pooling,
                  "mean, cls or last (default: a --model folder's own; for a --config model the "
                  "config's \"_inferencelayer_pooling\", else mean)")
      ->transform(CLI::CheckedTransformer(pooling_names(), CLI::ignore_case));
  cmd->add_option("--threads", a->threads, "Compute threads (0 = one per hardware thread)")->capture_default_str();
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "Compute precision: f32, f16 or bf16 (CUDA only), or auto")
      ->capture_default_str()->check(CLI::IsMember({"auto", "f32", "f16", "bf16"}));
  cmd->add_option("--warmup", a->warmup, "Untimed runs per point")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--iters", a->iters, "Timed runs per point")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", a->seed, "Seed of the random token ids and lengths")->capture_default_str();
  cmd->add_flag("--json", a->json, "One JSON line per point");
  cmd->add_option("--images", a->images,
                  "Image model: encoded files (or folders of them) for an end-to-end point per grid point: "
                  "bytes in memory -> decode + preprocess in parallel -> vision tower -> vectors "
                  "(\"e2e\": true, \"images_per_s\")");
  cmd->add_option("--image-input", a->image_input,
                  "Image model: the form images go in: bytes (uint8 images and the processor's byte values, "
                  "as Engine::load_image gives them: uploaded as bytes, patches cut on the device) or f32 "
                  "(preprocessed pixel_values, as JSON pixel_values lines give them)")
      ->capture_default_str()->check(CLI::IsMember({"bytes", "f32"}));
  return {cmd, [a] { run_bench(*a); }};
}

}  // namespace il::cli
