// nomic-bert through the command line beyond the shared embed / info suites (embed_test.cc and
// info_bench_test.cc run on both nomic fixtures): `bench --config` on nomic-embed-text-v1.5's
// release config with random weights, and a folder whose config names a feature the engine does
// not implement, refused naming config.json and the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"

namespace il::cli_test {
namespace {

using nlohmann::json;

// bench/configs sits beside tests/fixtures in the source tree.
std::string release_config() {
  return (fixture_dir("nomic-embed").parent_path().parent_path().parent_path() / "bench" / "configs" /
          "nomic-embed-text-v1.5.json")
      .string();
}

TEST(NomicCli, BenchBuildsTheReleaseConfigWithRandomWeights) {
  const auto r = run_cli(cli_args({"bench", "--config", release_config(), "--grid", "1x16", "--warmup", "0",
                                   "--iters", "1", "--threads", "2", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const json j = parse_line(lines[0]);
  EXPECT_EQ(j["batch"], 1);
  EXPECT_EQ(j["len"], 16);
  EXPECT_GT(j["p50_ms"].get<double>(), 0.0);
}

TEST(NomicCli, UnsupportedConfigValuesAreRefusedNamingTheField) {
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"prenorm", true}, {"causal", true}, {"rotary_scaling_factor", 2.0}}) {
    ScratchDir tmp;
    const auto dir = copy_fixture("nomic-embed", tmp);
    edit_json_file(dir / "config.json", [&](json& c) { c[field] = value; });
    const auto r = run_cli(cli_args({"embed", "--model", dir.string(), "hello"}));
    EXPECT_NE(r.status, 0) << field;
    expect_contains(r.err, {"config.json", "\"" + field + "\""});
  }
}

}  // namespace
}  // namespace il::cli_test
