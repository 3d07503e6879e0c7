// DiffusionGemma's canvas forward layer by layer against transformers 5.17 on the CPU, f32
// (diffusion_gemma_layers.h: the self-conditioning output, every decoder layer's output, each
// layer's router top-k, the final norm, for the three forward cases with and without
// self-conditioning). The plan's "canvas" program is cut after each recorded point into probe
// programs; the residual stream (or the router's outputs) is read there. Measured: layers
// ≤ 3.9e-6 relative, router weights ≤ 6.9e-7.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_executor.h"
#include "diffusion_gemma_layers.h"

namespace il::test {
namespace {

TEST(DiffusionGemmaLayers, EveryLayerMatchesTransformers) {
  ProbedDiffusionGemma p = diffusion_gemma_with_layer_probes();
  cpu::CpuExecutor exec(p.m.plan, 64, 2);
  check_diffusion_gemma_layers(p, exec, LayerTolerances{}, "cpu f32");
}

}  // namespace
}  // namespace il::test
