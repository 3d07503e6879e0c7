// DiffusionGemma's generate loop against transformers 5.17 (tools/oracle/make_diffusion_gemma_fixtures.py):
// whole generations with transformers' random draws replaced by recorded ones — the uniform
// canvases as logged, each position's token drawn by our inverse-CDF rule from the logged
// uniform (the "injected" cases, where transformers drew the same way) or taken as logged
// (the "native" case: torch.multinomial's own draws) — must give the recorded sequences and
// per-step decisions exactly; and the sampler's deterministic parts on recorded inputs. CPU, f32.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "fixture.h"
#include "models/registry.h"
#include "ops/canvas_sample.h"
#include "runtime/diffusion_generator.h"

namespace il::test {
namespace {

using runtime::DiffusionGenerator;

std::filesystem::path folder() { return fixtures_root() / "diffusion-gemma"; }

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(folder() / "expected.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

// The draw log of one generate case, in order; a draw of the wrong kind is a test failure.
class RecordedDraws final : public runtime::DiffusionDraws {
 public:
  // `used` counts the draws taken; it outlives the draws (the generator destroys them with the
  // finished request).
  RecordedDraws(const nlohmann::json& log, std::size_t& used) : log_(log), at_(used) {}
  void uniform_ids(std::span<int32_t> out, std::size_t) override {
    const nlohmann::json& d = next("randint");
    const auto& v = d.at("values").at(0);
    ASSERT_EQ(v.size(), out.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = v[i].get<int32_t>();
  }
  // The step's uniforms as logged (the "injected" cases); the "native" case logged only
  // torch.multinomial's tokens, which imposed() then hands over.
  void uniforms(std::span<double> out) override {
    const nlohmann::json& d = next("multinomial");
    tokens_ = d.at("tokens").get<std::vector<int32_t>>();
    ASSERT_EQ(tokens_.size(), out.size());
    has_u_ = d.contains("u");
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = has_u_ ? d.at("u")[i].get<double>() : 0.0;
  }
  bool imposed(std::span<int32_t> tokens) override {
    if (has_u_) {  // our inverse CDF on transformers' uniform must land on its token
      EXPECT_EQ(std::vector<int32_t>(tokens.begin(), tokens.end()), tokens_) << "draw " << at_ - 1;
      return false;
    }
    std::copy(tokens_.begin(), tokens_.end(), tokens.begin());
    return true;
  }

 private:
  const nlohmann::json& next(const char* kind) {
    if (at_ >= log_.size()) throw Error("the draw log is exhausted");
    const nlohmann::json& d = log_.at(at_++);
    if (d.at("kind") != kind) throw Error(std::string("draw log out of order: expected ") + kind);
    return d;
  }
  const nlohmann::json& log_;
  std::size_t& at_;
  std::vector<int32_t> tokens_;
  bool has_u_ = false;
};

struct Runtime {
  models::BuiltModel model;
  std::unique_ptr<cpu::CpuExecutor> exec;
  std::unique_ptr<runtime::DiffusionRunner> runner;
  std::unique_ptr<DiffusionGenerator> gen;
};

Runtime make_runtime() {
  Runtime r;
  r.model = models::build_model_from_folder(folder());
  const std::size_t max_tokens = 64;
  const runtime::DiffusionCacheLayout layout = runtime::size_diffusion_cache(r.model, 256, 4, max_tokens);
  r.exec = std::make_unique<cpu::CpuExecutor>(r.model.plan, max_tokens, 2);
  r.runner = std::make_unique<runtime::DiffusionRunner>(r.model, *r.exec, layout, max_tokens);
  r.gen = std::make_unique<DiffusionGenerator>(*r.runner, r.model.diffusion->defaults, r.model.diffusion->max_positions,
                                               nullptr);
  return r;
}

GenerationRequest request_of(const nlohmann::json& c) {
  GenerationRequest r;
  r.input_ids = c.at("prompt_ids").get<std::vector<int32_t>>();
  const nlohmann::json& s = c.at("settings");
  r.diffusion.max_new_tokens = s.at("max_new_tokens").get<std::size_t>();
  r.diffusion.max_denoising_steps = s.at("max_denoising_steps").get<int>();
  r.diffusion.t_min = s.at("t_min").get<double>();
  r.diffusion.t_max = s.at("t_max").get<double>();
  r.diffusion.stability_threshold = s.at("stability_threshold").get<int>();
  r.diffusion.confidence_threshold = s.at("confidence_threshold").get<float>();
  r.diffusion.entropy_bound = s.at("entropy_bound").get<float>();
  r.options.stop_ids = s.at("eos_token_id").get<std::vector<int32_t>>();
  return r;
}

TEST(DiffusionGemmaGenerate, RecordedDrawsGiveTransformersSequences) {
  const auto& cases = expected().at("generate_cases");
  ASSERT_GE(cases.size(), 3u);
  for (const auto& c : cases) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    Runtime rt = make_runtime();
    std::vector<DiffusionGenerator::StepTrace> trace;
    rt.gen->set_trace([&](DiffusionGenerator::Id, const DiffusionGenerator::StepTrace& t) { trace.push_back(t); });
    std::size_t used = 0;
    auto draws = std::make_unique<RecordedDraws>(c.at("draws"), used);
    const GenerationRequest req = request_of(c);
    const DiffusionGenerator::Id id = rt.gen->submit(req, std::move(draws));
    while (!rt.gen->idle()) rt.gen->step();
    const GenerationResult got = rt.gen->take_result(id);
    EXPECT_EQ(used, c.at("draws").size()) << "draws left over";
    // The "native" case (torch.multinomial's own draws, taken as logged) is exact only while
    // the forwards' rounding stays small: self-conditioning feeds each step's logits into the
    // next, and on this random model it amplifies a difference about 60-fold per step
    // (measured with tools/oracle/diffusion_gemma_reference.py: its own step-3 forward moves
    // 0.025 when given our step-2 logits, which differ from its own by 4e-4), so the trajectory
    // leaves transformers' f32 one at its sixth step (the f64 reference's at its sixteenth).
    // Its first step, which has no self-conditioning, is checked; the injected cases all through.
    const bool chaotic = name == "native";
    const std::size_t exact_steps = chaotic ? 1 : trace.size();

    // Step by step: the decisions transformers recorded. The fixture's trace holds this run's
    // steps first (one per multinomial draw of the log), then entries of the generator's later
    // calls on the same model, which are not this run's.
    const auto& want_trace = c.at("trace");
    std::size_t steps = 0;
    for (const auto& d : c.at("draws")) steps += d.at("kind") == "multinomial" ? 1 : 0;
    ASSERT_EQ(trace.size(), steps);
    ASSERT_LE(trace.size(), want_trace.size());
    for (std::size_t i = 0; i < exact_steps; ++i) {
      const auto& w = want_trace[i];
      SCOPED_TRACE("step " + std::to_string(i));
      EXPECT_EQ(trace[i].step, w.at("cur_step").get<int>());
      EXPECT_EQ(trace[i].temperature, w.at("temperature").get<float>());
      EXPECT_EQ(trace[i].canvas_in, w.at("canvas_in").get<std::vector<int32_t>>());
      EXPECT_EQ(trace[i].argmax, w.at("argmax").get<std::vector<int32_t>>());
      EXPECT_EQ(trace[i].accepted, w.at("accepted_mask").get<std::vector<std::uint8_t>>());
      EXPECT_EQ(trace[i].canvas_out, w.at("canvas_out").get<std::vector<int32_t>>());
      EXPECT_EQ(trace[i].finished, w.at("finished").get<bool>());
      // The decisions above must be exact; the mean entropy carries the forward's error (logits
      // within 8e-5 of transformers', times 1 / T ≤ 2.5, times an entropy's sensitivity to a
      // logit, |l − E[l]| · p, which reaches tens at these temperatures): 5e-3, far inside each
      // case's recorded confidence margin (≥ 0.03) so the stop decisions cannot move.
      EXPECT_NEAR(trace[i].mean_entropy, w.at("mean_entropy").get<float>(), 5e-3);
    }
    if (chaotic) continue;
    // The sequence: prompt, the committed tokens up to the end id, padding after it.
    const std::vector<int32_t> want = c.at("sequence");
    const std::size_t P = req.input_ids.size();
    ASSERT_LE(P + got.tokens.size(), want.size());
    EXPECT_EQ(got.tokens, std::vector<int32_t>(want.begin() + static_cast<std::ptrdiff_t>(P),
                                               want.begin() + static_cast<std::ptrdiff_t>(P + got.tokens.size())));
    for (std::size_t i = P + got.tokens.size(); i < want.size(); ++i) EXPECT_EQ(want[i], 0) << "padding at " << i;
    EXPECT_EQ(got.finish, P + got.tokens.size() < want.size() ? FinishReason::kStopId : FinishReason::kLength);
  }
}

TEST(DiffusionGemmaSampler, TemperatureScheduleIsTransformersF32) {
  for (const auto& t : expected().at("sampler").at("temperature")) {
    const float T = runtime::diffusion_temperature(t.at("cur_step"), t.at("max_denoising_steps"), 0.4, 0.8);
    EXPECT_EQ(T, t.at("temperature_f32").get<float>()) << t.dump();
  }
}

TEST(DiffusionGemmaSampler, EntropyBoundAcceptance) {
  // From the raw logits: the temperature, each row's entropy and argmax, the accepted mask.
  const auto& e = expected().at("sampler").at("entropy_accept");
  const auto& raw = e.at("raw_logits");
  for (const auto& c : e.at("cases")) {
    const float T = runtime::diffusion_temperature(c.at("cur_step"), c.at("max_denoising_steps"), 0.4, 0.8);
    std::vector<float> h;
    std::vector<int32_t> argmax;
    for (const auto& row : raw) {
      std::vector<float> l = row.get<std::vector<float>>();
      for (float& v : l) v /= T;
      const ops::RowDraw st = ops::row_entropy_argmax(l);
      h.push_back(st.entropy);
      argmax.push_back(st.argmax);
    }
    const std::vector<float> want_h = c.at("entropies");
    ASSERT_EQ(h.size(), want_h.size());
    for (std::size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(h[i], want_h[i], 1e-5) << i;
    EXPECT_EQ(argmax, c.at("argmax").get<std::vector<int32_t>>());
    const std::vector<std::uint8_t> mask = runtime::accept_by_entropy(h, c.at("entropy_bound").get<float>());
    EXPECT_EQ(mask, c.at("accepted_mask").get<std::vector<std::uint8_t>>()) << c.at("cur_step");
  }
}

}  // namespace
}  // namespace il::test

namespace il::test {
namespace {

// StableAndConfidentStoppingCriteria over recorded steps of a batch of two canvases, for
// stability 0, 1 and 2: each row's stop flag at each step.
TEST(DiffusionGemmaSampler, StopRuleMatchesTransformers) {
  const auto& s = expected().at("sampler").at("stop");
  const float threshold = s.at("confidence_threshold").get<float>();
  for (int stability : {0, 1, 2}) {
    std::vector<runtime::StopRule> rows(2, runtime::StopRule(stability, 8));
    for (std::size_t i = 0; i < s.at("steps").size(); ++i) {
      const auto& st = s.at("steps")[i];
      for (std::size_t r = 0; r < 2; ++r) {
        double total = 0;
        for (const auto& row : st.at("logits")[r]) total += ops::row_entropy_argmax(row.get<std::vector<float>>()).entropy;
        const float mean = static_cast<float>(total / 8.0);
        EXPECT_NEAR(mean, st.at("mean_entropy")[r].get<float>(), 1e-5 + 1e-5 * std::abs(mean));
        const std::vector<int32_t> argmax = st.at("argmax")[r];
        const bool stop = rows[r].check(argmax, mean, threshold);
        EXPECT_EQ(stop, st.at("stop").at(std::to_string(stability))[r].get<int>() == 1)
            << "stability " << stability << " step " << i << " row " << r;
      }
    }
  }
}

// _finalize_canvas: the first end id of a block stays, every token after it is padding.
TEST(DiffusionGemmaSampler, EndIdPaddingMatchesTransformers) {
  const auto& f = expected().at("sampler").at("finalize");
  const std::vector<int32_t> end_ids = f.at("eos_token_id");
  const int32_t pad = f.at("pad_token_id");
  for (std::size_t r = 0; r < f.at("input_ids").size(); ++r) {
    if (f.at("finished_before")[r].get<int>()) continue;  // our sequences stop at their end id
    std::vector<int32_t> row = f.at("input_ids")[r];
    const std::vector<int32_t> want = f.at("output_ids")[r];
    // The block is the last 8 tokens (the canvas length of the recorded call).
    const std::span<int32_t> block(row.data() + row.size() - 8, 8);
    const auto end = runtime::finalize_block(block, end_ids, pad);
    EXPECT_EQ(row, want) << "row " << r;
    EXPECT_EQ(end.has_value(), f.at("finished_after")[r].get<int>() == 1) << "row " << r;
  }
}

}  // namespace
}  // namespace il::test
