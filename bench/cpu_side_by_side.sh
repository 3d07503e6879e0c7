#!/usr/bin/env bash
# inferencelayer and PyTorch (transformers, fp32, SDPA) on the same CPU and the same random-weight
# model configs, in one run; writes JSON lines and a markdown table with the ratios.
# Usage: [CONFIGS="name ..."] bench/cpu_side_by_side.sh BINARY THREADS OUTDIR [GRID]   (names in bench/configs)
set -euo pipefail
bin=$1
threads=$2
out=$3
grid=${4:-1x16,1x32,1x64,8x128,32x128}
mkdir -p "$out"
: >"$out/cpu.jsonl"
for cfg in ${CONFIGS:-minilm-l6 bge-base}; do
  "$bin" bench --config "bench/configs/$cfg.json" --grid "$grid" --threads "$threads" \
    --warmup 3 --iters 20 --json | tee -a "$out/cpu.jsonl"
  python3 bench/torch_bench.py --config "bench/configs/$cfg.json" --device cpu --threads "$threads" \
    --dtype fp32 --attn sdpa --grid "$grid" --warmup 3 --iters 20 | tee -a "$out/cpu.jsonl"
done
python3 bench/compare.py "$out/cpu.jsonl" | tee "$out/cpu_table.md"
