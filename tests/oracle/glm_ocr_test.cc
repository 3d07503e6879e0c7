// GLM-OCR against transformers 5.17 (tools/oracle/make_glm_ocr_fixtures.py, a tiny random
// GlmOcrForConditionalGeneration): the vision tower's merger rows, the logits of each prompt's
// last position, and greedy continuations (plain, repetition penalty 1.3, no-repeat bigrams),
// all four prompts generated together; then the generation runtime's own behaviour on the same
// model (sequences queued for a small KV cache, stop ids, bad requests). CPU, f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.h"
#include "fixture.h"
#include "glm_ocr_fixture.h"
#include "inferencelayer/engine.h"

namespace il::test {
namespace {

// Pages of 4 tokens, so every prompt spans several pages and the decode steps cross page ends.
std::unique_ptr<Engine> load(std::size_t kv_tokens = 512) {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = kv_tokens;
  return Engine::load(fixtures_root() / "glm-ocr", o);
}

double max_abs(const std::vector<float>& a, const float* b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(GlmOcr, DescribesItselfAndIgnoresTheMtpLayer) {
  auto e = load();
  const ModelInfo& i = e->info();
  EXPECT_EQ(i.model_type, "glm_ocr");
  EXPECT_EQ(i.layout, "glm-ocr");
  EXPECT_TRUE(i.capabilities.generate);
  EXPECT_FALSE(i.capabilities.embed);
  bool noted = false;
  for (const std::string& n : i.notes) noted = noted || n.find("multi-token-prediction") != std::string::npos;
  EXPECT_TRUE(noted) << "info must say the checkpoint's extra layer is ignored";
  EXPECT_THROW(e->embed({TokenInput{{1, 2}}}, {}), Error);
}

// The gate: max-abs ≤ 1e-3 on rows and logits (measured: see the failure message).
TEST(GlmOcr, VisionRowsMatchTransformers) {
  auto e = load();
  std::size_t checked = 0;
  for (const GlmCase& c : load_glm_cases()) {
    if (c.request.images.empty()) continue;
    const std::vector<Matrix> rows = e->vision_rows(c.request.images);
    std::vector<float> got;
    for (const Matrix& m : rows) got.insert(got.end(), m.data.begin(), m.data.end());
    ASSERT_EQ(got.size(), c.vision.size()) << c.name;
    const double err = max_abs(c.vision, got.data());
    std::printf("[glm-ocr cpu f32] %s: merger rows max-abs %.3g\n", c.name.c_str(), err);
    EXPECT_LE(err, 1e-3) << c.name;
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

TEST(GlmOcr, LastLogitsMatchTransformers) {
  auto e = load();
  const std::vector<GlmCase> cases = load_glm_cases();
  const Matrix logits = e->prompt_logits(glm_requests(cases));
  ASSERT_EQ(logits.rows, cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(logits.cols, cases[i].last_logits.size());
    const double err = max_abs(cases[i].last_logits, logits.row(i));
    std::printf("[glm-ocr cpu f32] %s: last logits max-abs %.3g\n", cases[i].name.c_str(), err);
    EXPECT_LE(err, 1e-3) << cases[i].name;
  }
}

TEST(GlmOcr, GreedyTokensMatchTransformersGeneratedTogether) {
  auto e = load();
  const std::vector<GlmCase> cases = load_glm_cases();
  const std::vector<GenerationResult> got = e->generate(glm_requests(cases));
  ASSERT_EQ(got.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
    EXPECT_EQ(got[i].finish, FinishReason::kLength);
    EXPECT_EQ(got[i].prompt_tokens, cases[i].request.input_ids.size());
  }
}

TEST(GlmOcr, RepetitionPenaltyAndNoRepeatNgramMatchTransformers) {
  auto e = load();
  std::vector<GlmCase> cases = load_glm_cases();
  std::vector<GenerationRequest> rp = glm_requests(cases), nr = glm_requests(cases);
  for (auto& r : rp) r.options.repetition_penalty = 1.3f;
  for (auto& r : nr) r.options.no_repeat_ngram = 2;  // the whole sequence: transformers' rule
  const auto got_rp = e->generate(rp);
  const auto got_nr = e->generate(nr);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(got_rp[i].tokens, cases[i].greedy_rp) << cases[i].name;
    EXPECT_EQ(got_nr[i].tokens, cases[i].greedy_nr) << cases[i].name;
  }
}

// A cache of 48 entries holds one sequence at a time (each reserves its prompt and 20 new
// tokens): the others wait in the queue and join as pages free; the tokens are the same.
TEST(GlmOcr, SequencesQueueForTheCacheAndJoinAsItFrees) {
  auto e = load(48);
  const std::vector<GlmCase> cases = load_glm_cases();
  std::vector<std::size_t> order;
  const auto got = e->generate(glm_requests(cases), [&](std::size_t r, int32_t, const std::string&) {
    if (order.empty() || order.back() != r) order.push_back(r);
  });
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(got[i].tokens, cases[i].greedy) << cases[i].name;
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3})) << "one sequence at a time, in order";
}

TEST(GlmOcr, StopsOnAnyOfItsStopIds) {
  auto e = load();
  const std::vector<GlmCase> cases = load_glm_cases();
  const GlmCase& c = cases.at(0);
  GenerationRequest r = c.request;
  r.options.stop_ids = std::vector<int32_t>{c.greedy.at(9), c.greedy.at(5)};
  const auto got = e->generate({r});
  // Stops at the first of either; the stop id is part of the output, as in transformers.
  std::size_t first = 0;
  while (c.greedy[first] != c.greedy[9] && c.greedy[first] != c.greedy[5]) ++first;
  EXPECT_EQ(got[0].tokens, std::vector<int32_t>(c.greedy.begin(), c.greedy.begin() + static_cast<long>(first) + 1));
  EXPECT_EQ(got[0].finish, FinishReason::kStopId);
  // Default: the folder's generation_config.json end ids (244, 245), which these greedy runs
  // never produce: they run to the length.
  GenerationRequest d = c.request;
  d.options.stop_ids.reset();
  EXPECT_EQ(e->generate({d})[0].tokens, c.greedy);
}

// The incremental API (the server's scheduler, the ocr command): requests submitted while others
// run, one cancelled while running and one while queued; the rest give transformers' tokens, and
// the cache is empty again at the end.
TEST(GlmOcr, IncrementalSubmitStepCancel) {
  auto e = load(96);  // two sequences at a time
  const std::vector<GlmCase> cases = load_glm_cases();
  std::vector<GenerationId> ids;
  ids.push_back(e->submit_generation(cases.at(0).request));
  ids.push_back(e->submit_generation(cases.at(1).request));
  std::map<GenerationId, std::vector<int32_t>> streamed;
  for (int step = 0; step < 3; ++step)
    for (const GenerationEvent& ev : e->step_generation()) streamed[ev.id].push_back(ev.token);
  GenerationLoad l = e->generation_load();
  EXPECT_EQ(l.running, 2u);
  EXPECT_EQ(l.waiting, 0u);
  EXPECT_GT(l.kv_pages_used, 0u);
  EXPECT_EQ(l.kv_pages_total, 96u / 4);
  ids.push_back(e->submit_generation(cases.at(2).request));
  ids.push_back(e->submit_generation(cases.at(3).request));
  EXPECT_EQ(e->generation_load().waiting, 2u);
  e->cancel_generation(ids[1]);  // running: its pages free at once
  e->cancel_generation(ids[3]);  // queued
  l = e->generation_load();
  EXPECT_EQ(l.running, 1u);
  EXPECT_EQ(l.waiting, 1u);
  std::map<GenerationId, GenerationResult> results;
  while (results.size() < 2) {
    const std::vector<GenerationEvent> events = e->step_generation();
    ASSERT_FALSE(events.empty()) << "a step with requests in flight produced nothing";
    for (const GenerationEvent& ev : events) {
      EXPECT_NE(ev.id, ids[1]);
      EXPECT_NE(ev.id, ids[3]);
      streamed[ev.id].push_back(ev.token);
      if (ev.finished) results[ev.id] = e->take_generation_result(ev.id);
    }
  }
  EXPECT_EQ(results.at(ids[0]).tokens, cases.at(0).greedy);
  EXPECT_EQ(results.at(ids[2]).tokens, cases.at(2).greedy);
  EXPECT_EQ(streamed.at(ids[0]), cases.at(0).greedy);
  l = e->generation_load();
  EXPECT_EQ(l.running + l.waiting + l.kv_pages_used, 0u);
  EXPECT_THROW(e->take_generation_result(ids[1]), Error);
  e->cancel_generation(12345);  // unknown: ignored
}

TEST(GlmOcr, RefusesBadRequestsAndStaysUsable) {
  auto e = load();
  const std::vector<GlmCase> cases = load_glm_cases();
  GenerationRequest bad = cases.at(0).request;
  bad.images.at(0).grid_thw = {1, 4, 4};  // 4 image tokens, the prompt holds 6
  bad.images.at(0).rows.resize(16 * bad.images.at(0).patch_dim);
  EXPECT_THROW(e->generate({cases.at(3).request, bad}), Error);
  GenerationRequest oov = cases.at(3).request;
  oov.input_ids.push_back(256);
  EXPECT_THROW(e->generate({oov}), Error);
  GenerationRequest huge = cases.at(3).request;
  huge.options.max_new_tokens = 10000;  // past the KV cache of 512
  EXPECT_THROW(e->generate({huge}), Error);
  EXPECT_EQ(e->generate({cases.at(3).request})[0].tokens, cases.at(3).greedy);
}

}  // namespace
}  // namespace il::test
