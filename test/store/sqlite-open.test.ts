/** The connection settings openSqlite gives every SQLite connection (service, checkpoint thread, CLI). */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openSqlite, SQLITE_CACHE_KIB } from '../../src/store/sqlite-open.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

describe('openSqlite', () => {
  it("uses SQLite's own 2 MiB page cache, not better-sqlite3's 16 MiB build default (peak RSS)", () => {
    const dir = tempDir();
    try {
      const db = openSqlite(join(dir, 'h.db'), 'normal');
      assert.equal(SQLITE_CACHE_KIB, -2000);
      assert.equal(db.pragma('cache_size', { simple: true }), -2000);
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      db.close();
    } finally {
      removeDir(dir);
    }
  });
});
