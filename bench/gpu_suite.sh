#!/usr/bin/env bash
# The GPU test suite in one call on the GPU machine:
#   bench/gpu_suite.sh BUILD_DIR        (run from the repository root)
# BUILD_DIR is a CUDA build (-DIL_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90), or any folder holding
# the carried gpu_ops_tests and gpu_model_tests binaries (they link our libraries statically;
# they need libcudart / libcublasLt 13 from /usr/local/cuda/lib64 and libutf8proc.so.2). Logs, gtest XML and a
# short summary go under $OUT (default ./out/gpu). Shared libraries the machine lacks can sit in
# .gpu/lib (prepended to LD_LIBRARY_PATH). When the build directory still lives where it was
# configured, ctest -L gpu runs; when it was carried elsewhere (ctest's files hold absolute
# paths), the gpu test binaries run directly with the same environment.
set -uo pipefail
build=${1:?usage: bench/gpu_suite.sh BUILD_DIR}
build=$(cd "$build" && pwd)
root=$(pwd)
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
for lib in /usr/local/cuda/lib64 "$root/.gpu/lib"; do
  [ -d "$lib" ] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export IL_SOURCE_DIR="$root"

{
  date -u
  git -C "$root" rev-parse HEAD 2>/dev/null || echo "commit unknown"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "nvidia-smi unavailable"
} > "$out/environment.txt"

status=0
configured=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ "$configured" = "$build" ]; then
  # Verbose, so the per-fixture error lines ("[gpu] ...") reach the log too.
  ctest --test-dir "$build" -L gpu --output-on-failure -V --output-junit "$out/ctest-gpu.xml" \
    > "$out/gpu-tests.log" 2>&1 || status=$?
  grep -E 'tests passed|Total Test time' "$out/gpu-tests.log" > "$out/summary.txt"
else
  : > "$out/gpu-tests.log"
  : > "$out/summary.txt"
  # A build tree (tests/gpu/) or a folder holding only the carried test binaries.
  for t in "$build"/tests/gpu/gpu_*_tests "$build"/gpu_*_tests; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    "$t" --gtest_output="xml:$out/$name.xml" > "$out/$name.log" 2>&1 || status=1
    cat "$out/$name.log" >> "$out/gpu-tests.log"
    echo "== $name: $(grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$out/$name.log" | paste -sd ' ')" >> "$out/summary.txt"
  done
fi
grep -oh '\[gpu\].*' "$out/gpu-tests.log" >> "$out/summary.txt"
grep -h -B2 -A4 'Failure' "$out/gpu-tests.log" | head -n 80 >> "$out/summary.txt"
echo "exit status $status" >> "$out/summary.txt"
cat "$out/summary.txt"
exit $status
