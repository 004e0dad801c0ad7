#!/usr/bin/env node
// Instructions per request, counted by valgrind's callgrind: a measure that other processes on the machine do not
// move (req/s and CPU time do), for comparing two builds. Needs valgrind (Debian: apt install valgrind).
//   node bench/instructions.mjs [--target T] [--store S] [ROOT ...]   ROOT: a checkout with a built dist/ (default:
//   this one)
//   T: wake (default: /hooks/wake), agent (/hooks/agent; its runs drained before and after the counted requests, so
//   each request's count includes its run, echo → log file), agent-accept (/hooks/agent while its runs wait: the
//   model is a local server that takes the one run the worker claims (maxConcurrent 1) and never answers, so each
//   count is the accept alone, as at a saturated ingress whose runs are deferred), floor (bench/floor-server.mjs,
//   two rows per request),
//   floor1 (the same, one row per request), contract (bench/contract-floor-server.mjs: /hooks/wake on the contract
//   floor), contract-agent (/hooks/agent on the contract floor, its runs drained as for agent), contract-agent-accept
//   (/hooks/agent on the contract floor with its runs held, never executed: the accept alone, beside agent-accept)
//   S: sqlite (default) or postgres (a fresh database per ROOT on BENCH_PG_URL / HOOKGATE_TEST_PG_URL, default the
//   machine's server, dropped at the end; only hookgate's process is counted, not the database server's)
//   env: INSTR_WARMUP (3000 requests, not counted), INSTR_REQUESTS (4000, counted), INSTR_CONNECTIONS (8),
//   INSTR_ANNOTATE (a file prefix: callgrind_annotate's per-function output kept as PREFIX-N.txt and the raw dump as
//   PREFIX-N.callgrind, N the ROOT's index; with INSTR_TOP also V8's map of JIT code as PREFIX-N.map, which names
//   the JIT addresses that `callgrind_annotate --tree=caller` shows as callers), INSTR_TOP (N: print each ROOT's N
//   costliest functions per request, self cost; the server runs with --perf-basic-prof so that JIT-compiled
//   JavaScript is named, not an address),
//   INSTR_NODE_ARGS (more node flags for the server, space-separated), INSTR_VALGRIND_ARGS (more callgrind flags:
//   `--cache-sim=yes` adds simulated cache misses, read from INSTR_ANNOTATE's PREFIX-N.txt; the table stays
//   instructions)
// Each ROOT runs under callgrind at once (the counts do not depend on it); the table gives instructions per request by
// kind. "JIT compiler" and "GC" depend on when V8 decides to optimise or collect, which timing moves under valgrind's
// slowdown: compare builds on the "steady" sum, which leaves them out.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { closedLoop, printedUrl } from './closed-loop.mjs';
import { startCommand, TOKEN, writeConfig } from './pinned.mjs';

const here = new URL('..', import.meta.url).pathname;
const argv = process.argv.slice(2);
const targetAt = argv.indexOf('--target');
const TARGET = targetAt === -1 ? 'wake' : argv.splice(targetAt, 2)[1];
const TARGETS = [
  'wake',
  'agent',
  'agent-accept',
  'floor',
  'floor1',
  'contract',
  'contract-agent',
  'contract-agent-accept',
];
if (!TARGETS.includes(TARGET)) throw new Error(`--target: ${TARGETS.join(', ')}, not ${TARGET}`);
const storeAt = argv.indexOf('--store');
const STORE = storeAt === -1 ? 'sqlite' : argv.splice(storeAt, 2)[1];
if (!['sqlite', 'postgres'].includes(STORE)) throw new Error(`--store: sqlite or postgres, not ${STORE}`);
const PG_URL =
  process.env.BENCH_PG_URL || process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const roots = argv.map((r) => resolve(r));
if (roots.length === 0) roots.push(here);
const WARMUP = Number(process.env.INSTR_WARMUP ?? 3000);
const REQUESTS = Number(process.env.INSTR_REQUESTS ?? 4000);
const CONNECTIONS = Number(process.env.INSTR_CONNECTIONS ?? 8);
const TOP = Number(process.env.INSTR_TOP ?? 0);

/** Self cost by kind, from callgrind_annotate's per-function lines. */
const KINDS = [
  [
    'JIT compiler',
    /v8::internal::compiler::|v8::internal::maglev|v8::internal::Pipeline|RegisterAllocator|InstructionSelector/,
  ],
  ['GC', /Heap|Scavenge|Mark|Sweep|Evacuat|IterateObjectCache|RememberedSet|SlotSet/],
  ['SQLite', /better_sqlite3/],
  ['JIT code (JS)', /\?\?\?:0x/],
  ['V8 builtins', /Builtins_/],
  ['libc', /libc\.so/],
  ['JSON', /Json/],
  ['node native (http parser, streams)', /llhttp|node::/],
  ['other V8 runtime', /./],
];

/** Runs `f` with a client on the admin database. */
async function withAdmin(f) {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/** A model endpoint that takes connections and never answers: `--target agent-accept`'s one claimed run waits on it. */
async function heldModel() {
  const sockets = new Set();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.resume();
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

async function measure(root, index) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-instr-'));
  const held = TARGET === 'agent-accept' ? await heldModel() : undefined;
  let storage = {}; // the pinned bench's SQLite store in `dir`
  let dbName;
  if (STORE === 'postgres') {
    dbName = `hg_instr_${process.pid}_${index}`;
    await withAdmin((c) => c.query(`CREATE DATABASE "${dbName}"`));
    const u = new URL(PG_URL);
    u.pathname = `/${dbName}`;
    storage = { driver: 'postgres', url: u.toString(), poolSize: 10 };
  }
  // The pinned bench's config; `agent-accept` holds its runs on a model that never answers.
  const sections = held
    ? {
        agents: { defaults: { model: 'held/m', maxConcurrent: 1, timeoutSeconds: 3600 } },
        models: { providers: { held: { api: 'openai-chat', baseUrl: held.url, apiKey: 'bench' } } },
      }
    : {};
  const config = writeConfig(dir, { storage, sections });
  const out = join(dir, 'callgrind.out');
  const args = ['--tool=callgrind', '--smc-check=all-non-file', '--instr-atstart=no', `--callgrind-out-file=${out}`];
  args.push(...(process.env.INSTR_VALGRIND_ARGS ?? '').split(' ').filter(Boolean));
  const floor = TARGET.startsWith('floor');
  const contract = TARGET.startsWith('contract');
  // The contract floor runs with hookgate's node flags, as the pinned bench runs it.
  const asHookgate = startCommand().flags;
  const server = floor
    ? [join(root, 'bench/floor-server.mjs'), join(dir, 'floor.db'), ...(TARGET === 'floor1' ? ['1'] : [])]
    : contract
      ? [
          ...asHookgate,
          join(root, 'bench/contract-floor-server.mjs'),
          join(dir, 'floor.db'),
          join(dir, 'deliveries.jsonl'),
          TOKEN,
        ]
      : [...asHookgate, join(root, 'dist/cli/main.js'), 'serve', '--config', config];
  const nodeArgs = (process.env.INSTR_NODE_ARGS ?? '').split(' ').filter(Boolean);
  if (TOP > 0) nodeArgs.push('--perf-basic-prof');
  const child = spawn('valgrind', [...args, process.execPath, ...nodeArgs, ...server], {
    env: {
      ...process.env,
      HOOKGATE_BENCH: '1',
      ...(TARGET === 'contract-agent-accept' ? { CONTRACT_HOLD_RUNS: '1' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const url = await printedUrl(
    child,
    (code) => new Error(`${root}: hookgate under valgrind exited ${code}\n${stderr}`),
  );
  const agentPath = TARGET.includes('agent');
  const path = floor ? '/' : agentPath ? '/hooks/agent' : '/hooks/wake';
  const load = closedLoop({ url, path, token: TOKEN, connections: CONNECTIONS });
  const burst = (n) => load.burst(n).catch((err) => Promise.reject(new Error(`${root}: ${err.message}`)));
  // The agent's runs: wait until each request's reply is in the log file, so the counted window holds whole runs.
  const drained = async (n) => {
    if (TARGET !== 'agent' && TARGET !== 'contract-agent') return;
    const lines = () => {
      try {
        return readFileSync(join(dir, 'deliveries.jsonl'), 'utf8').split('\n').length - 1;
      } catch {
        return 0;
      }
    };
    for (let t = Date.now(); lines() < n; ) {
      if (Date.now() - t > 600_000) throw new Error(`${root}: ${lines()} of ${n} replies delivered after 10 min`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  await burst(WARMUP);
  await drained(WARMUP);
  execFileSync('callgrind_control', ['--instr=on', String(child.pid)], { stdio: 'ignore' });
  await burst(REQUESTS);
  await drained(WARMUP + REQUESTS);
  execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
  execFileSync('callgrind_control', ['--instr=off', String(child.pid)], { stdio: 'ignore' });
  held?.close(); // the waiting run's call fails now, so the stop does not wait for it
  child.kill('SIGTERM');
  await new Promise((ok) => child.once('exit', ok));
  load.close();
  const dump = readdirSync(dir)
    .map((f) => join(dir, f))
    .find((f) => f.startsWith(out) && /^part: 1$/m.test(readFileSync(f, 'utf8')));
  if (!dump) throw new Error(`${root}: no callgrind dump in ${dir}`);
  const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', dump], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  if (process.env.INSTR_ANNOTATE) {
    writeFileSync(`${process.env.INSTR_ANNOTATE}-${index}.txt`, text);
    writeFileSync(`${process.env.INSTR_ANNOTATE}-${index}.callgrind`, readFileSync(dump));
  }
  const byKind = new Map(KINDS.map(([k]) => [k, 0]));
  const byFunction = new Map();
  const jsName =
    TOP > 0
      ? perfMap(child.pid, process.env.INSTR_ANNOTATE && `${process.env.INSTR_ANNOTATE}-${index}.map`)
      : undefined;
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!m || m[2].includes('PROGRAM TOTALS')) continue;
    const kind = KINDS.find(([, re]) => re.test(m[2]))[0];
    const n = Number(m[1].replaceAll(',', '')) / REQUESTS;
    byKind.set(kind, byKind.get(kind) + n);
    if (jsName) {
      const jit = /^\?\?\?:0x([0-9a-f]+) \[\?\?\?\]/.exec(m[2]);
      const name = jit ? jsName(parseInt(jit[1], 16)) : m[2].replace(/^\?\?\?:/, '').replace(/ \[.*\]$/, '');
      byFunction.set(name, (byFunction.get(name) ?? 0) + n);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  let perBatch;
  if (dbName) {
    // received_log holds one block per accept batch: how many requests a batch held, over the whole run.
    const u = new URL(PG_URL);
    u.pathname = `/${dbName}`;
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    const { rows } = await c.query(
      'SELECT count(*)::int AS b, sum(json_array_length(records::json))::int AS r FROM received_log',
    );
    await c.end();
    perBatch = rows[0].r / rows[0].b;
    await withAdmin((a) => a.query(`DROP DATABASE "${dbName}" WITH (FORCE)`));
  }
  return { byKind, byFunction, perBatch };
}

/**
 * Names JIT code by address from V8's /tmp/perf-PID.map (--perf-basic-prof; callgrind knows only the address, one
 * entry per block): a function's blocks add up under its name. The map is deleted once read.
 */
function perfMap(pid, keep) {
  const file = `/tmp/perf-${pid}.map`;
  if (keep) writeFileSync(keep, readFileSync(file)); // to name the JIT callers in the kept dump (--tree=caller)
  const ranges = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [start, size, ...name] = l.split(' ');
      return [parseInt(start, 16), parseInt(size, 16), name.join(' ').replace(/file:\/\/\S*?\/(dist|bench)\//, '$1/')];
    })
    .sort((a, b) => a[0] - b[0]);
  rmSync(file, { force: true });
  return (address) => {
    let lo = 0;
    let hi = ranges.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ranges[mid][0] <= address) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return at >= 0 && address < ranges[at][0] + ranges[at][1] ? `JS ${ranges[at][2]}` : 'JIT code, unnamed';
  };
}

const measured = await Promise.all(roots.map((r, i) => measure(r, i)));
const results = measured.map((m) => m.byKind);
const f = (n) => Math.round(n).toLocaleString('en-US');
const steady = (m) => [...m].filter(([k]) => k !== 'JIT compiler' && k !== 'GC').reduce((s, [, v]) => s + v, 0);
const what = {
  wake: '/hooks/wake request',
  agent: '/hooks/agent request, its run executed and delivered',
  'agent-accept': '/hooks/agent request, accepted (its run waiting)',
  floor: 'floor request (two rows)',
  floor1: 'floor request (one row)',
  contract: 'contract floor /hooks/wake request',
  'contract-agent': 'contract floor /hooks/agent request, its run executed and delivered',
  'contract-agent-accept': 'contract floor /hooks/agent request, accepted (its run held)',
}[TARGET];
console.log(
  `instructions per ${what} on ${STORE} (callgrind; ${WARMUP} warm-up requests, ${REQUESTS} counted, ${CONNECTIONS} connections)\n`,
);
console.log(`| kind | ${roots.join(' | ')} |\n|---|${roots.map(() => '---:').join('|')}|`);
for (const [k] of KINDS) console.log(`| ${k} | ${results.map((m) => f(m.get(k))).join(' | ')} |`);
console.log(`| **steady** (all but JIT compiler and GC) | ${results.map((m) => `**${f(steady(m))}**`).join(' | ')} |`);
if (STORE === 'postgres')
  console.log(`\nrequests per accept batch (received_log): ${measured.map((m) => m.perBatch.toFixed(1)).join(' | ')}`);
if (results.length > 1)
  console.log(
    `\nsteady, relative to the first: ${results.map((m) => (steady(m) / steady(results[0])).toFixed(3)).join(' ')}`,
  );
if (TOP > 0)
  measured.forEach(({ byFunction }, i) => {
    console.log(
      `\n${roots[i]}: the ${TOP} costliest functions, self instructions per request (JIT compiler and GC included)\n`,
    );
    for (const [name, n] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      console.log(`${f(n).padStart(8)}  ${name.slice(0, 140)}`);
  });
