// A growable float scratch buffer aligned for the GEMM kernels' aligned vector loads. Growing
// does not keep the contents: it is scratch, refilled by every user.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace il::ops {

class AlignedBuffer {
 public:
  float* get(std::size_t floats) {
    if (floats > capacity_) {
      const std::size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
      data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!data_) throw std::bad_alloc();
      capacity_ = floats;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  std::size_t capacity_ = 0;
};

}  // namespace il::ops
