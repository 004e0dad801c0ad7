/**
 * Retention of finished work on SQLite (retention.ts): one step is one write op, so it commits through the one
 * writer like every write, in a batch of its own size bounded by the step's window; the accepts that wait meanwhile
 * commit in the next batch.
 */
import {
  type FinishedWorkPolicy,
  type FinishedWorkPruned,
  pruneFinishedInSteps,
  type RetentionKind,
  type RetentionStep,
} from './retention.js';
import { deleteSql, finishedRunsWhere, type Param, windowSql } from './retention-sql.js';
import { prepared } from './sqlite-prepared.js';
import type { WriteOp } from './sqlite-write-ops.js';
import type { SqliteWriter } from './sqlite-writer.js';

const named = (name: Param) => `@${name}`;

export const RETENTION_WRITE_OPS = {
  pruneFinishedStep(
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
      deliveries = prepared(
        w.db,
        `DELETE FROM deliveries WHERE run_id IN (SELECT r.id FROM runs r WHERE ${where})`,
      ).run(args).changes;
      deleted = prepared(w.db, `DELETE FROM runs WHERE seq IN (SELECT r.seq FROM runs r WHERE ${where})`).run(
        args,
      ).changes;
    } else if (kind === 'messages') {
      deleted = prepared(w.db, deleteSql(kind, named)).run({ ...args, keep: keepMessages }).changes;
    } else {
      deleted = prepared(w.db, deleteSql(kind, named)).run(args).changes;
    }
    return { last: win.last, deleted, deliveries, done: win.n < limit };
  },
};

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
