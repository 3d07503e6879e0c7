// DiffusionGemma's canvas forward layer by layer against transformers 5.17 (tests/fixtures/
// diffusion-gemma's hooks: the self-conditioning output, every decoder layer's output, each
// layer's router top-k, the final norm), for the three forward cases with and without
// self-conditioning, on any executor: the CPU's oracle test and the CUDA model test share it.
#pragma once

#include <string>

#include "models/registry.h"
#include "plan/executor.h"
#include "runtime/diffusion_runner.h"

namespace il::test {

// The tolerances of one backend; router ids are always exact.
struct LayerTolerances {
  double sc = 1e-4;           // self-conditioning output, max-abs
  double layer = 3e-5;        // each layer's output, max-abs over the layer's largest value
  double router_w = 1e-5;     // router weights, max-abs
  double final_norm = 1e-4;   // the final norm's output, max-abs
};

// The fixture's model with probe programs: "probe.sc" ("canvas" up to the self-conditioning's
// norm) and "probe.L<i>" (up to where layer i's output is the residual stream), and its
// diffusion cache sized (which adds the cache to the plan). Make the executor from m.plan after.
struct ProbedDiffusionGemma {
  models::BuiltModel m;
  runtime::DiffusionCacheLayout layout;
};
ProbedDiffusionGemma diffusion_gemma_with_layer_probes();

// Runs every forward case through the probes on `exec` (made from p.m.plan), checking each
// recorded point; prints the worst errors per case under `label`.
void check_diffusion_gemma_layers(ProbedDiffusionGemma& p, plan::Executor& exec, const LayerTolerances& tol,
                                  const std::string& label);

}  // namespace il::test
