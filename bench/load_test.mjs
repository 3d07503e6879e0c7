// A bounded loopback load test of `inferencelayer serve`: starts the server on a free port,
// warms it up, then fires concurrent mixed requests for a fixed time and reports throughput,
// p50 / p99 latency per route, answers by status, and the server's RSS before and after, with
// every 5 s where it lies (malloc heap / arenas, thread stacks, other), the thread count and the
// CUDA graphs captured.
// It stops by itself (--seconds), talks to 127.0.0.1 only, and needs nothing but Node 18+.
//
//   node bench/load_test.mjs --bin build/inferencelayer --model DIR [--seconds 20]
//        [--concurrency 32] [--mix short] [--markdown] [-- extra serve options...]
//   node bench/load_test.mjs --config bench/configs/bge-base.json --tokenizer tests/fixtures/bert-mean ...
//        (random weights of a real model's shape: `serve --config`)
//   ... [--metrics-out FILE]: the server's /metrics text at the end of the run, written to FILE
//   ... [--idle N] [--slow N]: during the run, also hold N connections that never send anything
//        and N that send a request head one byte every 500 ms (both reopened whenever the server
//        closes them), to show that they do not slow the others down (raise `ulimit -n` first).
//
// --mix short: only single short /embed texts (3-12 words, truncated at the model's maximum); --mix mixed (default): /embed
// single and batched, /v1/embeddings, /tokenize, /embed_all, /health and /metrics (or /rerank,
// /predict and /v1/rerank for a cross-encoder). Exit status 1 when any answer was neither 2xx
// nor a deliberate 429.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';

function parseArgs(argv) {
  const o = { bin: 'build/inferencelayer', model: '', config: '', tokenizer: '', seconds: 20, concurrency: 32, mix: 'mixed',
              warmup: 200, markdown: false, extra: [], idle: 0, slow: 0, metricsOut: '' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') { o.extra = argv.slice(i + 1); break; }
    if (a === '--markdown') { o.markdown = true; continue; }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    if (a === '--bin') o.bin = v;
    else if (a === '--model') o.model = v;
    else if (a === '--config') o.config = v;
    else if (a === '--tokenizer') o.tokenizer = v;
    else if (a === '--seconds') o.seconds = Number(v);
    else if (a === '--concurrency') o.concurrency = Number(v);
    else if (a === '--mix') o.mix = v;
    else if (a === '--warmup') o.warmup = Number(v);
    else if (a === '--idle') o.idle = Number(v);
    else if (a === '--slow') o.slow = Number(v);
    else if (a === '--metrics-out') o.metricsOut = v;
    else throw new Error(`unknown option ${a}`);
  }
  if (!o.model === !o.config) throw new Error('give --model DIR or --config FILE (with --tokenizer DIR)');
  return o;
}

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

// Where the server's resident memory is, to tell which part grows (a plateau or a leak, and of
// what): the main malloc heap, the other malloc arenas (their heaps start 64 MiB-aligned),
// thread stacks (8 MiB anonymous mappings), other anonymous memory (weights, large blocks),
// files; plus the number of threads. From /proc/PID/smaps (Linux), in MiB.
function memoryBreakdown(pid) {
  const parts = { heap: 0, arenas: 0, stacks: 0, anon: 0, files: 0 };
  let kind = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      const start = BigInt(`0x${m[1]}`), size = BigInt(`0x${m[2]}`) - start, path = m[3];
      if (path === '[heap]') kind = 'heap';
      else if (path.startsWith('/')) kind = 'files';
      else if (path) kind = null;  // [stack], [vdso], ...
      else if (start % (64n << 20n) === 0n) kind = 'arenas';
      else if (size === 8n << 20n || size === (8n << 20n) - 4096n) kind = 'stacks';
      else kind = 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && kind) parts[kind] += Number(rss[1]);
  }
  const out = {};
  for (const [k, v] of Object.entries(parts)) out[k] = Math.round(v / 102.4) / 10;
  out.threads = Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  return out;
}

const WORDS = ('the quick brown fox jumps over a lazy dog while searching for relevant documents about ' +
  'embedding models vector databases and reranking pipelines in production systems').split(' ');
// mulberry32: a seeded generator, so two runs send the same requests.
let seed = 12345;
function rand(n) {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
}
function sentence(minWords, maxWords) {
  const n = minWords + rand(maxWords - minWords + 1);
  return Array.from({ length: n }, () => WORDS[rand(WORDS.length)]).join(' ');
}

// Request makers by route: [method, path, body-or-null].
function makers(kind, mix) {
  // Short: a few words, cut at the model's maximum like a real client with truncate on.
  const short = () => ['POST', '/embed', { inputs: sentence(3, 12), truncate: true }];
  if (mix === 'short') return [short];
  if (kind === 'embedding') {
    return [
      short, short, short,
      () => ['POST', '/embed', { inputs: Array.from({ length: 1 + rand(16) }, () => sentence(5, 40)), truncate: true }],
      () => ['POST', '/v1/embeddings', { input: Array.from({ length: 1 + rand(4) }, () => sentence(3, 12)), model: 'x' }],
      () => ['POST', '/tokenize', { inputs: sentence(3, 30) }],
      () => ['POST', '/embed_all', { inputs: sentence(3, 12), truncate: true }],
      () => ['GET', '/health', null],
      () => ['GET', '/metrics', null],
    ];
  }
  const docs = () => Array.from({ length: 1 + rand(8) }, () => sentence(5, 30));
  return [
    () => ['POST', '/rerank', { query: sentence(3, 10), texts: docs(), truncate: true }],
    () => ['POST', '/rerank', { query: sentence(3, 10), texts: docs(), truncate: true }],
    () => ['POST', '/v1/rerank', { query: sentence(3, 10), documents: docs(), top_n: 3 }],
    () => ['POST', '/predict', { inputs: [sentence(3, 10), sentence(5, 20)], truncate: true }],
    () => ['POST', '/tokenize', { inputs: sentence(3, 30) }],
    () => ['GET', '/health', null],
  ];
}

function request(agent, port, [method, path, body]) {
  return new Promise((resolve) => {
    const data = body ? JSON.stringify(body) : null;
    const start = process.hrtime.bigint();
    const req = http.request({ host: '127.0.0.1', port, method, path, agent,
      headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {} },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve({ path, status: res.statusCode, ms: Number(process.hrtime.bigint() - start) / 1e6 }));
      });
    req.on('error', (e) => resolve({ path, status: `error ${e.code || e.message}`, ms: Number(process.hrtime.bigint() - start) / 1e6 }));
    if (data) req.write(data);
    req.end();
  });
}

// The server's il_cuda_graphs gauge (CUDA graphs captured so far; 0 on the CPU), or null.
function cudaGraphs(port) {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let b = '';
      res.on('data', (d) => (b += d));
      res.on('end', () => {
        const m = /^il_cuda_graphs (\d+)$/m.exec(b);
        resolve(m ? Number(m[1]) : null);
      });
    }).on('error', () => resolve(null));
  });
}

// The whole /metrics text ('' when it cannot be read).
function metricsText(port) {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let b = '';
      res.on('data', (d) => (b += d));
      res.on('end', () => resolve(b));
    }).on('error', () => resolve(''));
  });
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function startServer(o) {
  const model = o.model ? ['--model', o.model] : ['--config', o.config, ...(o.tokenizer ? ['--tokenizer', o.tokenizer] : [])];
  const args = ['serve', ...model, '--port', '0', ...o.extra];
  const child = spawn(o.bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code} before listening`)));
    setTimeout(() => reject(new Error('server did not start within 120 s')), 120000);
  });
  return { child, port };
}

// Connections that hold the server's attention without a request: `idle` ones never send, `slow`
// ones trickle a request head. Each is reopened when the server closes it (keep-alive and head
// timeouts); the counts of opens tell how often that happened.
function holdConnections(port, idle, slow) {
  const state = { stop: false, opens: 0, open: 0, sockets: new Set(), timers: new Set() };
  const head = 'POST /embed HTTP/1.1\r\nHost: load\r\nContent-Type: application/json\r\nX-Slow: ';
  const open = (trickle) => {
    if (state.stop) return;
    const s = net.connect({ host: '127.0.0.1', port });
    state.opens++;
    state.sockets.add(s);
    s.on('connect', () => {
      state.open++;
      if (!trickle) return;
      let i = 0;
      const t = setInterval(() => { if (!s.destroyed) s.write(head[i++ % head.length]); }, 500);
      state.timers.add(t);
      s.on('close', () => { clearInterval(t); state.timers.delete(t); });
    });
    s.on('data', () => {});
    s.on('error', () => {});
    s.on('close', (hadError) => {
      state.sockets.delete(s);
      if (s.connecting === false) state.open--;
      setTimeout(() => open(trickle), hadError ? 100 : 0);
    });
  };
  // Opened in batches, so that the listen backlog is not the limit being measured.
  let i = 0;
  const batch = () => {
    for (let k = 0; k < 500 && i < idle + slow; k++, i++) open(i >= idle);
    if (i < idle + slow && !state.stop) setTimeout(batch, 50);
  };
  batch();
  state.close = () => {
    state.stop = true;
    for (const t of state.timers) clearInterval(t);
    for (const s of state.sockets) s.destroy();
  };
  return state;
}

async function run(o) {
  const { child, port } = await startServer(o);
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  const info = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/info', agent }, (res) => {
      let b = '';
      res.on('data', (d) => (b += d));
      res.on('end', () => resolve(JSON.parse(b)));
    }).on('error', reject);
  });
  const kind = info.model_type.embedding ? 'embedding' : 'cross-encoder';
  const make = makers(kind, o.mix);
  const pick = () => make[rand(make.length)]();

  // Warm-up: every route once, then a short concurrent burst; RSS "before" is read after it.
  for (const m of make) await request(agent, port, m());
  await Promise.all(Array.from({ length: o.warmup }, () => request(agent, port, pick())));
  const held = o.idle + o.slow > 0 ? holdConnections(port, o.idle, o.slow) : null;
  if (held) await new Promise((r) => setTimeout(r, 3000 + (o.idle + o.slow) / 5));  // all open
  const heldAtStart = held ? held.open : 0;
  const rssBefore = rssKiB(child.pid);

  const results = [];
  // RSS every 5 s of the run, to tell a plateau from a leak.
  const rssSamples = [];
  // With the CUDA graphs captured so far: under load new batch shapes keep being captured (each
  // holds some memory) until the executor's cap, which tells that growth from a leak.
  const memorySamples = [memoryBreakdown(child.pid)];  // after warm-up, then every 5 s
  const graphQueries = [cudaGraphs(port).then((g) => (memorySamples[0].graphs = g))];
  const sampler = setInterval(() => {
    rssSamples.push(Math.round(rssKiB(child.pid) / 102.4) / 10);
    const m = memoryBreakdown(child.pid);
    memorySamples.push(m);
    graphQueries.push(cudaGraphs(port).then((g) => (m.graphs = g)));
  }, 5000);
  const deadline = Date.now() + o.seconds * 1000;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: o.concurrency }, async () => {
    while (Date.now() < deadline) results.push(await request(agent, port, pick()));
  }));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const heldAtEnd = held ? held.open : 0;
  if (held) held.close();
  clearInterval(sampler);
  await Promise.all(graphQueries);
  const rssAfter = rssKiB(child.pid);
  // The server's own view of the run (batch sizes, queue and inference times), for where time goes.
  if (o.metricsOut) writeFileSync(o.metricsOut, await metricsText(port));
  agent.destroy();
  child.kill('SIGTERM');
  const exitCode = await new Promise((resolve) => child.on('exit', (code) => resolve(code)));

  const byRoute = new Map();
  const byStatus = new Map();
  for (const r of results) {
    if (!byRoute.has(r.path)) byRoute.set(r.path, []);
    byRoute.get(r.path).push(r.ms);
    byStatus.set(r.status, (byStatus.get(r.status) || 0) + 1);
  }
  const all = results.map((r) => r.ms).sort((a, b) => a - b);
  const errors = results.filter((r) => !(typeof r.status === 'number' && ((r.status >= 200 && r.status < 300) || r.status === 429))).length;
  const rows = [['all', results.length, results.length / wall, percentile(all, 50), percentile(all, 99)]];
  for (const [path, ms] of [...byRoute].sort()) {
    ms.sort((a, b) => a - b);
    rows.push([path, ms.length, ms.length / wall, percentile(ms, 50), percentile(ms, 99)]);
  }
  const summary = {
    model: info.model_id, kind, mix: o.mix, concurrency: o.concurrency, seconds: wall,
    requests: results.length, rps: results.length / wall, p50_ms: percentile(all, 50), p99_ms: percentile(all, 99),
    statuses: Object.fromEntries(byStatus), errors, rss_before_mib: rssBefore / 1024, rss_after_mib: rssAfter / 1024,
    rss_every_5s_mib: rssSamples, memory_every_5s_mib: memorySamples, server_exit: exitCode,
    held_connections: held ? { idle: o.idle, slow: o.slow, open_at_start: heldAtStart, open_at_end: heldAtEnd, opens: held.opens } : null,
  };
  if (o.markdown) {
    console.log(`model ${info.model_id} (${kind}), mix ${o.mix}, ${o.concurrency} concurrent clients, ${wall.toFixed(1)} s`);
    if (held) console.log(`held meanwhile: ${o.idle} idle + ${o.slow} slow connections (open at start ${heldAtStart}, at end ${heldAtEnd}; ${held.opens} opens in all)`);
    console.log('\n| route | requests | req/s | p50 ms | p99 ms |\n| --- | --- | --- | --- | --- |');
    for (const [p, n, rps, p50, p99] of rows) console.log(`| ${p} | ${n} | ${rps.toFixed(1)} | ${p50.toFixed(2)} | ${p99.toFixed(2)} |`);
    console.log(`\nstatuses: ${JSON.stringify(summary.statuses)}; errors (not 2xx, not 429): ${errors}; ` +
      `server RSS ${summary.rss_before_mib.toFixed(1)} MiB after warm-up → ${summary.rss_after_mib.toFixed(1)} MiB after the run; ` +
      `exit status after SIGTERM: ${exitCode}; RSS every 5 s (MiB): ${rssSamples.join(', ')}`);
    console.log('\n| s | threads | CUDA graphs | heap | arenas | stacks | other anon | files (MiB) |\n| --- | --- | --- | --- | --- | --- | --- | --- |');
    memorySamples.forEach((m, i) =>
      console.log(`| ${i * 5} | ${m.threads} | ${m.graphs ?? '–'} | ${m.heap} | ${m.arenas} | ${m.stacks} | ${m.anon} | ${m.files} |`));
  }
  console.log(JSON.stringify(summary));
  return errors === 0 && exitCode === 0;
}

run(parseArgs(process.argv.slice(2))).then((ok) => process.exit(ok ? 0 : 1), (e) => {
  console.error(`load_test: ${e.message}`);
  process.exit(2);
});
