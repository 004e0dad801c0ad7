/**
 * Retention of finished work on PostgreSQL (retention.ts): each step is one or two statements of their own (no
 * transaction around them: each deletion is whole by itself), so a step holds its rows' locks only for its window.
 * On a shared store one node prunes at a time: a pass holds a session advisory lock on the connection its steps run
 * on, and a node whose tick finds it taken skips that pass (without it, every node walked the same windows, waited on
 * the others' row locks and found nothing left). The lock goes with the connection if the node dies.
 */
import type { PgDb, Query } from './postgres-db.js';
import {
  type FinishedWorkPolicy,
  type FinishedWorkPruned,
  NOTHING_PRUNED,
  pruneFinishedInSteps,
  type RetentionStep,
  type RetentionStepFn,
} from './retention.js';
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

const PRUNE_LOCK = `hashtextextended('hookgate:prune-finished:' || current_schema(), 0)`;

/** A pass over finished work, unless another node's pass holds the lock (then nothing, in no step). */
export function pgPruneFinished(db: PgDb, before: number, policy: FinishedWorkPolicy): Promise<FinishedWorkPruned> {
  return db.withClient(async (client) => {
    const { rows } = await client.query<{ ours: boolean }>(`SELECT pg_try_advisory_lock(${PRUNE_LOCK}) AS ours`);
    if (!rows[0]?.ours) return { ...NOTHING_PRUNED };
    try {
      const query: Query = (sql, params) => client.query(typeof sql === 'string' ? sql : sql.text, params);
      return await pruneFinishedInSteps(pgRetentionStep({ query }), before, policy);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${PRUNE_LOCK})`);
    }
  });
}

export function pgRetentionStep(db: { query: Query }): RetentionStepFn {
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
