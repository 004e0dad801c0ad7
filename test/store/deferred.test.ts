/**
 * DeferredStore (a store opened after start: a full disk at start) and how `openStore` decides to defer: refused
 * with a StoreError before it opens, the real store after, the open retried until it works and not after close;
 * leases recovered at the open before any other call reaches the store; every failure but a full disk still throws.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { StoreError } from '../../src/errors.js';
import { DeferredStore } from '../../src/store/deferred.js';
import { openStore } from '../../src/store/open.js';
import { diskFullAtOpen } from '../../src/store/sqlite-files.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { ClusterNotice, Store } from '../../src/store/types.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { command, event, run, storeContract } from './contract.js';

/** Its retry timer is unref'd (the service's listener keeps the process up): a test holds the event loop itself. */
async function opened(store: DeferredStore): Promise<void> {
  const hold = setInterval(() => {}, 1000);
  try {
    await store.opened;
  } finally {
    clearInterval(hold);
  }
}

/** A deferred store whose open fails `failures` times (with `reasons[i]` if given), then opens an in-memory store. */
function deferred(failures: number, reasons: string[] = []) {
  const log: { level: 'error' | 'warning'; message: string }[] = [];
  let attempts = 0;
  const real = new SqliteStore({ path: ':memory:' });
  const store = new DeferredStore({
    open: () => {
      if (attempts++ < failures) throw new StoreError(reasons[attempts - 1] ?? 'the disk is full');
      return real;
    },
    firstFailure: 'the disk is full',
    shared: false,
    claimRoundTrip: false,
    retryMs: 5,
    onError: (message) => log.push({ level: 'error', message }),
    onWarning: (message) => log.push({ level: 'warning', message }),
  });
  return { store, real, log, attempts: () => attempts };
}

describe('DeferredStore', () => {
  it('refuses every call with a StoreError (store_unavailable) until the store opens, then delegates', async () => {
    const { store, log } = deferred(3);
    try {
      assert.equal(store.isOpen, false);
      await assert.rejects(
        store.accept(command({ events: [event()] })),
        (err: unknown) => err instanceof StoreError && err.code === 'store_unavailable',
      );
      await assert.rejects(store.claimRuns('me', Date.now(), 1000, 1), StoreError);
      await assert.rejects(store.listRuns(), StoreError);
      assert.equal(log[0]?.level, 'error');
      assert.match(log[0]!.message, /cannot be opened: the disk is full.*503.*retrying every/);

      await opened(store);
      assert.equal(store.isOpen, true);
      const r = await store.accept(command({ events: [event({ text: 'after' })] }));
      assert.equal(r.kind, 'accepted');
      assert.deepEqual(
        (await store.pendingEvents('main')).map((e) => e.text),
        ['after'],
      );
      // The attempt at start (the caller's, which failed with firstFailure), three failed retries, the one that worked.
      assert.match(log.at(-1)!.message, /the store is open after \d+ s \(5 attempts\)/);
      // The same failure is not logged at every attempt: the first line, and the open.
      assert.equal(log.filter((l) => l.level === 'error').length, 1);
    } finally {
      await store.close();
    }
  });

  it('logs a changed reason at once', async () => {
    const { store, log } = deferred(2, ['the disk is full', 'file is not a database']);
    try {
      await opened(store);
      const errors = log.filter((l) => l.level === 'error').map((l) => l.message);
      assert.equal(errors.length, 2);
      assert.match(errors[1]!, /still cannot be opened after \d+ s \(3 attempts\): file is not a database/);
    } finally {
      await store.close();
    }
  });

  it('recovers leases at the open, before any other call reaches the store', async () => {
    const real = new SqliteStore({ path: ':memory:' });
    const left = run({ sessionKey: 'hook:left' });
    await real.accept(command({ runs: [left] }));
    assert.equal((await real.claimRuns('gone-process', Date.now(), 60_000, 1)).length, 1);
    const warnings: string[] = [];
    let fail = true;
    const store = new DeferredStore({
      open: () => {
        if (fail) throw new StoreError('the disk is full');
        return real;
      },
      firstFailure: 'the disk is full',
      shared: false,
      claimRoundTrip: false,
      retryMs: 5,
      onWarning: (m) => warnings.push(m),
    });
    try {
      assert.equal(await store.recoverLeases(Date.now()), 0, 'nothing recovered yet');
      fail = false;
      await opened(store);
      // Claimable by this process at once: the lease of the process that is gone was taken back first.
      assert.deepEqual(
        (await store.claimRuns('me', Date.now(), 60_000, 1)).map((r) => r.id),
        [left.id],
      );
      assert.ok(
        warnings.some((w) => /recovered 1 runs/.test(w)),
        warnings.join('\n'),
      );
    } finally {
      await store.close();
    }
  });

  it('subscribers added before the open are told that runs and deliveries may be claimable', async () => {
    const { store } = deferred(1);
    const notices: ClusterNotice[] = [];
    const unsubscribe = store.subscribe((n) => notices.push(n));
    try {
      await opened(store);
      assert.deepEqual(notices, [{ kind: 'runs' }, { kind: 'deliveries' }]);
    } finally {
      unsubscribe();
      await store.close();
    }
  });

  it('close stops retrying, and closes the real store once open', async () => {
    const never = deferred(Number.POSITIVE_INFINITY);
    await waitFor('a few attempts', () => never.attempts() >= 3); // waitFor's own timers hold the loop
    await never.store.close();
    const after = never.attempts();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(never.attempts(), after, 'no attempt after close');
    await assert.rejects(never.store.getRun('x'), StoreError);
    await never.real.close();

    const openedStore = deferred(0);
    await opened(openedStore.store);
    await openedStore.store.close();
    await assert.rejects(openedStore.store.getRun('x'), StoreError);
    assert.throws(() => openedStore.real.db.prepare('SELECT 1'), /not open/);
  });
});

describe('openStore: which failures at start are waited out', () => {
  const storage = (path: string) =>
    ({ driver: 'sqlite', path, synchronous: 'normal' }) as Parameters<typeof openStore>[0];

  it('a corrupt file still throws with retryWhenFull (only a full disk is retried)', async () => {
    const dir = tempDir();
    const db = join(dir, 'hookgate.db');
    writeFileSync(db, 'not a database at all, '.repeat(100));
    await assert.rejects(
      openStore(storage(db), (p) => p, {
        retryWhenFull: true,
        schemaPolicy: 'migrate',
        writer: 'inline',
        checkpoints: 'auto',
      }),
      /file is not a database/,
    );
  });

  it('classifies by code: SQLITE_FULL, ENOSPC and EDQUOT are a full disk; an I/O error only on a full filesystem', () => {
    const dir = tempDir();
    const path = join(dir, 'hookgate.db');
    const wrapped = (code: string) =>
      new StoreError('cannot open SQLite store', { cause: Object.assign(new Error('x'), { code }) });
    for (const code of ['SQLITE_FULL', 'ENOSPC', 'EDQUOT'])
      assert.match(diskFullAtOpen(wrapped(code), path) ?? '', new RegExp(`the disk is full \\(${code}`));
    // The temp dir has room: an I/O error there is not taken for a full disk.
    for (const code of ['SQLITE_IOERR_SHMSIZE', 'SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_BUSY', 'EACCES', 'EPERM']) {
      assert.equal(diskFullAtOpen(wrapped(code), path), undefined, code);
    }
    assert.equal(diskFullAtOpen(new Error('no code'), path), undefined);
  });
});

// Once open, it is the store: the whole contract through the delegation.
storeContract('DeferredStore (opened after one failed attempt)', async () => {
  let first = true;
  const store = new DeferredStore({
    open: (): Store => {
      if (first) {
        first = false;
        throw new StoreError('the disk is full');
      }
      return new SqliteStore({ path: ':memory:' });
    },
    firstFailure: 'the disk is full',
    shared: false,
    claimRoundTrip: false,
    retryMs: 1,
  });
  await opened(store);
  return { store, cleanup: () => store.close() };
});
