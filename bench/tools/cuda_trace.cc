// A kernel timeline for any CUDA program, through CUPTI's activity API, for machines without
// Nsight Systems (the lent H200 has Nsight Compute only). Preloaded, it records every kernel,
// memory copy and runtime API call with CUPTI's timestamps (one clock for host and device, ns)
// and writes them as CSV lines to $IL_TRACE_OUT:
//   K,start,end,correlation,stream,grid,block,cluster,dynamic shared bytes,name   a kernel
//   C,start,end,correlation,kind,bytes      a copy (kind: 1 HtoD, 2 DtoH, 8 DtoD, ...)
//   A,start,end,correlation,cbid            a runtime API call on the host
// A kernel whose start lies just after its launch call's end was waiting on the host.
// bench/tools/trace_gaps.py summarises a trace per iteration.
//
// Build (the CUDA toolkit's headers and libcupti):
//   g++ -std=c++20 -O2 -shared -fPIC bench/tools/cuda_trace.cc -I/usr/local/cuda/include
//     -L/usr/local/cuda/lib -lcupti -o libil_cuda_trace.so   (one line)
// Use: IL_TRACE_OUT=trace.csv LD_PRELOAD=./libil_cuda_trace.so inferencelayer bench ...
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::FILE* out = nullptr;
std::mutex out_mutex;
constexpr size_t kBufferBytes = 4 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(out_mutex);
  CUpti_Activity* record = nullptr;
  while (out != nullptr && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        std::fprintf(out, "K,%llu,%llu,%u,%u,%dx%dx%d,%dx%dx%d,%ux%ux%u,%d,%s\n",
                     static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end),
                     k->correlationId, k->streamId, k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                     k->clusterX, k->clusterY, k->clusterZ, k->dynamicSharedMemory, k->name);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        std::fprintf(out, "C,%llu,%llu,%u,%u,%llu\n", static_cast<unsigned long long>(c->start),
                     static_cast<unsigned long long>(c->end), c->correlationId, static_cast<unsigned>(c->copyKind),
                     static_cast<unsigned long long>(c->bytes));
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        std::fprintf(out, "A,%llu,%llu,%u,%u\n", static_cast<unsigned long long>(a->start),
                     static_cast<unsigned long long>(a->end), a->correlationId, static_cast<unsigned>(a->cbid));
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(out_mutex);
  if (out != nullptr) std::fclose(out);
  out = nullptr;
}

__attribute__((constructor)) void start() {
  const char* path = std::getenv("IL_TRACE_OUT");
  if (path == nullptr) return;
  out = std::fopen(path, "w");
  if (out == nullptr) return;
  cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cuptiActivityFlushPeriod(100);  // ms: buffers reach the file while the program runs
  std::atexit(finish);
}

}  // namespace
