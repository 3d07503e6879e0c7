#!/usr/bin/env bash
# A long fuzzing campaign on a many-core machine: several libFuzzer processes per target, all for
# SECONDS, sharing the target's corpus (libFuzzer reloads what the others add). Uses targets
# already built by scripts/fuzz.sh (ASan + UBSan, clang); each target's regression inputs run
# first. Prints per target the processes, the executions summed over them, exec/s, the corpus at
# the end and the findings; exits non-zero on any finding (kept under OUT/findings/TARGET/).
#
# Usage: scripts/fuzz_long.sh SECONDS TARGET:PROCESSES...
#   IL_FUZZ_BIN   folder holding the built targets (default build-fuzz/fuzz)
#   IL_FUZZ_OUT   corpora, findings and logs (default build-fuzz/long); a corpus left there by an
#                 earlier campaign is continued
#   IL_FUZZ_RSS   -rss_limit_mb of each process (default 4096)
# Example (128 cores): scripts/fuzz_long.sh 540 http_fuzzer:56 tokenizer_json_fuzzer:40 tokenizer_fuzzer:32
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  sed -n 2,13p "$0" >&2
  exit 2
fi
seconds=$1
shift
bin_dir=${IL_FUZZ_BIN:-build-fuzz/fuzz}
out=${IL_FUZZ_OUT:-build-fuzz/long}
rss=${IL_FUZZ_RSS:-4096}

targets=()
for spec in "$@"; do
  t=${spec%%:*}
  n=${spec#*:}
  if [ ! -x "$bin_dir/$t" ] || ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz_long.sh: '$spec' is not TARGET:PROCESSES with a target built in $bin_dir" >&2
    exit 2
  fi
  targets+=("$t")
  mkdir -p "$out/corpus/$t" "$out/findings/$t" "$out/logs/$t"
  rm -f "$out/logs/$t"/*.log
  if [ -d "fuzz/regressions/$t" ] && [ -n "$(ls -A "fuzz/regressions/$t")" ]; then
    "$bin_dir/$t" -timeout=10 -rss_limit_mb="$rss" "fuzz/regressions/$t"/* >"$out/logs/$t/regressions.txt" 2>&1 || {
      echo "fuzz_long.sh: $t fails on its regression inputs (see $out/logs/$t/regressions.txt)" >&2
      exit 1
    }
  fi
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb="$rss" -print_final_stats=1
        -artifact_prefix="$out/findings/$t/")
  [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="fuzz/dict/$t.dict")
  seeds=()
  [ -d "fuzz/corpus/$t" ] && seeds+=("fuzz/corpus/$t")
  for ((p = 0; p < n; p++)); do
    # Each process its own seed, so they do not walk the same mutations.
    "$bin_dir/$t" "${args[@]}" -seed=$((1000 * p + 17)) "$out/corpus/$t" "${seeds[@]}" \
      >"$out/logs/$t/$p.log" 2>&1 &
  done
done
wait || true

failed=()
printf '%-24s %9s %14s %10s %8s %9s\n' target processes executions exec/s corpus findings
for t in "${targets[@]}"; do
  logs=("$out/logs/$t"/*.log)
  execs=$(cat "${logs[@]}" | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
  rate=$(cat "${logs[@]}" | sed -n 's/^stat::average_exec_per_sec: *//p' | awk '{s += $1} END {print s + 0}')
  ended=$(grep -l '^stat::number_of_executed_units' "${logs[@]}" | wc -l)
  size=$(find "$out/corpus/$t" -type f | wc -l)
  found=$(find "$out/findings/$t" -type f | wc -l)
  printf '%-24s %9s %14s %10s %8s %9s\n' "$t" "$ended/${#logs[@]}" "$execs" "$rate" "$size" "$found"
  # A process that ended without its final statistics crashed (or was killed): a finding too.
  if [ "$found" -gt 0 ] || [ "$ended" -ne "${#logs[@]}" ]; then failed+=("$t"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "findings (or processes that died) in: ${failed[*]} (logs under $out/logs)" >&2
  exit 1
fi
