#include "fixture.h"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace il::test {
namespace {

FixtureCase read_case(const nlohmann::json& j) {
  FixtureCase c;
  if (j.contains("text")) c.text = j.at("text").get<std::string>();
  if (j.contains("pair") && !j.at("pair").is_null()) c.pair = j.at("pair").get<std::string>();
  c.input.ids = j.at("input_ids").get<std::vector<int32_t>>();
  if (j.contains("token_type_ids")) c.input.type_ids = j.at("token_type_ids").get<std::vector<int32_t>>();
  if (j.contains("offsets"))
    for (const auto& o : j.at("offsets")) c.offsets.emplace_back(o.at(0).get<uint32_t>(), o.at(1).get<uint32_t>());
  if (j.contains("prompt_name")) c.prompt_name = j.at("prompt_name").get<std::string>();
  if (j.contains("input_text")) c.input_text = j.at("input_text").get<std::string>();
  if (j.contains("prompt_length")) c.input.prompt_tokens = j.at("prompt_length").get<std::size_t>();
  if (j.contains("pooled")) c.pooled = j.at("pooled").get<std::vector<float>>();
  if (j.contains("scores")) c.scores = j.at("scores").get<std::vector<float>>();
  if (j.contains("pooled_dim32")) c.pooled_dim32 = j.at("pooled_dim32").get<std::vector<float>>();
  if (j.contains("instruction") && !j.at("instruction").is_null()) c.instruction = j.at("instruction").get<std::string>();
  if (j.contains("probability")) c.probability = j.at("probability").get<float>();
  if (j.contains("hidden") && !j.at("hidden").is_null()) {
    const auto rows = j.at("hidden").get<std::vector<std::vector<float>>>();
    Matrix m(rows.size(), rows.empty() ? 0 : rows[0].size());
    for (std::size_t r = 0; r < rows.size(); ++r) std::copy(rows[r].begin(), rows[r].end(), m.row(r));
    c.hidden = std::move(m);
  }
  return c;
}

}  // namespace

std::filesystem::path fixtures_root() {
  // IL_FIXTURES points elsewhere when set; ctest sets IL_SOURCE_DIR.
  if (const char* env = std::getenv("IL_FIXTURES")) return env;
  const char* src = std::getenv("IL_SOURCE_DIR");
  check(src != nullptr, "neither IL_FIXTURES nor IL_SOURCE_DIR is set (ctest sets IL_SOURCE_DIR)");
  return std::filesystem::path(src) / "tests" / "fixtures";
}

Fixture load_fixture(const std::string& name) {
  Fixture f;
  f.dir = fixtures_root() / name;
  std::ifstream in(f.dir / "expected.json");
  check(in.good(), "fixture ", f.dir.string(), "/expected.json is missing");
  const auto j = nlohmann::json::parse(in);
  f.kind = j.at("kind").get<std::string>();
  for (const auto& c : j.at("cases")) f.cases.push_back(read_case(c));
  if (j.contains("id_cases"))
    for (const auto& c : j.at("id_cases")) f.id_cases.push_back(read_case(c));
  return f;
}

std::vector<TokenInput> all_inputs(const Fixture& f) {
  std::vector<TokenInput> inputs;
  for (const auto* list : {&f.cases, &f.id_cases})
    for (const FixtureCase& c : *list) inputs.push_back(c.input);
  return inputs;
}

std::string fixture_test_name(const std::string& name) {
  std::string n = name;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

}  // namespace il::test
