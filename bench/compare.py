#!/usr/bin/env python3
"""Joins JSON lines from `inferencelayer bench --json` and `bench/torch_bench.py` (one file or
stdin) into a markdown table with the ratio of our throughput to PyTorch's per grid point."""
import json
import sys


def key(r):
    return (r["model"], r.get("device", "cpu"), r["threads"], r["batch"], r["len"])


def read_json_lines(paths):
    """Every JSON object line of the files (or stdin for "-" or no path); other lines skipped."""
    rows = []
    for path in paths or ["-"]:
        stream = sys.stdin if path == "-" else open(path)
        for line in stream:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def main():
    rows = read_json_lines(sys.argv[1:])
    rows = [r for r in rows if "impl" in r]  # skip environment lines (torch_bench prints one)
    ours = {key(r): r for r in rows if r["impl"] == "inferencelayer"}
    torch = {}
    for r in rows:
        if r["impl"] == "torch":
            torch.setdefault(key(r), []).append(r)
    print("| model | threads | batch × len | inferencelayer p50 ms | tok/s | PyTorch (dtype, attn) p50 ms | tok/s | speed-up |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for k in sorted(ours, key=lambda k: (k[0], k[2], k[3], k[4])):
        o = ours[k]
        for t in torch.get(k, [None]):
            if t is None:
                print(f"| {k[0]} | {k[2]} | {k[3]}×{k[4]} | {o['p50_ms']:.3f} | {o['tokens_per_s']:.0f} | — | — | — |")
                continue
            ratio = t["p50_ms"] / o["p50_ms"]
            label = f"{t.get('dtype', 'fp32')}, {t.get('attn', 'sdpa')}"
            print(f"| {k[0]} | {k[2]} | {k[3]}×{k[4]} | {o['p50_ms']:.3f} | {o['tokens_per_s']:.0f} | "
                  f"{t['p50_ms']:.3f} ({label}) | {t['tokens_per_s']:.0f} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
