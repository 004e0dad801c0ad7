/**
 * Retention on PostgreSQL (retention.ts): of finished work, and of expired records (`prune`). Each step is one or two
 * statements of their own (no transaction around them: each deletion is whole by itself), so a step holds its rows'
 * locks only for its window. On a shared store one node prunes at a time: a pass holds a session advisory lock (one
 * per kind of pass) on the connection its steps run on, and a node whose tick finds it taken skips that pass (without
 * it, every node walked the same windows, waited on the others' row locks and found nothing left). The lock goes with
 * the connection if the node dies.
 */
import type { PgDb, Query } from './postgres-db.js';
import {
  type ExpiredPruned,
  type FinishedWorkPolicy,
  type FinishedWorkPruned,
  IDEMPOTENCY_STEP_KEYS,
  type PruneStep,
  NOTHING_EXPIRED,
  NOTHING_PRUNED,
  pruneExpiredInSteps,
  pruneFinishedInSteps,
  RECEIVED_STEP_BLOCKS,
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

/** The two retention passes, each run by one node at a time under an advisory lock of its own. */
export type RetentionPass = 'prune-finished' | 'prune-expired';

/** The SQL expression of a pass's advisory lock key: per pass and per schema (each schema is a store of its own). */
export const passLockKey = (kind: RetentionPass): string =>
  `hashtextextended('hookgate:${kind}:' || current_schema(), 0)`;

/**
 * `pass` on one connection while it holds the advisory lock of passes of `kind`; `nothing` if another node's pass
 * holds it.
 */
function onePassAtATime<T>(db: PgDb, kind: RetentionPass, nothing: T, pass: (query: Query) => Promise<T>): Promise<T> {
  const lock = passLockKey(kind);
  return db.withClient(async (client) => {
    const { rows } = await client.query<{ ours: boolean }>(`SELECT pg_try_advisory_lock(${lock}) AS ours`);
    if (!rows[0]?.ours) return nothing;
    try {
      return await pass((sql, params) => client.query(typeof sql === 'string' ? sql : sql.text, params));
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${lock})`);
    }
  });
}

/** A pass over finished work, unless another node's pass holds the lock (then nothing, in no step). */
export function pgPruneFinished(db: PgDb, before: number, policy: FinishedWorkPolicy): Promise<FinishedWorkPruned> {
  return onePassAtATime(db, 'prune-finished', { ...NOTHING_PRUNED }, (query) =>
    pruneFinishedInSteps(pgRetentionStep({ query }), before, policy),
  );
}

/**
 * The store's `prune`, unless another node's holds the lock: expired idempotency keys and received blocks older than
 * `receivedBefore`, soonest first on their time indexes, a bounded number per step; then refusal windows and fetched
 * Gmail pushes (few rows). Received blocks go whole, when their newest record (`at`) is older than the cut-off;
 * counted by records.
 */
export function pgPruneExpired(
  db: PgDb,
  now: number,
  receivedBefore: number,
  signal?: AbortSignal,
): Promise<ExpiredPruned> {
  return onePassAtATime(db, 'prune-expired', { ...NOTHING_EXPIRED }, (query) => {
    const idempotency = async (): Promise<PruneStep> => {
      const { rowCount } = await query(
        `DELETE FROM idempotency WHERE (scope, key_hash) IN
           (SELECT scope, key_hash FROM idempotency WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`,
        [now, IDEMPOTENCY_STEP_KEYS],
      );
      return { deleted: rowCount ?? 0, done: (rowCount ?? 0) < IDEMPOTENCY_STEP_KEYS };
    };
    const received = async (): Promise<PruneStep> => {
      const { rows } = await query<{ blocks: string; records: string }>(
        `WITH d AS (DELETE FROM received_log WHERE seq IN
           (SELECT seq FROM received_log WHERE at < $1 ORDER BY at LIMIT $2) RETURNING records)
         SELECT COUNT(*) AS blocks, COALESCE(SUM(json_array_length(records::json)), 0) AS records FROM d`,
        [receivedBefore, RECEIVED_STEP_BLOCKS],
      );
      return { deleted: Number(rows[0]?.records ?? 0), done: Number(rows[0]?.blocks ?? 0) < RECEIVED_STEP_BLOCKS };
    };
    const rest = async (): Promise<PruneStep> => {
      const { rowCount } = await query('DELETE FROM refusal_log WHERE at + window_ms <= $1', [receivedBefore]);
      await query('DELETE FROM gmail_pushes WHERE fetched_at IS NOT NULL AND received_at < $1', [receivedBefore]);
      return { deleted: rowCount ?? 0, done: true };
    };
    return pruneExpiredInSteps({ idempotency, received, rest }, signal);
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
