#!/usr/bin/env node
// npm run bench: the ingress against a bare node:http server, in the same run, same machine, same load.
// Default: pinned (bench/pinned.mjs): server on one core, load generator on another; `--json` prints one JSON object,
// `--admin` enables the admin listener with one client on its live feed, `--only ingress|pipeline` runs half of it.
// Env: BENCH_SECONDS per round (default 8), BENCH_ROUNDS (default 5), BENCH_CONNECTIONS (default 50), BENCH_RATE and
// BENCH_PIPELINE_SECONDS (2000 runs/s for 30 s), BENCH_SERVER_CPU / BENCH_LOAD_CPU (0 / 1), BENCH_LOADGEN=autocannon,
// BENCH_WRITER (inline | thread: storage.writer), BENCH_CHECKPOINTS (auto | thread: storage.checkpoints), BENCH_NODE_ARGS (e.g. --cpu-prof, for the hookgate process).
// `npm run bench -- --unpinned`: the former mode (autocannon in this process, nothing pinned; 5 s, 3 rounds).
// `npm run bench -- --store postgres`: instead, SQLite against PostgreSQL, 1 node and 3 nodes, then PostgreSQL's
// statements, round trips and commits per wake and per run (bench/stores.mjs; `--counts-only`: those alone; `--json`).
// `npm run bench -- --only startup`: instead, the CLI's start-up times (bench/startup.mjs; STARTUP_RUNS, default 10).
// `--only latency` (bench/latency.mjs), `--only grown` (bench/grown.mjs), `--only retention` (bench/retention.mjs):
// open-loop latency at fixed rates, a grown store against an empty one, a retention soak (docs/performance.md);
// `--only postgres` (bench/postgres-cpu.mjs): CPU per wake on PostgreSQL against SQLite, beside the floor of each.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { pipelineBench } from './pipeline.mjs';
import { storesBench } from './stores.mjs';

const storeArg = process.argv.indexOf('--store');
if (storeArg !== -1) {
  const store = process.argv[storeArg + 1];
  if (store !== 'postgres' && store !== 'sqlite') {
    console.error('usage: npm run bench -- --store postgres|sqlite [--counts-only] [--json]');
    process.exit(1);
  }
  const opts = { countsOnly: process.argv.includes('--counts-only'), json: process.argv.includes('--json') };
  process.stdout.write(`${await storesBench(store === 'sqlite' ? ['sqlite'] : ['sqlite', 'postgres'], opts)}\n`);
  process.exit(0);
}

const onlyArg = process.argv.indexOf('--only');
if (onlyArg !== -1 && process.argv[onlyArg + 1] === 'startup') {
  const { startupBench, startupTable } = await import('./startup.mjs');
  const results = await startupBench();
  process.stdout.write(
    `${process.argv.includes('--json') ? JSON.stringify({ startup: results }) : startupTable(results)}\n`,
  );
  process.exit(0);
}

if (!process.argv.includes('--unpinned')) {
  const { pinnedBench } = await import('./pinned.mjs');
  const ok = await pinnedBench(process.argv.slice(2));
  process.exit(ok ? 0 : 2);
}

const root = new URL('..', import.meta.url).pathname;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const { TOKEN, cpuMicros, peakRssMiB } = await import('./pinned.mjs');

/** Start a child and resolve with the first stdout JSON line that has `key`. */
function startChild(args, opts, key) {
  const child = spawn(process.execPath, args, { ...opts, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.on('line', (line) => {
      try {
        const msg = JSON.parse(line);
        if (msg[key] !== undefined) resolve({ child, info: msg });
      } catch {
        /* not JSON */
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

/** The round with the median req/s (its latency and CPU figures come with it). */
function median(results) {
  const sorted = [...results].sort((x, y) => x.rps - y.rps);
  return sorted[Math.floor(sorted.length / 2)];
}

async function load(url, path, makeBody, headers, pid) {
  let i = 0;
  const cpu0 = cpuMicros(pid);
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', ...headers },
        setupRequest: (req) => ({ ...req, body: makeBody(i++) }),
      },
    ],
  });
  const non2xx = result.non2xx + result.errors + result.timeouts;
  const cpuPerReq = (cpuMicros(pid) - cpu0) / Math.max(1, result.requests.total);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx,
    total: result.requests.total,
    cpuPerReq,
  };
}

async function warm(url, path, makeBody, headers) {
  await autocannon({
    url,
    connections: 10,
    duration: 2,
    requests: [
      { method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body: makeBody(0) },
    ],
  });
}

const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-'));
const config = join(dir, 'hookgate.json5');
writeFileSync(
  config,
  JSON.stringify({
    gateway: { port: 0 },
    storage: {
      driver: 'sqlite',
      path: join(dir, 'hookgate.db'),
      ...(process.env.BENCH_WRITER ? { writer: process.env.BENCH_WRITER } : {}),
    },
    hooks: { enabled: true, token: TOKEN },
    logging: { level: 'info' },
  }),
);

const rows = [];
const bare = await startChild([join(root, 'bench/bare-server.mjs')], {}, 'port');
const hg = await startChild(
  [join(root, 'dist/cli/main.js'), 'serve', '--config', config],
  { env: { ...process.env, HOOKGATE_BENCH: '1' } },
  'url',
);
try {
  const bareUrl = `http://127.0.0.1:${bare.info.port}`;
  const hgUrl = hg.info.url;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const wakeBody = (i) => JSON.stringify({ text: `bench event ${i}`, mode: 'next-heartbeat' });
  const agentBody = (i) => JSON.stringify({ message: `bench message ${i}`, name: 'Bench', deliver: false });

  await warm(bareUrl, '/', wakeBody, {});
  await warm(hgUrl, '/hooks/wake', wakeBody, auth);
  // Interleaved rounds: the machine's spare CPU drifts over a run (other tenants, the load generator itself), so
  // bare and hookgate are measured alternately and compared by their medians.
  const bareRounds = [];
  const wakeRounds = [];
  for (let r = 0; r < rounds; r++) {
    bareRounds.push(await load(bareUrl, '/', wakeBody, {}, bare.child.pid));
    wakeRounds.push(await load(hgUrl, '/hooks/wake', wakeBody, auth, hg.child.pid));
  }
  rows.push({ target: 'bare node:http', ...median(bareRounds) });
  rows.push({ target: 'hookgate /hooks/wake', ...median(wakeRounds) });
  const a = await load(hgUrl, '/hooks/agent', agentBody, auth, hg.child.pid);
  rows.push({ target: 'hookgate /hooks/agent', ...a });
  const perRound = bareRounds.map((b, i) => (wakeRounds[i].rps / b.rps).toFixed(2)).join(' ');
  const p99s = (list) => list.map((r) => r.p99).join(' ');
  const rss = { bare: peakRssMiB(bare.child.pid), hookgate: peakRssMiB(hg.child.pid) };

  const base = rows[0].rps;
  const fmt = (n, d = 0) => n.toFixed(d);
  const lines = [
    `hookgate bench: ${connections} connections, ${rounds} interleaved rounds of ${seconds}s (bare, wake), median round shown; node ${process.version}, ${new Date().toISOString()}`,
    '',
    '| target | req/s | p50 ms | p99 ms | non-2xx | CPU µs/req | peak RSS MiB | ratio to bare |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.target} | ${fmt(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${r.non2xx} | ${fmt(r.cpuPerReq)} | ${fmt(r.target.startsWith('bare') ? rss.bare : rss.hookgate, 1)} | ${fmt(r.rps / base, 2)} |`,
    ),
    '',
    `wake / bare per round: ${perRound}`,
    `p99 ms per round: bare ${p99s(bareRounds)} | wake ${p99s(wakeRounds)}`,
    'CPU µs/req: CPU time of the server process (all threads) per request; less sensitive to a busy machine than req/s.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  bare.child.kill();
  hg.child.kill('SIGTERM');
}

// The run pipeline on a fresh instance (so the ingress load above does not leave it a backlog).
const p = await pipelineBench({ seconds });
const t = p.throughput;
process.stdout.write(
  [
    '',
    '| pipeline (echo → log channel) | value |',
    '|---|---:|',
    `| burst: ${t.runs} runs accepted in | ${t.acceptSeconds.toFixed(2)} s |`,
    `| burst: all delivered after | ${t.seconds.toFixed(2)} s |`,
    `| end-to-end runs/s (accept → run → deliver) | ${t.runsPerSecond.toFixed(0)} |`,
    `| steady: accepted runs/s (target ${p.steady.rate}) | ${p.steady.acceptedRate.toFixed(0)} |`,
    `| steady: backlog each second (unfinished runs + unsent deliveries) | ${p.steady.backlog.join(' ')} |`,
    `| steady: max / last backlog | ${p.steady.maxBacklog} / ${p.steady.lastBacklog} |`,
    '',
  ].join('\n'),
);
await new Promise((r) => setTimeout(r, 300));
rmSync(dir, { recursive: true, force: true });
