#!/usr/bin/env python3
"""Summarises a bench/tools/cuda_trace.cc trace: per iteration (split at device-to-host copies)
the span from the first upload to the readback's end (or, in a trace without readbacks such as
bench/torch_bench.py's, between the pairs of cudaEventRecord calls that time each forward), the device's busy time, and the idle gaps
between consecutive device operations, split into gaps where the device waited for the host
(the next kernel started within 5 us of its launch call's return) and the others; then the
largest gaps on average and each kernel name's device time per iteration.

    trace_gaps.py TRACE.csv [--last N] [--by-config]

--by-config lists kernels per launch configuration (grid, block, cluster, dynamic shared
memory) with their mean time per launch, which tells apart the calls of one kernel.
"""
import argparse
import collections

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--last", type=int, default=10, help="iterations to average (the last ones)")
ap.add_argument("--by-config", action="store_true", help="kernels per launch configuration")
args = ap.parse_args()

ops, api = [], {}
for line in open(args.trace):
    f = line.rstrip("\n").split(",", 9 if line.startswith("K,") else 5)
    if f[0] == "K":
        name = f[9]
        if args.by_config:
            name += f"  [grid {f[5]} block {f[6]} cluster {f[7]} smem {f[8]}]"
        ops.append((int(f[1]), int(f[2]), int(f[3]), name))
    elif f[0] == "C":
        kind = {"1": "HtoD", "2": "DtoH", "8": "DtoD"}.get(f[4], "copy" + f[4])
        ops.append((int(f[1]), int(f[2]), int(f[3]), f"[{kind} {f[5]} B]"))
    elif f[0] == "A":
        api[int(f[3])] = (int(f[1]), int(f[2]), int(f[4]))
ops.sort()

iters, cur = [], []
for op in ops:
    cur.append(op)
    if op[3].startswith("[DtoH"):
        iters.append(cur)
        cur = []
if not iters:
    # Timed by events: each (start, end) pair of cudaEventRecord calls (runtime callback 135)
    # brackets one forward; a device operation belongs to the pair its launch call lies in.
    records = sorted(a[0] for a in api.values() if a[2] == 135)
    for lo, hi in zip(records[0::2], records[1::2]):
        it = [op for op in ops if op[2] in api and lo <= api[op[2]][0] <= hi]
        if it:
            iters.append(it)
iters = iters[-args.last:]
print(f"{len(ops)} device operations; averaging the last {len(iters)} iterations")


def short(name, n=70):
    return name if len(name) <= n else name[: n - 3] + "..."


gap_by_pos = collections.defaultdict(list)
kernel_time = collections.defaultdict(float)
totals = collections.Counter()
for it in iters:
    span = it[-1][1] - it[0][0]
    busy = sum(op[1] - op[0] for op in it)
    host_wait = other = 0
    for i, (a, b) in enumerate(zip(it, it[1:])):
        gap = max(0, b[0] - a[1])
        launched = api.get(b[2])
        starved = launched is not None and b[0] - launched[1] < 5000
        if starved:
            host_wait += gap
        else:
            other += gap
        gap_by_pos[i].append((gap, starved, a[3], b[3]))
    for op in it:
        kernel_time[op[3]] += (op[1] - op[0]) / len(iters)
    totals.update(span=span, busy=busy, host_wait=host_wait, other=other, ops=len(it))
    print(f"  span {span / 1e6:7.3f} ms  busy {busy / 1e6:7.3f}  gaps: waiting on the host {host_wait / 1e6:6.3f},"
          f" other {other / 1e6:6.3f}  ({len(it)} operations)")
n = max(1, len(iters))
print(f"mean: span {totals['span'] / n / 1e6:.3f} ms, busy {totals['busy'] / n / 1e6:.3f},"
      f" host-wait gaps {totals['host_wait'] / n / 1e6:.3f}, other gaps {totals['other'] / n / 1e6:.3f}")

print("\nlargest mean gaps (us; position; share of them waiting on the host; before -> after):")
means = []
for pos, v in gap_by_pos.items():
    means.append((sum(g[0] for g in v) / len(v), pos, sum(g[1] for g in v) / len(v), v[0][2], v[0][3]))
for m, pos, starved, a, b in sorted(means, reverse=True)[:20]:
    print(f"  {m / 1e3:8.2f}  #{pos:<4d} host {starved:4.0%}  {short(a, 50)} -> {short(b, 50)}")
small = [m for m, *_ in means]
print(f"gaps: {len(small)} per iteration, median {sorted(small)[len(small) // 2] / 1e3:.2f} us" if small else "")

calls = collections.Counter(op[3] for it in iters for op in it)
print("\ndevice time per iteration by kernel (ms; launches per iteration; mean ms a launch):")
for name, t in sorted(kernel_time.items(), key=lambda kv: -kv[1])[:25]:
    per = calls[name] / n
    print(f"  {t / 1e6:8.4f}  {per:5.1f}  {t / 1e6 / per:8.4f}  {short(name, 260)}")
