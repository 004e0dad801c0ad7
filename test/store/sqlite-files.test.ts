import assert from 'node:assert/strict';
import { existsSync, linkSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { ShmGuard, StoreFileIdentity } from '../../src/store/sqlite-files.js';

/** The POSIX locks this process holds on the file with inode `ino` (Linux: /proc/locks). */
function locksHeld(ino: number): number {
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((l) => /\bPOSIX\b/.test(l))
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => Number(f[4]) === process.pid && Number(f[5]?.split(':')[2]) === ino).length;
}

describe('ShmGuard', () => {
  it("asking whether the -shm is writable keeps SQLite's locks on it (a close of any descriptor would drop them)", {
    skip: !existsSync('/proc/locks') && 'needs /proc/locks (Linux)',
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-shm-'));
    const db = new Database(join(dir, 'store.db'));
    try {
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
      const shm = join(dir, 'store.db-shm');
      const ino = statSync(shm).ino;
      const before = locksHeld(ino);
      // SQLite holds its dead-man-switch lock on the -shm for as long as a WAL connection is open: another process
      // that finds it free takes itself for the first one and truncates the -shm under this process's map (SIGBUS).
      assert.ok(before > 0, 'SQLite holds a lock on the -shm while the store is open');
      assert.equal(new ShmGuard(shm).refused(), undefined, 'a writable -shm is not refused');
      assert.equal(locksHeld(ino), before, "the guard left SQLite's locks in place");
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Past the millisecond for which a file check's answer stands (sqlite-files.ts, `ASK_EVERY_MS`). */
function pastAnswer(): void {
  const until = performance.now() + 1.1;
  while (performance.now() < until);
}

/** `id.lost()` asked anew, not the answer of the last millisecond. */
function lostNow(id: StoreFileIdentity): string | undefined {
  pastAnswer();
  return id.lost();
}

describe('StoreFileIdentity', () => {
  it('asks the kernel at most once a millisecond: a change is seen at the first ask a millisecond after the last', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-identity-'));
    const path = join(dir, 'store.db');
    writeFileSync(path, 'x');
    const id = new StoreFileIdentity(path);
    try {
      const asked = performance.now();
      assert.equal(id.lost(), undefined);
      rmSync(path);
      // Asked again within the millisecond: the answer of a moment ago stands (a busy machine may take longer).
      const answer = id.lost();
      if (performance.now() - asked < 1) assert.equal(answer, undefined);
      assert.equal(lostNow(id), 'was deleted');
    } finally {
      id.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('tells a deletion, a move and a replacement apart, and nothing while the path still names the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hookgate-identity-'));
    const path = join(dir, 'store.db');
    const open: StoreFileIdentity[] = [];
    const identity = () => {
      rmSync(path, { force: true }); // a new inode at the path (a write would truncate the old one in place)
      writeFileSync(path, 'x');
      const id = new StoreFileIdentity(path);
      open.push(id);
      return id;
    };
    try {
      const kept = identity();
      assert.equal(lostNow(kept), undefined);
      linkSync(path, join(dir, 'second-name'));
      assert.equal(lostNow(kept), undefined, 'a second link changes nothing');

      const deleted = identity(); // a new inode at the path: `kept` now sees a replacement
      assert.equal(lostNow(kept), 'was replaced by another file');
      rmSync(path);
      assert.equal(lostNow(deleted), 'was deleted');
      writeFileSync(path, 'y');
      assert.equal(lostNow(deleted), 'was deleted', 'deleted, even with another file at its path now');

      const moved = identity();
      renameSync(path, join(dir, 'moved.db'));
      assert.equal(lostNow(moved), 'was moved away');

      const replaced = identity();
      renameSync(path, join(dir, 'replaced.db'));
      writeFileSync(path, 'z');
      assert.equal(lostNow(replaced), 'was replaced by another file');
    } finally {
      for (const id of open) id.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
