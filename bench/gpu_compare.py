#!/usr/bin/env python3
"""The GPU ratio table: joins `inferencelayer bench --json` lines, `bench/torch_bench.py` lines and
the memory records of bench/gpu_bench.sh (one JSONL file or stdin) by model, precision (ours
f32 ↔ torch fp32, f16 ↔ fp16, bf16 ↔ bf16) and point. Fixed points compare p50 latency of the
same batch shape; the mixed point compares throughput in real tokens per second, since the two
harnesses draw their lengths from the same range with different generators (and PyTorch pads)."""
import sys

from compare import read_json_lines  # bench/ is on the path: it holds this script

TORCH = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}


def point(r):
    return "mixed" if r.get("mixed") else f"{r['batch']}x{r['len']}"


def main():
    rows = read_json_lines(sys.argv[1:])
    mem = {(r["model"], r["dtype"]): r["mib"] for r in rows if r.get("memory") == "ours"}
    torch = {(r["model"], r["dtype"], point(r)): r for r in rows if r.get("impl") == "torch" and "p50_ms" in r}
    print("| model | dtype | point | ours p50 ms | ours tok/s | PyTorch SDPA p50 ms | PyTorch tok/s | speed-up | "
          "memory ours / PyTorch MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for o in rows:
        if o.get("impl") != "inferencelayer":
            continue
        d = o["dtype"]
        t = torch.get((o["model"], TORCH.get(d, d), point(o)))
        pt = point(o)
        label = pt if pt != "mixed" else f"mixed {o['batch']}×{o['mixed'][0]}–{o['mixed'][1]}"
        ours = f"{o['p50_ms']:.3f} | {o['tokens_per_s']:.0f}"
        m = mem.get((o["model"], d))
        if t is None:
            print(f"| {o['model']} | {d} | {label} | {ours} | — | — | — | {m or '—'} / — |")
            continue
        if pt == "mixed":
            ratio = o["tokens_per_s"] / t["tokens_per_s"]
        else:
            ratio = t["p50_ms"] / o["p50_ms"]
        print(f"| {o['model']} | {d} | {label} | {ours} | {t['p50_ms']:.3f} | {t['tokens_per_s']:.0f} | "
              f"{ratio:.2f}× | {m or '—'} / {t.get('peak_mem_mb', '—')} |")
    # Records of bench/tools/energy.py (tagged by gpu_bench.sh), when it ran.
    energy = {(r["model"], r["dtype"], r["point"], r["energy"]): r for r in rows if "energy" in r}
    keys = sorted({k[:3] for k in energy})
    if keys:
        print()
        print("| model | dtype | point | ours W / SM MHz / J a forward | PyTorch W / SM MHz / J a forward | "
              "energy PyTorch / ours |")
        print("| --- | --- | --- | --- | --- | --- |")
        for k in keys:
            o, t = energy.get(k + ("ours",)), energy.get(k + ("torch",))
            cell = lambda r: "—" if r is None else f"{r['watts']:.0f} / {r['sm_clock_mhz']:.0f} / {r['joules_per_forward']:.2f}"
            ratio = f"{t['joules_per_forward'] / o['joules_per_forward']:.2f}×" if o and t else "—"
            print(f"| {k[0]} | {k[1]} | {k[2]} | {cell(o)} | {cell(t)} | {ratio} |")


if __name__ == "__main__":
    main()
