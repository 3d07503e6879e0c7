// JSONL input lines with fields the subcommand does not read, or nested too deep: refused with an
// error naming the line (exit status 2), never ignored or crashed on. An attention_mask used to be
// dropped silently, every token attended whatever the user meant to mask.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

void expect_usage_error(const RunResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, 2) << r.err;
  expect_contains(r.err, parts);
}

TEST(JsonlFields, UnknownFieldsAreRefusedNotIgnored) {
  ScratchDir tmp;
  const std::string m = fixture_path("bert-mean");
  expect_usage_error(
      run_cli_bounded({"embed", "-m", m}, tmp,
                      {R"({"input_ids": [2, 5, 3]})", R"({"input_ids": [2, 5, 3], "attention_mask": [1, 1, 0]})"}),
      {"input line 2", "unknown field \"attention_mask\"", "accepted fields: text, input_ids, token_type_ids"});
  expect_usage_error(run_cli_bounded({"embed", "-m", m}, tmp, {R"({"text": "hello", "id": 7})"}),
                     {"input line 1", "\"id\""});
  // token_type_ids next to a text would have been ignored too: the tokenizer sets the types.
  expect_usage_error(run_cli_bounded({"embed", "-m", m}, tmp, {R"({"text": "hello", "token_type_ids": [0]})"}),
                     {"input line 1", "token_type_ids", "input_ids"});

  const std::string ce = fixture_path("bert-ce");
  expect_usage_error(run_cli_bounded({"rerank", "-m", ce}, tmp, {R"({"query": "q", "document": "d", "label": 1})"}),
                     {"input line 1", "\"label\"", "query, document, instruction, input_ids, token_type_ids"});
  expect_usage_error(
      run_cli_bounded({"rerank", "-m", ce}, tmp, {R"({"query": "q", "document": "d", "token_type_ids": [0, 1]})"}),
      {"input line 1", "token_type_ids"});
  expect_usage_error(
      run_cli_bounded({"tokenize", "-m", ce}, tmp, {R"({"text": "x"})", R"({"text": "x", "max_length": 2})"}),
      {"input line 2", "\"max_length\"", "text, pair, add_special_tokens"});

  // Every accepted field still works.
  EXPECT_EQ(run_cli_bounded({"embed", "-m", m}, tmp,
                            {R"({"text": "hello"})", R"({"input_ids": [2, 5, 3], "token_type_ids": [0, 0, 0]})"})
                .status,
            0);
  EXPECT_EQ(run_cli_bounded(
                {"rerank", "-m", ce}, tmp,
                {R"({"query": "q", "document": "d"})", R"({"input_ids": [2, 5, 3], "token_type_ids": [0, 1, 1]})"})
                .status,
            0);
  EXPECT_EQ(run_cli_bounded({"tokenize", "-m", ce}, tmp, {R"({"text": "x", "pair": "y", "add_special_tokens": false})"})
                .status,
            0);
}

TEST(JsonlFields, DeepOrHugeValuesAreInputErrors) {
  ScratchDir tmp;
  const std::string m = fixture_path("bert-mean");
  const std::size_t levels = 1'000'000;
  const std::string deep = std::string(levels, '[') + std::string(levels, ']');
  expect_usage_error(run_cli_bounded({"embed", "-m", m}, tmp, {R"({"text": "ok"})", "{\"input_ids\": " + deep + "}"}),
                     {"input line 2", "nested deeper than 128 levels"});
  expect_usage_error(run_cli_bounded({"embed", "-m", m}, tmp, {R"({"text": "ok"})", R"({"text": 1e400})"}),
                     {"input line 2", "not valid JSON", "1e400"});
  // A long array where an id belongs is named, its rendering cut short.
  std::string wide = "[0";
  for (int i = 0; i < 100'000; ++i) wide += ",1";
  const RunResult r = run_cli_bounded({"embed", "-m", m}, tmp, {"{\"input_ids\": [" + wide + "]]}"});
  expect_usage_error(r, {"input line 1", "\"input_ids\" must be an array of integers"});
  EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
}

}  // namespace
}  // namespace il::cli_test
