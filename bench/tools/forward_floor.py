#!/usr/bin/env python3
"""PyTorch's side of the forward-floor measurement (tests/gpu/forward_floor_timing_test.cc).

    bench/tools/forward_floor.py [--seconds 2] [--runs 100]

Builds bge-base's f16 trunk at 128 x 256 tokens up part by part from the kernels a transformers
BertModel forward launches — separate q / k / v / output / up / down linears (cuBLAS), then
scaled_dot_product_attention, then erf-GELU, then residual add + layer norm — and times each stage
after `--seconds` of back-to-back forwards, so every figure is taken where a long bulk run sits
(on the H200: at the 700 W power cap), then each part alone. Prints ms, watts (NVML energy
counter, over at least a second of timed runs) and joules. Every layer computes every row, as
transformers does.

Two sets of operands, as in the C++ test: the statistics of the bench's random model (every tensor
N(0, 0.02), norm weights 1 + N(0, 0.02), unit-variance hidden states), and uniform values. One
weight set is shared by all layers.
"""
import argparse
import ctypes
import time

import torch
import torch.nn.functional as F

SEQS, LEN, HIDDEN, HEADS, HEAD_DIM, FF, LAYERS = 128, 256, 768, 12, 64, 3072, 12
STAGES = ["GEMMs only (cuBLAS)", "+ attention (SDPA)", "+ erf-GELU", "+ add & layer norm = the trunk"]


def nvml_energy():
    """A function returning the device's energy counter in joules, or None without NVML."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        handle = ctypes.c_void_p()
        if lib.nvmlInit_v2() != 0 or lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) != 0:
            return None
    except OSError:
        return None

    def read():
        value = ctypes.c_ulonglong()
        if lib.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(value)) != 0:
            return None
        return value.value / 1000.0
    return read


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    dev, dt = "cuda", torch.float16
    g = torch.Generator(device=dev).manual_seed(0)

    def rand(*shape, scale=1.0, mean=0.0, normal=False):
        r = torch.randn(*shape, generator=g, device=dev) if normal else \
            torch.rand(*shape, generator=g, device=dev) * 2 - 1
        return (mean + r * scale).to(dt)

    # name, normal, input, weight, down weight, bias, norm weight mean, norm weight, norm bias
    data_sets = [("bench model (N(0, 0.02) weights)", True, 1.0, 0.02, 0.02, 0.02, 1.0, 0.02, 0.02),
                 ("uniform (weights ±0.06)", False, 1.0, 0.06, 0.03, 0.1, 0.0, 0.2, 0.1)]
    energy = nvml_energy()
    start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for data_name, normal, s_in, s_w, s_wd, s_b, ln_mean, s_lnw, s_lnb in data_sets:
        def r(*shape, scale, mean=0.0):
            return rand(*shape, scale=scale, mean=mean, normal=normal)
        x = r(SEQS, LEN, HIDDEN, scale=s_in)
        weights = dict(
            wq=r(HIDDEN, HIDDEN, scale=s_w), wk=r(HIDDEN, HIDDEN, scale=s_w), wv=r(HIDDEN, HIDDEN, scale=s_w),
            wo=r(HIDDEN, HIDDEN, scale=s_w), bq=r(HIDDEN, scale=s_b), bk=r(HIDDEN, scale=s_b),
            bv=r(HIDDEN, scale=s_b), bo=r(HIDDEN, scale=s_b), wu=r(FF, HIDDEN, scale=s_w), bu=r(FF, scale=s_b),
            wd=r(HIDDEN, FF, scale=s_wd), bd=r(HIDDEN, scale=s_b), ln_w=r(HIDDEN, scale=s_lnw, mean=ln_mean),
            ln_b=r(HIDDEN, scale=s_lnb))
        run_stages(data_name, x, weights, energy, start_ev, end_ev, args)


def heads(t):
    return t.view(SEQS, LEN, HEADS, HEAD_DIM).transpose(1, 2)


def run_stages(data_name, x, w, energy, start_ev, end_ev, args):
    wq, wk, wv, wo, bq, bk, bv, bo = (w[k] for k in ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"))
    wu, bu, wd, bd, ln_w, ln_b = (w[k] for k in ("wu", "bu", "wd", "bd", "ln_w", "ln_b"))

    def forward(stage):
        h = x
        for _ in range(LAYERS):
            q, k, v = F.linear(h, wq, bq), F.linear(h, wk, bk), F.linear(h, wv, bv)
            if stage >= 1:
                ctx = F.scaled_dot_product_attention(heads(q), heads(k), heads(v))
                ctx = ctx.transpose(1, 2).reshape(SEQS, LEN, HIDDEN)
            else:
                ctx = q
            a = F.linear(ctx, wo, bo)
            h1 = F.layer_norm(a + h, (HIDDEN,), ln_w, ln_b, 1e-12) if stage >= 3 else a
            u = F.linear(h1, wu, bu)
            if stage >= 2:
                u = F.gelu(u)
            d = F.linear(u, wd, bd)
            h = F.layer_norm(d + h1, (HIDDEN,), ln_w, ln_b, 1e-12) if stage >= 3 else d
        return h

    with torch.inference_mode():
        for stage, name in enumerate(STAGES):
            forward(stage)
            torch.cuda.synchronize()
            t0, warm = time.monotonic(), 0
            while time.monotonic() - t0 < args.seconds:
                for _ in range(10):
                    forward(stage)
                torch.cuda.synchronize()
                warm += 10
            runs = max(args.runs, int(warm / args.seconds))  # at least a second of timed runs
            j0 = energy() if energy else None
            start_ev.record()
            for _ in range(runs):
                forward(stage)
            end_ev.record()
            end_ev.synchronize()
            j1 = energy() if energy else None
            ms = start_ev.elapsed_time(end_ev) / runs
            if j0 is not None and j1 is not None:
                joules = (j1 - j0) / runs
                print(f"[forward floor] torch {torch.__version__} bge-base f16 128x256, {data_name}: {name:<32} {ms:7.3f} ms a forward"
                      f"  {joules / (ms * 1e-3):6.0f} W  {joules:6.2f} J a forward", flush=True)
            else:
                print(f"[forward floor] torch bge-base f16 128x256, {data_name}: {name:<32} {ms:7.3f} ms a forward", flush=True)

        # Parts alone, a forward's worth of calls each, on values of the trunk's first layer.
        h = x
        q, k, v = F.linear(h, wq, bq), F.linear(h, wk, bk), F.linear(h, wv, bv)
        a = F.linear(F.scaled_dot_product_attention(heads(q), heads(k), heads(v)).transpose(1, 2)
                     .reshape(SEQS, LEN, HIDDEN), wo, bo)
        h1 = F.layer_norm(a + h, (HIDDEN,), ln_w, ln_b, 1e-12)
        u = F.linear(h1, wu, bu)
        d = F.linear(F.gelu(u), wd, bd)
        parts = [
            ("attention (SDPA, 12)", lambda: [F.scaled_dot_product_attention(heads(q), heads(k), heads(v))
                                              for _ in range(LAYERS)]),
            ("attention (SDPA + head merge, 12)", lambda: [
                F.scaled_dot_product_attention(heads(q), heads(k), heads(v)).transpose(1, 2).reshape(SEQS, LEN, HIDDEN)
                for _ in range(LAYERS)]),
            ("add & layer norm (24)", lambda: [(F.layer_norm(a + h, (HIDDEN,), ln_w, ln_b, 1e-12),
                                                F.layer_norm(d + h1, (HIDDEN,), ln_w, ln_b, 1e-12))
                                               for _ in range(LAYERS)]),
            ("up-projections (12)", lambda: [F.linear(h1, wu, bu) for _ in range(LAYERS)]),
            ("up-projections + erf-GELU (12)", lambda: [F.gelu(F.linear(h1, wu, bu)) for _ in range(LAYERS)]),
        ]
        for name, part in parts:
            part()
            torch.cuda.synchronize()
            t0, warm = time.monotonic(), 0
            while time.monotonic() - t0 < args.seconds:
                for _ in range(10):
                    part()
                torch.cuda.synchronize()
                warm += 10
            runs = max(args.runs, int(warm / args.seconds))
            j0 = energy() if energy else None
            start_ev.record()
            for _ in range(runs):
                part()
            end_ev.record()
            end_ev.synchronize()
            j1 = energy() if energy else None
            ms = start_ev.elapsed_time(end_ev) / runs
            line = f"[forward floor] torch bge-base f16 128x256, {data_name}: alone, {name:<34} {ms:7.3f} ms"
            if j0 is not None and j1 is not None:
                joules = (j1 - j0) / runs
                line += f"  {joules / (ms * 1e-3):6.0f} W  {joules:6.2f} J"
            print(line, flush=True)


if __name__ == "__main__":
    main()
