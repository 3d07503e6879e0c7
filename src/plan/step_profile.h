// Time per plan step, accumulated over runs, and its report: the executors' IL_PROFILE output
// (the CPU one in wall time, the CUDA one in device time), in one format.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "plan/plan.h"

namespace il::plan {

// The op kind of a step, as the profile groups it: "embed", "gemm", "layernorm", …
const char* op_name(const StepOp& op);

class StepProfile {
 public:
  struct Entry {
    std::string op;  // the op kind ("gemm", "attention", …)
    double ms = 0.0;
    std::size_t calls = 0;
  };

  void add(const std::string& step, const char* op, double ms);
  bool empty() const { return steps_.empty(); }
  const std::map<std::string, Entry>& steps() const { return steps_; }
  // `title`, the total, the time per op kind, then the `slowest` steps with their time per call.
  std::string report(const std::string& title, std::size_t slowest) const;

 private:
  std::map<std::string, Entry> steps_;
};

}  // namespace il::plan
