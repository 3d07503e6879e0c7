#!/usr/bin/env bash
# Ours and PyTorch side by side on the GPU machine, in one call:
#   bench/gpu_bench.sh BIN_DIR [CONFIG...]     (run from the repository root)
# BIN_DIR holds the `inferencelayer` binary. For each config (default: the three of issue #4)
# and each precision (ours f32 vs torch fp32 SDPA, ours f16 vs torch fp16 SDPA), it times the
# points 1x16, 32x128, 128x256 and a mixed batch of $MIXED (B:min:max lengths, fixed seeds; PyTorch
# pads it to the longest, we do not), records device memory (ours: the executor's allocation,
# printed with IL_CUDA_MEMORY=1; torch: max_memory_allocated), and prints the ratio table
# (bench/gpu_compare.py). Logs and JSON lines go under $OUT (default ./out/bench), and all of them
# again in $OUT/bench-logs.tgz.
# Then, with ENERGY=1 (the default) and f16 among DTYPES, power, SM clock and joules per forward of
# both sides at ENERGY_POINT (default 128x256), about ENERGY_SECONDS (5) of forwards each.
# Knobs: ITERS (ours, default 50), TORCH_ITERS (default 10), DTYPES (default "f32 f16").
set -uo pipefail
bin=${1:?usage: bench/gpu_bench.sh BIN_DIR [CONFIG...]}
shift
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(bench/configs/minilm-l6.json bench/configs/bge-base.json bench/configs/xlmr-large-reranker.json)
root=$(pwd)
out=${OUT:-$root/out/bench}
mkdir -p "$out"
for lib in /usr/local/cuda/lib64 "$root/.gpu/lib"; do
  [ -d "$lib" ] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
grid=${GRID:-1x16,32x128,128x256}
mixed=${MIXED:-64:8:512}
iters=${ITERS:-50}
torch_iters=${TORCH_ITERS:-10}
dtypes=${DTYPES:-f32 f16}
results="$out/results.jsonl"
: > "$results"
declare -A torch_dtype=([f32]=fp32 [f16]=fp16 [bf16]=bf16)
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .json)
  for d in $dtypes; do
    IL_CUDA_MEMORY=1 "$bin/inferencelayer" bench --config "$cfg" --grid "$grid" --mixed "$mixed" --device cuda \
      --dtype "$d" --iters "$iters" --json > "$out/ours-$name-$d.jsonl" 2> "$out/ours-$name-$d.err"
    echo "ours $name $d: exit $?" >> "$out/status.txt"
    # The memory line (stderr) joins the results as one record per run.
    mem=$(sed -n 's/.*: \([0-9.]*\) MiB of device memory.*/\1/p' "$out/ours-$name-$d.err" | head -n 1)
    cat "$out/ours-$name-$d.jsonl" >> "$results"
    [ -n "$mem" ] && echo "{\"memory\": \"ours\", \"model\": \"$name\", \"dtype\": \"$d\", \"mib\": $mem}" >> "$results"
    python3 bench/torch_bench.py --config "$cfg" --device cuda --dtype "${torch_dtype[$d]}" --attn sdpa --grid "$grid" \
      --mixed "$mixed" --iters "$torch_iters" > "$out/torch-$name-$d.jsonl" 2> "$out/torch-$name-$d.err"
    echo "torch $name $d: exit $?" >> "$out/status.txt"
    cat "$out/torch-$name-$d.jsonl" >> "$results"
  done
done
# Power, SM clock and energy per forward at one point, both sides (bench/tools/energy.py): a large
# f16 batch holds the H200 at its power limit, where the clock, not only the kernels, sets the
# pace. Each side runs about ENERGY_SECONDS of forwards, counted from its p50 above.
if [ "${ENERGY:-1}" = 1 ] && [[ " $dtypes " == *" f16 "* ]]; then
  epoint=${ENERGY_POINT:-128x256}
  for cfg in "${configs[@]}"; do
    name=$(basename "$cfg" .json)
    for side in ours torch; do
      p50=$(python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get('impl') == ('inferencelayer' if sys.argv[2] == 'ours' else 'torch') and r.get('model') == sys.argv[3] \
            and r.get('dtype') in ('f16', 'fp16') and not r.get('mixed') and f\"{r['batch']}x{r['len']}\" == sys.argv[4]:
        print(r['p50_ms'])
        break" "$results" "$side" "$name" "$epoint")
      [ -z "$p50" ] && continue
      n=$(python3 -c "import math, sys; print(max(20, math.ceil(1000 * float(sys.argv[2]) / float(sys.argv[1]))))" "$p50" "${ENERGY_SECONDS:-5}")
      if [ "$side" = ours ]; then
        cmd=("$bin/inferencelayer" bench --config "$cfg" --grid "$epoint" --device cuda --dtype f16 --warmup 10 --iters "$n" --json)
      else
        cmd=(python3 bench/torch_bench.py --config "$cfg" --device cuda --dtype fp16 --attn sdpa --grid "$epoint" --warmup 5 --iters "$n")
      fi
      python3 bench/tools/energy.py --label "$side" --tag energy="$side" --tag model="$name" --tag dtype=f16 \
        --tag point="$epoint" -- "${cmd[@]}" >> "$results" 2> "$out/energy-$name-$side.err"
      echo "energy $side $name: exit $?" >> "$out/status.txt"
    done
  done
fi
python3 bench/gpu_compare.py "$results" | tee "$out/table.md"
# The device tool brings back a limited number of files: everything above, in one archive too.
archive=$(mktemp) && tar -czf "$archive" -C "$out" . && mv "$archive" "$out/bench-logs.tgz"
