/** The connection settings openSqlite gives every SQLite connection (service, checkpoint thread, CLI). */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { statSync } from 'node:fs';
import { WAL_CHECKPOINT_BYTES } from '../../src/store/sqlite-files.js';
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

  it('cuts a WAL that outgrew its usual size back to 8 MiB when it next starts over; the usual 4 MiB cycle is left alone', () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'h.db');
      const db = openSqlite(path, 'normal');
      assert.equal(db.pragma('journal_size_limit', { simple: true }), WAL_CHECKPOINT_BYTES);
      db.exec('CREATE TABLE t (x BLOB)');
      // One transaction of ~24 MiB: the WAL grows to hold it whatever the checkpoints do.
      const ins = db.prepare('INSERT INTO t VALUES (randomblob(65536))');
      db.transaction(() => {
        for (let i = 0; i < 384; i++) ins.run();
      })();
      const wal = () => statSync(`${path}-wal`).size;
      assert.ok(wal() > 3 * WAL_CHECKPOINT_BYTES, `the WAL grew (${wal()} bytes)`);
      db.pragma('wal_checkpoint(PASSIVE)'); // every frame copied back: the next commit starts the WAL over
      db.prepare('DELETE FROM t WHERE rowid = 1').run();
      assert.ok(wal() <= WAL_CHECKPOINT_BYTES, `cut back (${wal()} bytes)`);
      db.close();
    } finally {
      removeDir(dir);
    }
  });
});
