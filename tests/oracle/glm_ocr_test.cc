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

// Also with a cache of 14 pages, which holds the first two prompts (5 + 6 pages) but not the third
// (6): the rows still come back in request order (the fourth, 3 pages, fits beside the first two,
// but prompt logits are prefilled in order).
TEST(GlmOcr, LastLogitsMatchTransformers) {
  for (const std::size_t kv_tokens : {512, 56}) {
    auto e = load(kv_tokens);
    const std::vector<GlmCase> cases = load_glm_cases();
    const Matrix logits = e->prompt_logits(glm_requests(cases));
    ASSERT_EQ(logits.rows, cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      ASSERT_EQ(logits.cols, cases[i].last_logits.size());
      const double err = max_abs(cases[i].last_logits, logits.row(i));
      std::printf("[glm-ocr cpu f32] %s (cache %zu): last logits max-abs %.3g\n", cases[i].name.c_str(), kv_tokens, err);
      EXPECT_LE(err, 1e-3) << cases[i].name << ", cache " << kv_tokens;
    }
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

// Chunked prefill (a per-step budget of 3 tokens while others decode, tests/oracle/
// glm_ocr_fixture.h): the text prompt goes in chunks of 3, 3, 3 and 1 beside the page prompt's
// decoding; the tall page's images and the tokens through its last image placeholder (13) go in
// one prefill when nothing else prefills, then its text in chunks; the same for the two-image
// prompt. Each chunk's tokens attend to the prompt's earlier chunks through the KV cache (crossing
// its pages of 4), with the M-RoPE positions of the whole prompt: every output is transformers'.
TEST(GlmOcr, PromptsOverThePrefillBudgetArePrefilledInChunks) {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 512;
  o.prefill_tokens_per_step = 3;
  auto e = Engine::load(fixtures_root() / "glm-ocr", o);
  const std::vector<GlmCase> cases = load_glm_cases();
  const ChunkedPrefillRun run = run_chunked_prefill(*e, cases);
  for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(run.streamed.at(c), cases[c].greedy) << cases[c].name;
  EXPECT_TRUE(run.page_decoded_every_step) << "the decoding sequence must not wait for the chunks";
  EXPECT_EQ(run.first_step.at(0), 0) << "nothing decoding: the whole prompt in one step";
  EXPECT_EQ(run.first_step.at(3), 4) << "10 tokens in chunks of 3, 3, 3, 1 (steps 1-4)";
  EXPECT_EQ(run.first_step.at(1), 9) << "the 13-token head alone at step 5, then 3, 3, 3, 1";
  EXPECT_EQ(run.first_step.at(2), 12) << "the 19-token head alone at step 10, then 3 and 1";
  ASSERT_GE(run.loads.size(), 6u);
  EXPECT_EQ(run.loads[1].running, 2u);
  EXPECT_EQ(run.loads[1].prefilling, 1u);
  EXPECT_EQ(run.loads[1].waiting, 2u) << "the budget went to the text prompt's first chunk";
  EXPECT_EQ(run.loads[4].prefilling, 0u);
  EXPECT_EQ(run.loads[5].prefilling, 1u);
  EXPECT_EQ(run.loads[5].waiting, 1u);
  EXPECT_EQ(run.loads.back().kv_pages_used, 0u);
}

// A prompt that fits the whole budget is not split to fill what a step has left: it waits for the
// next step and goes whole (chunks cost more than one prefill). Budget 12: the first text prompt
// (10 tokens) goes whole; the second waits rather than start with a 2-token chunk.
TEST(GlmOcr, APromptWithinTheBudgetWaitsToGoWhole) {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 512;
  o.prefill_tokens_per_step = 12;
  auto e = Engine::load(fixtures_root() / "glm-ocr", o);
  const std::vector<GlmCase> cases = load_glm_cases();
  std::map<GenerationId, std::size_t> case_of;
  std::map<GenerationId, std::vector<int32_t>> streamed;
  auto step = [&] {
    for (const GenerationEvent& ev : e->step_generation()) streamed[ev.id].push_back(ev.token);
    return e->generation_load();
  };
  case_of[e->submit_generation(cases.at(0).request)] = 0;
  (void)step();
  for (int i = 0; i < 2; ++i) case_of[e->submit_generation(cases.at(3).request)] = 3;
  GenerationLoad l = step();
  EXPECT_EQ(l.running, 2u);
  EXPECT_EQ(l.waiting, 1u);
  EXPECT_EQ(l.prefilling, 0u);
  l = step();
  EXPECT_EQ(l.running, 3u);
  EXPECT_EQ(l.prefilling, 0u);
  for (int guard = 0; guard < 100 && l.running + l.waiting > 0; ++guard) l = step();
  for (const auto& [id, c] : case_of) EXPECT_EQ(streamed.at(id), cases[c].greedy) << cases[c].name;
}

// With nothing decoding the budget does not apply: prompts are prefilled whole, together.
TEST(GlmOcr, WithNothingDecodingPromptsArePrefilledWhole) {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 512;
  o.prefill_tokens_per_step = 1;
  auto e = Engine::load(fixtures_root() / "glm-ocr", o);
  const std::vector<GlmCase> cases = load_glm_cases();
  std::map<GenerationId, std::size_t> case_of;
  for (std::size_t i = 0; i < cases.size(); ++i) case_of[e->submit_generation(cases[i].request)] = i;
  std::size_t firsts = 0;
  for (const GenerationEvent& ev : e->step_generation()) firsts += ev.finished ? 0 : 1;
  EXPECT_EQ(firsts, cases.size()) << "every prompt's first token in the first step";
  EXPECT_EQ(e->generation_load().prefilling, 0u);
  for (const auto& [id, c] : case_of) e->cancel_generation(id);
}

GenerationRequest with_max_new(const GlmCase& c, std::size_t n) {
  GenerationRequest r = c.request;
  r.options.max_new_tokens = n;
  return r;
}

// Backfilling: with pages of 4 and a cache of 20 pages, the page prompt (10 pages with 20 new
// tokens) runs; the tall one (11 pages) must wait for it, and the text one asking 4 tokens (4
// pages) starts before it because it ends long before the page prompt frees its pages. The tall
// one still starts in the step after the page prompt ends, as first come, first served would.
TEST(GlmOcr, ShortRequestsStartAheadOfOneWaitingForPagesWithoutDelayingIt) {
  auto e = load(80);
  const std::vector<GlmCase> cases = load_glm_cases();
  std::map<GenerationId, std::vector<int32_t>> streamed;
  std::map<GenerationId, int> first_step, last_step;
  int step_no = 0;
  auto step = [&] {
    for (const GenerationEvent& ev : e->step_generation()) {
      if (!first_step.count(ev.id)) first_step[ev.id] = step_no;
      last_step[ev.id] = step_no;
      streamed[ev.id].push_back(ev.token);
    }
    ++step_no;
  };
  const GenerationId a = e->submit_generation(cases.at(0).request);
  step();
  const GenerationId b = e->submit_generation(cases.at(1).request);
  const GenerationId c = e->submit_generation(with_max_new(cases.at(3), 4));
  step();
  GenerationLoad l = e->generation_load();
  EXPECT_EQ(l.running, 2u) << "the short text request started";
  EXPECT_EQ(l.waiting, 1u);
  EXPECT_EQ(l.backfilled, 1u);
  for (int guard = 0; guard < 200 && (l.running > 0 || l.waiting > 0); ++guard) {
    step();
    l = e->generation_load();
  }
  EXPECT_EQ(streamed.at(a), cases.at(0).greedy);
  EXPECT_EQ(streamed.at(b), cases.at(1).greedy);
  EXPECT_EQ(streamed.at(c), std::vector<int32_t>(cases.at(3).greedy.begin(), cases.at(3).greedy.begin() + 4));
  EXPECT_LT(last_step.at(c), last_step.at(a));
  EXPECT_EQ(first_step.at(b), last_step.at(a) + 1) << "the waiting request starts once the page prompt's pages free";
}

// Backfilling leaves the oldest waiting request's pages: with 22 pages, the page prompt holding 10
// and the tall one (asking 30 tokens: 14 pages) waiting, the pages free when the page prompt ends
// leave 8 spare; a text request that would still run then and needs 9 waits, one that needs 8
// starts.
TEST(GlmOcr, BackfillingLeavesTheWaitingRequestsPages) {
  auto e = load(88);
  const std::vector<GlmCase> cases = load_glm_cases();
  const GenerationId a = e->submit_generation(cases.at(0).request);
  (void)e->step_generation();
  const GenerationId b = e->submit_generation(with_max_new(cases.at(1), 30));
  const GenerationId c = e->submit_generation(with_max_new(cases.at(3), 24));  // 34 tokens: 9 pages
  const GenerationId d = e->submit_generation(with_max_new(cases.at(3), 20));  // 30 tokens: 8 pages
  (void)e->step_generation();
  const GenerationLoad l = e->generation_load();
  EXPECT_EQ(l.running, 2u) << "the page prompt and the 8-page text request";
  EXPECT_EQ(l.waiting, 2u);
  EXPECT_EQ(l.backfilled, 1u);
  EXPECT_EQ(l.kv_pages_used, 18u);
  for (GenerationId id : {a, b, c, d}) e->cancel_generation(id);
  EXPECT_EQ(e->generation_load().kv_pages_used, 0u);
}

// Only whole prompts backfill: under a per-step budget of 3 the 8-page text request of the test
// above would start with a first chunk, taking steps past its max_new_tokens that the reservation
// does not count; it waits in order instead.
TEST(GlmOcr, APromptSplitIntoChunksDoesNotBackfill) {
  EngineOptions o;
  o.device = "cpu";
  o.kv_page_size = 4;
  o.kv_cache_tokens = 88;
  o.prefill_tokens_per_step = 3;
  auto e = Engine::load(fixtures_root() / "glm-ocr", o);
  const std::vector<GlmCase> cases = load_glm_cases();
  const GenerationId a = e->submit_generation(cases.at(0).request);
  (void)e->step_generation();
  const GenerationId b = e->submit_generation(with_max_new(cases.at(1), 30));
  const GenerationId d = e->submit_generation(with_max_new(cases.at(3), 20));
  (void)e->step_generation();
  const GenerationLoad l = e->generation_load();
  EXPECT_EQ(l.running, 1u);
  EXPECT_EQ(l.waiting, 2u);
  EXPECT_EQ(l.backfilled, 0u);
  for (GenerationId id : {a, b, d}) e->cancel_generation(id);
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
