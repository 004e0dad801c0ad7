#!/usr/bin/env node
// What one retention step costs on a grown store (src/store/retention.ts): every step of a whole pass of
// `pruneFinished`, run as the writer runs it (one transaction each) on a copy-free SQLite store, timed one by one; and
// each step statement's query plan, which must read the window by primary key and look rows up by index (no SCAN of a
// whole table). Timings are of this machine at this moment (indicative); the plans and the rows per step are not.
//   node bench/prune-steps.mjs DIR [DAYS]   DIR: a stopped hookgate's store (bench/fill-store.mjs DIR N fills one);
//   DAYS: the retention (default 7). The pass deletes: work on a copy if the rows are to be kept.
//   env: STEP_ROWS (JSON, rows per window by kind, e.g. {"runs":200}), NOCHECKPOINT=1 (see below)
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { RETENTION_KINDS } from '../dist/store/retention.js';
import { deleteSql, finishedRunsWhere, windowSql } from '../dist/store/retention-sql.js';
import { pruneFinishedInSteps } from '../dist/store/retention.js';
import { RETENTION_WRITE_OPS } from '../dist/store/sqlite-retention.js';
import { SqliteWriter } from '../dist/store/sqlite-writer.js';

const [dir, days = '7'] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node bench/prune-steps.mjs DIR [DAYS]');
  process.exit(1);
}
const db = new Database(join(dir, 'hookgate.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
// NOCHECKPOINT=1: no checkpoint inside a step's commit (as with storage.checkpoints: thread), to see the step alone.
if (process.env.NOCHECKPOINT) db.pragma('wal_autocheckpoint = 0');
const w = new SqliteWriter(db);
const named = (n) => `@${n}`;
const plans = {};
for (const kind of RETENTION_KINDS) {
  const stmts = [windowSql(kind, named)];
  if (kind === 'runs')
    stmts.push(`DELETE FROM runs WHERE seq IN (SELECT r.seq FROM runs r WHERE ${finishedRunsWhere(named)})`);
  else stmts.push(deleteSql(kind, named));
  plans[kind] = stmts.flatMap((sql) =>
    db
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .all({ before: 0, after: 0, last: 0, keep: 40, limit: 1 })
      .map((r) => r.detail),
  );
}
const count = (t) => db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get().n;
const tables = { runs: 'runs', deliveries: 'deliveries', events: 'system_events', messages: 'session_messages' };
const before = Object.fromEntries(Object.entries(tables).map(([k, t]) => [k, count(t)]));
const times = Object.fromEntries(RETENTION_KINDS.map((k) => [k, []]));
const txn = db.transaction((args) => RETENTION_WRITE_OPS.pruneFinishedStep(w, ...args));
const t0 = performance.now();
const res = await pruneFinishedInSteps(
  async (...args) => {
    const t = performance.now();
    const s = txn(args);
    times[args[0]].push(performance.now() - t);
    return s;
  },
  Date.now() - Number(days) * 86_400_000,
  { keepMessages: 40, ...(process.env.STEP_ROWS ? { stepRows: JSON.parse(process.env.STEP_ROWS) } : {}) },
);
const wall = performance.now() - t0;
const after = Object.fromEntries(Object.entries(tables).map(([k, t]) => [k, count(t)]));
const q = (a, p) => (a.length ? [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))] : 0);
const steps = Object.fromEntries(
  RETENTION_KINDS.map((k) => [
    k,
    {
      steps: times[k].length,
      p50ms: +q(times[k], 0.5).toFixed(2),
      p90ms: +q(times[k], 0.9).toFixed(2),
      p99ms: +q(times[k], 0.99).toFixed(2),
      maxMs: +Math.max(0, ...times[k]).toFixed(2),
    },
  ]),
);
console.log(
  JSON.stringify(
    { retentionDays: Number(days), before, after, deleted: res, wallMs: Math.round(wall), steps, plans },
    null,
    1,
  ),
);
db.close();
