#include "glm_ocr_fixture.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "fixture.h"

namespace il::test {

std::vector<GlmCase> load_glm_cases() {
  std::ifstream in(fixtures_root() / "glm-ocr" / "expected.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<GlmCase> out;
  for (const auto& c : j.at("cases")) {
    GlmCase g;
    g.name = c.at("name").get<std::string>();
    g.request.input_ids = c.at("input_ids").get<std::vector<int32_t>>();
    if (c.contains("pixel_values")) {
      const auto rows = c.at("pixel_values").get<std::vector<std::vector<float>>>();
      std::size_t next = 0;
      for (const auto& thw : c.at("image_grid_thw")) {
        PatchImage im;
        for (int k = 0; k < 3; ++k) im.grid_thw[static_cast<std::size_t>(k)] = thw.at(static_cast<std::size_t>(k)).get<int>();
        const std::size_t n = static_cast<std::size_t>(im.grid_thw[0] * im.grid_thw[1] * im.grid_thw[2]);
        im.patch_dim = rows.at(0).size();
        for (std::size_t i = 0; i < n; ++i) im.rows.insert(im.rows.end(), rows.at(next + i).begin(), rows.at(next + i).end());
        next += n;
        g.request.images.push_back(std::move(im));
      }
      for (const auto& r : c.at("vision")) {
        const auto row = r.get<std::vector<float>>();
        g.vision.insert(g.vision.end(), row.begin(), row.end());
      }
    }
    g.last_logits = c.at("last_logits").get<std::vector<float>>();
    g.greedy = c.at("greedy").get<std::vector<int32_t>>();
    g.greedy_rp = c.at("greedy_repetition_penalty_1_3").get<std::vector<int32_t>>();
    g.greedy_nr = c.at("greedy_no_repeat_ngram_2").get<std::vector<int32_t>>();
    // transformers generated with eos_token_id=None: no stop id, 20 tokens.
    g.request.options.max_new_tokens = g.greedy.size();
    g.request.options.stop_ids = std::vector<int32_t>{};
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<GenerationRequest> glm_requests(const std::vector<GlmCase>& cases) {
  std::vector<GenerationRequest> r;
  for (const GlmCase& c : cases) r.push_back(c.request);
  return r;
}

ChunkedPrefillRun run_chunked_prefill(Engine& engine, const std::vector<GlmCase>& cases) {
  ChunkedPrefillRun run;
  std::map<GenerationId, std::size_t> case_of;
  int step_no = 0;
  std::size_t page_left = cases.at(0).greedy.size();
  auto step = [&] {
    bool page = false;
    for (const GenerationEvent& ev : engine.step_generation()) {
      const std::size_t c = case_of.at(ev.id);
      if (!run.first_step.count(c)) run.first_step[c] = step_no;
      run.streamed[c].push_back(ev.token);
      page = page || c == 0;
    }
    if (page_left > 0) {
      run.page_decoded_every_step = run.page_decoded_every_step && page;
      page_left -= page ? 1 : 0;
    }
    run.loads.push_back(engine.generation_load());
    ++step_no;
  };
  case_of[engine.submit_generation(cases.at(0).request)] = 0;
  step();
  for (std::size_t c : {3, 1, 2}) case_of[engine.submit_generation(cases.at(c).request)] = c;
  for (int guard = 0; guard < 200; ++guard) {
    step();
    const GenerationLoad& l = run.loads.back();
    if (l.running + l.waiting == 0) break;
  }
  return run;
}

}  // namespace il::test
