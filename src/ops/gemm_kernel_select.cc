#include <cstdlib>

#include "core/env.h"
#include "core/error.h"
#include "ops/gemm_kernel.h"

namespace il::ops::gemm_kernel {
namespace {

bool cpu_runs(const std::string& name) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (name == "avx512") return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  if (name == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return name == "generic";
}

}  // namespace

const std::vector<Kernel>& runnable_kernels() {
  static const std::vector<Kernel> kernels = [] {
    std::vector<Kernel> out;
    for (const Kernel& k : {avx512_kernel(), avx2_kernel(), generic_kernel()})
      if (k.tile && cpu_runs(k.name)) out.push_back(k);
    return out;
  }();
  return kernels;
}

const Kernel& kernel_named(const std::string& name) {
  for (const Kernel& k : runnable_kernels())
    if (name == k.name) return k;
  std::string have;
  for (const Kernel& k : runnable_kernels()) have += std::string(have.empty() ? "" : ", ") + k.name;
  throw make_error("gemm: kernel \"", name, "\" is not available on this CPU/build (available: ",
                   have, ")");
}

const Kernel& default_kernel() {
  static const Kernel& chosen = []() -> const Kernel& {
    const auto forced = env::value("IL_GEMM_KERNEL");
    if (forced && !forced->empty()) return kernel_named(*forced);
    return runnable_kernels().front();
  }();
  return chosen;
}

}  // namespace il::ops::gemm_kernel
