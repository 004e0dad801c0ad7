import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { StoreError } from '../../src/errors.js';
import { openSqlite } from '../../src/store/sqlite-open.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite-schema.js';
import { SqliteWriter, type WriteOp } from '../../src/store/sqlite-writer.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { SqlitePages } from '../../src/store/sqlite-pages.js';
import { SqliteReads } from '../../src/store/sqlite-reads.js';
import { openStore } from '../../src/store/open.js';
import { validateConfig } from '../../src/config/load.js';
import type { AcceptResult, RunState } from '../../src/store/types.js';
import { fromRoot } from '../support/paths.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { claim, command, delivery, event, received, run, storeContract, type StoreHarness } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
type WriterMode = 'thread' | 'inline';

function harness(
  writer: WriterMode,
  checkpoints: 'thread' | 'auto' = 'auto',
  adminReads: 'thread' | 'inline' = 'inline',
): () => Promise<StoreHarness> {
  return async () => {
    const dir = tempDir();
    const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer, checkpoints, adminReads });
    return {
      store,
      cleanup: async () => {
        await store.close();
        removeDir(dir);
      },
      setRunState: async (id: string, state: RunState, at: number) => {
        // The reading connection may write too (busy_timeout covers the writer thread's lock).
        const finished = state === 'failed' || state === 'timed_out' || state === 'succeeded';
        const n = store.db
          .prepare('UPDATE runs SET state = ?, updated_at = ?, started_at = ?, finished_at = ? WHERE id = ?')
          .run(state, at, at, finished ? at : null, id).changes;
        assert.equal(n, 1);
      },
    };
  };
}

storeContract('sqlite (writer: thread, admin reads: thread)', harness('thread', 'auto', 'thread'));
storeContract('sqlite (writer: inline)', harness('inline'));
// The service's default: the admin reads on their thread too.
storeContract('sqlite (writer: inline, checkpoint thread, admin reads: thread)', harness('inline', 'thread', 'thread'));

/**
 * Committed transactions in the WAL file since it was last reset: every commit ends with one frame whose
 * "database size after commit" field is non-zero. Frames of an older WAL generation carry other salts, and
 * `generation` (salt-1) changes when a checkpoint restarts the WAL.
 */
function walState(dbPath: string): { generation: number; commits: number } {
  const wal = readFileSync(`${dbPath}-wal`);
  if (wal.length < 32) return { generation: -1, commits: 0 };
  const pageSize = wal.readUInt32BE(8) === 1 ? 65536 : wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  let commits = 0;
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) {
    if (wal.readUInt32BE(off + 8) !== salt1 || wal.readUInt32BE(off + 12) !== salt2) break;
    if (wal.readUInt32BE(off + 4) !== 0) commits++;
  }
  return { generation: salt1, commits };
}

/** Transactions committed while `fn` ran. */
async function countCommits(dbPath: string, fn: () => Promise<unknown> | unknown): Promise<number> {
  const before = walState(dbPath);
  await fn();
  const after = walState(dbPath);
  // A checkpoint restarts the WAL only after ~1000 written pages: far more than the few batches expected here.
  assert.equal(
    after.generation,
    before.generation,
    'the WAL was checkpointed during the measurement: far too many transactions',
  );
  return after.commits - before.commits;
}

for (const writer of ['thread', 'inline'] as const) {
  describe(`SqliteStore (writer: ${writer})`, { timeout: 60_000 }, () => {
    it('keeps the data on disk after close; a new store on the same file sees it', async () => {
      const path = join(tempDir(), 'nested', 'dir', 'hookgate.db');
      const a = new SqliteStore({ path, writer });
      const ev = event({ text: 'survives' });
      const r = run({ sessionKey: 'hook:persist' });
      await a.accept(
        command({
          events: [ev],
          runs: [r],
          idempotency: claim(),
          answerSpec: { runId: r.id },
          received: received({ status: 202 }),
        }),
      );
      await a.recordReceived(received({ at: T0 + 1, status: 401, code: 'unauthorized' }));
      assert.equal(a.db.pragma('journal_mode', { simple: true }), 'wal');
      await a.close();
      assert.ok(existsSync(path));

      const b = new SqliteStore({ path, writer });
      try {
        assert.equal((await b.getRun(r.id))?.message, r.message);
        assert.deepEqual(
          (await b.getSession('main'))?.pending.map((e) => e.id),
          [ev.id],
        );
        assert.equal((await b.listReceived()).length, 2);
        const dup = await b.accept(
          command({ runs: [run()], idempotency: claim(), received: received({ at: T0 + 2 }) }),
        );
        assert.equal(dup.kind, 'duplicate');
        assert.deepEqual((dup as Extract<AcceptResult, { kind: 'duplicate' }>).replay.spec, { runId: r.id });
        // a repeated wake text after restart still coalesces with the pending event from before
        const again = await b.accept(command({ events: [event({ text: 'survives' })] }));
        assert.deepEqual(again.kind === 'accepted' && again.outcome.events, [{ eventId: ev.id, outcome: 'coalesced' }]);
      } finally {
        await b.close();
      }
    });

    it('lets a second store on the same file read committed writes while the first is open (WAL)', async () => {
      const path = join(tempDir(), 'hookgate.db');
      const a = new SqliteStore({ path, writer });
      const b = new SqliteStore({ path, writer: 'inline' });
      try {
        const r = run();
        await a.accept(command({ runs: [r] }));
        assert.equal((await b.getRun(r.id))?.id, r.id);
        const r2 = run();
        await b.accept(command({ runs: [r2] }));
        assert.equal((await a.getRun(r2.id))?.id, r2.id);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('fails only the op that violates a constraint; the rest of the batch commits', async () => {
      const path = join(tempDir(), 'hookgate.db');
      const store = new SqliteStore({ path, writer });
      try {
        const taken = run();
        await store.accept(command({ runs: [taken] }));
        const good1 = run();
        const good2 = run();
        const badEvent = event({ text: 'half of a bad command' });
        const results = await Promise.allSettled([
          store.accept(command({ runs: [good1], received: received({ at: T0 + 1 }) })),
          store.accept(
            command({ events: [badEvent], runs: [run({ id: taken.id })], received: received({ at: T0 + 2 }) }),
          ),
          store.recordReceived(received({ at: T0 + 3, status: 401, code: 'unauthorized' })),
          store.accept(command({ runs: [good2], received: received({ at: T0 + 4 }) })),
        ]);
        assert.deepEqual(
          results.map((r) => r.status),
          ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
        );
        const bad = results[1] as PromiseRejectedResult;
        assert.ok(bad.reason instanceof StoreError);
        assert.equal(bad.reason.code, 'store_unavailable');
        assert.match(bad.reason.message, /UNIQUE/);
        assert.ok(await store.getRun(good1.id));
        assert.ok(await store.getRun(good2.id));
        // nothing of the failed command was left behind
        assert.equal(await store.getSession('main'), undefined);
        assert.deepEqual(
          (await store.listReceived()).map((r) => r.at),
          [T0 + 4, T0 + 3, T0 + 1, T0],
        );
        // and the store goes on working
        assert.equal((await store.accept(command({ runs: [run()] }))).kind, 'accepted');
      } finally {
        await store.close();
      }
    });

    it('group commit: concurrent accepts share transactions', async () => {
      const path = join(tempDir(), 'hookgate.db');
      const store = new SqliteStore({ path, writer });
      try {
        await store.accept(command({ runs: [run()] })); // warm up (worker started, statements prepared)
        // The measure itself: awaited one by one, every accept is its own transaction.
        const K = 10;
        const sequential = await countCommits(path, async () => {
          for (let i = 0; i < K; i++) await store.accept(command({ runs: [run()] }));
        });
        assert.equal(sequential, K);

        // 50 concurrent accepts (a wake each: ~6 pages per transaction if each committed alone)
        const N = 50;
        let results: AcceptResult[] = [];
        const txns = await countCommits(path, async () => {
          results = await Promise.all(
            Array.from({ length: N }, (_, i) =>
              store.accept(command({ events: [event({ sessionKey: `s${i}`, text: `t${i}` })] })),
            ),
          );
        });
        assert.ok(results.length === N && results.every((r) => r.kind === 'accepted'));
        assert.ok(txns >= 1 && txns <= N / 10, `${N} concurrent accepts took ${txns} transactions`);
        assert.equal((await store.listSessions(1000)).length, N + 1 + K);
        assert.equal((await store.listRuns({ limit: 1000 })).length, 1 + K);
      } finally {
        await store.close();
      }
    });
  });
}

describe('SqliteStore (writer: thread) lifecycle', { timeout: 60_000 }, () => {
  it('close() resolves in a process that has nothing else keeping the event loop alive', () => {
    const dir = tempDir();
    const storeModule = pathToFileURL(fromRoot('dist/store/sqlite.js')).href;
    const script = `
        const { SqliteStore } = await import(${JSON.stringify(storeModule)});
        const s = new SqliteStore({ path: ${JSON.stringify(join(dir, 'c.db'))}, writer: 'thread' });
        await s.recordReceived({ at: 1, method: 'POST', path: 'x', clientIp: '127.0.0.1', status: 200, code: null,
          eventIds: [], runIds: [], mappingId: null, durationMs: 1 });
        console.log('committed');
        await s.close();
        console.log('closed');
      `;
    // A file, not `-e`: the writer thread inherits the process's flags, and `--input-type` fails a worker.
    const file = join(dir, 'close.mjs');
    writeFileSync(file, script);
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30_000 });
    assert.match(r.stdout, /committed/, r.stderr);
    assert.match(r.stdout, /closed/, `close() did not resolve; exit code ${r.status}`);
    assert.equal(r.status, 0);
  });
});

describe('SqliteStore checkpoint thread (inline writer)', { timeout: 60_000 }, () => {
  const wakes = (store: SqliteStore, from: number, n: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) => store.accept(command({ events: [event({ text: `wake ${from + i}` })] }))),
    );

  it('moves checkpoints off the writing connection: the database file grows while the store is open', async () => {
    const dir = tempDir();
    const path = join(dir, 'ck.db');
    const store = new SqliteStore({ path, writer: 'inline', checkpoints: 'thread' });
    try {
      assert.equal(
        store.db.pragma('wal_autocheckpoint', { simple: true }),
        0,
        'the writing connection does not checkpoint',
      );
      const before = statSync(path).size;
      // Pages reach the main file only through a checkpoint: with none on the writing connection, that is the thread.
      for (let i = 0; i < 20; i++) await wakes(store, i * 100, 100);
      const deadline = Date.now() + 10_000;
      while (statSync(path).size <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.ok(statSync(path).size > before, `database file still ${before} bytes: no checkpoint ran`);
    } finally {
      await store.close();
    }
    assert.equal(existsSync(`${path}-wal`), false, 'close checkpoints the rest and removes the WAL');
    const reopened = new SqliteStore({ path, writer: 'inline' });
    assert.equal((reopened.db.prepare('SELECT COUNT(*) AS n FROM system_events').get() as { n: number }).n, 2000);
    await reopened.close();
  });

  it('falls back to checkpoints on the writing connection, with a warning, when the thread stops', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    const store = new SqliteStore({
      path: join(dir, 'fb.db'),
      writer: 'inline',
      checkpoints: 'thread',
      onWarning: (m) => warnings.push(m),
    });
    try {
      const thread = (store as unknown as { checkpointer: { worker: import('node:worker_threads').Worker } })
        .checkpointer;
      await thread.worker.terminate();
      const deadline = Date.now() + 5000;
      while (warnings.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.equal(warnings.length, 1, 'one warning');
      assert.match(warnings[0]!, /checkpoint thread stopped/);
      assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), 1000);
      const [r] = await wakes(store, 0, 1);
      assert.equal(r!.kind, 'accepted', 'the store keeps accepting');
    } finally {
      await store.close();
    }
  });
});

describe('openStore: storage.checkpoints', () => {
  const checkpointer = (store: unknown) => (store as { checkpointer?: unknown }).checkpointer;
  it('"auto" (the default) leaves checkpoints to SQLite on the writing connection: no thread; "thread" starts one', async () => {
    const dir = tempDir();
    try {
      const auto = (await openStore(
        validateConfig({ storage: { path: join(dir, 'a.db') } }, undefined, dir).storage,
        (p) => p,
        { schemaPolicy: 'migrate' },
      )) as SqliteStore;
      assert.equal(checkpointer(auto), undefined);
      assert.equal(auto.db.pragma('wal_autocheckpoint', { simple: true }), 1000);
      await auto.close();
      const thread = (await openStore(
        validateConfig({ storage: { path: join(dir, 't.db'), checkpoints: 'thread' } }, undefined, dir).storage,
        (p) => p,
        { schemaPolicy: 'migrate' },
      )) as SqliteStore;
      assert.notEqual(checkpointer(thread), undefined);
      assert.equal(thread.db.pragma('wal_autocheckpoint', { simple: true }), 0);
      await thread.close();
    } finally {
      removeDir(dir);
    }
  });
});

describe('SqliteStore outbox claims behind a long route', () => {
  it('finds the next route head by seeks: 500 claims with 20,000 deliveries pending on one route take milliseconds', async () => {
    const dir = tempDir('hookgate-claims-');
    const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
    try {
      const queued = Array.from({ length: 20_000 }, (_, i) =>
        delivery({ channel: 'log', to: 'file', createdAt: T0 + i }),
      );
      const other = delivery({ channel: 'telegram', to: '1001', createdAt: T0 });
      await store.completeHeartbeat({
        heartbeatId: 'hb',
        sessionKey: 'main',
        eventIds: [],
        consumedAt: T0,
        deliveries: [...queued, other],
        messages: [],
      });
      const now = T0 + 60_000;
      const heads = await store.claimDeliveries('a', now, 60_000, 10);
      assert.deepEqual(
        heads.map((d) => d.id),
        [queued[0]!.id, other.id],
        'the head of each route',
      );
      const started = performance.now();
      // Each claim walks both routes' heads (both leased: nothing to hand out). A row-value seek past the log route
      // stepped over its 20,000 pending rows: ~1.7 ms per claim, ~850 ms for these 500.
      for (let i = 0; i < 500; i++) assert.equal((await store.claimDeliveries('b', now, 60_000, 10)).length, 0);
      const ms = performance.now() - started;
      assert.ok(ms < 250, `500 claims took ${ms.toFixed(0)} ms`);
    } finally {
      await store.close();
      removeDir(dir);
    }
  });
});

describe('SqliteWriter', () => {
  const ops = (takenId: string) => {
    const good1 = run();
    const good2 = run();
    const badEvent = event({ text: 'not committed' });
    const batch: WriteOp[] = [
      { op: 'accept', args: [command({ runs: [good1], received: received({ at: T0 + 1 }) })] },
      {
        op: 'accept',
        args: [command({ events: [badEvent], runs: [run({ id: takenId })], received: received({ at: T0 + 2 }) })],
      },
      { op: 'recordReceived', args: [received({ at: T0 + 3, status: 400, code: 'invalid_json' })] },
      { op: 'accept', args: [command({ runs: [good2], received: received({ at: T0 + 4 }) })] },
    ];
    return { batch, good1, good2, badEvent };
  };

  it('isolates an op that violates a constraint: it alone fails, whole, and the others commit', () => {
    const path = join(tempDir(), 'w.db');
    const db = openSqlite(path, 'normal');
    try {
      const writer = new SqliteWriter(db);
      const taken = run();
      const [first] = writer.runBatch([{ op: 'accept', args: [command({ runs: [taken] })] }]);
      assert.equal(first?.ok, true);

      const { batch, good1, good2, badEvent } = ops(taken.id);
      const results = writer.runBatch(batch);
      assert.deepEqual(
        results.map((r) => r.ok),
        [true, false, true, true],
      );
      const failed = results[1];
      assert.ok(failed && !failed.ok);
      assert.match(failed.error, /UNIQUE constraint failed: runs\.id/);
      const ok0 = results[0];
      assert.ok(ok0?.ok);
      assert.equal((ok0.value as AcceptResult).kind, 'accepted');

      const ids = (db.prepare('SELECT id FROM runs ORDER BY seq').all() as Array<{ id: string }>).map((r) => r.id);
      assert.deepEqual(ids, [taken.id, good1.id, good2.id]);
      assert.equal(db.prepare('SELECT id FROM system_events WHERE id = ?').get(badEvent.id), undefined);
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM system_events').get() as { n: number }).n, 0);
      const blocks = db.prepare('SELECT records FROM received_log ORDER BY seq').all() as Array<{ records: string }>;
      const ats = blocks.flatMap((b) => (JSON.parse(b.records) as number[][]).map((r) => r[0]));
      assert.deepEqual(ats, [T0, T0 + 1, T0 + 3, T0 + 4]);
    } finally {
      db.close();
    }
  });

  it('commits a clean batch in one transaction', async () => {
    const path = join(tempDir(), 'w.db');
    const db = openSqlite(path, 'normal');
    try {
      const writer = new SqliteWriter(db);
      writer.runBatch([{ op: 'recordReceived', args: [received()] }]);
      let results: ReturnType<SqliteWriter['runBatch']> = [];
      const txns = await countCommits(path, () => {
        results = writer.runBatch(
          Array.from({ length: 50 }, () => ({ op: 'accept', args: [command({ runs: [run()] })] }) satisfies WriteOp),
        );
      });
      assert.equal(results.length, 50);
      assert.ok(results.every((r) => r.ok));
      assert.equal(txns, 1);
    } finally {
      db.close();
    }
  });
});

describe('SQLite schema', () => {
  it('sets PRAGMA user_version to the number of migrations and does not migrate again on re-open', () => {
    const path = join(tempDir(), 's.db');
    const db1 = openSqlite(path, 'normal');
    assert.ok(SQLITE_MIGRATIONS.length >= 1);
    assert.equal(db1.pragma('user_version', { simple: true }), SQLITE_MIGRATIONS.length);
    db1.prepare("INSERT INTO sessions (key, agent_id, created_at, updated_at) VALUES ('k', 'main', 1, 1)").run();
    const tables = (
      db1.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>
    ).map((t) => t.name);
    for (const t of ['idempotency', 'received_log', 'runs', 'sessions', 'system_events'])
      assert.ok(tables.includes(t), `table ${t}`);
    db1.close();

    // Re-opening: the migrations are not re-run (they would fail on existing tables), data is kept.
    const db2 = openSqlite(path, 'full');
    try {
      assert.equal(db2.pragma('user_version', { simple: true }), SQLITE_MIGRATIONS.length);
      assert.equal((db2.prepare('SELECT COUNT(*) AS n FROM sessions').get() as { n: number }).n, 1);
      assert.equal(db2.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db2.pragma('synchronous', { simple: true }), 2); // FULL
    } finally {
      db2.close();
    }
  });

  it('does not touch a database already at the current version, even one whose migrations would fail', () => {
    const path = join(tempDir(), 's.db');
    // A database claiming the current version, with none of the tables: re-migrating would create them.
    const raw = new Database(path);
    raw.pragma(`user_version = ${SQLITE_MIGRATIONS.length}`);
    raw.exec('CREATE TABLE marker (x INTEGER)');
    raw.close();
    const db = openSqlite(path, 'normal');
    try {
      const tables = (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>
      ).map((t) => t.name);
      assert.deepEqual(tables, ['marker']);
    } finally {
      db.close();
    }
  });

  it('migrates a fresh file from version 0 and a store opens on it', async () => {
    const path = join(tempDir(), 'fresh.db');
    const store = new SqliteStore({ path, writer: 'inline' });
    try {
      assert.equal(store.db.pragma('user_version', { simple: true }), SQLITE_MIGRATIONS.length);
    } finally {
      await store.close();
    }
  });

  it('carries a version-14 database over: runs lose the two partial claim indexes, deliveries the unread pending one, and claims still find the same runs', async () => {
    const path = join(tempDir(), 'v14.db');
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    for (let v = 0; v < 14; v++) old.exec(SQLITE_MIGRATIONS[v]!);
    old.pragma('user_version = 14');
    const ins = old.prepare(
      `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, timeout_seconds,
         allow_unsafe, content_source, hook_path, created_at, updated_at, lease_owner, lease_until)
       VALUES (?, ?, 'main', ?, 'isolated', 'Hook', 'm', 'now', 1, 'last', 600, 0, 'webhook', 'agent', ?, ?, ?, ?)`,
    );
    ins.run('r-done', 'succeeded', 'a', T0, T0, null, null);
    ins.run('r-expired', 'running', 'b', T0 + 1, T0 + 1, 'gone-node', T0 + 5); // its worker died: lease over
    ins.run('r-held', 'running', 'c', T0 + 2, T0 + 2, 'live-node', T0 + 60_000);
    ins.run('r-queued', 'queued', 'a', T0 + 3, T0 + 3, null, null);
    ins.run('r-after-held', 'queued', 'c', T0 + 4, T0 + 4, null, null); // waits for r-held (same session)
    ins.run('r-next', 'queued', 'd', T0 + 5, T0 + 5, null, null);
    old.close();

    const store = new SqliteStore({ path, writer: 'inline' });
    try {
      assert.equal(store.db.pragma('user_version', { simple: true }), SQLITE_MIGRATIONS.length);
      const indexes = (
        store.db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' ORDER BY name")
          .all() as Array<{ name: string }>
      ).map((i) => i.name);
      assert.deepEqual(indexes, [
        'runs_by_session',
        'runs_by_state',
        'runs_failed_at', // step 16: failed runs by time, for the admin reads
        'runs_open_by_session',
        'sqlite_autoindex_runs_1',
      ]);
      const deliveryIndexes = (
        store.db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries' ORDER BY name")
          .all() as Array<{ name: string }>
      ).map((i) => i.name);
      assert.ok(
        !deliveryIndexes.includes('deliveries_pending') && deliveryIndexes.includes('deliveries_pending_by_route'),
        deliveryIndexes.join(),
      );
      // Expired leases first, then queued runs in order, each the oldest unfinished run of its session.
      assert.deepEqual(
        (await store.claimRuns('n1', T0 + 10, 120_000, 10)).map((r) => r.id),
        ['r-expired', 'r-queued', 'r-next'],
      );
      assert.deepEqual(await store.claimRuns('n1', T0 + 10, 120_000, 10), []);
      // Once the held run's lease is over, it is claimed again; the run behind it waits until it ends.
      assert.deepEqual(
        (await store.claimRuns('n2', T0 + 60_001, 30_000, 10)).map((r) => r.id),
        ['r-held'],
      );
    } finally {
      await store.close();
    }
  });

  it('carries a version-5 database over: events lose only their id index, received rows become one-record blocks', async () => {
    const path = join(tempDir(), 'v5.db');
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    for (let v = 0; v < 5; v++) old.exec(SQLITE_MIGRATIONS[v]!);
    old.pragma('user_version = 5');
    const ins = old.prepare(
      'INSERT INTO system_events (id, session_key, agent_id, text, origin, created_at, consumed_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    ins.run('ev-old', 'main', 'main', 'consumed long ago', 'wake', T0, T0 + 1);
    ins.run('ev-pending', 'main', 'main', 'still pending', 'wake', T0 + 2, null);
    old
      .prepare(
        'INSERT INTO received_hooks (at, method, path, client_ip, status, code, event_ids, run_ids, mapping_id, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(T0, 'POST', 'wake', '10.0.0.1', 200, null, JSON.stringify(['ev-pending']), null, null, 1.5);
    old
      .prepare(
        'INSERT INTO received_hooks (at, method, path, client_ip, status, code, event_ids, run_ids, mapping_id, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(T0 + 5, 'POST', 'gh', '10.0.0.2', 401, 'unauthorized', null, null, 'github', 0.25);
    old.close();

    const store = new SqliteStore({ path, writer: 'inline' });
    try {
      assert.equal(store.db.pragma('user_version', { simple: true }), SQLITE_MIGRATIONS.length);
      assert.deepEqual(
        (await store.pendingEvents('main')).map((e) => [e.id, e.text]),
        [['ev-pending', 'still pending']],
      );
      assert.deepEqual(await store.listReceived(), [
        {
          at: T0 + 5,
          method: 'POST',
          path: 'gh',
          clientIp: '10.0.0.2',
          status: 401,
          code: 'unauthorized',
          eventIds: [],
          runIds: [],
          mappingId: 'github',
          durationMs: 0.25,
        },
        {
          at: T0,
          method: 'POST',
          path: 'wake',
          clientIp: '10.0.0.1',
          status: 200,
          code: null,
          eventIds: ['ev-pending'],
          runIds: [],
          mappingId: null,
          durationMs: 1.5,
        },
      ]);
      const indexes = (
        store.db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'system_events'")
          .all() as Array<{ name: string }>
      ).map((i) => i.name);
      assert.deepEqual(
        indexes.sort(),
        ['system_events_by_session', 'system_events_pending'],
        'no index on the event id (the two are on the session key)',
      );
      // and the migrated store works: a heartbeat consumes the pending event by id
      await store.completeHeartbeat({
        sessionKey: 'main',
        heartbeatId: 'hb-1',
        consumedAt: T0 + 9,
        eventIds: ['ev-pending'],
        deliveries: [],
        messages: [],
      });
      assert.deepEqual(await store.pendingEvents('main'), []);
    } finally {
      await store.close();
    }
  });

  it('carries a version-7 database over: its runs, deliveries and routes read back with the default account (null)', async () => {
    const path = join(tempDir(), 'v7.db');
    const old = new Database(path);
    for (let v = 0; v < 7; v++) old.exec(SQLITE_MIGRATIONS[v]!);
    old.pragma('user_version = 7');
    old
      .prepare(
        `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, recipient,
           timeout_seconds, allow_unsafe, content_source, hook_path, created_at, updated_at)
         VALUES ('run-old', 'queued', 'main', 'hook:x', 'isolated', 'Hook', 'm', 'now', 1, 'telegram', '1001', 600, 0, 'webhook', 'agent', ?, ?)`,
      )
      .run(T0, T0);
    old
      .prepare(
        `INSERT INTO deliveries (id, session_key, agent_id, channel, recipient, text, explicit_route, state, next_attempt_at, created_at, updated_at)
         VALUES ('dlv-old', 'hook:x', 'main', 'telegram', '1001', 'hi', 1, 'pending', ?, ?, ?)`,
      )
      .run(T0, T0, T0);
    old
      .prepare(
        `INSERT INTO sessions (key, agent_id, last_channel, last_to, created_at, updated_at) VALUES ('main', 'main', 'telegram', '1001', ?, ?)`,
      )
      .run(T0, T0);
    old.close();

    const store = new SqliteStore({ path, writer: 'inline' });
    try {
      assert.equal((await store.getRun('run-old'))?.accountId, null);
      assert.equal((await store.getDelivery('dlv-old'))?.accountId, null);
      assert.deepEqual(await store.getRoute('main'), { channel: 'telegram', to: '1001', accountId: null });
    } finally {
      await store.close();
    }
  });

  it('reports an unopenable path as a StoreError', () => {
    const dir = tempDir();
    assert.throws(
      () => new SqliteStore({ path: dir, writer: 'inline' }), // a directory is not a database file
      (err: unknown) => err instanceof StoreError && err.code === 'store_unavailable',
    );
  });
});

/** The connection, with every SQL text prepared through it recorded (the statements are the store's own). */
function recordingStatements(real: Database.Database): { db: Database.Database; seen: string[] } {
  const seen: string[] = [];
  const db = new Proxy(real, {
    get: (target, key) =>
      key === 'prepare'
        ? (sql: string) => {
            seen.push(sql);
            return target.prepare(sql);
          }
        : Reflect.get(target, key, target),
  });
  return { db, seen };
}

describe('sqlite session view: plans', () => {
  it("a session's view outside the main session seeks indexes: no scan of runs, events or transcripts", async () => {
    const dir = tempDir();
    const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
    try {
      const { db, seen } = recordingStatements(store.db);
      assert.equal((await store.accept(command({ runs: [run({ sessionKey: 'hook:k' })] }))).kind, 'accepted');
      assert.ok(await new SqliteReads(db).getSession('hook:k'));
      const bad: string[] = [];
      for (const sql of new Set(seen)) {
        const named = /@key/.test(sql);
        const params = named ? [{ key: 'hook:k' }] : Array.from(sql.matchAll(/\?/g), () => 'hook:k');
        const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map(
          (r) => r.detail,
        );
        if (plan.some((d) => /^SCAN (runs|system_events|session_messages)\b/.test(d)))
          bad.push(`${sql.replace(/\s+/g, ' ')}\n  ${plan.join('\n  ')}`);
      }
      assert.ok(seen.length >= 5, `recorded ${seen.length} statements`);
      assert.deepEqual(bad, []);
    } finally {
      await store.close();
      removeDir(dir);
    }
  });
});

describe('sqlite admin reads: plans', () => {
  it('every admin read seeks an index or walks a bounded log: no scan or sort of runs, deliveries or events', async () => {
    const dir = tempDir();
    const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
    try {
      // The statements are the store's own: recorded as SqlitePages prepares them, then explained.
      const { db, seen } = recordingStatements(store.db);
      const pages = new SqlitePages(db);
      await pages.queueDepths();
      await pages.failuresSince(T0);
      await pages.breakdownSince(T0, T0 + 3_600_000, 60_000);
      for (const state of ['pending', 'delivered', 'dead'] as const) await pages.pageDeliveries({ limit: 50, state });
      for (const state of ['queued', 'failed'] as const) await pages.pageRuns({ limit: 50, state });
      for (const state of [undefined, 'succeeded'] as const)
        await pages.pageRuns({ limit: 50, sessionKey: 'hook:k', ...(state ? { state } : {}) });
      await pages.pageReceived({ limit: 50, outcome: 'rejected' });
      const bad: string[] = [];
      for (const sql of new Set(seen)) {
        const params = sql.includes('@since') ? [{ since: T0 }] : Array.from(sql.matchAll(/\?/g), () => 1);
        const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map(
          (r) => r.detail,
        );
        // A SCAN of a table that grows with history (but through a partial index: as small as what it holds), a
        // search on the state of a finished row (every such row ever stored), or a sort of a page's rows (but the
        // outbox's queue) reads the history.
        const scans = plan.some(
          (d) =>
            /^SCAN (runs|deliveries|system_events)\b/.test(d) &&
            !/USING (COVERING )?INDEX (system_events_pending|runs_failed_at|deliveries_dead(_at)?|deliveries_pending_by_route)\b/.test(
              d,
            ),
        );
        const finished = /state (=|IN) \('?(dead|delivered|failed|succeeded)/.test(sql);
        const byState = finished && plan.some((d) => /INDEX runs_by_state \(state=\?\)$/.test(d));
        const sorts =
          /ORDER BY seq/.test(sql) &&
          !sql.includes("state = 'pending'") &&
          plan.some((d) => /TEMP B-TREE FOR ORDER BY/.test(d));
        if (scans || byState || sorts) bad.push(`${sql.replace(/\s+/g, ' ')}\n  ${plan.join('\n  ')}`);
      }
      assert.ok(seen.length >= 8, `recorded ${seen.length} statements`);
      assert.deepEqual(bad, []);
    } finally {
      await store.close();
      removeDir(dir);
    }
  });
});
