#!/usr/bin/env bash
# Configures and builds into build/ (Release, CPU backend). Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DIL_CUDA=OFF "$@" >/dev/null
ninja -C build "${IL_BUILD_TARGET:-all}"
