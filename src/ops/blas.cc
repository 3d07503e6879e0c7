#include "ops/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace il::ops::blas {
namespace {

// CBLAS constants (fixed by the CBLAS standard).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using SetThreadsFn = void (*)(int);
using CStringFn = char* (*)();

struct Library {
  SgemmFn sgemm = nullptr;
  CStringFn corename = nullptr;
  CStringFn config = nullptr;
};

// Kernel family for this CPU, or null to let OpenBLAS decide.
const char* preferred_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_CORETYPE") == nullptr)
      if (const char* core = preferred_coretype()) setenv("OPENBLAS_CORETYPE", core, 0);
    void* h = nullptr;
    for (const char* name : {"libopenblas.so.0", "libopenblas.so"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (h == nullptr)
      throw make_error("cannot load OpenBLAS (libopenblas.so.0): ", dlerror(),
                       " — install libopenblas0 (Debian: apt-get install libopenblas0)");
    lib.sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    auto set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
    lib.corename = reinterpret_cast<CStringFn>(dlsym(h, "openblas_get_corename"));
    lib.config = reinterpret_cast<CStringFn>(dlsym(h, "openblas_get_config"));
    if (lib.sgemm == nullptr) throw make_error("the loaded OpenBLAS has no cblas_sgemm");
    if (set_threads) set_threads(1);
  });
  if (lib.sgemm == nullptr) throw make_error("OpenBLAS failed to load earlier in this process");
  return lib;
}

}  // namespace

void sgemm_nt(std::size_t m, std::size_t n, std::size_t k, const float* a, std::size_t lda,
              const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  library().sgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb),
                  beta, c, static_cast<int>(ldc));
}

std::string describe() {
  const Library& lib = library();
  std::string s = lib.config ? lib.config() : "OpenBLAS";
  if (lib.corename) s += " (core " + std::string(lib.corename()) + ")";
  return s;
}

}  // namespace il::ops::blas
