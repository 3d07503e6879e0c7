#!/usr/bin/env bash
# The whole test suite, as CI runs it: dependencies, a Release build of everything, every ctest
# label but `gpu`, then the CPU unit / io / oracle tests again under AddressSanitizer + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ -f tools/tokenizer_oracle/package-lock.json ]; then
  npm ci --silent --no-audit --no-fund --prefix tools/tokenizer_oracle
fi
# The official openai client the server tests call /v1/embeddings with (fails under CI if absent).
npm ci --silent --no-audit --no-fund --prefix tools/server_client

jobs=$(nproc)
scripts/build.sh -DIL_BUILD_TESTS=ON
ctest --test-dir build -LE gpu --output-on-failure -j "$jobs"

# Sanitizer pass over the CPU code paths (a subset keeps CI well inside its time budget).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIL_CUDA=OFF \
  -DIL_SANITIZE=address,undefined -DIL_BUILD_TESTS=ON >/dev/null
ninja -C build-asan ops_tests core_tests io_tests oracle_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L 'unit|oracle' --output-on-failure -j "$jobs"
