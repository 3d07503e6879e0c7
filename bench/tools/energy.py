#!/usr/bin/env python3
"""Power, SM clock and energy per forward of a benchmark run on an NVIDIA GPU (NVML).

    bench/tools/energy.py [--device N] [--label TEXT] [--tag KEY=VALUE ...] -- COMMAND ...

COMMAND is one point of `inferencelayer bench ... --json` or `bench/torch_bench.py ...`: it
prints a JSON line with "p50_ms". While it runs, the device's cumulative energy counter and SM
clock are read every 10 ms. The timed loop is the plateau: the longest run of consecutive
half-second windows whose mean power is at least 85 % of the loop's level (see `plateau`;
loading, tuning and start-up draw far less). Printed: the plateau's mean power and median SM clock, and joules per
forward = plateau power × p50 (for a loop that idles between forwards, as torch_bench.py's
synchronising one does a little, this undercounts). Give the command enough iterations for a
plateau of several seconds.

Why: on the H200 a large f16 batch holds the board at its power limit (700 W) and the SM clock
falls (about 1.5 GHz instead of 1.98) until the power fits, so there throughput follows the
energy a forward takes, which timings at full clock do not show (docs/perf-history.md).
Needs libnvidia-ml.so.1 (any machine with the NVIDIA driver).
"""
import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import threading
import time

NVML_CLOCK_SM = 1


class Nvml:
    def __init__(self, index):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._check(self.lib.nvmlInit_v2(), "nvmlInit_v2")
        self.handle = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)),
                    "nvmlDeviceGetHandleByIndex_v2")

    @staticmethod
    def _check(code, what):
        if code != 0:
            raise RuntimeError(f"{what} failed with NVML error {code}")

    def energy_mj(self):
        value = ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(value)),
                    "nvmlDeviceGetTotalEnergyConsumption")
        return value.value

    def sm_clock_mhz(self):
        value = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(value)),
                    "nvmlDeviceGetClockInfo")
        return value.value


def sample(nvml, stop, rows):
    while not stop.is_set():
        rows.append((time.monotonic(), nvml.energy_mj(), nvml.sm_clock_mhz()))
        time.sleep(0.01)


def plateau(rows):
    """(first, last) sample indices of the timed loop in `rows` of (time s, energy mJ, clock).

    Half-second windows (the counter advances in uneven steps of tens of milliseconds, so a
    single window can read high) give mean power from the counter. "Hot" windows draw at least
    85 % of the third-highest window's power (the loop's level, not one high reading); the
    plateau is the longest run of consecutive hot windows. A reference taken from the windows'
    upper quartile instead failed when the timed loop was under a quarter of the run (a model
    built on the GPU first): the idle windows then set the level and the plateau took in the
    whole run at idle clock.
    """
    windows, i = [], 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1][0] - rows[i][0] < 0.5:
            j += 1
        if j + 1 < len(rows):
            windows.append((i, j + 1, (rows[j + 1][1] - rows[i][1]) / 1000.0 / (rows[j + 1][0] - rows[i][0])))
        i = j + 1
    if len(windows) < 3:
        raise SystemExit("the run was too short to sample: give it more iterations")
    level = sorted((w[2] for w in windows), reverse=True)[2]
    best, run = None, []
    for w in windows + [None]:
        if w is not None and w[2] >= 0.85 * level:
            run.append(w)
            continue
        if run and (best is None or run[-1][1] - run[0][0] > best[-1][1] - best[0][0]):
            best = run
        run = []
    return best[0][0], best[-1][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", type=int, default=0, help="NVML device index")
    ap.add_argument("--label", default="")
    ap.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE",
                    help="extra field of the printed record (repeatable)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not cmd:
        ap.error("no command")
    nvml = Nvml(args.device)
    rows, stop = [], threading.Event()
    sampler = threading.Thread(target=sample, args=(nvml, stop, rows), daemon=True)
    sampler.start()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"command failed ({proc.returncode})")
    p50 = None
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            record = json.loads(line)
            p50 = record.get("p50_ms", p50)
    if p50 is None:
        raise SystemExit("the command printed no JSON line with p50_ms")
    first, last = plateau(rows)
    span = rows[last][0] - rows[first][0]
    watts = (rows[last][1] - rows[first][1]) / 1000.0 / span
    clock = statistics.median(r[2] for r in rows[first:last + 1])
    tags = dict(t.split("=", 1) for t in args.tag)
    print(json.dumps({
        **tags,
        "label": args.label,
        "p50_ms": round(p50, 4),
        "plateau_s": round(span, 1),
        "watts": round(watts, 1),
        "sm_clock_mhz": clock,
        "joules_per_forward": round(watts * p50 / 1000.0, 4),
    }))


if __name__ == "__main__":
    main()
