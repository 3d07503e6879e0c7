#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan (in build-fuzz) and runs each for
# SECONDS (default 30: a short campaign for CI). First every input under fuzz/regressions/TARGET/
# is run once; then the fuzzer starts from the committed seeds (fuzz/corpus/TARGET/, read only)
# and grows its own corpus in build-fuzz/fuzz-corpus/TARGET/, which later runs reuse. Prints per
# target the executions, exec/s and corpus size; exits non-zero on any finding (a crash, a
# sanitizer report, a leak, a timeout or running out of memory), the input kept under
# build-fuzz/fuzz-findings/TARGET/.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   IL_FUZZ_BUILD   build folder (default build-fuzz)
#   IL_FUZZ_RUNS    stop each target after this many executions instead (libFuzzer -runs)
#   IL_FUZZ_ARGS    extra libFuzzer flags
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
build=${IL_FUZZ_BUILD:-build-fuzz}

# Configured once; later runs rebuild only what changed, and only what the fuzz targets link.
if [ ! -f "$build/build.ninja" ]; then
  cxx=$(command -v clang++ || command -v clang++-14 || true)
  if [ -z "$cxx" ]; then
    echo "fuzz.sh: no clang++ (scripts/install-deps.sh installs clang 14)" >&2
    exit 2
  fi
  # Line tables are all a sanitizer's or libFuzzer's stack trace needs (file:line, inlined frames
  # too): full debug information made the build a quarter slower.
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DIL_CUDA=OFF -DIL_BUILD_TESTS=OFF -DIL_LIBFUZZER=ON >/dev/null
fi
# Quiet when it builds; the compiler's messages when it does not (set -e would stop silently).
if ! build_log=$(ninja -C "$build" fuzzers 2>&1); then
  echo "$build_log" >&2
  echo "fuzz.sh: building the fuzz targets failed" >&2
  exit 1
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets <"$build/fuzz/targets.txt"
fi

failed=()
printf '%-24s %12s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  bin=$build/fuzz/$t
  if [ ! -x "$bin" ]; then
    echo "no fuzz target $t in $build/fuzz (see $build/fuzz/targets.txt)" >&2
    exit 2
  fi
  corpus=$build/fuzz-corpus/$t
  findings=$build/fuzz-findings/$t
  log=$build/fuzz-logs/$t.log
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  : >"$log"

  # Past findings must stay fixed.
  if [ -d "fuzz/regressions/$t" ] && [ -n "$(ls -A "fuzz/regressions/$t")" ]; then
    if ! "$bin" -timeout=10 -rss_limit_mb=2048 "fuzz/regressions/$t"/* >>"$log" 2>&1; then
      printf '%-24s %12s %10s %8s  %s\n' "$t" - - - "REGRESSION (see $log)"
      failed+=("$t")
      continue
    fi
  fi

  args=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/")
  if [ -n "${IL_FUZZ_RUNS:-}" ]; then
    args+=(-runs="$IL_FUZZ_RUNS")
  else
    args+=(-max_total_time="$seconds")
  fi
  [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="fuzz/dict/$t.dict")
  # shellcheck disable=SC2206
  args+=(${IL_FUZZ_ARGS:-})
  seeds=()
  [ -d "fuzz/corpus/$t" ] && seeds+=("fuzz/corpus/$t")
  result=ok
  if ! "$bin" "${args[@]}" "$corpus" "${seeds[@]}" >>"$log" 2>&1; then
    result="FINDING (see $log and $findings/)"
    failed+=("$t")
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(find "$corpus" -type f | wc -l)
  printf '%-24s %12s %10s %8s  %s\n' "$t" "${execs:--}" "${rate:--}" "$size" "$result"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]}" >&2
  exit 1
fi
