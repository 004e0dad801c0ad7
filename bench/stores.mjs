// `npm run bench -- --store postgres`: the same load on SQLite (1 node), PostgreSQL (1 node) and PostgreSQL (3
// nodes sharing one database, the load spread round-robin: one autocannon per node, a third of the connections
// each), with a bare node:http server as the yardstick. Per set-up: accepted wakes/s, agent accepts/s (with the runs
// finished per accept meanwhile: the work those accepts/s include), end-to-end
// runs/s (a burst of agent runs through the echo model to the log channel, timed until every reply is delivered),
// and CPU µs per request: hookgate's processes (all nodes, all threads) and, on PostgreSQL, the database server's
// processes (the `postgres` processes of the machine, so another tenant's queries count too on a shared server).
// Env: BENCH_SECONDS (5), BENCH_CONNECTIONS (50), BENCH_BURST (2000 runs), BENCH_PG_URL (admin URL, default the
// machine's server, database test), BENCH_NODES (3), BENCH_MAX_CONCURRENT (16: agents.defaults.maxConcurrent),
// BENCH_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=DIR`, for the hookgate processes; written when they stop).
// Then, on fresh PostgreSQL set-ups behind a counting proxy, what the database does per wake and per end-to-end run
// (bench/pg-counts.mjs): BENCH_COUNT_WAKES (5000), BENCH_COUNT_RUNS (500), BENCH_COUNT_AGENTS (2000 agent accepts
// without delivery, each run to its end: the claims, and claims that came back empty, per run), BENCH_COUNT_NODES ("1,3"). `--counts-only` skips the throughput table.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { countsTable, cpuMicros, measurePhase, postgresCpu, postgresCpuSince, statementStats } from './pg-counts.mjs';
import { startCountingProxy } from './pg-wire.mjs';

const root = new URL('..', import.meta.url).pathname;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const burst = Number(process.env.BENCH_BURST ?? 2000);
const clusterSize = Number(process.env.BENCH_NODES ?? 3);
const countWakes = Number(process.env.BENCH_COUNT_WAKES ?? 5000);
const countRuns = Number(process.env.BENCH_COUNT_RUNS ?? 500);
const countAgents = Number(process.env.BENCH_COUNT_AGENTS ?? 2000);
const countNodes = (process.env.BENCH_COUNT_NODES ?? `1,${clusterSize}`).split(',').map(Number);
const adminUrl =
  process.env.BENCH_PG_URL || process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const TOKEN = 'bench-token-0123456789abcdef0123456789abcdef';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function startServer(configFile) {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
      join(root, 'dist/cli/main.js'),
      'serve',
      '--config',
      configFile,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, HOOKGATE_BENCH: '1' },
    },
  );
  // Runs finished, from the server's own log line (counting them adds no statement to the database's).
  const server = { child, url: '', runsFinished: 0 };
  return new Promise((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`hookgate exited ${c}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"hook agent run finished"')) server.runsFinished++;
      else if (line.includes('"hookgate listening"')) {
        server.url = JSON.parse(line).url;
        resolve(server);
      }
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

/**
 * Start a set-up: `nodes` servers on `store`; returns urls, pids, a delivered-count query and a teardown. With
 * `counting`, the nodes reach PostgreSQL through the counting proxy and the statistics are prepared first.
 */
export async function setUp(store, nodes, counting = false) {
  const dir = mkdtempSync(join(tmpdir(), `hookgate-bench-${store}-`));
  let storage;
  let dbName;
  let countDelivered;
  let closeCounter = async () => {};
  let proxy;
  let observer;
  let stats;
  if (store === 'sqlite') {
    storage = { driver: 'sqlite', path: join(dir, 'hookgate.db') };
  } else {
    dbName = `hg_bench_${randomBytes(4).toString('hex')}`;
    await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    if (counting) {
      proxy = await startCountingProxy({ host: u.hostname, port: Number(u.port || 5432) });
      observer = new pg.Client({ connectionString: adminUrl });
      await observer.connect();
      stats = await statementStats(observer, dbName);
      u.hostname = '127.0.0.1';
      u.port = String(proxy.port);
    }
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
          agents: { defaults: { model: 'echo/echo', maxConcurrent: Number(process.env.BENCH_MAX_CONCURRENT ?? 16) } },
          channels: { default: { channel: 'log' }, log: { path: join(dir, `deliveries-${i}.jsonl`) } },
        }),
      );
      servers.push(await startServer(configFile));
    }
  } catch (err) {
    for (const s of servers) s.child.kill('SIGKILL');
    await observer?.end();
    await proxy?.close();
    throw err;
  }
  if (counting) {
    // Delivered replies counted from the log channel's files, not the database: the count must not add statements.
    const files = servers.map((_, i) => join(dir, `deliveries-${i}.jsonl`));
    const lines = (f) => {
      try {
        const b = readFileSync(f);
        let n = 0;
        for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) n++;
        return n;
      } catch {
        return 0; // not written yet
      }
    };
    countDelivered = async () => files.reduce((s, f) => s + lines(f), 0);
  } else if (store === 'sqlite') {
    const db = new Database(storage.path, { readonly: true });
    const q = db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE state = 'delivered'");
    countDelivered = async () => q.get().n;
    closeCounter = async () => db.close();
  } else {
    const c = new pg.Client({ connectionString: storage.url });
    await c.connect();
    countDelivered = async () =>
      Number((await c.query("SELECT count(*) AS n FROM deliveries WHERE state = 'delivered'")).rows[0].n);
    closeCounter = () => c.end();
  }
  return {
    urls: servers.map((s) => s.url),
    pids: servers.map((s) => s.child.pid),
    countDelivered,
    runsFinished: () => servers.reduce((n, s) => n + s.runsFinished, 0),
    counting: counting ? { proxy, stats, dbName } : undefined,
    async tearDown() {
      await closeCounter();
      await Promise.all(servers.map((s) => new Promise((r) => (s.child.once('exit', r), s.child.kill('SIGTERM')))));
      await observer?.end();
      await proxy?.close();
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
  const pg0 = opts.postgres ? postgresCpu().all : undefined;
  const share = Math.max(1, Math.floor(connections / urls.length));
  // autocannon refuses more connections than requests.
  const per = opts.amount ? Math.min(share, Math.ceil(opts.amount / urls.length)) : share;
  const results = await Promise.all(
    urls.map((url) =>
      autocannon({
        url,
        connections: per,
        ...(opts.amount ? { amount: Math.ceil(opts.amount / urls.length) } : { duration: opts.duration ?? seconds }),
        requests: [
          {
            method: 'POST',
            path,
            headers: { 'content-type': 'application/json', ...headers },
            setupRequest: (req) => ({ ...req, body: makeBody(i++) }),
          },
        ],
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

/** A burst of `amount` agent runs; resolves with the number delivered once every accepted one is (3 min at most). */
async function runBurst(s, amount) {
  const before = await s.countDelivered();
  const t0 = performance.now();
  const accepted = await load(s.urls, '/hooks/agent', runBody, auth, [], { amount });
  let delivered = before;
  while (
    (delivered = await s.countDelivered()) - before < accepted.total - accepted.non2xx &&
    performance.now() - t0 < 180_000
  )
    await sleep(50);
  return delivered - before;
}

export async function endToEnd(s, pids, isPg) {
  const cpu0 = pids.reduce((a, p) => a + cpuMicros(p), 0);
  const pg0 = isPg ? postgresCpu().all : undefined;
  const t0 = performance.now();
  const n = await runBurst(s, burst);
  const secs = (performance.now() - t0) / 1000;
  const cpu = pids.reduce((a, p) => a + cpuMicros(p), 0) - cpu0;
  return {
    runs: n,
    seconds: secs,
    runsPerSecond: n / secs,
    cpuPerRun: cpu / Math.max(1, n),
    pgCpuPerRun: pg0 ? postgresCpuSince(pg0) / Math.max(1, n) : 0,
  };
}

/** The counting pass (bench/pg-counts.mjs) on a fresh set-up: idle, then wakes, then a burst of runs. */
async function countPass(nodes) {
  const s = await setUp('postgres', nodes, true);
  try {
    const { proxy, stats, dbName } = s.counting;
    const ctx = { stats, proxy, dbName, pids: s.pids };
    await load(s.urls, '/hooks/wake', wakeBody, auth, [], { amount: 1000 }); // warm-up
    const idle = await measurePhase(ctx, async () => {
      await sleep(3000);
      return 0;
    });
    const wakes = await measurePhase(ctx, async () => {
      const r = await load(s.urls, '/hooks/wake', wakeBody, auth, [], { amount: countWakes });
      return r.total - r.non2xx;
    });
    const runs = await measurePhase(ctx, async () => {
      const n = await runBurst(s, countRuns);
      await sleep(300); // the last delivery's outcome is written just after its line
      return n;
    });
    // Agent accepts without delivery, as fast as they come (the throughput table's agent load), until every run ended:
    // what the nodes' claims cost while the accepts of every node wake the others.
    let runsPerAccept;
    const agents = await measurePhase(ctx, async () => {
      const before = s.runsFinished();
      const r = await load(s.urls, '/hooks/agent', agentBody, auth, [], { amount: countAgents });
      runsPerAccept = (s.runsFinished() - before) / Math.max(1, r.total - r.non2xx);
      const t0 = performance.now();
      while (s.runsFinished() - before < r.total - r.non2xx && performance.now() - t0 < 180_000) await sleep(50);
      return r.total - r.non2xx;
    });
    return {
      setup: `PostgreSQL, ${nodes} node${nodes > 1 ? 's' : ''}`,
      statementsAvailable: stats.available,
      why: stats.why,
      idle,
      wakes,
      runs,
      agents,
      runsPerAccept,
    };
  } finally {
    await s.tearDown();
  }
}

/**
 * `stores`: the set-ups of the throughput table; with PostgreSQL among them, the counting pass follows. Options:
 * `countsOnly` (no throughput table), `json` (one JSON object instead of tables).
 */
export async function storesBench(stores, opts = {}) {
  const rows = opts.countsOnly ? undefined : await throughput(stores);
  const counts = [];
  if (stores.includes('postgres')) for (const nodes of countNodes) counts.push(await countPass(nodes));
  if (opts.json) return JSON.stringify({ stores: rows, postgresCounts: counts });
  const countOpts = { wakes: countWakes, runs: countRuns, agents: countAgents, connections };
  return [rows ? throughputTable(rows) : '', counts.length ? countsTable(counts, countOpts) : '']
    .filter(Boolean)
    .join('\n');
}

async function throughput(stores) {
  const setups = [];
  for (const store of stores) {
    setups.push({ store, nodes: 1 });
    if (store !== 'sqlite') setups.push({ store, nodes: clusterSize });
  }
  // The yardstick.
  const bare = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'bench/bare-server.mjs')], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.once('exit', (c) => reject(new Error(`bare server exited ${c}`)));
    createInterface({ input: child.stdout }).on('line', (l) =>
      resolve({ child, url: `http://127.0.0.1:${JSON.parse(l).port}` }),
    );
  });
  const rows = [];
  try {
    await load([bare.url], '/', wakeBody, {}, [bare.child.pid], { duration: 2 });
    const b = await load([bare.url], '/', wakeBody, {}, [bare.child.pid]);
    rows.push({ setup: 'bare node:http (yardstick)', wake: b });
  } finally {
    bare.child.kill();
  }
  if (stores.includes('postgres')) for (const nodes of [1, clusterSize]) rows.push(await pgFloor(nodes));
  for (const { store, nodes } of setups) {
    const s = await setUp(store, nodes);
    try {
      const isPg = store !== 'sqlite';
      // The pipeline first, on the fresh set-up: the agent load below leaves thousands of queued runs behind.
      const e2e = await endToEnd(s, s.pids, isPg);
      await load(s.urls, '/hooks/wake', wakeBody, auth, s.pids, { duration: 2 }); // warm-up
      const wake = await load(s.urls, '/hooks/wake', wakeBody, auth, s.pids, { postgres: isPg });
      const ran0 = s.runsFinished();
      const agent = await load(s.urls, '/hooks/agent', agentBody, auth, s.pids, { postgres: isPg });
      agent.runsPerAccept = (s.runsFinished() - ran0) / Math.max(1, agent.total - agent.non2xx);
      rows.push({
        setup: `${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${nodes} node${nodes > 1 ? 's' : ''}`,
        wake,
        agent,
        e2e,
      });
    } finally {
      await s.tearDown();
    }
  }
  return rows;
}

/**
 * The floor of `nodes` nodes on PostgreSQL (bench/floor-pg-server.mjs, as many processes on one fresh database):
 * their wakes/s under the same load, with their CPU and PostgreSQL's. What `nodes` nodes can reach on these cores at
 * best: the hookgate rows compare with it.
 */
async function pgFloor(nodes) {
  const dbName = `hg_floor_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
  const u = new URL(adminUrl);
  u.pathname = `/${dbName}`;
  const children = [];
  try {
    const urls = [];
    // One after the other: the first creates the tables.
    for (let i = 0; i < nodes; i++) {
      const child = spawn(process.execPath, [join(root, 'bench/floor-pg-server.mjs'), u.toString()], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      urls.push(
        await new Promise((resolve, reject) => {
          child.once('exit', (c) => reject(new Error(`floor server exited ${c}`)));
          createInterface({ input: child.stdout }).on('line', (l) => resolve(`http://127.0.0.1:${JSON.parse(l).port}`));
        }),
      );
    }
    const pids = children.map((c) => c.pid);
    await load(urls, '/', wakeBody, {}, pids, { duration: 2 }); // warm-up
    const wake = await load(urls, '/', wakeBody, {}, pids, { postgres: true });
    return { setup: `floor on PostgreSQL, ${nodes} process${nodes > 1 ? 'es' : ''}`, floor: true, nodes, wake };
  } finally {
    await Promise.all(children.map((c) => new Promise((r) => (c.once('exit', r), c.kill('SIGTERM')))));
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
  }
}

/** Several nodes ÷ one, for the floor and for hookgate's wakes and agent accepts (when both rows are there). */
function scaleLine(rows) {
  const find = (re) => rows.find((r) => re.test(r.setup));
  const ratio = (a, b, k) => (a?.[k] && b?.[k] ? (a[k].rps / b[k].rps).toFixed(2) : '–');
  const [f1, fn] = [find(/^floor.*, 1 process$/), find(/^floor.*processes$/)];
  const [p1, pn] = [find(/^PostgreSQL, 1 node$/), find(/^PostgreSQL, \d+ nodes$/)];
  if (!f1 || !fn) return [];
  return [
    `${clusterSize} ÷ 1 on the same cores: the floor's wakes/s ${ratio(fn, f1, 'wake')}; hookgate's wakes/s ${ratio(pn, p1, 'wake')}, agent accepts/s ${ratio(pn, p1, 'agent')}.`,
  ];
}

function throughputTable(rows) {
  const f = (n, d = 0) => (n === undefined ? '–' : n.toFixed(d));
  const base = rows[0].wake.rps;
  const lines = [
    `hookgate store bench: ${connections} connections (split across the nodes), ${seconds}s per load, burst of ${burst} runs end to end; ${cpus().length} CPUs; node ${process.version}, ${new Date().toISOString()}`,
    '',
    '| set-up | wakes/s | wake p99 ms | wake CPU µs/req (hookgate + PG) | agent accepts/s | runs finished per agent accept, during the accepts | agent CPU µs/req (hookgate + PG) | end-to-end runs/s | run CPU µs (hookgate + PG) | non-2xx | wakes/s ÷ bare |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) =>
      r.agent
        ? `| ${r.setup} | ${f(r.wake.rps)} | ${f(r.wake.p99)} | ${f(r.wake.cpuPerReq)} + ${f(r.wake.pgCpuPerReq)} | ${f(r.agent.rps)} | ${f(r.agent.runsPerAccept, 2)} | ${f(r.agent.cpuPerReq)} + ${f(r.agent.pgCpuPerReq)} | ${f(r.e2e.runsPerSecond)} | ${f(r.e2e.cpuPerRun)} + ${f(r.e2e.pgCpuPerRun)} | ${r.wake.non2xx + r.agent.non2xx} | ${f(r.wake.rps / base, 2)} |`
        : `| ${r.setup} | ${f(r.wake.rps)} | ${f(r.wake.p99)} | ${f(r.wake.cpuPerReq)}${r.floor ? ` + ${f(r.wake.pgCpuPerReq)}` : ''} | – | – | – | – | – | ${r.wake.non2xx} | ${f(r.wake.rps / base, 2)} |`,
    ),
    '',
    ...scaleLine(rows),
    'The floor rows: bench/floor-pg-server.mjs, a bare server plus one grouped PostgreSQL commit of two rows per request (no hookgate code), as many processes as nodes: what that many nodes reach at best on these cores.',
    'Runs finished per agent accept: the runs that finished while the agent load ran, per request it got accepted. A saturated node answers first and leaves the backlog in the store (docs/performance.md): near 0 then, near 1 when every accept also pays for its run, so the accepts/s of two set-ups compare only where this does too.',
    "CPU µs/req: CPU time of the hookgate processes (every node, all threads) per request, + that of the machine's postgres processes (PostgreSQL set-ups; on a shared server other tenants count too).",
    `The ${clusterSize}-node rows run ${clusterSize} server processes and the load generator on the same ${cpus().length} CPUs: they show the cost of the cluster (coordination, more connections), not a scale-out; more nodes add throughput only with cores (or machines) to put them on.`,
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(
    `${await storesBench(['sqlite', 'postgres'], { countsOnly: process.argv.includes('--counts-only'), json: process.argv.includes('--json') })}\n`,
  );
}
