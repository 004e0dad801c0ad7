// `npm run bench` (default): the server pinned to one core, the load generator pinned to another.
//
// Both servers (bare node:http and hookgate) run under `taskset -c SERVER_CPU`, so every thread they start (libuv
// pool, the store's threads, the checkpoint thread) inherits the pin; the load generator (wrk when installed, else
// autocannon in a process of its own) and this script run on LOAD_CPU. Rounds go bare, floor, contract floor (wake),
// wake, bare, contract floor (agent), agent; each hookgate round is compared with the bare and the floor round just
// before it, and the median of those ratios is reported.
// After an agent round, the next round waits for the runs it queued to finish and their replies to be delivered
// (the run worker shares the server's core, and a backlog would be billed to the next bare round).
//
// Then the pipeline: a fresh pinned hookgate, `/hooks/agent` at a fixed rate (default 2,000/s) for 30 s, every reply
// delivered to the `log` channel's file; the file is read while it grows, and each delivered line is matched to the
// time its request was sent (carried in the message), for the end-to-end latency and the backlog each second.
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { countRunsIn } from '../dist/store/fresh-runs.js';

const root = new URL('..', import.meta.url).pathname;
export const TOKEN = 'bench-token-0123456789abcdef0123456789abcdef';
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function which(cmd) {
  try {
    return execFileSync('which', [cmd], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** CPU time (user + system) a process has used so far, in microseconds: /proc/<pid>/stat counts all its threads. */
export function cpuMicros(pid, which = 'both') {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const [user, sys] = [Number(fields[11]), Number(fields[12])]; // utime, stime in USER_HZ (100)
  return ((which === 'user' ? user : which === 'sys' ? sys : user + sys) * 1e6) / 100;
}

/** Resident set (VmRSS) of a process now, MiB; 0 once it has exited. */
export function rssMiB(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Peak resident set (VmHWM) of a process so far, MiB. */
export function peakRssMiB(pid) {
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}

/** The CPUs each thread of `pid` may run on, as a set of distinct lists (one entry when every thread is pinned alike). */
function threadAffinity(pid) {
  const lists = new Set();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      lists.add(/Cpus_allowed_list:\s+(\S+)/.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))?.[1]);
    } catch {
      /* thread ended */
    }
  }
  return { threads: readdirSync(`/proc/${pid}/task`).length, cpus: [...lists].join(' | ') };
}

/** Spawn `args` (pinned to `cpu` unless null) and resolve with the first stdout JSON line that has `key`. */
export function startChild(cmd, args, { cpu, env, key }) {
  const [file, argv] = cpu === null ? [cmd, args] : ['taskset', ['-c', String(cpu), cmd, ...args]];
  const child = spawn(file, argv, { env: env ?? process.env, stdio: ['ignore', 'pipe', 'inherit'] });
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
    child.once('exit', (code) => reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`)));
  });
}

/** Run the load generator once; resolves with its JSON summary (requests, seconds, non2xx, errors, p50/p90/p99 ms). */
/** One of the bench's own servers (bench/SCRIPT: the bare server, the floors) on the server's CPU; its port in `info`. */
export function startBenchServer(o, script, ...args) {
  return startChild(process.execPath, [join(root, 'bench', script), ...args], { cpu: o.serverCpu, key: 'port' });
}

export function runLoad(o, { url, kind, seconds, connections, token, rate = 0 }) {
  const useWrk = o.wrk && rate === 0;
  const args = useWrk
    ? [
        '-t1',
        `-c${connections}`,
        `-d${seconds}s`,
        '--latency',
        '-s',
        join(root, 'bench/wrk-post.lua'),
        url,
        '--',
        kind,
        token ?? '',
      ]
    : [
        join(root, 'bench/autocannon-load.mjs'),
        url,
        kind,
        String(seconds),
        String(connections),
        token ?? '',
        String(rate),
      ];
  const cmd = useWrk ? o.wrk : process.execPath;
  const [file, argv] = o.loadCpu === null ? [cmd, args] : ['taskset', ['-c', String(o.loadCpu), cmd, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) return reject(new Error(`load generator exited ${code}: ${out.slice(-500)}`));
      resolve(JSON.parse(line));
    });
  });
}

/** One measured round against `pid`: req/s, latency, CPU µs per request of the whole server process. */
export async function round(o, pid, load) {
  const cpu0 = cpuMicros(pid);
  const sys0 = cpuMicros(pid, 'sys');
  const r = await runLoad(o, load);
  const cpu = cpuMicros(pid) - cpu0;
  const sys = cpuMicros(pid, 'sys') - sys0;
  const n = Math.max(1, r.requests);
  return {
    rps: r.requests / r.seconds,
    p50: r.p50,
    p99: r.p99,
    non2xx: r.non2xx + r.errors,
    total: r.requests,
    cpuPerReq: cpu / n,
    sysPerReq: sys / n,
  };
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const medianRow = (rows) => ({
  rps: median(rows.map((r) => r.rps)),
  p50: median(rows.map((r) => r.p50)),
  p99: median(rows.map((r) => r.p99)),
  cpuPerReq: median(rows.map((r) => r.cpuPerReq)),
  non2xx: rows.reduce((n, r) => n + r.non2xx, 0),
});

/**
 * The config both hookgate instances run (and bench/allocations.mjs's): SQLite, echo model, replies to the `log`
 * channel's file. `sections` replaces top-level sections (the retention soak's heartbeat).
 */
export function writeConfig(dir, { admin, adminPort, storage = {}, sections = {} } = {}) {
  const config = join(dir, 'hookgate.json5');
  writeFileSync(
    config,
    JSON.stringify({
      gateway: { port: 0 },
      storage:
        storage.driver === 'postgres'
          ? storage
          : {
              driver: 'sqlite',
              path: join(dir, 'hookgate.db'),
              ...(process.env.BENCH_WRITER ? { writer: process.env.BENCH_WRITER } : {}),
              ...(process.env.BENCH_CHECKPOINTS ? { checkpoints: process.env.BENCH_CHECKPOINTS } : {}),
              ...storage,
            },
      hooks: { enabled: true, token: TOKEN },
      // A summary of each hook run would otherwise wake the main agent too.
      heartbeat: { every: 'off' },
      agents: { defaults: { model: 'echo/echo', maxConcurrent: 16 } },
      channels: { default: { channel: 'log' }, log: { path: join(dir, 'deliveries.jsonl') } },
      logging: { level: 'info' },
      ...(admin ? { admin: { enabled: true, port: adminPort, token: ADMIN_TOKEN } } : {}),
      ...sections,
    }),
  );
  return config;
}

/**
 * The environment (`NAME=value` words before `node`) and node flags of `npm start` (package.json), so the bench
 * measures hookgate as it is documented to run. The bench's own environment wins over the script's, as a shell's
 * would for an operator who sets the same variable.
 */
export function startCommand() {
  const words = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start.split(' ');
  const node = words.indexOf('node');
  const env = Object.fromEntries(words.slice(0, node).map((w) => w.split('=')));
  const flags = words.slice(node + 1, words.indexOf('dist/cli/main.js')).filter((a) => a.startsWith('--'));
  return { env: { ...env, ...process.env }, flags };
}

/** Runs unfinished and deliveries unsent: PostgreSQL's and the contract floor's SQL. */
const BACKLOG_SQL = `SELECT (SELECT COUNT(*) FROM runs WHERE state IN ('queued', 'running')) + (SELECT COUNT(*) FROM deliveries WHERE state = 'pending') AS n`;
/** The same on hookgate's SQLite store, whose fresh runs are outside runs_by_state (store/fresh-runs.ts). */
const HOOKGATE_SQLITE_BACKLOG_SQL = `SELECT ${countRunsIn("('queued', 'running')")}
  + (SELECT COUNT(*) FROM deliveries WHERE state = 'pending') AS n`;

/** A read-only connection to a SQLite store (hookgate's or the contract floor's) and its backlog, for drain(). */
function sqliteBacklog(path, sql = BACKLOG_SQL) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const count = db.prepare(sql);
  return { db, backlog: () => count.get().n };
}

/**
 * `args` (a script and its arguments) on the server's CPU, run by node as hookgate runs: `npm start`'s node flags and
 * environment, then `o.nodeArgs` (BENCH_NODE_ARGS) and `env`; resolves as startChild with `key`.
 */
function startAsHookgate(o, args, { key, env = {} }) {
  const start = startCommand();
  return startChild(process.execPath, [...start.flags, ...(o.nodeArgs ?? []), ...args], {
    cpu: o.serverCpu,
    env: { ...start.env, ...env },
    key,
  });
}

/** A pinned hookgate in `dir` (its store there); `storage` overrides keys of the config's storage section. */
export async function startHookgate(o, dir, storage = {}, sections = {}) {
  const adminPort = o.admin ? await freePort() : 0;
  const config = writeConfig(dir, { admin: o.admin, adminPort, storage, sections });
  const hg = await startAsHookgate(o, [join(root, 'dist/cli/main.js'), 'serve', '--config', config], {
    key: 'url',
    env: { HOOKGATE_BENCH: '1' },
  });
  // On PostgreSQL there is no file to watch: the caller reads the database itself.
  if (storage.driver === 'postgres') {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: storage.url });
    await client.connect();
    const backlog = async () => Number((await client.query(BACKLOG_SQL)).rows[0].n);
    return {
      ...hg,
      url: hg.info.url,
      adminUrl: o.admin ? `http://127.0.0.1:${adminPort}` : undefined,
      backlog,
      db: { close: () => void client.end() },
    };
  }
  return {
    ...hg,
    url: hg.info.url,
    adminUrl: o.admin ? `http://127.0.0.1:${adminPort}` : undefined,
    ...sqliteBacklog(join(dir, 'hookgate.db'), HOOKGATE_SQLITE_BACKLOG_SQL),
  };
}

/** Stop a hookgate of startHookgate's: its backlog reader closed, the process sent SIGTERM and waited for. */
export async function stopHookgate(hg) {
  hg.db.close();
  hg.child.kill('SIGTERM');
  await new Promise((res) => (hg.child.exitCode === null ? hg.child.once('exit', res) : res()));
}

/**
 * bench/contract-floor-server.mjs on the server's CPU, in `dir`: the floor plus what hookgate's HTTP contract asks of
 * every request, with no hookgate code. `backlog()` as hookgate's: its runs unfinished and deliveries unsent. Run as
 * hookgate runs: the young generation and malloc's arenas move a server's rate by a tenth, and what separates the two
 * should be their code.
 */
export async function startContractFloor(o, dir) {
  const path = join(dir, 'contract.db');
  const server = await startAsHookgate(
    o,
    [join(root, 'bench/contract-floor-server.mjs'), path, join(dir, 'contract.jsonl'), TOKEN],
    { key: 'port' },
  );
  return { ...server, url: `http://127.0.0.1:${server.info.port}`, ...sqliteBacklog(path) };
}

/**
 * `--admin`: one client attached to the live feed for the whole run, reading every byte. A plain node:http reader
 * (not fetch: its web stream costs several times more per chunk), since it shares the load generator's core: a
 * costly reader would slow the load generator and show up as the ingress's cost.
 */
export function attachFeed(adminUrl) {
  const state = { status: 0, bytes: 0, error: undefined };
  return new Promise((resolve) => {
    const req = httpGet(`${adminUrl}/api/v1/events`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
      state.status = res.statusCode ?? 0;
      res.on('data', (chunk) => (state.bytes += chunk.length));
      res.on('error', () => {});
      resolve({ state, close: () => req.destroy() });
    });
    req.on('error', (err) => {
      if (state.status) return; // destroyed at the end
      state.error = `${err.message}${err.code ? `: ${err.code}, the admin listener is not there on this branch` : ''}`;
      resolve({ state, close: () => {} });
    });
  });
}

export async function drain(hg, limitMs = 60_000) {
  const t0 = performance.now();
  for (;;) {
    const q0 = performance.now();
    const left = await hg.backlog();
    if (left === 0 || performance.now() - t0 >= limitMs) return { seconds: (performance.now() - t0) / 1000, left };
    // A count over a large backlog takes a while (on SQLite it reads each fresh run's row: ~18 ms per 100,000): polled
    // back to back it would keep this process from reading the server's stdout, whose log lines then pile up in the
    // server (seen: 88 → 237 MiB of RSS through a drain of 900,000 runs).
    await sleep(Math.max(100, 10 * (performance.now() - q0)));
  }
}

/**
 * Ingress rounds: bare, floor, contract floor wake, wake, bare, contract floor agent, agent, `rounds` times. The floor
 * (bench/floor-server.mjs: the bare server plus one grouped SQLite commit of two rows per request, answered after it)
 * is what any ingress that commits to SQLite before answering costs at least; the targets are hookgate's ratios to it.
 * The contract floor (bench/contract-floor-server.mjs) adds the least hookgate's contract asks of each request, so its
 * own ratios to the floor say which targets an implementation of the contract can reach on this machine at all.
 */
async function ingress(o) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-'));
  const bare = await startBenchServer(o, 'bare-server.mjs');
  const floor = await startBenchServer(o, 'floor-server.mjs', join(dir, 'floor.db'));
  const contract = await startContractFloor(o, dir);
  const hg = await startHookgate(o, dir);
  const feed = o.admin ? await attachFeed(hg.adminUrl) : undefined;
  try {
    const bareUrl = `http://127.0.0.1:${bare.info.port}/`;
    const floorUrl = `http://127.0.0.1:${floor.info.port}/`;
    const load = (url, kind, token, seconds = o.seconds) => ({ url, kind, token, seconds, connections: o.connections });
    // Warm-up (JIT, SQLite page cache), not measured.
    await runLoad(o, load(bareUrl, 'bare', undefined, 2));
    await runLoad(o, load(floorUrl, 'wake', undefined, 2));
    await runLoad(o, load(`${contract.url}/hooks/wake`, 'wake', TOKEN, 2));
    await runLoad(o, load(`${contract.url}/hooks/agent`, 'agent', TOKEN, 2));
    await drain(contract);
    await runLoad(o, load(`${hg.url}/hooks/wake`, 'wake', TOKEN, 2));
    await runLoad(o, load(`${hg.url}/hooks/agent`, 'agent', TOKEN, 2));
    const warmDrain = await drain(hg);
    const r = {
      bareW: [],
      floor: [],
      contractWake: [],
      wake: [],
      bareA: [],
      contractAgent: [],
      agent: [],
      contractDrains: [],
      drains: [],
    };
    for (let i = 0; i < o.rounds; i++) {
      r.bareW.push(await round(o, bare.child.pid, load(bareUrl, 'bare')));
      r.floor.push(await round(o, floor.child.pid, load(floorUrl, 'wake')));
      r.contractWake.push(await round(o, contract.child.pid, load(`${contract.url}/hooks/wake`, 'wake', TOKEN)));
      r.wake.push(await round(o, hg.child.pid, load(`${hg.url}/hooks/wake`, 'wake', TOKEN)));
      r.bareA.push(await round(o, bare.child.pid, load(bareUrl, 'bare')));
      r.contractAgent.push(await round(o, contract.child.pid, load(`${contract.url}/hooks/agent`, 'agent', TOKEN)));
      r.contractDrains.push(await drain(contract));
      r.agent.push(await round(o, hg.child.pid, load(`${hg.url}/hooks/agent`, 'agent', TOKEN)));
      r.drains.push(await drain(hg));
    }
    const per = (xs, ys, key = 'rps') => xs.map((x, k) => x[key] / ys[k][key]);
    const affinity = { bare: threadAffinity(bare.child.pid), hookgate: threadAffinity(hg.child.pid) };
    return {
      rounds: r,
      bare: medianRow([...r.bareW, ...r.bareA]),
      floor: medianRow(r.floor),
      contractWake: medianRow(r.contractWake),
      contractAgent: medianRow(r.contractAgent),
      wake: medianRow(r.wake),
      agent: medianRow(r.agent),
      wakeRatios: r.wake.map((w, i) => w.rps / r.bareW[i].rps),
      agentRatios: r.agent.map((a, i) => a.rps / r.bareA[i].rps),
      wakeP99Ratios: r.wake.map((w, i) => w.p99 / r.bareW[i].p99),
      floorRatios: r.floor.map((f, i) => f.rps / r.bareW[i].rps),
      floorP99Ratios: r.floor.map((f, i) => f.p99 / r.bareW[i].p99),
      wakeToFloor: per(r.wake, r.floor),
      agentToFloor: per(r.agent, r.floor),
      wakeCpuToFloor: per(r.wake, r.floor, 'cpuPerReq'),
      // The same three ratios for the contract floor: where it misses a target, so would any implementation.
      contractWakeToFloor: per(r.contractWake, r.floor),
      contractAgentToFloor: per(r.contractAgent, r.floor),
      contractWakeCpuToFloor: per(r.contractWake, r.floor, 'cpuPerReq'),
      rss: {
        bare: peakRssMiB(bare.child.pid),
        floor: peakRssMiB(floor.child.pid),
        contract: peakRssMiB(contract.child.pid),
        hookgate: peakRssMiB(hg.child.pid),
      },
      affinity,
      warmDrain,
      feed: feed ? { ...feed.state } : undefined,
    };
  } finally {
    feed?.close();
    hg.db.close();
    contract.db.close();
    bare.child.kill();
    floor.child.kill();
    contract.child.kill();
    hg.child.kill('SIGTERM');
    await new Promise((res) => (hg.child.exitCode === null ? hg.child.once('exit', res) : res()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Read the log channel's file as it grows: count lines and take each one's latency from the send time in its text. */
function tailDeliveries(path) {
  const state = { lines: 0, latencies: [], offset: 0, rest: '' };
  const read = () => {
    if (!existsSync(path)) return;
    const size = statSync(path).size;
    if (size <= state.offset) return;
    const buf = Buffer.alloc(size - state.offset);
    const fd = openSync(path, 'r');
    readSync(fd, buf, 0, buf.length, state.offset);
    closeSync(fd);
    state.offset = size;
    const now = Date.now();
    const text = state.rest + buf.toString('utf8');
    const parts = text.split('\n');
    state.rest = parts.pop();
    for (const line of parts) {
      state.lines++;
      const m = /@(\d{13})/.exec(line);
      if (m) state.latencies.push(now - Number(m[1]));
    }
  };
  return { state, read };
}
/** The pipeline: `/hooks/agent` at `rate` per second for `seconds`, end to end to the delivered line in the log file. */
async function pipeline(o) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-pipeline-'));
  const hg = await startHookgate(o, dir);
  const feed = o.admin ? await attachFeed(hg.adminUrl) : undefined;
  try {
    // Warm-up, then wait for it to be delivered.
    await runLoad(o, {
      url: `${hg.url}/hooks/agent`,
      kind: 'agent',
      token: TOKEN,
      seconds: 2,
      connections: 20,
      rate: 500,
    });
    await drain(hg);
    const tail = tailDeliveries(join(dir, 'deliveries.jsonl'));
    tail.read();
    tail.state.latencies = [];
    const startLines = tail.state.lines;
    const cpu0 = cpuMicros(hg.child.pid);
    const t0 = performance.now();
    const samples = [];
    const sampler = setInterval(() => {
      tail.read();
      samples.push({
        t: (performance.now() - t0) / 1000,
        delivered: tail.state.lines - startLines,
        backlog: hg.backlog(),
      });
    }, 1000);
    const poll = setInterval(tail.read, 100);
    const load = await runLoad(o, {
      url: `${hg.url}/hooks/agent`,
      kind: 'agent',
      token: TOKEN,
      seconds: o.pipelineSeconds,
      connections: 50,
      rate: o.rate,
    });
    const loadEnd = performance.now();
    tail.read();
    const deliveredAtEnd = tail.state.lines - startLines;
    clearInterval(sampler);
    const d = await drain(hg, 120_000);
    // The last lines may land a moment after the rows say delivered.
    await sleep(200);
    tail.read();
    clearInterval(poll);
    const done = performance.now();
    const cpu = cpuMicros(hg.child.pid) - cpu0;
    const lat = tail.state.latencies.sort((a, b) => a - b);
    const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] : NaN);
    const accepted = load.requests - load.non2xx - load.errors;
    const delivered = tail.state.lines - startLines;
    return {
      rate: o.rate,
      seconds: o.pipelineSeconds,
      accepted,
      acceptedPerSecond: accepted / o.pipelineSeconds,
      acceptP99: load.p99,
      non2xx: load.non2xx + load.errors,
      deliveredDuringLoad: deliveredAtEnd,
      deliveredPerSecond: deliveredAtEnd / ((loadEnd - t0) / 1000),
      delivered,
      drainSeconds: d.seconds,
      totalSeconds: (done - t0) / 1000,
      backlog: samples.map((s) => s.backlog),
      maxBacklog: Math.max(0, ...samples.map((s) => s.backlog)),
      e2e: { p50: pct(50), p99: pct(99), max: lat.at(-1) ?? NaN },
      cpuPerRun: cpu / Math.max(1, delivered),
      rss: peakRssMiB(hg.child.pid),
      feed: feed ? { ...feed.state } : undefined,
    };
  } finally {
    feed?.close();
    await stopHookgate(hg);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The ingress targets are ratios to the floor measured in the same round: the floor is what any ingress that commits
 * to SQLite before answering costs, so what is left between it and hookgate is hookgate's own cost.
 */
export const TARGETS = {
  wakeToFloor: 0.9,
  wakeCpuToFloor: 1.15,
  agentToFloor: 0.75,
  runsPerSecond: 2000,
  rssMiB: 100,
};

function verdicts(i, p) {
  const rss = Math.max(i?.rss.hookgate ?? 0, p?.rss ?? 0);
  const v = [];
  if (i) {
    // Each ingress target is also measured on the contract floor: `beyond` when the floor of the same kind misses it
    // too, in the same rounds (a target met, or beyond, does not fail the run).
    const judged = (target, hookgate, contract, meets) => ({
      target,
      value: median(hookgate),
      contract: median(contract),
      ok: meets(median(hookgate)),
      beyond: !meets(median(contract)),
    });
    v.push(
      judged(
        `/hooks/wake ≥ ${TARGETS.wakeToFloor}× the floor's req/s (median of rounds)`,
        i.wakeToFloor,
        i.contractWakeToFloor,
        (x) => x >= TARGETS.wakeToFloor,
      ),
      judged(
        `/hooks/wake CPU per request ≤ ${TARGETS.wakeCpuToFloor}× the floor's (median of rounds)`,
        i.wakeCpuToFloor,
        i.contractWakeCpuToFloor,
        (x) => x <= TARGETS.wakeCpuToFloor,
      ),
      judged(
        `/hooks/agent ≥ ${TARGETS.agentToFloor}× the floor's req/s, runs executing (median of rounds)`,
        i.agentToFloor,
        i.contractAgentToFloor,
        (x) => x >= TARGETS.agentToFloor,
      ),
    );
  }
  if (p) {
    // Sustained: delivered at the offered rate during the load (within 2 %), and every accepted run delivered after it.
    const ok =
      p.deliveredPerSecond >= TARGETS.runsPerSecond * 0.98 &&
      p.acceptedPerSecond >= TARGETS.runsPerSecond * 0.98 &&
      p.delivered >= p.accepted;
    v.push({
      target: `≥ ${TARGETS.runsPerSecond} echo runs/s end to end for ${p.seconds} s, bounded backlog`,
      value: p.deliveredPerSecond,
      ok,
    });
  }
  v.push({ target: `peak RSS ≤ ${TARGETS.rssMiB} MiB`, value: rss, ok: rss <= TARGETS.rssMiB });
  return v;
}

export const metOrBeyond = (v) => v.ok || v.beyond === true;
/** A verdict's word in a table: met, missed by the floor it is judged on too (`beyond`), or missed. */
export const verdictWord = (v, floor = 'the contract floor') => (v.ok ? 'yes' : v.beyond ? `beyond ${floor}` : 'NO');

function table(o, i, p) {
  const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const lines = [
    `hookgate bench (pinned: server on CPU ${o.serverCpu}, load generator ${o.wrk ? 'wrk' : 'autocannon'} on CPU ${o.loadCpu}): ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s (bare, floor, contract floor wake, wake, bare, contract floor agent, agent), medians; node ${process.version}, ${new Date().toISOString()}${o.admin ? '; --admin: one client on /api/v1/events' : ''}`,
  ];
  if (i) {
    lines.push(
      `server threads: bare ${i.affinity.bare.threads} on CPU ${i.affinity.bare.cpus}; hookgate ${i.affinity.hookgate.threads} on CPU ${i.affinity.hookgate.cpus}`,
      '',
      '| target | req/s | p50 ms | p99 ms | non-2xx | CPU µs/req | peak RSS MiB | ratio to bare |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
      `| bare node:http | ${f(i.bare.rps)} | ${f(i.bare.p50, 2)} | ${f(i.bare.p99, 2)} | ${i.bare.non2xx} | ${f(i.bare.cpuPerReq)} | ${f(i.rss.bare, 1)} | 1.00 |`,
      `| floor: bare + grouped SQLite commit of two rows (no hookgate) | ${f(i.floor.rps)} | ${f(i.floor.p50, 2)} | ${f(i.floor.p99, 2)} | ${i.floor.non2xx} | ${f(i.floor.cpuPerReq)} | ${f(i.rss.floor, 1)} | ${f(median(i.floorRatios), 2)} |`,
      `| contract floor /hooks/wake (the floor + the contract's checks, no hookgate) | ${f(i.contractWake.rps)} | ${f(i.contractWake.p50, 2)} | ${f(i.contractWake.p99, 2)} | ${i.contractWake.non2xx} | ${f(i.contractWake.cpuPerReq)} | ${f(i.rss.contract, 1)} | - |`,
      `| contract floor /hooks/agent (its runs meanwhile) | ${f(i.contractAgent.rps)} | ${f(i.contractAgent.p50, 2)} | ${f(i.contractAgent.p99, 2)} | ${i.contractAgent.non2xx} | ${f(i.contractAgent.cpuPerReq)} | ${f(i.rss.contract, 1)} | - |`,
      `| hookgate /hooks/wake | ${f(i.wake.rps)} | ${f(i.wake.p50, 2)} | ${f(i.wake.p99, 2)} | ${i.wake.non2xx} | ${f(i.wake.cpuPerReq)} | ${f(i.rss.hookgate, 1)} | ${f(median(i.wakeRatios), 2)} |`,
      `| hookgate /hooks/agent (runs on echo → log file meanwhile) | ${f(i.agent.rps)} | ${f(i.agent.p50, 2)} | ${f(i.agent.p99, 2)} | ${i.agent.non2xx} | ${f(i.agent.cpuPerReq)} | ${f(i.rss.hookgate, 1)} | ${f(median(i.agentRatios), 2)} |`,
      '',
      `wake / bare per round: ${i.wakeRatios.map((x) => f(x, 2)).join(' ')}; wake p99 / bare p99: ${i.wakeP99Ratios.map((x) => f(x, 2)).join(' ')}`,
      `floor / bare per round: ${i.floorRatios.map((x) => f(x, 2)).join(' ')}; floor p99 / bare p99: ${i.floorP99Ratios.map((x) => f(x, 2)).join(' ')}`,
      `wake / floor per round: ${i.wakeToFloor.map((x) => f(x, 2)).join(' ')} (median ${f(median(i.wakeToFloor), 2)}); wake CPU / floor CPU: ${i.wakeCpuToFloor.map((x) => f(x, 2)).join(' ')}; agent / floor: ${i.agentToFloor.map((x) => f(x, 2)).join(' ')} (median ${f(median(i.agentToFloor), 2)})`,
      `contract floor / floor per round: wake ${i.contractWakeToFloor.map((x) => f(x, 2)).join(' ')}, wake CPU ${i.contractWakeCpuToFloor.map((x) => f(x, 2)).join(' ')}, agent ${i.contractAgentToFloor.map((x) => f(x, 2)).join(' ')}`,
      `agent / bare per round: ${i.agentRatios.map((x) => f(x, 2)).join(' ')}; backlog drained after each agent round in: ${i.rounds.drains.map((d) => f(d.seconds, 1)).join(' ')} s (contract floor: ${i.rounds.contractDrains.map((d) => f(d.seconds, 1)).join(' ')} s)`,
      `p99 ms per round: bare ${[...i.rounds.bareW].map((r) => f(r.p99, 1)).join(' ')} | floor ${i.rounds.floor.map((r) => f(r.p99, 1)).join(' ')} | wake ${i.rounds.wake.map((r) => f(r.p99, 1)).join(' ')} | agent ${i.rounds.agent.map((r) => f(r.p99, 1)).join(' ')}`,
    );
    if (i.feed)
      lines.push(
        `--admin feed: ${i.feed.error ? `no answer (${i.feed.error})` : i.feed.status === 404 ? 'GET /api/v1/events answered 404 (not built on this branch)' : `HTTP ${i.feed.status}, ${i.feed.bytes} bytes read`}`,
      );
  }
  if (p) {
    lines.push(
      '',
      `| pipeline: /hooks/agent at ${p.rate}/s for ${p.seconds} s (echo → log file) | value |`,
      '|---|---:|',
      `| accepted runs/s (non-2xx) | ${f(p.acceptedPerSecond)} (${p.non2xx}) |`,
      `| accept p99 ms | ${f(p.acceptP99, 1)} |`,
      `| delivered lines/s during the load | ${f(p.deliveredPerSecond)} |`,
      `| backlog each second (runs unfinished + deliveries unsent) | ${p.backlog.join(' ')} |`,
      `| all ${p.delivered} delivered ${f(p.drainSeconds, 1)} s after the load ended | max backlog ${p.maxBacklog} |`,
      `| POST → delivered line, p50 / p99 / max ms | ${f(p.e2e.p50)} / ${f(p.e2e.p99)} / ${f(p.e2e.max)} |`,
      `| CPU µs per run (whole process) | ${f(p.cpuPerRun)} |`,
      `| peak RSS MiB | ${f(p.rss, 1)} |`,
    );
    if (p.feed)
      lines.push(
        `--admin feed (pipeline): ${p.feed.error ? `no answer (${p.feed.error})` : p.feed.status === 404 ? 'GET /api/v1/events answered 404' : `HTTP ${p.feed.status}, ${p.feed.bytes} bytes read`}`,
      );
  }
  lines.push('', '| target | measured | contract floor | met |', '|---|---:|---:|:---:|');
  for (const v of verdicts(i, p))
    lines.push(`| ${v.target} | ${f(v.value, 2)} | ${f(v.contract, 2)} | ${verdictWord(v)} |`);
  lines.push(
    '',
    'CPU µs/req: utime+stime of the whole server process (all threads, /proc/<pid>/stat) over the round, per request.',
    'The floor server does only what any ingress that commits to SQLite before answering must (bench/floor-server.mjs); the ingress targets are hookgate against it, round by round (docs/performance.md, "What bounds it").',
    "The contract floor (bench/contract-floor-server.mjs) is that floor plus the least hookgate's HTTP contract asks of each request; a target it misses too is 'beyond' it.",
  );
  return lines.join('\n');
}

export async function pinnedBench(argv) {
  const has = (flag) => argv.includes(flag);
  const arg = (flag, def) => {
    const k = argv.indexOf(flag);
    return k === -1 ? def : argv[k + 1];
  };
  const o = {
    serverCpu: Number(process.env.BENCH_SERVER_CPU ?? 0),
    loadCpu: Number(process.env.BENCH_LOAD_CPU ?? 1),
    seconds: Number(process.env.BENCH_SECONDS ?? 8),
    rounds: Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5)),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
    rate: Number(arg('--rate', process.env.BENCH_RATE ?? 2000)),
    pipelineSeconds: Number(process.env.BENCH_PIPELINE_SECONDS ?? 30),
    wrk: process.env.BENCH_LOADGEN === 'autocannon' ? undefined : which('wrk'),
    admin: has('--admin'),
    json: has('--json'),
    // e.g. BENCH_NODE_ARGS=--cpu-prof to profile the server (the profile is written at its exit, in the cwd).
    nodeArgs: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
  };
  if (!which('taskset')) throw new Error('taskset is not installed (util-linux); use --unpinned');
  // This script (the sampler) stays off the server's core too.
  execFileSync('taskset', ['-p', '-c', String(o.loadCpu), String(process.pid)], { stdio: 'ignore' });
  const only = arg('--only', 'all');
  if (only === 'admin-cost') {
    const { adminCost, adminCostTable } = await import('./admin-cost.mjs');
    const a = await adminCost(o);
    process.stdout.write(o.json ? `${JSON.stringify({ pinned: true, adminCost: a })}\n` : `${adminCostTable(o, a)}\n`);
    return a.ok;
  }
  if (only === 'latency') {
    const { latencyBench, latencyTable } = await import('./latency.mjs');
    const l = await latencyBench(o);
    process.stdout.write(o.json ? `${JSON.stringify({ pinned: true, latency: l })}\n` : `${latencyTable(o, l)}\n`);
    return l.allMetOrBeyond;
  }
  if (only === 'grown') {
    const { grownBench, grownTable } = await import('./grown.mjs');
    const g = await grownBench(o);
    process.stdout.write(o.json ? `${JSON.stringify({ pinned: true, grown: g })}\n` : `${grownTable(o, g)}\n`);
    return g.targets.every((v) => v.ok);
  }
  if (only === 'retention') {
    const { retentionBench, retentionTable } = await import('./retention.mjs');
    const r = await retentionBench(o);
    process.stdout.write(o.json ? `${JSON.stringify({ pinned: true, retention: r })}\n` : `${retentionTable(o, r)}\n`);
    return r.targets.every((v) => v.ok);
  }
  if (only === 'postgres') {
    const { postgresCpuBench, postgresCpuTable } = await import('./postgres-cpu.mjs');
    const p = await postgresCpuBench(o);
    process.stdout.write(o.json ? `${JSON.stringify({ pinned: true, postgres: p })}\n` : `${postgresCpuTable(o, p)}\n`);
    return p.allMetOrBeyond;
  }
  if (only === 'floor') {
    const { floorBench, floorTable } = await import('./floor.mjs');
    const f = await floorBench(o);
    process.stdout.write(o.json ? `${JSON.stringify({ pinned: true, floor: f })}\n` : `${floorTable(o, f)}\n`);
    return true;
  }
  const i = only === 'pipeline' ? undefined : await ingress(o);
  const p = only === 'ingress' ? undefined : await pipeline(o);
  const v = verdicts(i, p);
  if (o.json) {
    const { nodeArgs, ...opts } = o;
    process.stdout.write(
      `${JSON.stringify({ pinned: true, options: { ...opts, wrk: o.wrk ?? null }, ingress: i, pipeline: p, targets: v, allMet: v.every((x) => x.ok), allMetOrBeyond: v.every(metOrBeyond) })}\n`,
    );
  } else process.stdout.write(`${table(o, i, p)}\n`);
  return v.every(metOrBeyond);
}
