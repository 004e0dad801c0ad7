/**
 * The retention steps' statements on SQLite read one window by primary key and look each row up by index: a step's
 * cost follows its window, not the table's size (no SCAN of a whole table), whatever the store has grown to.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { RETENTION_KINDS } from '../../src/store/retention.js';
import { deleteSql, finishedRunsWhere, type Param, windowSql } from '../../src/store/retention-sql.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite-schema.js';

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
