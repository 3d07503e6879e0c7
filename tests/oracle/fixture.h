// Reads tests/fixtures/<name>/expected.json, written by tools/oracle/make_fixtures.py from
// transformers / sentence-transformers on the GPU machine.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inferencelayer/types.h"

namespace il::test {

struct FixtureCase {
  std::string text;
  std::optional<std::string> pair;
  TokenInput input;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  std::vector<float> pooled;  // embedding models
  std::vector<float> scores;  // cross-encoders
  std::vector<float> pooled_dim32;      // Matryoshka: sentence-transformers' truncate_dim=32 (where recorded)
  std::optional<std::string> instruction;  // prompt-scored pairs (Qwen3-Reranker) with their own instruction
  std::optional<float> probability;        // Qwen3-Reranker: P(yes) as its model card computes it
  std::optional<Matrix> hidden;
  // Prompted cases: text = the prompt + input_text. input.prompt_tokens holds the fixture's
  // prompt_length where it records one (folders pooled without their prompt).
  std::optional<std::string> prompt_name;
  std::string input_text;
};

struct Fixture {
  std::filesystem::path dir;
  std::string kind;  // "embedding" or "cross_encoder"
  std::vector<FixtureCase> cases;     // from text
  std::vector<FixtureCase> id_cases;  // from raw token ids
};

std::filesystem::path fixtures_root();
Fixture load_fixture(const std::string& name);

// Every case's input: the text cases, then the raw-id ones.
std::vector<TokenInput> all_inputs(const Fixture& f);

// The gtest name of a test on fixture `name` ("bert-mean" → "bert_mean").
std::string fixture_test_name(const std::string& name);

}  // namespace il::test
