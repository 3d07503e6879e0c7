// --dtype / IL_DTYPE: what a CPU run reports (/info model_dtype and device, the x-compute-type
// header), and that asking the CPU for f16 or bf16 is refused at start with a message, not
// served in f32 or crashed.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server_test_util.h"

namespace il::server_test {
namespace {

using cli_test::cli_args;
using cli_test::run_cli;

void expect_cpu_f32(const ServerProcess& server) {
  auto c = server.client();
  const json info = body_of(c.Get("/info"));
  EXPECT_EQ(info["model_dtype"], "float32") << info.dump();
  EXPECT_EQ(info["device"], "cpu") << info.dump();
  const auto r = post(c, "/embed", {{"inputs", "which device ran this"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("x-compute-type"), "cpu");
}

TEST(Dtype, CpuRunReportsFloat32AndCpu) {
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--device", "cpu"}, {"--device", "cpu", "--dtype", "f32"}, {"--device", "cpu", "--dtype", "auto"}}) {
    ServerProcess server("bert-mean", extra);
    ASSERT_TRUE(server.started()) << extra.back();
    expect_cpu_f32(server);
    EXPECT_EQ(server.terminate(), 0);
  }
  ServerProcess from_env("bert-mean", {"--device", "cpu"}, {"IL_DTYPE=f32"});
  ASSERT_TRUE(from_env.started());
  expect_cpu_f32(from_env);
  EXPECT_EQ(from_env.terminate(), 0);
}

// `timeout` turns a server that wrongly starts into a failure rather than a hung test.
cli_test::RunResult serve(const std::vector<std::string>& args, const std::string& env = "") {
  std::vector<std::string> all = {"serve", "--model", fixture_path("bert-mean"), "--port", "0"};
  all.insert(all.end(), args.begin(), args.end());
  return run_cli(cli_args(all), "", env + " timeout 60");
}

TEST(Dtype, HalfPrecisionOnTheCpuIsRefusedAtStart) {
  for (const char* dtype : {"f16", "bf16"}) {
    const auto r = serve({"--device", "cpu", "--dtype", dtype});
    EXPECT_EQ(r.status, 1) << dtype << ": " << r.err;  // an engine error, not a crash (-1) or a timeout (124)
    EXPECT_NE(r.err.find(std::string("dtype ") + dtype), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
  }
  const auto env = serve({"--device", "cpu"}, "IL_DTYPE=f16");
  EXPECT_EQ(env.status, 1) << env.err;
  EXPECT_NE(env.err.find("dtype f16"), std::string::npos) << env.err;
  const auto bad = serve({"--dtype", "f64"});
  EXPECT_EQ(bad.status, 2) << bad.err;  // a usage error naming the option
  EXPECT_NE(bad.err.find("--dtype"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace il::server_test
