#!/usr/bin/env python3
"""Rewrites tests/fixtures/lfm2-colbert/1_Dense/model.safetensors without torch, and checks it.

make_lfm2_colbert_fixtures.py draws the Dense weight with torch.randn((24, 64),
generator=torch.Generator().manual_seed(2132)) * (1.2 / 8). The run that made the committed
fixture returned every file but the 1_Dense folder (the device transfer left that folder out), so
the weight was recomputed here: torch's CPU randn for a contiguous float tensor of 16 or more
values draws one mt19937 output per value (its low 24 bits / 2^24), then turns each block of 16
into normals by Box-Muller (u1 = 1 - data[j], u2 = data[j + 8], j < 8). The result is checked
against the fixture's own record: the first query's last hidden state through this weight, each
row L2-normalised, must give the recorded token vectors (max-abs 1.4e-7 when it was made).

    python3 tools/oracle/rebuild_lfm2_colbert_dense.py tests/fixtures/lfm2-colbert
"""

import json
import math
import struct
import sys
from pathlib import Path

SEED = 2132  # make_lfm2_colbert_fixtures.SEED + 1
OUT, IN = 24, 64


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class MT19937:
    def __init__(self, seed):
        self.mt = [seed & 0xFFFFFFFF]
        for i in range(1, 624):
            p = self.mt[-1]
            self.mt.append((1812433253 * (p ^ (p >> 30)) + i) & 0xFFFFFFFF)
        self.i = 624

    def next(self):
        mt = self.mt
        if self.i >= 624:
            for k in range(624):
                y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7FFFFFFF)
                mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            self.i = 0
        y = mt[self.i]
        self.i += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y & 0xFFFFFFFF


def torch_randn(seed, n):
    assert n % 16 == 0
    g = MT19937(seed)
    d = [f32((g.next() & 0xFFFFFF) * 2.0 ** -24) for _ in range(n)]
    for i in range(0, n, 16):
        for j in range(8):
            r = math.sqrt(-2 * math.log(1 - d[i + j]))
            th = 2 * math.pi * d[i + j + 8]
            d[i + j], d[i + j + 8] = f32(r * math.cos(th)), f32(r * math.sin(th))
    return d


def main():
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/lfm2-colbert")
    w = [f32(v * f32(1.2 / math.sqrt(IN))) for v in torch_randn(SEED, OUT * IN)]
    e = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    q = e["queries"][0]
    worst = 0.0
    for h, v in zip(q["hidden"], q["vectors"]):
        y = [sum(w[o * IN + k] * h[k] for k in range(IN)) for o in range(OUT)]
        n = math.sqrt(sum(t * t for t in y))
        worst = max(worst, max(abs(y[o] / n - v[o]) for o in range(OUT)))
    print(f"recorded vectors reproduced within {worst:.3g}")
    if worst > 1e-5:
        raise SystemExit("the recomputed weight does not give the recorded vectors")
    data = struct.pack(f"<{len(w)}f", *w)
    header = json.dumps({"linear.weight": {"dtype": "F32", "shape": [OUT, IN], "data_offsets": [0, len(data)]}}).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    (folder / "1_Dense").mkdir(exist_ok=True)
    (folder / "1_Dense" / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + data)
    (folder / "1_Dense" / "config.json").write_text(json.dumps(
        {"in_features": IN, "out_features": OUT, "bias": False,
         "activation_function": "torch.nn.modules.linear.Identity"}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
