/**
 * The retention steps' statements on SQLite read one window by primary key and look each row up by index: a step's
 * cost follows its window, not the table's size (no SCAN of a whole table), whatever the store has grown to. The
 * prune of expired records works in windows too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import {
  IDEMPOTENCY_STEP_KEYS,
  NOTHING_EXPIRED,
  RECEIVED_STEP_BLOCKS,
  RETENTION_KINDS,
} from '../../src/store/retention.js';
import { deleteSql, finishedRunsWhere, type Param, windowSql } from '../../src/store/retention-sql.js';
import { pruneExpiredSqlite } from '../../src/store/sqlite-retention.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite-schema.js';
import type { WriteOp } from '../../src/store/sqlite-write-ops.js';
import { SqliteWriter } from '../../src/store/sqlite-writer.js';

const TABLES = /^SCAN (runs|deliveries|system_events|session_messages|r|d|m|n)\b/;

describe('SQLite retention steps', () => {
  it('read their window by seq and every other row by index: no statement scans a table', () => {
    const db = new Database(':memory:');
    for (const step of SQLITE_MIGRATIONS) db.exec(step);
    const named = (n: Param) => `@${n}`;
    const where = finishedRunsWhere(named);
    const statements = [
      ...RETENTION_KINDS.map((k) => windowSql(k, named)),
      `DELETE FROM deliveries WHERE run_id IN (SELECT r.id FROM runs r WHERE ${where})`,
      `DELETE FROM runs WHERE seq IN (SELECT r.seq FROM runs r WHERE ${where})`,
      deleteSql('messages', named),
      deleteSql('events', named),
      deleteSql('deliveries', named),
    ];
    for (const sql of statements) {
      const plan = (
        db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ before: 0, after: 0, last: 0, keep: 40, limit: 1 }) as Array<{
          detail: string;
        }>
      ).map((r) => r.detail);
      assert.ok(
        plan.every((line) => !TABLES.test(line)),
        `a table scan in\n${sql}\n${plan.join('\n')}`,
      );
      assert.ok(
        plan.some((line) => /rowid>\?|seq>\? AND seq<\?/.test(line)),
        `the window is not read by seq:\n${plan.join('\n')}`,
      );
    }
    db.close();
  });
});

describe('SQLite prune of expired records', () => {
  const T0 = 1_700_000_000_000;

  /** A writer on a fresh in-memory store; `write` commits one op as the store's group commit would. */
  function writer() {
    const db = new Database(':memory:');
    for (const step of SQLITE_MIGRATIONS) db.exec(step);
    const w = new SqliteWriter(db);
    const ops: string[] = [];
    const write = async (op: WriteOp) => {
      ops.push(op.op);
      const [r] = w.runBatch([op]);
      if (!r?.ok) throw new Error(r?.error);
      return r.value;
    };
    return { db, write, ops };
  }

  it('deletes received blocks and idempotency keys in bounded steps, counting records, keeping the newer', async () => {
    const { db, write, ops } = writer();
    const block = db.prepare('INSERT INTO received_log (at, records) VALUES (?, ?)');
    const key = db.prepare(
      `INSERT INTO idempotency (scope, key_hash, fingerprint, status, body, created_at, expires_at)
       VALUES ('hooks', ?, 'f', 200, '{}', ?, ?)`,
    );
    let oldRecords = 0;
    for (let i = 0; i < 300; i++) {
      const n = (i % 3) + 1; // records in the block
      if (i < 250) oldRecords += n;
      block.run(T0 + i, JSON.stringify(Array.from({ length: n }, () => [T0 + i])));
    }
    const keys = 2 * IDEMPOTENCY_STEP_KEYS + 500;
    for (let i = 0; i < keys; i++) key.run(`k${i}`, T0, T0 + i);
    db.prepare('INSERT INTO refusal_log (at, window_ms, counts) VALUES (?, ?, ?)').run(T0, 100, '{}');
    db.prepare('INSERT INTO refusal_log (at, window_ms, counts) VALUES (?, ?, ?)').run(T0 + 400, 100, '{}');

    const expiredBy = T0 + 2 * IDEMPOTENCY_STEP_KEYS; // keys 0..2000 expired
    const res = await pruneExpiredSqlite(write, expiredBy, T0 + 250);
    assert.deepEqual(
      { idempotency: res.idempotency, received: res.received, steps: res.steps },
      { idempotency: 2 * IDEMPOTENCY_STEP_KEYS + 1, received: oldRecords + 1, steps: 6 },
    );
    assert.ok(res.longestHeldMs > 0 && res.longestHeldMs <= res.longestStepMs, 'each step is timed on the writer');
    assert.deepEqual(
      db.prepare('SELECT MIN(at) AS lo, COUNT(*) AS n FROM received_log').get() as { lo: number; n: number },
      { lo: T0 + 250, n: 50 },
    );
    assert.equal(
      (db.prepare('SELECT MIN(expires_at) AS lo FROM idempotency').get() as { lo: number }).lo,
      expiredBy + 1,
    );
    // One op per window: three of keys (1000, 1000, 1), two of blocks (128 old, then 122 of the next 128), one more.
    const count = (op: string) => ops.filter((o) => o === op).length;
    assert.equal(RECEIVED_STEP_BLOCKS, 128, 'the step counts below assume 128 blocks per step');
    assert.deepEqual([count('pruneIdempotencyStep'), count('pruneReceivedStep'), count('pruneRefusals')], [3, 2, 1]);
    const again = await pruneExpiredSqlite(write, expiredBy, T0 + 250);
    assert.deepEqual([again.idempotency, again.received, again.steps], [0, 0, 3], 'one empty step of each');
    db.close();
  });

  it('an aborted prune starts no further step', async () => {
    const { db, write, ops } = writer();
    db.prepare('INSERT INTO received_log (at, records) VALUES (?, ?)').run(T0, '[[1]]');
    const ac = new AbortController();
    ac.abort();
    assert.deepEqual(await pruneExpiredSqlite(write, T0, T0 + 1, ac.signal), NOTHING_EXPIRED);
    assert.deepEqual(ops, []);
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM received_log').get() as { n: number }).n, 1);
    db.close();
  });
});
