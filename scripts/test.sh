#!/usr/bin/env bash
# The whole test suite, as CI runs it: dependencies, a Release build of everything (with the CUDA
# backend for sm_90 when a CUDA compiler is installed, so CI compiles it even without a GPU), every
# ctest label (the `gpu` tests report themselves skipped where no GPU is present), then the CPU
# unit / io / oracle / HTTP-parsing tests again under AddressSanitizer + UBSan, then a short
# libFuzzer campaign of every target in fuzz/ (their regression inputs first; any finding fails).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ -f tools/tokenizer_oracle/package-lock.json ]; then
  npm ci --silent --no-audit --no-fund --prefix tools/tokenizer_oracle
fi
# The official openai client the server tests call /v1/embeddings with (fails under CI if absent).
npm ci --silent --no-audit --no-fund --prefix tools/server_client

jobs=$(nproc)
cuda_args=()
nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; fi
if [ -n "$nvcc" ]; then
  # One architecture keeps CI's compile short; release builds default to sm_80 + sm_90.
  cuda_args=(-DIL_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90)
else
  echo "test.sh: no CUDA compiler found: building the CPU backend only" >&2
fi
scripts/build.sh -DIL_BUILD_TESTS=ON "${cuda_args[@]}"
ctest --test-dir build --output-on-failure -j "$jobs"

# Sanitizer pass over the CPU code paths (a subset keeps CI well inside its time budget). -O1 and
# -g1 (line tables, all a sanitizer's stack trace needs) halve its compile against -O2 -g: measured
# on http_server.cc, 138 s -> 73 s.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIL_CUDA=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DIL_SANITIZE=address,undefined -DIL_BUILD_TESTS=ON >/dev/null
ninja -C build-asan ops_tests core_tests io_tests oracle_tests http_tests image_decode_tests image_preprocess \
  text_sentencepiece_unit
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L 'unit|oracle|image' --output-on-failure -j "$jobs"
# The SentencePiece model reader and SigLIP's tokenizer (label tokenizer, whose other tests need node).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/tests/text/text_sentencepiece_unit --gtest_brief=1

# Fuzzing: clang + ASan + UBSan in build-fuzz (3 to 4 minutes to build on 2 cores), then 30 s
# per target (eleven targets: about 6 minutes).
scripts/fuzz.sh "${IL_FUZZ_SECONDS:-30}"
