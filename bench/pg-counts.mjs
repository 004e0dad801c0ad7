// What PostgreSQL does per operation (`npm run bench -- --store postgres`, after the throughput table): statements,
// round trips, commits, parses and PostgreSQL CPU per accepted wake and per end-to-end agent run, and the top
// statements. Sources, each chosen because it does not move with the machine's load:
//   - pg_stat_statements (when the server preloads it): calls and execution time per normalised statement, reset for
//     the bench database only before each phase (`pg_stat_statements_reset(0, dboid, 0)`), with
//     `pg_stat_statements.track = 'all'` set on that database so the statements inside functions (hookgate_accept_batch,
//     hookgate_claim_runs) are counted too, apart from the top-level ones. Without it: pg_stat_database's commits
//     only, and a note;
//   - the counting proxy (pg-wire.mjs) between hookgate and the server: round trips, statements sent, parses
//     (named or not) and executions of named prepared statements, commits. The server cannot tell these apart
//     (pg_stat_statements merges named and unnamed statements; pg_prepared_statements is per session), the wire can;
//   - CPU from /proc: the bench database's own backends (their process title names the database), and every
//     `postgres` process (WAL writer, checkpointer, … and other tenants of a shared server).
import { readdirSync, readFileSync } from 'node:fs';

const TEXT_WIDTH = 100;

/** One line, whitespace collapsed, cut to `width` characters. */
export function shortQuery(text, width = TEXT_WIDTH) {
  const one = String(text).replace(/\s+/g, ' ').trim();
  return one.length > width ? `${one.slice(0, width - 1)}…` : one;
}

/**
 * Totals of one database and phase from its pg_stat_statements rows. Rows of the same statement text and level
 * (several users, or queryids that print alike) are merged. Nested statements (run inside a function, `toplevel`
 * false) are counted apart: their time is already part of the top-level call's.
 */
export function summariseStatements(rows, top = 8) {
  const merged = new Map();
  for (const r of rows) {
    const nested = r.toplevel === false || r.toplevel === 'f';
    const query = shortQuery(r.query);
    const key = `${nested ? 'n' : 't'}\0${query}`;
    const m = merged.get(key) ?? { query, nested, calls: 0, ms: 0, rows: 0 };
    m.calls += Number(r.calls);
    m.ms += Number(r.total_exec_time);
    m.rows += Number(r.rows ?? 0);
    merged.set(key, m);
  }
  const all = [...merged.values()];
  const topLevel = all.filter((s) => !s.nested);
  const sum = (list, f) => list.reduce((s, x) => s + f(x), 0);
  return {
    statements: sum(topLevel, (s) => s.calls),
    nested: sum(all, (s) => (s.nested ? s.calls : 0)),
    execMs: sum(topLevel, (s) => s.ms),
    byCalls: [...all].sort((a, b) => b.calls - a.calls || b.ms - a.ms).slice(0, top),
    byTime: [...topLevel].sort((a, b) => b.ms - a.ms).slice(0, top),
  };
}

/** CPU time (user + system, all threads) of a process so far, µs; 0 once it is gone. */
export function cpuMicros(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
  } catch {
    return 0; // gone
  }
}

/** CPU µs of `postgres` processes now, by pid: all of them, and those whose title names `dbName` (its backends). */
export function postgresCpu(dbName) {
  const all = new Map();
  const own = new Map();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/comm`, 'utf8').trim() !== 'postgres') continue;
      const cpu = cpuMicros(e);
      all.set(e, cpu);
      if (dbName && readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(` ${dbName} `)) own.set(e, cpu);
    } catch {
      /* gone */
    }
  }
  return { all, own };
}
/** CPU used since `before` (a map from postgresCpu) by the processes there now: one that exited takes its share along. */
export function postgresCpuSince(before, now = postgresCpu().all) {
  let s = 0;
  for (const [pid, v] of now) s += v - (before.get(pid) ?? 0);
  return s;
}

/** The observer: pg_stat_statements and pg_stat_database read from the admin database, never the bench one. */
export async function statementStats(admin, dbName) {
  const { rows } = await admin.query('SELECT oid FROM pg_database WHERE datname = $1', [dbName]);
  const oid = rows[0].oid;
  let available = true;
  let why = '';
  try {
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await admin.query('SELECT 1 FROM pg_stat_statements LIMIT 1');
    // Before the nodes connect: a database's settings apply to the sessions opened after.
    await admin.query(`ALTER DATABASE "${dbName}" SET pg_stat_statements.track = 'all'`);
  } catch (err) {
    available = false;
    why = err.message;
  }
  const xacts = async () => {
    const r = await admin.query('SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = $1', [dbName]);
    return { commits: Number(r.rows[0].xact_commit), rollbacks: Number(r.rows[0].xact_rollback) };
  };
  return {
    available,
    why,
    async reset() {
      if (available) await admin.query('SELECT pg_stat_statements_reset(0, $1::oid, 0)', [oid]);
    },
    async read() {
      if (!available) return [];
      const r = await admin.query(
        'SELECT query, toplevel, calls, total_exec_time, rows FROM pg_stat_statements WHERE dbid = $1',
        [oid],
      );
      return r.rows;
    },
    xacts,
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A backend sends its counters to pg_stat_database at most once a second (PostgreSQL 15+): read them after that.
const STATS_FLUSH_MS = 1500;

/**
 * One measured phase: `work()` returns the number of operations it did. Everything the database saw from the nodes
 * meanwhile counts, background work (claim polls, node refresh) included: see the idle phase for its rate.
 */
export async function measurePhase({ stats, proxy, dbName, pids }, work) {
  await sleep(STATS_FLUSH_MS); // the commits of what came before reach pg_stat_database first
  await stats.reset();
  const x0 = await stats.xacts();
  const p0 = proxy.snapshot();
  const c0 = postgresCpu(dbName);
  const h0 = pids.reduce((s, p) => s + cpuMicros(p), 0);
  const t0 = performance.now();
  const ops = await work();
  const seconds = (performance.now() - t0) / 1000;
  const p1 = proxy.snapshot();
  const c1 = postgresCpu(dbName);
  const h1 = pids.reduce((s, p) => s + cpuMicros(p), 0);
  const statements = await stats.read();
  await sleep(STATS_FLUSH_MS);
  const x1 = await stats.xacts();
  const wire = {};
  for (const k of Object.keys(p1)) wire[k] = p1[k] - p0[k];
  return {
    ops,
    seconds,
    wire,
    serverCommits: x1.commits - x0.commits,
    serverRollbacks: x1.rollbacks - x0.rollbacks,
    pgCpuOwn: postgresCpuSince(c0.own, c1.own),
    pgCpuAll: postgresCpuSince(c0.all, c1.all),
    hookgateCpu: h1 - h0,
    statements: stats.available ? summariseStatements(statements) : undefined,
  };
}

/** Per-operation row of a measured phase (divided by `ops`; the idle phase by seconds). */
export function perOp(m, by = m.ops) {
  const d = (n) => n / Math.max(1e-9, by);
  const w = m.wire;
  return {
    statements: m.statements ? d(m.statements.statements) : undefined,
    nested: m.statements ? d(m.statements.nested) : undefined,
    sent: d(w.simpleQueries + w.executes),
    roundTrips: d(w.roundTrips),
    commits: d(w.commits),
    serverCommits: d(m.serverCommits),
    parses: d(w.parses),
    namedParses: d(w.namedParses),
    preparedExecutes: d(w.preparedBinds),
    unpreparedExecutes: d(w.simpleQueries + w.executes - w.preparedBinds),
    execMs: m.statements ? d(m.statements.execMs) : undefined,
    pgCpuOwn: d(m.pgCpuOwn),
    pgCpuAll: d(m.pgCpuAll),
    hookgateCpu: d(m.hookgateCpu),
    runClaims: d(w.runClaims),
    emptyRunClaims: d(w.emptyRunClaims),
    deliveryClaims: d(w.deliveryClaims),
    emptyDeliveryClaims: d(w.emptyDeliveryClaims),
  };
}

const f = (n, d = 2) => (n === undefined ? '–' : n.toFixed(d));

/** The second table of `--store postgres`, and the top statements of each set-up's phases. */
export function countsTable(results, opts) {
  const lines = [
    '',
    `PostgreSQL work per operation: ${opts.wakes} wakes, a burst of ${opts.runs} agent runs (accept → echo run → log delivery) and ${opts.agents ?? '–'} agent accepts without delivery (each run to its end) per set-up, ${opts.connections} connections, through a counting proxy.`,
    '',
    '| set-up | per | statements (+ in functions) | round trips | commits (wire / server) | parses (named) | prepared / unprepared executions | run claims (empty) | delivery claims (empty) | PG exec ms | PG CPU µs (own backends / all postgres) | hookgate CPU µs |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    for (const [label, p] of [
      ['wake', perOp(r.wakes)],
      ['end-to-end run', perOp(r.runs)],
      ...(r.agents ? [['agent run, no delivery', perOp(r.agents)]] : []),
      ['idle second', perOp(r.idle, r.idle.seconds)],
    ]) {
      lines.push(
        `| ${r.setup} | ${label} | ${f(p.statements)} (+ ${f(p.nested)}) | ${f(p.roundTrips)} | ${f(p.commits)} / ${f(p.serverCommits)} | ${f(p.parses)} (${f(p.namedParses)}) | ${f(p.preparedExecutes)} / ${f(p.unpreparedExecutes)} | ${f(p.runClaims)} (${f(p.emptyRunClaims)}) | ${f(p.deliveryClaims)} (${f(p.emptyDeliveryClaims)}) | ${f(p.execMs, 3)} | ${f(p.pgCpuOwn, 0)} / ${f(p.pgCpuAll, 0)} | ${f(p.hookgateCpu, 0)} |`,
      );
    }
  }
  lines.push(
    '',
    "statements: top-level calls in pg_stat_statements (BEGIN and COMMIT included), + those run inside functions (hookgate_accept_batch, hookgate_claim_runs); round trips, commits (wire), parses and executions: counted on the wire; commits (server): pg_stat_database.xact_commit, read-only transactions and autovacuum's included.",
    "A prepared execution is a Bind naming a prepared statement (parsed once per connection); unprepared: an unnamed Parse + Bind, or a simple query. Each phase includes the nodes' background work (claim polls, node refresh): its rate is the idle row.",
    'Claims (empty): executions of the run and delivery claim statements, and those that leased nothing, counted on the wire.',
  );
  const during = results.filter((r) => r.runsPerAccept !== undefined);
  if (during.length)
    lines.push(
      `Runs finished per agent accept while the ${opts.agents} were accepted (the rest after; a saturated ingress defers them): ${during.map((r) => `${r.setup} ${f(r.runsPerAccept)}`).join(', ')}.`,
    );
  if (results.some((r) => !r.statementsAvailable)) {
    lines.push(
      `pg_stat_statements unavailable (${results.find((r) => !r.statementsAvailable).why}): statement counts and PG exec ms are missing. Enable it with shared_preload_libraries = 'pg_stat_statements' in postgresql.conf and a restart.`,
    );
  }
  for (const r of results) {
    for (const [label, m] of [
      ['wake', r.wakes],
      ['end-to-end run', r.runs],
      ['agent run, no delivery', r.agents],
    ]) {
      if (!m) continue;
      if (!m.statements) continue;
      lines.push(
        '',
        `${r.setup}, per ${label}: top statements by calls, then by execution time ("in fn": inside a function)`,
        '',
      );
      lines.push('| calls | ms | rows/call | statement |', '|---:|---:|---:|---|');
      const row = (s) =>
        `| ${f(s.calls / Math.max(1, m.ops), 3)} | ${f(s.ms / Math.max(1, m.ops), 4)} | ${f(s.rows / Math.max(1, s.calls), 1)} | ${s.nested ? '(in fn) ' : ''}\`${s.query.replaceAll('|', '\\|')}\` |`;
      for (const s of m.statements.byCalls) lines.push(row(s));
      lines.push('| | | | **by time:** |');
      for (const s of m.statements.byTime) lines.push(row(s));
    }
  }
  return lines.join('\n');
}
