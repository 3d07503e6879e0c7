#!/usr/bin/env bash
# The first README command: dependencies, build, then embed a few sentences with the demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
IL_BUILD_TARGET=inferencelayer scripts/build.sh -DIL_BUILD_TESTS=OFF
build/inferencelayer embed --model demo/bert-random \
  "The quick brown fox jumps over the lazy dog." \
  "Embeddings map text to vectors." \
  "inferencelayer runs on the CPU."
