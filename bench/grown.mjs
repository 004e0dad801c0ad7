// `npm run bench -- --only grown`: what a grown store costs. A store filled with GROWN_REQUESTS (default 10^6)
// requests' worth of rows (bench/fill-store.mjs) against an empty one, on the same machine in the same minutes:
//   - `serve` start-up: spawn until it listens (median of 3);
//   - the admin API's list pages (first page, and filtered for the rare rows: failed runs, dead deliveries, rejected
//     requests), the dashboard's overview and breakdown: 200 sequential requests each (fewer past 5 s), p50 / p99,
//     against a young store rather than the empty one: GROWN_YOUNG_REQUESTS (default 10^4) requests at the grown
//     store's rate, so both answer full pages and hold the same last hour (which the breakdown reads) and only the
//     history behind them differs (an empty store answers empty pages: that measured 0 rows against 50);
//   - the run and delivery claims, through the store's own write code on a connection of the bench's (inside a
//     transaction rolled back): with nothing to claim, and with 100 queued runs / pending deliveries;
//   - /hooks/wake and /hooks/agent req/s (closed loop, as the ingress rounds), BENCH_ROUNDS rounds alternating empty /
//     grown;
//   - peak RSS of each hookgate process, and its largest sample in each phase of the run (rssPhases).
// GROWN_DIR=DIR keeps (and reuses) the filled store there instead of a temporary one: filling 10^7 takes minutes. What
// a run adds to it is deleted again when the run ends, so runs on one fill measure the same store.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FILL_DAYS, fillStore } from './fill-store.mjs';
import {
  ADMIN_TOKEN,
  drain,
  median,
  peakRssMiB,
  round,
  rssMiB,
  runLoad,
  startHookgate,
  stopHookgate,
  TOKEN,
} from './pinned.mjs';

const root = new URL('..', import.meta.url).pathname;
export const GROWN_TARGETS = { rateRatio: 0.9, startupMs: 1000, queryP99Ratio: 2, rssMiB: 100 };

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

function getTimed(url) {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    httpGet(url, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve(performance.now() - t) : reject(new Error(`${url}: ${res.statusCode}`)),
      );
    }).on('error', reject);
  });
}

const QUERIES = [
  '/api/v1/runs',
  '/api/v1/runs?state=failed',
  '/api/v1/deliveries',
  '/api/v1/deliveries?state=failed',
  '/api/v1/received',
  '/api/v1/received?outcome=rejected',
  '/api/v1/overview',
  '/api/v1/breakdown',
];

async function adminQueries(hg, times = 200) {
  const out = {};
  for (const q of QUERIES) {
    await getTimed(`${hg.adminUrl}${q}`); // first read of its pages, not counted
    // At most ~5 s per query (a slow one is slow enough to see in 3 tries), at least 3 tries. Of 30 tries the p99 was
    // the slowest, one stall of the VM's; of 200 it is the third slowest.
    const ms = [];
    const until = performance.now() + 5000;
    while (ms.length < times && (ms.length < 3 || performance.now() < until))
      ms.push(await getTimed(`${hg.adminUrl}${q}`));
    out[q] = { p50: pct(ms, 50), p99: pct(ms, 99) };
  }
  return out;
}

/** The claims, by the store's own write code (dist/), in a transaction rolled back: idle, and with 100 to claim. */
async function claims(dbPath, times = 200) {
  const { SqliteWriter } = await import(join(root, 'dist/store/sqlite-writer.js'));
  const { WRITE_OPS } = await import(join(root, 'dist/store/sqlite-write-ops.js'));
  const db = new Database(dbPath);
  db.pragma('cache_size = -2000');
  const w = new SqliteWriter(db);
  const time = (fn) => {
    const ms = [];
    for (let i = 0; i < times; i++) {
      const t = performance.now();
      fn();
      ms.push(performance.now() - t);
    }
    return { p50: pct(ms, 50), p99: pct(ms, 99) };
  };
  const now = Date.now() + 1000;
  const out = {};
  db.exec('BEGIN');
  try {
    // Claims that find nothing change nothing, so they repeat alike.
    out.runsIdle = time(() => WRITE_OPS.claimRuns(w, 'bench', now, 60_000, 2));
    out.deliveriesIdle = time(() => WRITE_OPS.claimDeliveries(w, 'bench', now, 60_000, 2, 64));
    // 100 queued runs on their own sessions and 100 pending deliveries; each timed claim is undone by a savepoint.
    db.exec(`INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, timeout_seconds, allow_unsafe, content_source, hook_path, created_at, updated_at, fresh)
      WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100)
      SELECT 'q-' || i, 'queued', 'main', 'hook:q-' || i, 'isolated', 'Bench', 'm', 'next-heartbeat', 1, 'last', 600, 0, 'webhook', 'agent', ${now}, ${now}, 1 FROM c`);
    db.exec(`INSERT INTO deliveries (id, session_key, agent_id, channel, recipient, text, explicit_route, state, next_attempt_at, created_at, updated_at)
      WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100)
      SELECT 'd-' || i, 'main', 'main', 'log', '', 't', 0, 'pending', ${now - 1000}, ${now}, ${now} FROM c`);
    const undone = (fn) => () => {
      db.exec('SAVEPOINT claim');
      fn();
      db.exec('ROLLBACK TO claim');
      db.exec('RELEASE claim');
    };
    out.runsBacklog = time(undone(() => WRITE_OPS.claimRuns(w, 'bench', now, 60_000, 2)));
    out.deliveriesBacklog = time(undone(() => WRITE_OPS.claimDeliveries(w, 'bench', now, 60_000, 2, 64)));
  } finally {
    db.exec('ROLLBACK');
    db.close();
  }
  return out;
}

async function startTimed(o, store) {
  const t = performance.now();
  const hg = await startHookgate(o, store.dir, store.storage);
  return { hg, ms: performance.now() - t };
}

/**
 * What a run adds to a kept store (GROWN_DIR), so that it can be taken out again at the end: each table's newest
 * `seq`, and the time the run started for the tables without one (rows created since). The next run on the store
 * then reads the fill's last hour, not this run's load in it as well (the overview and the breakdown read it).
 */
export function storeMarks(path) {
  const db = new Database(path, { fileMustExist: true });
  try {
    const marks = { since: Date.now(), seq: {}, createdAt: [] };
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()) {
      const cols = db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(name);
      if (cols.includes('seq'))
        marks.seq[name] = db.prepare(`SELECT COALESCE(MAX(seq), 0) FROM "${name}"`).pluck().get();
      else if (cols.includes('created_at')) marks.createdAt.push(name);
    }
    return marks;
  } finally {
    db.close();
  }
}

/**
 * The resident set of each process (`pids`: name → pid) sampled every 100 ms, its largest in each phase the run names
 * with `phase(name)`: which phase holds the peak says what the peak is made of (the admin-read thread alive after the
 * reads, a drain of runs).
 */
export function rssPhases(pids) {
  const peaks = Object.fromEntries(Object.keys(pids).map((k) => [k, {}]));
  let current = 'start';
  const sample = () => {
    for (const [k, pid] of Object.entries(pids)) {
      const mib = rssMiB(pid);
      if (mib > (peaks[k][current] ?? 0)) peaks[k][current] = mib;
    }
  };
  const timer = setInterval(sample, 100);
  return {
    phase(name) {
      sample();
      current = name;
    },
    stop() {
      clearInterval(timer);
      sample();
      return peaks;
    },
  };
}

/** Deletes what the run added after `storeMarks` (every hookgate on the store stopped), and empties the WAL. */
export function restoreStore(path, marks) {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.transaction(() => {
      for (const [name, seq] of Object.entries(marks.seq)) db.prepare(`DELETE FROM "${name}" WHERE seq > ?`).run(seq);
      for (const name of marks.createdAt) db.prepare(`DELETE FROM "${name}" WHERE created_at >= ?`).run(marks.since);
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

export async function grownBench(o) {
  const n = Number(process.env.GROWN_REQUESTS ?? 1_000_000);
  const tmp = mkdtempSync(join(tmpdir(), 'hookgate-grown-'));
  const keep = process.env.GROWN_DIR;
  const pgName = process.env.GROWN_PG_DB;
  const onPg = process.env.GROWN_STORE === 'postgres';
  const grownDir = keep ?? join(tmp, 'grown');
  const emptyDir = join(tmp, 'empty');
  const youngDir = join(tmp, 'young');
  const young = Number(process.env.GROWN_YOUNG_REQUESTS ?? 10_000);
  // The grown store's days scaled down with its requests: the same rate, less history.
  const youngFill = { days: (FILL_DAYS * young) / n };
  mkdirSync(emptyDir);
  mkdirSync(youngDir);
  mkdirSync(grownDir, { recursive: true });
  const lo = { ...o, admin: true };
  const made = [];
  let marks;
  try {
    const t0 = performance.now();
    let filled;
    const stores = {
      empty: { dir: emptyDir, storage: {} },
      grown: { dir: grownDir, storage: {} },
      young: { dir: youngDir, storage: {} },
    };
    if (onPg) {
      // GROWN_PG_DB=NAME: a database filled before (bench/fill-postgres.mjs), kept; else one made and dropped here.
      const { fillPostgres, createDatabase, pgUrl } = await import('./fill-postgres.mjs');
      const stamp = `hookgate_grown_${process.pid}`;
      const grown = pgName ? { url: pgUrl(pgName), reused: true } : await fillPostgres(`${stamp}_full`, n);
      if (!pgName) made.push(`${stamp}_full`);
      const empty = await createDatabase(`${stamp}_empty`);
      made.push(`${stamp}_empty`);
      stores.young.storage = { driver: 'postgres', url: (await fillPostgres(`${stamp}_young`, young, youngFill)).url };
      made.push(`${stamp}_young`);
      filled = grown.reused ? { reused: true } : grown.rows;
      stores.grown.storage = { driver: 'postgres', url: grown.url };
      stores.empty.storage = { driver: 'postgres', url: empty };
    } else {
      filled = keep && existsSync(join(keep, 'hookgate.db')) ? { reused: true } : await fillStore(grownDir, n);
      await fillStore(youngDir, young, youngFill);
    }
    const fillSeconds = (performance.now() - t0) / 1000;
    // A kept SQLite store is given back as the fill left it (the `finally` below).
    marks = keep && !onPg ? storeMarks(join(grownDir, 'hookgate.db')) : undefined;
    const r = { empty: { startMs: [] }, grown: { startMs: [] }, young: {} };
    // Start-ups first, alternating, before either store is touched by load; each process stopped again.
    for (let i = 0; i < 3; i++) {
      for (const k of ['empty', 'grown']) {
        const { hg, ms } = await startTimed(lo, stores[k]);
        r[k].startMs.push(ms);
        await stopHookgate(hg);
      }
    }
    // On PostgreSQL the claims run in the server; their plans are bench/stores.mjs's.
    for (const k of ['empty', 'grown']) r[k].claims = onPg ? {} : await claims(join(stores[k].dir, 'hookgate.db'));
    const hgs = {};
    for (const k of ['empty', 'grown']) hgs[k] = (await startTimed(lo, stores[k])).hg;
    try {
      const youngHg = await startHookgate(lo, stores.young.dir, stores.young.storage);
      try {
        r.young.queries = await adminQueries(youngHg);
      } finally {
        await stopHookgate(youngHg);
      }
      const rss = rssPhases({ empty: hgs.empty.child.pid, grown: hgs.grown.child.pid });
      rss.phase('admin reads');
      r.grown.queries = await adminQueries(hgs.grown);
      rss.phase('warm-up');
      const load = (hg, kind) => ({
        url: `${hg.url}/hooks/${kind}`,
        kind,
        token: TOKEN,
        seconds: o.seconds,
        connections: o.connections,
      });
      for (const k of ['empty', 'grown']) {
        await runLoad(o, { ...load(hgs[k], 'wake'), seconds: 2 });
        r[k].wake = [];
        r[k].agent = [];
      }
      for (let i = 0; i < o.rounds; i++) {
        for (const kind of ['wake', 'agent']) {
          for (const k of ['empty', 'grown']) {
            rss.phase(`${kind} ${i + 1}`);
            r[k][kind].push(await round(o, hgs[k].child.pid, load(hgs[k], kind)));
            if (kind === 'agent') {
              rss.phase(`drain ${i + 1}`);
              await drain(hgs[k], 180_000);
            }
          }
        }
      }
      const phases = rss.stop();
      for (const k of ['empty', 'grown']) {
        r[k].rss = peakRssMiB(hgs[k].child.pid);
        r[k].rssByPhase = phases[k];
      }
    } finally {
      for (const k of ['empty', 'grown']) await stopHookgate(hgs[k]);
    }
    return {
      store: onPg ? 'postgres' : 'sqlite',
      requests: n,
      youngRequests: young,
      filled,
      fillSeconds,
      ...r,
      targets: grownVerdicts(r),
    };
  } finally {
    if (marks) restoreStore(join(grownDir, 'hookgate.db'), marks);
    if (made.length) await (await import('./fill-postgres.mjs')).dropDatabases(made);
    rmSync(tmp, { recursive: true, force: true });
  }
}

function grownVerdicts(r) {
  const v = [];
  for (const kind of ['wake', 'agent']) {
    const ratios = r.grown[kind].map((g, i) => g.rps / r.empty[kind][i].rps);
    const value = median(ratios);
    v.push({
      target: `/hooks/${kind} req/s on the grown store ≥ ${GROWN_TARGETS.rateRatio}× empty (median of rounds)`,
      value,
      ok: value >= GROWN_TARGETS.rateRatio,
    });
  }
  const start = median(r.grown.startMs);
  v.push({
    target: `serve start-up on the grown store ≤ ${GROWN_TARGETS.startupMs} ms`,
    value: start,
    ok: start <= GROWN_TARGETS.startupMs,
  });
  for (const q of QUERIES) {
    const value = r.grown.queries[q].p99 / r.young.queries[q].p99;
    v.push({
      target: `GET ${q} p99 ≤ ${GROWN_TARGETS.queryP99Ratio}× the young store's`,
      value,
      ok: value <= GROWN_TARGETS.queryP99Ratio,
    });
  }
  for (const c of Object.keys(r.grown.claims)) {
    const value = r.grown.claims[c].p99 / r.empty.claims[c].p99;
    v.push({
      target: `claim (${c}) p99 ≤ ${GROWN_TARGETS.queryP99Ratio}× empty`,
      value,
      ok: value <= GROWN_TARGETS.queryP99Ratio,
    });
  }
  v.push({
    target: `peak RSS on the grown store ≤ ${GROWN_TARGETS.rssMiB} MiB`,
    value: r.grown.rss,
    ok: r.grown.rss <= GROWN_TARGETS.rssMiB,
  });
  return v;
}

export function grownTable(o, g) {
  const f = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const lines = [
    `hookgate grown-store bench (${g.store}): ${g.filled.reused ? 'the reused store' : `${g.requests} requests' rows`} against an empty store, its admin reads against one of ${g.youngRequests} requests at the same rate (pinned: server on CPU ${o.serverCpu}, load on CPU ${o.loadCpu}); node ${process.version}, ${new Date().toISOString()}`,
    `fill: ${g.filled.reused ? 'reused GROWN_DIR' : JSON.stringify(g.filled)} in ${f(g.fillSeconds, 1)} s`,
    '',
    '| measure | empty | grown | ratio |',
    '|---|---:|---:|---:|',
    `| serve start-up ms (median of 3) | ${f(median(g.empty.startMs), 0)} | ${f(median(g.grown.startMs), 0)} | ${f(median(g.grown.startMs) / median(g.empty.startMs))} |`,
  ];
  for (const kind of ['wake', 'agent']) {
    const e = median(g.empty[kind].map((x) => x.rps));
    const gr = median(g.grown[kind].map((x) => x.rps));
    lines.push(
      `| /hooks/${kind} req/s (rounds: ${g.grown[kind].map((x, i) => f(x.rps / g.empty[kind][i].rps)).join(' ')}) | ${f(e, 0)} | ${f(gr, 0)} | ${f(gr / e)} |`,
    );
    lines.push(
      `| /hooks/${kind} CPU µs/req | ${f(median(g.empty[kind].map((x) => x.cpuPerReq)), 0)} | ${f(median(g.grown[kind].map((x) => x.cpuPerReq)), 0)} | |`,
    );
  }
  for (const q of Object.keys(g.grown.queries)) {
    const e = g.young.queries[q];
    const gr = g.grown.queries[q];
    lines.push(
      `| GET ${q} p50 / p99 ms (young store) | ${f(e.p50)} / ${f(e.p99)} | ${f(gr.p50)} / ${f(gr.p99)} | ${f(gr.p99 / e.p99)} |`,
    );
  }
  for (const c of Object.keys(g.grown.claims)) {
    const e = g.empty.claims[c];
    const gr = g.grown.claims[c];
    lines.push(
      `| claim ${c} p50 / p99 ms | ${f(e.p50, 3)} / ${f(e.p99, 3)} | ${f(gr.p50, 3)} / ${f(gr.p99, 3)} | ${f(gr.p99 / e.p99)} |`,
    );
  }
  lines.push(`| peak RSS MiB | ${f(g.empty.rss, 1)} | ${f(g.grown.rss, 1)} | |`);
  // Sampled: the peak of each phase, in the order the run went through them.
  for (const phase of Object.keys(g.grown.rssByPhase ?? {}))
    lines.push(
      `| RSS MiB, largest sample in ${phase} | ${f(g.empty.rssByPhase[phase] ?? Number.NaN, 1)} | ${f(g.grown.rssByPhase[phase], 1)} | |`,
    );
  lines.push(
    '',
    '| target | measured | met |',
    '|---|---:|:---:|',
    ...g.targets.map((v) => `| ${v.target} | ${f(v.value)} | ${v.ok ? 'yes' : 'NO'} |`),
  );
  return lines.join('\n');
}
