// `npm run bench -- --store postgres`: the same load on SQLite (1 node), PostgreSQL (1 node) and PostgreSQL (3
// nodes sharing one database, the load spread round-robin: one autocannon per node, a third of the connections
// each), with a bare node:http server as the yardstick. Per set-up: accepted wakes/s, agent accepts/s, end-to-end
// runs/s (a burst of agent runs through the echo model to the log channel, timed until every reply is delivered),
// and CPU µs per request: hookgate's processes (all nodes, all threads) and, on PostgreSQL, the database server's
// processes (the `postgres` processes of the machine, so another tenant's queries count too on a shared server).
// Env: BENCH_SECONDS (5), BENCH_CONNECTIONS (50), BENCH_BURST (2000 runs), BENCH_PG_URL (admin URL, default the
// machine's server, database test), BENCH_NODES (3).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';

const root = new URL('..', import.meta.url).pathname;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const burst = Number(process.env.BENCH_BURST ?? 2000);
const clusterSize = Number(process.env.BENCH_NODES ?? 3);
const adminUrl = process.env.BENCH_PG_URL || process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const TOKEN = 'bench-token-0123456789abcdef0123456789abcdef';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function cpuMicros(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
  } catch {
    return 0; // gone
  }
}

/** CPU of every `postgres` process now (a backend that exits between two samples takes its share with it). */
function postgresCpu() {
  const out = new Map();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, 'utf8').trim() === 'postgres') out.set(e, cpuMicros(e));
    } catch {
      /* gone */
    }
  }
  return out;
}
function postgresCpuSince(before) {
  let sum = 0;
  for (const [pid, now] of postgresCpu()) sum += now - (before.get(pid) ?? 0);
  return sum;
}

function startServer(configFile) {
  const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, HOOKGATE_BENCH: '1' } });
  return new Promise((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`hookgate exited ${c}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"hookgate listening"')) resolve({ child, url: JSON.parse(line).url });
    });
  });
}

async function withAdmin(fn) {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Start a set-up: `nodes` servers on `store`; returns urls, pids, a delivered-count query and a teardown. */
async function setUp(store, nodes) {
  const dir = mkdtempSync(join(tmpdir(), `hookgate-bench-${store}-`));
  let storage;
  let dbName;
  let countDelivered;
  let closeCounter = async () => {};
  if (store === 'sqlite') {
    storage = { driver: 'sqlite', path: join(dir, 'hookgate.db') };
  } else {
    dbName = `hg_bench_${randomBytes(4).toString('hex')}`;
    await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    storage = { driver: 'postgres', url: u.toString(), poolSize: 10 };
  }
  const servers = [];
  try {
    // One after the other: the first migrates, the others find the schema ready.
    for (let i = 0; i < nodes; i++) {
      const configFile = join(dir, `node${i}.json5`);
      writeFileSync(
        configFile,
        JSON.stringify({
          gateway: { port: 0 },
          storage,
          hooks: { enabled: true, token: TOKEN },
          logging: { level: 'info' },
          heartbeat: { every: 'off' },
          agents: { defaults: { model: 'echo/echo', maxConcurrent: 16 } },
          channels: { default: { channel: 'log' }, log: { path: join(dir, `deliveries-${i}.jsonl`) } },
        }),
      );
      servers.push(await startServer(configFile));
    }
  } catch (err) {
    for (const s of servers) s.child.kill('SIGKILL');
    throw err;
  }
  if (store === 'sqlite') {
    const db = new Database(storage.path, { readonly: true });
    const q = db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE state = 'delivered'");
    countDelivered = async () => q.get().n;
    closeCounter = async () => db.close();
  } else {
    const c = new pg.Client({ connectionString: storage.url });
    await c.connect();
    countDelivered = async () => Number((await c.query("SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'")).rows[0].n);
    closeCounter = () => c.end();
  }
  return {
    urls: servers.map((s) => s.url),
    pids: servers.map((s) => s.child.pid),
    countDelivered,
    async tearDown() {
      await closeCounter();
      await Promise.all(servers.map((s) => new Promise((r) => (s.child.once('exit', r), s.child.kill('SIGTERM')))));
      if (dbName) await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const auth = { authorization: `Bearer ${TOKEN}` };
const wakeBody = (i) => JSON.stringify({ text: `bench event ${i}`, mode: 'next-heartbeat' });
const agentBody = (i) => JSON.stringify({ message: `bench message ${i}`, name: 'Bench', deliver: false });
const runBody = (i) => JSON.stringify({ message: `pipeline ${i}`, name: 'Bench', wakeMode: 'next-heartbeat' });

/** Load on every url at once (connections split between them); req/s summed, CPU of `pids` per request. */
async function load(urls, path, makeBody, headers, pids, opts = {}) {
  let i = 0;
  const cpu0 = pids.reduce((s, p) => s + cpuMicros(p), 0);
  const pg0 = opts.postgres ? postgresCpu() : undefined;
  const per = Math.max(1, Math.floor(connections / urls.length));
  const results = await Promise.all(
    urls.map((url) =>
      autocannon({
        url,
        connections: per,
        ...(opts.amount ? { amount: Math.ceil(opts.amount / urls.length) } : { duration: opts.duration ?? seconds }),
        requests: [{ method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, setupRequest: (req) => ({ ...req, body: makeBody(i++) }) }],
      }),
    ),
  );
  const total = results.reduce((s, r) => s + r.requests.total, 0);
  const non2xx = results.reduce((s, r) => s + r.non2xx + r.errors + r.timeouts, 0);
  const rps = results.reduce((s, r) => s + r.requests.average, 0);
  const cpu = pids.reduce((s, p) => s + cpuMicros(p), 0) - cpu0;
  const pgCpu = pg0 ? postgresCpuSince(pg0) : 0;
  const p99 = Math.max(...results.map((r) => r.latency.p99));
  return { rps, total, non2xx, p99, cpuPerReq: cpu / Math.max(1, total), pgCpuPerReq: pgCpu / Math.max(1, total) };
}

async function endToEnd(s, pids, isPg) {
  const before = await s.countDelivered();
  const cpu0 = pids.reduce((a, p) => a + cpuMicros(p), 0);
  const pg0 = isPg ? postgresCpu() : undefined;
  const t0 = performance.now();
  const accepted = await load(s.urls, '/hooks/agent', runBody, auth, [], { amount: burst });
  let delivered = before;
  while ((delivered = await s.countDelivered()) - before < accepted.total - accepted.non2xx && performance.now() - t0 < 180_000) await sleep(50);
  const secs = (performance.now() - t0) / 1000;
  const cpu = pids.reduce((a, p) => a + cpuMicros(p), 0) - cpu0;
  const n = delivered - before;
  return { runs: n, seconds: secs, runsPerSecond: n / secs, cpuPerRun: cpu / Math.max(1, n), pgCpuPerRun: pg0 ? postgresCpuSince(pg0) / Math.max(1, n) : 0 };
}

export async function storesBench(stores) {
  const setups = [];
  for (const store of stores) {
    setups.push({ store, nodes: 1 });
    if (store !== 'sqlite') setups.push({ store, nodes: clusterSize });
  }
  // The yardstick.
  const bare = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bench/bare-server.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.once('exit', (c) => reject(new Error(`bare server exited ${c}`)));
    createInterface({ input: child.stdout }).on('line', (l) => resolve({ child, url: `http://127.0.0.1:${JSON.parse(l).port}` }));
  });
  const rows = [];
  try {
    await load([bare.url], '/', wakeBody, {}, [bare.child.pid], { duration: 2 });
    const b = await load([bare.url], '/', wakeBody, {}, [bare.child.pid]);
    rows.push({ setup: 'bare node:http (yardstick)', wake: b });
  } finally {
    bare.child.kill();
  }
  for (const { store, nodes } of setups) {
    const s = await setUp(store, nodes);
    try {
      const isPg = store !== 'sqlite';
      // The pipeline first, on the fresh set-up: the agent load below leaves thousands of queued runs behind.
      const e2e = await endToEnd(s, s.pids, isPg);
      await load(s.urls, '/hooks/wake', wakeBody, auth, s.pids, { duration: 2 }); // warm-up
      const wake = await load(s.urls, '/hooks/wake', wakeBody, auth, s.pids, { postgres: isPg });
      const agent = await load(s.urls, '/hooks/agent', agentBody, auth, s.pids, { postgres: isPg });
      rows.push({ setup: `${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${nodes} node${nodes > 1 ? 's' : ''}`, wake, agent, e2e });
    } finally {
      await s.tearDown();
    }
  }
  const f = (n, d = 0) => (n === undefined ? '–' : n.toFixed(d));
  const base = rows[0].wake.rps;
  const lines = [
    `hookgate store bench: ${connections} connections (split across the nodes), ${seconds}s per load, burst of ${burst} runs end to end; ${cpus().length} CPUs; node ${process.version}, ${new Date().toISOString()}`,
    '',
    '| set-up | wakes/s | wake p99 ms | wake CPU µs/req (hookgate + PG) | agent accepts/s | agent CPU µs/req (hookgate + PG) | end-to-end runs/s | run CPU µs (hookgate + PG) | non-2xx | wakes/s ÷ bare |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) =>
      r.agent
        ? `| ${r.setup} | ${f(r.wake.rps)} | ${f(r.wake.p99)} | ${f(r.wake.cpuPerReq)} + ${f(r.wake.pgCpuPerReq)} | ${f(r.agent.rps)} | ${f(r.agent.cpuPerReq)} + ${f(r.agent.pgCpuPerReq)} | ${f(r.e2e.runsPerSecond)} | ${f(r.e2e.cpuPerRun)} + ${f(r.e2e.pgCpuPerRun)} | ${r.wake.non2xx + r.agent.non2xx} | ${f(r.wake.rps / base, 2)} |`
        : `| ${r.setup} | ${f(r.wake.rps)} | ${f(r.wake.p99)} | ${f(r.wake.cpuPerReq)} | – | – | – | – | ${r.wake.non2xx} | 1.00 |`,
    ),
    '',
    'CPU µs/req: CPU time of the hookgate processes (every node, all threads) per request, + that of the machine\'s postgres processes (PostgreSQL set-ups; on a shared server other tenants count too).',
    `The ${clusterSize}-node rows run ${clusterSize} server processes and the load generator on the same ${cpus().length} CPUs: they show the cost of the cluster (coordination, more connections), not a scale-out; more nodes add throughput only with cores (or machines) to put them on.`,
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await storesBench(['sqlite', 'postgres'])}\n`);
}
