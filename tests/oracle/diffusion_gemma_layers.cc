// The layer-by-layer check of DiffusionGemma (diffusion_gemma_layers.h).
#include "diffusion_gemma_layers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fixture.h"

namespace il::test {
namespace {

std::filesystem::path folder() { return fixtures_root() / "diffusion-gemma"; }

plan::BufferId buffer(const plan::Plan& p, const std::string& name) {
  for (std::size_t i = 0; i < p.buffers().size(); ++i)
    if (p.buffers()[i].name == name) return static_cast<plan::BufferId>(i);
  throw Error("no buffer " + name);
}

// Program `name`: "canvas" up to and including step `last`.
void add_probe(plan::Plan& p, const std::string& name, const std::string& last) {
  for (const plan::Step& s : p.program("canvas")) {
    p.add_step(name, s.name, s.op);
    if (s.name == last) return;
  }
  throw Error("no step " + last);
}

// The largest difference; a NaN counts as infinitely wrong. `want` must fit `got`.
double max_abs_rows(const std::vector<float>& got, std::size_t cols, const nlohmann::json& want) {
  check(want.size() * cols <= got.size() && (want.empty() || want[0].size() == cols), "fixture rows of ",
        want.empty() ? 0 : want[0].size(), " values do not fit ", got.size() / std::max<std::size_t>(cols, 1),
        " rows of ", cols);
  double m = 0;
  for (std::size_t r = 0; r < want.size(); ++r)
    for (std::size_t j = 0; j < cols; ++j) {
      const double d = std::abs(static_cast<double>(got[r * cols + j]) - want[r][j].get<double>());
      if (!(d <= m)) m = d == d ? d : INFINITY;
    }
  return m;
}

}  // namespace

ProbedDiffusionGemma diffusion_gemma_with_layer_probes() {
  ProbedDiffusionGemma p{models::build_model_from_folder(folder()), {}};
  models::BuiltModel& m = p.m;
  add_probe(m.plan, "probe.sc", "sc.post_norm");
  for (int i = 0; i < m.layers; ++i)
    add_probe(m.plan, "probe.L" + std::to_string(i),
              i + 1 == m.layers ? "final_norm" : "L" + std::to_string(i + 1) + ".attn_norm");
  p.layout = runtime::size_diffusion_cache(m, 256, 4, 64);
  return p;
}

void check_diffusion_gemma_layers(ProbedDiffusionGemma& p, plan::Executor& exec, const LayerTolerances& tol,
                                  const std::string& label) {
  std::ifstream in(folder() / "expected.json");
  const nlohmann::json ex = nlohmann::json::parse(in);
  models::BuiltModel& m = p.m;
  const int layers = m.layers;
  runtime::DiffusionRunner runner(m, exec, p.layout, 64);
  const plan::View residual = m.plan.whole(buffer(m.plan, "residual"));
  const plan::View ids = m.plan.whole(buffer(m.plan, "expert_ids"));
  const plan::View weights = m.plan.whole(buffer(m.plan, "expert_weights"));
  const std::size_t h = static_cast<std::size_t>(m.hidden), C = runner.canvas_length();
  std::vector<float> logits, rows(C * h), id_rows(C * ids.cols), w_rows(C * weights.cols);
  ASSERT_FALSE(ex.at("forward_cases").empty());
  for (const auto& c : ex.at("forward_cases")) {
    const std::vector<int32_t> prompt = c.at("prompt_ids"), canvas = c.at("canvas_ids");
    std::vector<float> sc_flat;
    for (const auto& r : c.at("sc_logits"))
      for (const auto& v : r) sc_flat.push_back(v.get<float>());
    for (const char* kind : {"plain", "sc"}) {
      const nlohmann::json& want = c.at(kind);
      const std::string what = c.at("name").get<std::string>() + " " + kind;
      const std::span<const float> sc = std::string(kind) == "sc" ? std::span<const float>(sc_flat) : std::span<const float>();
      runtime::DiffusionRunner::Cache cache;
      ASSERT_TRUE(runner.reserve(cache, prompt.size() + C));
      runner.encode(cache, prompt);
      runner.canvas({&cache}, canvas, sc, logits, "probe.sc");
      exec.read(residual, rows.data());
      const double sc_err = max_abs_rows(rows, h, want.at("sc_out"));
      EXPECT_LE(sc_err, tol.sc) << what << " self-conditioning";
      double worst = 0, worst_w = 0;
      for (int i = 0; i < layers; ++i) {
        runner.canvas({&cache}, canvas, sc, logits, "probe.L" + std::to_string(i));
        exec.read(residual, rows.data());
        // Layer outputs grow to tens (the fixture's weights make every path count): relative.
        double scale = 1;
        for (const auto& r : want.at("layers")[i])
          for (const auto& v : r) scale = std::max(scale, std::abs(v.get<double>()));
        const double err = max_abs_rows(rows, h, want.at("layers")[i]) / scale;
        worst = std::max(worst, err);
        EXPECT_LE(err, tol.layer) << what << " layer " << i;
        exec.read(ids, id_rows.data());
        exec.read(weights, w_rows.data());
        ASSERT_EQ(want.at("router_idx")[i].size(), C) << what;
        for (std::size_t r = 0; r < C; ++r)
          for (std::size_t k = 0; k < std::min<std::size_t>(want.at("router_idx")[i][r].size(), ids.cols); ++k) {
            const auto id = static_cast<int32_t>(id_rows[r * ids.cols + k]);  // an int32 buffer's values
            EXPECT_EQ(id, want.at("router_idx")[i][r][k].get<int32_t>()) << what << " layer " << i << " row " << r;
            const double dw = std::abs(w_rows[r * weights.cols + k] - want.at("router_w")[i][r][k].get<double>());
            worst_w = std::max(worst_w, dw);
            EXPECT_LE(dw, tol.router_w) << what << " layer " << i << " row " << r;
          }
      }
      runner.canvas({&cache}, canvas, sc, logits);
      std::vector<float> normed(C * h);
      exec.read(m.plan.output("hidden"), normed.data());
      const double final_err = max_abs_rows(normed, h, want.at("final_norm"));
      EXPECT_LE(final_err, tol.final_norm) << what << " final norm";
      std::printf("[diffusion-gemma %s] %s: sc %.2g, layers (relative) %.2g, router weights %.2g, final norm %.2g\n",
                  label.c_str(), what.c_str(), sc_err, worst, worst_w, final_err);
      runner.release(cache);
    }
  }
}

}  // namespace il::test
