/**
 * Retention on SQLite: of finished work (retention.ts), and of expired idempotency keys, received records and
 * refusal counts (`prune`). One step is one write op, so it commits through the one writer like every write, in a
 * batch of its own size bounded by the step's window; the accepts that wait meanwhile commit in the next batch.
 */
import { performance } from 'node:perf_hooks';
import {
  type ExpiredPruned,
  IDEMPOTENCY_STEP_KEYS,
  RECEIVED_STEP_BLOCKS,
  type FinishedWorkPolicy,
  type FinishedWorkPruned,
  type PruneStep,
  pruneExpiredInSteps,
  pruneFinishedInSteps,
  type RetentionKind,
  type RetentionStep,
  type RetentionStepFn,
} from './retention.js';
import { deleteSql, finishedRunsWhere, type Param, windowSql } from './retention-sql.js';
import { pruneGmailPushes } from './sqlite-gmail.js';
import { prepared } from './sqlite-prepared.js';
import type { WriteOp } from './sqlite-write-ops.js';
import type { SqliteWriter } from './sqlite-writer.js';

const named = (name: Param) => `@${name}`;

/** `run`'s step, stamped with how long its statements held the writer (`RetentionStep.heldMs`). */
function held<S extends { heldMs?: number }>(run: () => S): S {
  const started = performance.now();
  const step = run();
  step.heldMs = Math.round((performance.now() - started) * 10) / 10;
  return step;
}

export const RETENTION_WRITE_OPS = {
  /**
   * The oldest `limit` received blocks: all of them when the newest is older than `before`, else those older than it
   * (blocks are appended in time order: the walk ends there). Counted by records, as `prune` reports them.
   */
  pruneReceivedStep(w: SqliteWriter, before: number, limit: number): PruneStep {
    return held(() => receivedStep(w, before, limit));
  },

  /** Up to `limit` idempotency keys expired at `now`, soonest expired first (the expiry index). */
  pruneIdempotencyStep(w: SqliteWriter, now: number, limit: number): PruneStep {
    return held<PruneStep>(() => {
      w.idemSenders.clear(); // the per-sender counts are recounted after keys were deleted
      const deleted = prepared(
        w.db,
        `DELETE FROM idempotency WHERE (scope, key_hash) IN
           (SELECT scope, key_hash FROM idempotency WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`,
      ).run(now, limit).changes;
      return { deleted, done: deleted < limit };
    });
  },

  /** Refusal counts whose window ended before `before`, and fetched Gmail pushes received before it (few rows). */
  pruneRefusals(w: SqliteWriter, before: number): PruneStep {
    return held<PruneStep>(() => {
      const deleted = prepared(w.db, 'DELETE FROM refusal_log WHERE at + window_ms <= ?').run(before).changes;
      pruneGmailPushes(w.db, before);
      return { deleted, done: true };
    });
  },

  /** One step of finished work. */
  pruneFinishedStep(w: SqliteWriter, ...args: Parameters<RetentionStepFn>): RetentionStep {
    return held(() => finishedStep(w, ...args));
  },
};

function receivedStep(w: SqliteWriter, before: number, limit: number): PruneStep {
  const win = prepared(
    w.db,
    'SELECT COUNT(*) AS n, MAX(seq) AS last, MAX(at) AS newest FROM (SELECT seq, at FROM received_log ORDER BY seq LIMIT ?)',
  ).get(limit) as { n: number; last: number | null; newest: number | null };
  if (win.n === 0 || win.last === null || win.newest === null) return { deleted: 0, done: true };
  const whole = win.newest < before;
  const where = whole ? 'seq <= @last' : 'seq <= @last AND at < @before';
  const args = whole ? { last: win.last } : { last: win.last, before };
  const { n } = prepared(
    w.db,
    `SELECT COALESCE(SUM(json_array_length(records)), 0) AS n FROM received_log WHERE ${where}`,
  ).get(args) as { n: number };
  prepared(w.db, `DELETE FROM received_log WHERE ${where}`).run(args);
  return { deleted: n, done: !whole || win.n < limit };
}

function finishedStep(
  w: SqliteWriter,
  kind: RetentionKind,
  before: number,
  after: number,
  limit: number,
  keepMessages: number,
): RetentionStep {
  const win = prepared(w.db, windowSql(kind, named)).get({ after, limit }) as {
    n: number;
    last: number | null;
    oldest: number | null;
  };
  if (win.n === 0 || win.last === null) return { last: after, deleted: 0, deliveries: 0, done: true };
  // Rows are appended in time order: a window with nothing older than the cut-off ends the walk.
  if (win.oldest !== null && win.oldest >= before) return { last: win.last, deleted: 0, deliveries: 0, done: true };
  const args = { before, after, last: win.last };
  let deleted: number;
  let deliveries = 0;
  if (kind === 'runs') {
    const where = finishedRunsWhere(named);
    deliveries = prepared(w.db, `DELETE FROM deliveries WHERE run_id IN (SELECT r.id FROM runs r WHERE ${where})`).run(
      args,
    ).changes;
    deleted = prepared(w.db, `DELETE FROM runs WHERE seq IN (SELECT r.seq FROM runs r WHERE ${where})`).run(
      args,
    ).changes;
  } else if (kind === 'messages') {
    deleted = prepared(w.db, deleteSql(kind, named)).run({ ...args, keep: keepMessages }).changes;
  } else {
    deleted = prepared(w.db, deleteSql(kind, named)).run(args).changes;
  }
  return { last: win.last, deleted, deliveries, done: win.n < limit };
}

/** The store's `prune`: expired idempotency keys, then old received records, in steps, then refusal counts. */
export function pruneExpiredSqlite(
  write: (op: WriteOp) => Promise<unknown>,
  now: number,
  receivedBefore: number,
  signal?: AbortSignal,
): Promise<ExpiredPruned> {
  const step = (op: WriteOp) => () => write(op) as Promise<PruneStep>;
  return pruneExpiredInSteps(
    {
      idempotency: step({ op: 'pruneIdempotencyStep', args: [now, IDEMPOTENCY_STEP_KEYS] }),
      received: step({ op: 'pruneReceivedStep', args: [receivedBefore, RECEIVED_STEP_BLOCKS] }),
      rest: step({ op: 'pruneRefusals', args: [receivedBefore] }),
    },
    signal,
  );
}

/** The store's `pruneFinished`: each step a write op of its own, sent through `write` (the group commit). */
export function pruneFinishedSqlite(
  write: (op: WriteOp) => Promise<unknown>,
  before: number,
  policy: FinishedWorkPolicy,
): Promise<FinishedWorkPruned> {
  return pruneFinishedInSteps(
    (...args) => write({ op: 'pruneFinishedStep', args }) as Promise<RetentionStep>,
    before,
    policy,
  );
}
