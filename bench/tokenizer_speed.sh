#!/usr/bin/env bash
# Tokenizer speed, ours against the Hugging Face library (Node binding), one core each, on the
# same few MB of mixed text, for every tokenizer the conformance test fetched or built.
# Usage: bench/tokenizer_speed.sh BUILD_DIR OUT_DIR [MEGABYTES=4]
#   BUILD_DIR: a build tree whose `ctest -L tokenizer` has run (its conformance work dir holds the
#   tokenizer.json files); needs node and tools/tokenizer_oracle/node_modules.
set -euo pipefail
build=$1
out=$2
mb=${3:-4}
work=${IL_TOKENIZER_WORK:-$build/tests/text/tokenizer_oracle}  # override: another tree's work dir
[ -f "$work/manifest.json" ] || { echo "no $work/manifest.json: run ctest -L tokenizer in $build first" >&2; exit 2; }
mkdir -p "$out"
node bench/make_tokenizer_text.js "$out/text.txt" "$mb"
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
: >"$out/tokenizer_speed.jsonl"
for name in bert_base_uncased qwen3 llama3 gemma3 claude albert_30k spm_50k; do
  tok=$(node -e 'const m=require(process.argv[1]);const t=m.runs.map(r=>r.tokenizer).find(p=>require("path").basename(p).startsWith(process.argv[2]+"."));if(!t)process.exit(1);console.log(t)' \
    "$(realpath "$work/manifest.json")" "$name") || { echo "no tokenizer $name in the manifest" >&2; exit 1; }
  ours=$("${pin[@]}" "$build/inferencelayer" tokenize --model "$tok" --input "$out/text.txt" --bench)
  theirs=$(RAYON_NUM_THREADS=1 "${pin[@]}" node bench/tokenizer_oracle_speed.js "$tok" "$out/text.txt")
  echo "{\"tokenizer\":\"$name\",\"ours\":$ours,\"oracle\":$theirs}" | tee -a "$out/tokenizer_speed.jsonl"
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
console.log("| tokenizer | tokens | ours tokens/s | ours MB/s | oracle tokens/s | oracle MB/s | ratio | load ms (ours / oracle) |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const r of rows) {
  const same = r.ours.tokens === r.oracle.tokens ? "" : " (token counts differ!)";
  console.log(`| ${r.tokenizer} | ${r.ours.tokens}${same} | ${r.ours.tokens_per_s} | ${r.ours.mb_per_s} | ${r.oracle.tokens_per_s} | ${r.oracle.mb_per_s} | ${(r.ours.tokens_per_s / r.oracle.tokens_per_s).toFixed(2)}× | ${r.ours.load_ms} / ${r.oracle.load_ms} |`);
}' "$out/tokenizer_speed.jsonl" | tee "$out/tokenizer_speed.md"
