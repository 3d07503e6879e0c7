// GLM-OCR's vision tower (models/glm_ocr_vision) on the CPU in f32 against transformers 5.17
// (tests/fixtures/glm-ocr-vision, tools/oracle/make_glm_ocr_vision.py): three images in one batch
// (grids 4×6, 6×4 and two frames of 2×4: h/w swaps, attention crossing images or frames, and a
// wrong downsample permutation would all show), every parameter random. Compared: the
// post_layernorm rows (the blocks, the 2-D rope), the downsample rows and the merger rows,
// max-abs ≤ 1e-4 (f32 against f32 summed in other orders; measured error printed).
// Also: the same weights under "model.visual." (a GlmOcrForConditionalGeneration checkpoint),
// the batch helper's positions, and config errors naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "glm_ocr_vision_fixture.h"

namespace il::test {
namespace {

constexpr double kTolerance = 1e-4;

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= m)) m = std::isfinite(d) ? d : INFINITY;
  }
  return m;
}

struct TowerRows {
  std::vector<float> post_norm, downsample, output;
};

TowerRows run_cpu(const GlmOcrVisionFixture& f, const models::WeightSource& src, const std::string& prefix) {
  plan::Plan plan;
  models::GlmOcrVisionOptions o;
  o.prefix = prefix;
  const models::GlmOcrVisionViews v = models::build_glm_ocr_vision(plan, f.config, src, o);
  cpu::CpuExecutor exec(plan, 256, 2);
  exec.set_batch(runtime::make_merge_window_vision_batch(f.pixel_values, f.patch_dim, f.grid_thw));
  exec.run("vision");
  const std::size_t tokens = f.pixel_values.size() / f.patch_dim;
  TowerRows r{std::vector<float>(tokens * f.hidden), std::vector<float>(tokens / 4 * f.out_hidden),
        std::vector<float>(tokens / 4 * f.out_hidden)};
  exec.read(v.post_norm, r.post_norm.data());
  exec.read(v.downsample, r.downsample.data());
  exec.read(plan.output("vision"), r.output.data());
  return r;
}

TEST(GlmOcrVision, CpuMatchesTransformers) {
  const GlmOcrVisionFixture f = load_glm_ocr_vision_fixture();
  const models::SafeTensorsSource src = glm_ocr_vision_weights();
  ASSERT_EQ(models::glm_ocr_vision_prefix(src), "");
  const TowerRows r = run_cpu(f, src, "");
  const double post = max_abs(r.post_norm, f.post_layernorm), down = max_abs(r.downsample, f.last_hidden_state),
               out = max_abs(r.output, f.pooler_output);
  std::printf("[glm-ocr vision cpu f32] max-abs post_layernorm %.3g, downsample %.3g, merger %.3g\n", post, down, out);
  EXPECT_LE(post, kTolerance);
  EXPECT_LE(down, kTolerance);
  EXPECT_LE(out, kTolerance);
}

TEST(GlmOcrVision, FullModelPrefixGivesTheSameRows) {
  const GlmOcrVisionFixture f = load_glm_ocr_vision_fixture();
  const models::SafeTensorsSource inner = glm_ocr_vision_weights();
  const PrefixedSource src(inner, "model.visual.");
  ASSERT_EQ(models::glm_ocr_vision_prefix(src), "model.visual.");
  const TowerRows a = run_cpu(f, inner, ""), b = run_cpu(f, src, "model.visual.");
  EXPECT_EQ(a.output, b.output);
  EXPECT_THROW(run_cpu(f, src, ""), Error);  // the unprefixed names are absent there
}

// The merger's rows written into a caller's persistent buffer (where a decoder's prefill reads
// them) equal those of the builder's own window-row buffer.
TEST(GlmOcrVision, MergerRowsGoToACallersPersistentBuffer) {
  const GlmOcrVisionFixture f = load_glm_ocr_vision_fixture();
  const models::SafeTensorsSource src = glm_ocr_vision_weights();
  const std::size_t windows = f.pixel_values.size() / f.patch_dim / 4;
  plan::Plan plan;
  models::GlmOcrVisionOptions o;
  o.prefix = "";
  o.output = plan.whole(plan.add_persistent_buffer("image_rows", windows, f.out_hidden));
  const models::GlmOcrVisionViews v = models::build_glm_ocr_vision(plan, f.config, src, o);
  EXPECT_EQ(v.output.buffer, o.output.buffer);
  cpu::CpuExecutor exec(plan, 256, 2);
  exec.set_batch(runtime::make_merge_window_vision_batch(f.pixel_values, f.patch_dim, f.grid_thw));
  exec.run("vision");
  std::vector<float> rows(windows * f.out_hidden);
  exec.read(plan.output("vision"), rows.data());
  EXPECT_EQ(rows, run_cpu(f, src, "").output);
}

// The tensor list a random-weight tower is built from names exactly the checkpoint's tensors,
// shapes included, and a tower builds and runs from it.
TEST(GlmOcrVision, TensorListMatchesTheCheckpointAndBuildsARandomTower) {
  const GlmOcrVisionFixture f = load_glm_ocr_vision_fixture();
  const io::SafeTensors st = io::SafeTensors::open(glm_ocr_vision_dir() / "model.safetensors");
  const auto shapes = models::glm_ocr_vision_tensors(f.config, "");
  std::vector<std::string> names;
  for (const auto& [name, shape] : shapes) {
    names.push_back(name);
    ASSERT_TRUE(st.has(name)) << name;
    EXPECT_EQ(st.info(name).shape, shape) << name;
  }
  EXPECT_EQ(names, st.names());
  const models::RandomSource random(models::glm_ocr_vision_tensors(f.config, "model.visual."));
  const TowerRows r = run_cpu(f, random, "model.visual.");
  for (float v : r.output) ASSERT_TRUE(std::isfinite(v));
}

TEST(GlmOcrVision, BatchHasOneSequencePerFrameAndWindowOrderPositions) {
  // One 4 × 6 image and one 2-frame 2 × 2 image, patch_dim 1 (the patch value is its index).
  std::vector<float> pv(4 * 6 + 2 * 4);
  for (std::size_t i = 0; i < pv.size(); ++i) pv[i] = static_cast<float>(i);
  const plan::Batch b = runtime::make_merge_window_vision_batch(pv, 1, {{1, 4, 6}, {2, 2, 2}});
  EXPECT_EQ(b.seq_starts, (std::vector<int32_t>{0, 24, 28, 32}));
  EXPECT_EQ(b.patches, pv);
  ASSERT_EQ(b.rope_axes(), 2u);
  // Image 0, windows of 2 × 2 over 2 rows × 3 columns of windows: patch 4 opens window 1 at
  // (0, 2); patch 13 is window 3 (row 1, column 0), in-window (0, 1): (2, 1).
  const auto h = [&](std::size_t t) { return b.rope_positions[t]; };
  const auto w = [&](std::size_t t) { return b.rope_positions[b.num_tokens() + t]; };
  EXPECT_EQ(std::vector<int32_t>({h(0), w(0), h(1), w(1), h(2), w(2), h(3), w(3)}),
            (std::vector<int32_t>{0, 0, 0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(h(4), 0);
  EXPECT_EQ(w(4), 2);
  EXPECT_EQ(h(13), 2);
  EXPECT_EQ(w(13), 1);
  EXPECT_EQ(h(23), 3);
  EXPECT_EQ(w(23), 5);
  // Image 1's second frame repeats the first's positions.
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(h(24 + i), h(28 + i));
    EXPECT_EQ(w(24 + i), w(28 + i));
  }
  EXPECT_THROW(runtime::make_merge_window_vision_batch(pv, 1, {{1, 4, 6}}), Error);            // patch count
  EXPECT_THROW(runtime::make_merge_window_vision_batch(pv, 1, {{1, 4, 6}, {2, 2, 3}}), Error);  // odd grid
  EXPECT_THROW(runtime::make_merge_window_vision_batch(pv, 1, {{1, 4, 6}, {0, 2, 2}}), Error);  // zero frames
}

TEST(GlmOcrVision, ConfigErrorsNameTheField) {
  const auto parse = [](const char* text) {
    return models::glm_ocr_vision_config_of(nlohmann::json::parse(text), "config.json");
  };
  const auto message = [&](const char* text) -> std::string {
    try {
      parse(text);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const models::GlmOcrVisionConfig c = parse(R"({"model_type": "glm_ocr", "vision_config": {"depth": 3}})");
  EXPECT_EQ(c.depth, 3);
  EXPECT_EQ(c.hidden, 1024);
  EXPECT_EQ(c.merger_inner(), 1536u * 3u);
  EXPECT_NE(message(R"({"model_type": "glm_ocr_vision", "hidden_act": "gelu"})").find("hidden_act"), std::string::npos);
  EXPECT_NE(message(R"({"model_type": "glm_ocr_vision", "hidden_size": 100, "num_heads": 3})").find("hidden_size"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type": "glm_ocr_vision", "spatial_merge_size": 3})").find("spatial_merge_size"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type": "glm_ocr_vision", "depth": 0})").find("depth"), std::string::npos);
  EXPECT_NE(message(R"({"model_type": "glm_ocr"})").find("vision_config"), std::string::npos);
  EXPECT_NE(message(R"({"model_type": "glm_ocr_vision", "rope_parameters": {"rope_type": "yarn"}})").find("rope_type"),
            std::string::npos);
}

}  // namespace
}  // namespace il::test
