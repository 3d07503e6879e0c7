#!/usr/bin/env python3
"""Load test of a generating `inferencelayer serve`: C concurrent streaming clients on
/v1/completions, each sending R requests one after another (a prompt of token ids, max_tokens
forced with ignore_eos, stream_options.continuous_usage_stats so every token is a chunk).

Per concurrency it prints one JSON line: requests, errors, wall seconds, generated tokens/s,
time to first token p50/p99 and inter-token latency p50/p99 (ms, from the chunks' arrival),
and the device memory before/after when nvidia-smi is there. Standard library only.

    python3 bench/load_generate.py --url http://127.0.0.1:8080 --concurrency 1,16,64,256 \\
        --requests 2 --prompt-tokens 1811 --max-tokens 128

The prompt ids are those of `inferencelayer bench-generate --text-tokens N` (the offline figure of
the same engine on the same prompts).

With --image PAGE.png the requests are page images instead: /v1/chat/completions with the image as
a base64 data URI and --task's text (the server needs a tokenizer and chat template: serve
--config with --tokenizer, e.g. bench/tools/make_glm_load_tokenizer.py's folder); each point then
also reports pages per minute.
"""

import argparse
import base64
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse


def prompt_ids(n, id_range):
    return [100 + (i * 7919) % id_range for i in range(n)]


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(q / 100.0 * (len(v) - 1)))))
    return v[k]


def device_memory_mib():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
        return int(out.strip().splitlines()[0])
    except Exception:
        return None


def one_request(host, port, path, body, stats, lock):
    start = time.perf_counter()
    conn = http.client.HTTPConnection(host, port, timeout=600)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        res = conn.getresponse()
        if res.status != 200:
            res.read()
            with lock:
                stats["errors"] += 1
                stats["statuses"][res.status] = stats["statuses"].get(res.status, 0) + 1
            return
        last = None
        tokens = 0
        itl = []
        ttft = None
        while True:
            line = res.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            payload = line[6:]
            if payload == b"[DONE]":
                break
            now = time.perf_counter()
            chunk = json.loads(payload)
            choice = chunk["choices"][0] if chunk.get("choices") else None
            # A token's chunk: a completion's text, or a chat delta holding content (the first one
            # also names the role; a delta with the role alone holds no token).
            if choice is not None and choice.get("finish_reason") is None and \
                    ("delta" not in choice or choice["delta"].get("content") is not None):
                if ttft is None:
                    ttft = now - start
                elif last is not None:
                    itl.append(now - last)
                last = now
            if "usage" in chunk and chunk["usage"]:
                tokens = chunk["usage"]["completion_tokens"]
        with lock:
            stats["tokens"] += tokens
            stats["requests"] += 1
            if ttft is not None:
                stats["ttft"].append(ttft)
            stats["itl"].extend(itl)
    except Exception as e:  # a dropped connection is an error of the run
        with lock:
            stats["errors"] += 1
            stats["exceptions"].append(repr(e)[:200])
    finally:
        conn.close()


def run_point(url, concurrency, requests, path, body):
    u = urllib.parse.urlparse(url)
    stats = {"tokens": 0, "requests": 0, "errors": 0, "ttft": [], "itl": [], "statuses": {}, "exceptions": []}
    lock = threading.Lock()

    def client():
        for _ in range(requests):
            one_request(u.hostname, u.port, path, body, stats, lock)

    mem_before = device_memory_mib()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    mem_after = device_memory_mib()
    ms = lambda v: None if v is None else round(v * 1000.0, 2)  # noqa: E731
    return {
        "concurrency": concurrency,
        "requests": stats["requests"],
        "errors": stats["errors"],
        "statuses": stats["statuses"],
        "exceptions": stats["exceptions"][:3],
        "wall_s": round(wall, 3),
        "tokens_per_s": round(stats["tokens"] / wall, 1) if wall > 0 else None,
        "requests_per_min": round(stats["requests"] * 60.0 / wall, 1) if wall > 0 else None,
        "ttft_ms_p50": ms(percentile(stats["ttft"], 50)),
        "ttft_ms_p99": ms(percentile(stats["ttft"], 99)),
        "itl_ms_p50": ms(percentile(stats["itl"], 50)),
        "itl_ms_p99": ms(percentile(stats["itl"], 99)),
        "itl_ms_mean": ms(statistics.fmean(stats["itl"])) if stats["itl"] else None,
        "device_mib_before": mem_before,
        "device_mib_after": mem_after,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--concurrency", default="1,16,64,256")
    ap.add_argument("--requests", type=int, default=2, help="requests per client, one after another")
    ap.add_argument("--prompt-tokens", type=int, default=1811)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--id-range", type=int, default=50000, help="prompt ids are 100 + (i * 7919) %% this")
    ap.add_argument("--image", help="a page image: chat completions with it instead of token-id prompts")
    ap.add_argument("--task", default="Text Recognition:", help="the text after the image (with --image)")
    a = ap.parse_args()
    common = {"max_tokens": a.max_tokens, "ignore_eos": True, "stream": True,
              "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    if a.image:
        data = base64.b64encode(open(a.image, "rb").read()).decode()
        kind = "jpeg" if a.image.lower().endswith((".jpg", ".jpeg")) else "png"
        content = [{"type": "image_url", "image_url": {"url": "data:image/%s;base64,%s" % (kind, data)}},
                   {"type": "text", "text": a.task}]
        path, body = "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": content}], **common})
    else:
        path, body = "/v1/completions", json.dumps({"prompt": prompt_ids(a.prompt_tokens, a.id_range), **common})
    if a.warmup:
        run_point(a.url, 4, 1, path, body)
    for c in [int(x) for x in a.concurrency.split(",")]:
        print(json.dumps(run_point(a.url, c, a.requests, path, body)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
