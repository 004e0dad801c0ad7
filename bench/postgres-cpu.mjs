// `npm run bench -- --only postgres`: what a wake costs hookgate's process on PostgreSQL against on SQLite, beside the
// same comparison for the floor of each store. Four servers pinned to the server's CPU, as the rest of the bench:
// bench/floor-server.mjs (the bare server plus a grouped SQLite commit of two rows per request),
// bench/floor-pg-server.mjs (the same commit on PostgreSQL), and hookgate on each store, in interleaved rounds of
// `/hooks/wake`: first saturated (closed loop), then all four at one rate, open loop, PG_CPU_RATE_FRACTION (0.5) of
// what hookgate on PostgreSQL took saturated. A request costs more CPU the fewer share an event loop turn and a commit (docs/
// performance.md, "Below saturation"), and saturated the two stores run at different rates (PostgreSQL's round trip
// bounds a node's), so the CPU target is judged at the one rate: what a node needs for the same traffic on either.
// PostgreSQL's processes run on the load generator's CPU for the pass (their affinity is set back after), as
// everything but the measured server does; their CPU is counted apart.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, dropDatabases } from './fill-postgres.mjs';
import { postgresCpu, postgresCpuSince } from './pg-counts.mjs';
import { openLoopCpuRound } from './latency.mjs';
import { median, round, runLoad, startBenchServer, startHookgate, stopHookgate, TOKEN } from './pinned.mjs';

/** Targets: hookgate's CPU per wake on PostgreSQL ÷ on SQLite, and PostgreSQL's own CPU per wake (µs). */
export const PG_TARGETS = { cpuRatio: 1.2, serverCpu: 40 };
const RATE_FRACTION = Number(process.env.PG_CPU_RATE_FRACTION ?? 0.5);

export async function postgresCpuBench(o) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-pgcpu-'));
  const stamp = randomBytes(4).toString('hex');
  const dbs = [`hg_pgcpu_floor_${stamp}`, `hg_pgcpu_${stamp}`];
  const [floorUrl, hgUrl] = [await createDatabase(dbs[0]), await createDatabase(dbs[1])];
  const stops = [];
  for (const d of ['sqlite', 'postgres']) mkdirSync(join(dir, d));
  try {
    const floor = await startBenchServer(o, 'floor-server.mjs', join(dir, 'floor.db'));
    stops.push(() => floor.child.kill());
    const floorPg = await startBenchServer(o, 'floor-pg-server.mjs', floorUrl);
    stops.push(() => floorPg.child.kill());
    const hg = await startHookgate({ ...o, admin: false }, join(dir, 'sqlite'), {});
    stops.push(() => stopHookgate(hg));
    const hgPg = await startHookgate({ ...o, admin: false }, join(dir, 'postgres'), {
      driver: 'postgres',
      url: hgUrl,
      poolSize: 10,
    });
    stops.push(() => stopHookgate(hgPg));
    const targets = [
      ['floor', floor.child.pid, `http://127.0.0.1:${floor.info.port}/`, undefined],
      ['floorPg', floorPg.child.pid, `http://127.0.0.1:${floorPg.info.port}/`, undefined],
      ['sqlite', hg.child.pid, `${hg.url}/hooks/wake`, TOKEN],
      ['postgres', hgPg.child.pid, `${hgPg.url}/hooks/wake`, TOKEN],
    ];
    const load = (url, token, seconds = o.seconds) => ({
      url,
      kind: 'wake',
      token,
      seconds,
      connections: o.connections,
    });
    for (const [, , url, token] of targets) await runLoad(o, load(url, token, 2)); // warm-up, not measured
    const measure = async (rate) => {
      const r = { floor: [], floorPg: [], sqlite: [], postgres: [] };
      for (let i = 0; i < o.rounds; i++) {
        for (const [name, pid, url, token] of targets) {
          const pg0 = postgresCpu().all;
          const x = rate ? await atRateRound(o, pid, { url, token, rate }) : await round(o, pid, load(url, token));
          x.pgCpuPerReq = postgresCpuSince(pg0) / Math.max(1, x.total);
          r[name].push(x);
        }
      }
      const row = (xs) => ({
        rps: median(xs.map((x) => x.rps)),
        cpuPerReq: median(xs.map((x) => x.cpuPerReq)),
        pgCpuPerReq: median(xs.map((x) => x.pgCpuPerReq)),
      });
      const perRound = (a, b) => r[a].map((x, i) => x.cpuPerReq / r[b][i].cpuPerReq);
      return {
        rounds: r,
        rows: { floor: row(r.floor), floorPg: row(r.floorPg), sqlite: row(r.sqlite), postgres: row(r.postgres) },
        ratios: { hookgate: perRound('postgres', 'sqlite'), floor: perRound('floorPg', 'floor') },
      };
    };
    const { saturated, rate, atRate } = await withPostgresOn(o.loadCpu, async () => {
      const saturated = await measure(0);
      const rate = Math.round(RATE_FRACTION * saturated.rows.postgres.rps);
      return { saturated, rate, atRate: await measure(rate) };
    });
    const targetsOut = postgresVerdicts(saturated, atRate, rate);
    return {
      saturated,
      rate,
      atRate,
      targets: targetsOut,
      allMetOrBeyond: targetsOut.every((v) => v.ok || v.beyond),
    };
  } finally {
    for (const stop of stops.reverse()) await stop();
    await dropDatabases(dbs);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The verdicts of a pass: the CPU ratio at one rate (its median of rounds), PostgreSQL's own CPU saturated; each
 * `beyond` when the floors miss it too, since no ingress that commits each batch to PostgreSQL before answering
 * reaches it on these cores then.
 */
export function postgresVerdicts(saturated, atRate, rate) {
  const cpuRatio = median(atRate.ratios.hookgate);
  const floorRatio = median(atRate.ratios.floor);
  const { postgres, floorPg } = saturated.rows;
  return [
    {
      target: `hookgate CPU per wake on PostgreSQL ≤ ${PG_TARGETS.cpuRatio}× on SQLite at ${rate} wakes/s (median of rounds)`,
      value: cpuRatio,
      floor: floorRatio,
      ok: cpuRatio <= PG_TARGETS.cpuRatio,
      beyond: floorRatio > PG_TARGETS.cpuRatio,
    },
    {
      target: `PostgreSQL's own CPU per wake ≤ ${PG_TARGETS.serverCpu} µs (hookgate's saturated rounds, median)`,
      value: postgres.pgCpuPerReq,
      floor: floorPg.pgCpuPerReq,
      ok: postgres.pgCpuPerReq <= PG_TARGETS.serverCpu,
      beyond: floorPg.pgCpuPerReq > PG_TARGETS.serverCpu,
    },
  ];
}

/**
 * One round at a fixed rate, open loop (as the latency bench: requests sent on schedule, not when an answer frees a
 * connection), in `round`'s shape.
 */
async function atRateRound(o, pid, { url, token, rate }) {
  const r = await openLoopCpuRound(o, pid, { url, kind: 'wake', rate, seconds: o.seconds, token, warmup: false });
  return { rps: r.achievedRate, p99: r.p99, total: r.answered - r.non2xx, cpuPerReq: r.cpuPerReq };
}

/**
 * `fn` with every process of the machine's PostgreSQL server on `cpu` (new backends inherit the postmaster's
 * affinity), each set back to its own affinity after. Without taskset's rights over them, as they are.
 */
async function withPostgresOn(cpu, fn) {
  const before = new Map();
  for (const pid of postgresCpu().all.keys()) {
    try {
      const mask = execFileSync('taskset', ['-p', pid], { encoding: 'utf8' }).trim().split(': ').pop();
      execFileSync('taskset', ['-p', '-c', String(cpu), pid], { stdio: 'ignore' });
      before.set(pid, mask);
    } catch {
      /* gone, or not ours */
    }
  }
  try {
    return await fn();
  } finally {
    for (const [pid, mask] of before) {
      try {
        execFileSync('taskset', ['-p', mask, pid], { stdio: 'ignore' });
      } catch {
        /* gone */
      }
    }
  }
}

export function postgresCpuTable(o, p) {
  const n = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const word = (v) => (v.ok ? 'yes' : v.beyond ? 'beyond the floor' : 'NO');
  const phase = (title, m) => [
    title,
    '',
    '| server | wakes/s | CPU µs per wake, its process | PostgreSQL CPU µs per wake |',
    '|---|---:|---:|---:|',
    ...[
      ['floor on SQLite (bare + grouped commit of two rows)', m.rows.floor],
      ['floor on PostgreSQL (the same commit, one batch in flight)', m.rows.floorPg],
      ['hookgate on SQLite', m.rows.sqlite],
      ['hookgate on PostgreSQL', m.rows.postgres],
    ].map(([name, x]) => `| ${name} | ${n(x.rps)} | ${n(x.cpuPerReq, 1)} | ${n(x.pgCpuPerReq, 1)} |`),
    '',
    `CPU per wake, PostgreSQL ÷ SQLite, per round: hookgate ${m.ratios.hookgate.map((x) => n(x, 2)).join(' ')}; the floor ${m.ratios.floor.map((x) => n(x, 2)).join(' ')}`,
    '',
  ];
  return [
    `hookgate bench, PostgreSQL against SQLite (pinned: servers on CPU ${o.serverCpu}; the load generator and PostgreSQL on CPU ${o.loadCpu}): ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s each (floor, PostgreSQL floor, hookgate on SQLite, hookgate on PostgreSQL), /hooks/wake, medians; ${new Date().toISOString()}`,
    '',
    ...phase('Saturated (closed loop):', p.saturated),
    ...phase(`At ${p.rate} wakes/s each (${RATE_FRACTION} of hookgate on PostgreSQL saturated):`, p.atRate),
    '| target | value | the floor | met |',
    '|---|---:|---:|---|',
    ...p.targets.map((v) => `| ${v.target} | ${n(v.value, 2)} | ${n(v.floor, 2)} | ${word(v)} |`),
  ].join('\n');
}
