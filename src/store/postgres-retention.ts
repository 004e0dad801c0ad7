/**
 * Retention of finished work on PostgreSQL (retention.ts): each step is one or two statements of their own (no
 * transaction around them: each deletion is whole by itself), so a step holds its rows' locks only for its window.
 * On a shared store every node prunes; two nodes deleting the same window wait on each other's row locks and the
 * second finds nothing left.
 */
import type { PgDb } from './postgres-db.js';
import type { RetentionStep, RetentionStepFn } from './retention.js';
import { deleteSql, finishedRunsWhere, type Param, windowSql } from './retention-sql.js';

/** `build`'s SQL with $1, $2, ... in the order its parameters first appear, and their values in that order. */
function bind(build: (p: (name: Param) => string) => string, values: Partial<Record<Param, number>>) {
  const order: Param[] = [];
  const text = build((name) => {
    if (!order.includes(name)) order.push(name);
    return `$${order.indexOf(name) + 1}`;
  });
  return { text, params: order.map((n) => values[n]) };
}

export function pgRetentionStep(db: PgDb): RetentionStepFn {
  return async (kind, before, after, limit, keepMessages): Promise<RetentionStep> => {
    const w = bind((p) => windowSql(kind, p), { after, limit });
    const win = (await db.query<{ n: number; last: number | null; oldest: number | null }>(w.text, w.params)).rows[0];
    const n = Number(win?.n ?? 0);
    if (!win || n === 0 || win.last === null) return { last: after, deleted: 0, deliveries: 0, done: true };
    const last = Number(win.last);
    // Rows are appended (nearly) in time order: a window with nothing older than the cut-off ends the walk.
    if (win.oldest !== null && Number(win.oldest) >= before) return { last, deleted: 0, deliveries: 0, done: true };
    const values = { before, after, last, keep: keepMessages };
    if (kind === 'runs') {
      // One statement: the runs and their (final) deliveries go together or not at all.
      const s = bind(
        (p) => `WITH gone AS (DELETE FROM runs r WHERE ${finishedRunsWhere(p)} RETURNING r.id),
          d AS (DELETE FROM deliveries WHERE run_id IN (SELECT id FROM gone) RETURNING 1)
          SELECT (SELECT COUNT(*) FROM gone) AS runs, (SELECT COUNT(*) FROM d) AS deliveries`,
        values,
      );
      const r = (await db.query<{ runs: number; deliveries: number }>(s.text, s.params)).rows[0];
      return { last, deleted: Number(r?.runs ?? 0), deliveries: Number(r?.deliveries ?? 0), done: n < limit };
    }
    const s = bind((p) => deleteSql(kind, p), values);
    const deleted = (await db.query(s.text, s.params)).rowCount ?? 0;
    return { last, deleted, deliveries: 0, done: n < limit };
  };
}
