/**
 * `hookgate store copy` moves a SQLite store's work into PostgreSQL: what the PostgreSQL Store then answers
 * is what SQLite held (runs, events, deliveries, sessions, idempotency), a second run copies nothing, new rows get
 * fresh seqs. Needs PostgreSQL (127.0.0.1:5432, database test): skipped without it, failed with
 * HOOKGATE_REQUIRE_SERVICES=1. The refusals that need no server run always.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { copySqliteToPostgres } from '../../src/store/copy-to-postgres.js';
import { openStore } from '../../src/store/open.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { AcceptResult, Store } from '../../src/store/types.js';
import { runCli } from '../support/server.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { claim, command, completion, delivery, event, message, received, run } from '../store/contract.js';
import { PG_URL, postgresSkipReason } from '../support/postgres.js';

const SERVER = PG_URL;
const PASSWORD = 'hunter2-not-needed'; // trust auth ignores it; it must never be printed
const T0 = Date.parse('2026-01-01T00:00:00Z');

const skip = await postgresSkipReason();

/** A URL to a schema of its own (search_path), with a password that must never be shown. */
function schemaUrl(schema: string): string {
  const u = new URL(SERVER);
  u.password = PASSWORD;
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

const kind = (r: AcceptResult) => r.kind;

describe('store copy: refusals before any copy', () => {
  let dir: string;
  before(async () => {
    dir = tempDir();
    mkdirSync(join(dir, 'data'), { mode: 0o700 });
    const s = new SqliteStore({ path: join(dir, 'data/hookgate.db'), writer: 'inline' });
    await s.close();
  });
  after(() => removeDir(dir));

  it('a destination that is not PostgreSQL: exit 1, saying what --to must be', async () => {
    const r = await runCli(['store', 'copy', '--from', 'data/hookgate.db', '--to', `mysql://root:${PASSWORD}@db/x`], {
      cwd: dir,
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--to must be a PostgreSQL URL \(postgres:\/\/user:password@host:5432\/database\)/);
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(PASSWORD));
  });

  it('no --to and a SQLite config: no destination', async () => {
    const r = await runCli(['store', 'copy', '--from', 'data/hookgate.db'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no destination: --to is not given, and the storage of the embedded default is sqlite/);
  });

  it('a source with an older schema: refused, saying to start hookgate once on it', async () => {
    const old = join(dir, 'old.db');
    copyFileSync(join(dir, 'data/hookgate.db'), old);
    const db = new Database(old);
    db.pragma('user_version = 9');
    db.close();
    await assert.rejects(
      copySqliteToPostgres({ from: old, to: schemaUrl('unused') }),
      (err: { code?: string; message: string }) => {
        assert.equal(err.code, 'copy_source_outdated');
        assert.match(err.message, /schema version 9, older than this hookgate's \(\d+\): run `hookgate store migrate/);
        return true;
      },
    );
  });

  it('a missing source, and a source with a live service', async () => {
    await assert.rejects(copySqliteToPostgres({ from: join(dir, 'nope.db'), to: schemaUrl('unused') }), {
      code: 'copy_source_missing',
    });
    const busy = join(dir, 'busy.db');
    copyFileSync(join(dir, 'data/hookgate.db'), busy);
    const s = new SqliteStore({ path: busy, writer: 'inline' });
    await s.registerNode({
      id: 'h:1:x',
      host: 'h',
      pid: 1,
      version: '0.1.0',
      url: 'http://127.0.0.1:1/hooks',
      startedAt: Date.now(),
      lastSeenAt: Date.now(),
    });
    await s.close();
    await assert.rejects(
      copySqliteToPostgres({ from: busy, to: schemaUrl('unused') }),
      (err: { code?: string; message: string }) => {
        assert.equal(err.code, 'copy_source_in_use');
        assert.match(
          err.message,
          /a hookgate service is running on .*busy\.db \(node h:1:x, seen \d+ s ago\): stop it first/,
        );
        return true;
      },
    );
  });
});

describe('store copy: SQLite into PostgreSQL', { skip }, () => {
  let dir: string;
  let schema: string;
  let url: string;
  let admin: pg.Client;
  const ids = {
    done: run({ sessionKey: 'hook:done', name: 'Done' }),
    waiting: run({ sessionKey: 'hook:waiting', name: 'Waiting' }),
  };
  const wake = event({ text: 'door bell' });
  const idem = claim({ scope: 'agent' });
  const spec = { kind: 'agent', status: 200 } as const;
  const out = delivery({ runId: ids.done.id, sessionKey: 'hook:done', text: 'the reply' });

  before(async () => {
    dir = tempDir();
    mkdirSync(join(dir, 'data'), { mode: 0o700 });
    schema = `copy_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    url = schemaUrl(schema);
    admin = new pg.Client({ connectionString: SERVER });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    const s = new SqliteStore({ path: join(dir, 'data/hookgate.db'), writer: 'inline' });
    try {
      assert.equal(kind(await s.accept(command({ events: [wake], received: received({ path: 'wake' }) }))), 'accepted');
      assert.equal(
        kind(
          await s.accept(
            command({
              runs: [ids.done],
              idempotency: idem,
              answerSpec: spec,
              received: received({ path: 'agent', runIds: [ids.done.id] }),
            }),
          ),
        ),
        'accepted',
      );
      assert.equal(
        kind(await s.accept(command({ runs: [ids.waiting], received: received({ path: 'agent', at: T0 + 5 }) }))),
        'accepted',
      );
      const claimed = await s.claimRuns('old-node', T0 + 10, 30_000, 5);
      assert.ok(claimed.some((r) => r.id === ids.done.id));
      await s.completeRun(
        completion(ids.done.id, 'old-node', {
          deliveryStatus: 'delivered',
          deliveries: [out],
          messages: [
            message({ sessionKey: 'hook:done', role: 'user', content: 'do the thing', runId: ids.done.id }),
            message({ sessionKey: 'hook:done', role: 'assistant', content: 'the reply', runId: ids.done.id }),
          ],
          events: [event({ text: 'Hook Done: the reply', origin: 'summary', runId: ids.done.id })],
        }),
      );
      await s.releaseRuns(
        'old-node',
        claimed.filter((r) => r.id !== ids.done.id).map((r) => r.id),
        T0 + 20,
        'stopped',
      );
      await s.registerNode({
        id: 'old:1:x',
        host: 'old',
        pid: 1,
        version: '0.1.0',
        url: 'http://127.0.0.1:1/hooks',
        startedAt: T0,
        lastSeenAt: T0,
      });
    } finally {
      await s.close();
    }
  });
  after(async () => {
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin?.end();
    removeDir(dir);
  });

  it('the CLI copies every table (not the node registry) and prints counts, never the password', async () => {
    const r = await runCli(['store', 'copy', '--from', 'data/hookgate.db', '--to', url, '--json'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(PASSWORD));
    assert.match(r.stderr, /must be stopped/);
    const res = JSON.parse(r.stdout) as {
      ok: boolean;
      to: string;
      copied: number;
      tables: Array<{ table: string; total: number; copied: number; present: number }>;
    };
    assert.equal(res.ok, true);
    assert.match(res.to, /^postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:5432\/test/);
    const by = Object.fromEntries(res.tables.map((t) => [t.table, t]));
    assert.deepEqual(Object.keys(by).sort(), [
      'audit_log',
      'deliveries',
      'gmail_accounts',
      'gmail_pushes',
      'idempotency',
      'received_log',
      'refusal_log',
      'runs',
      'session_messages',
      'sessions',
      'system_events',
    ]);
    assert.equal(by.runs!.copied, 2);
    assert.equal(by.deliveries!.copied, 1);
    assert.equal(by.session_messages!.copied, 2);
    assert.equal(by.idempotency!.copied, 1);
    assert.equal(by.system_events!.copied, 2);
    for (const t of res.tables) assert.equal(t.copied, t.total, t.table);
  });

  it('the PostgreSQL Store answers what SQLite held; a replayed key is a duplicate; new rows get fresh seqs', async () => {
    const store: Store = await openStore({ driver: 'postgres', url, poolSize: 2 }, (p) => p, {
      schemaPolicy: 'migrate',
    });
    try {
      const done = await store.getRun(ids.done.id);
      assert.equal(done?.state, 'succeeded');
      assert.equal(done?.reply, 'done');
      assert.equal((await store.getRun(ids.waiting.id))?.state, 'queued');
      const dl = await store.listDeliveries({ runId: ids.done.id });
      assert.deepEqual(
        dl.map((d) => [d.id, d.state, d.text]),
        [[out.id, 'pending', 'the reply']],
      );
      const session = await store.getSession('hook:done');
      assert.deepEqual(
        session?.transcript.map((m) => m.content),
        ['do the thing', 'the reply'],
      );
      assert.deepEqual(
        (await store.pendingEvents('main')).map((e) => e.text),
        ['door bell', 'Hook Done: the reply'],
      );
      assert.equal((await store.listReceived(10)).length, 3);
      assert.deepEqual(await store.listNodes(), [], 'the node registry is not copied');

      const replay = await store.accept(
        command({ runs: [run()], idempotency: idem, answerSpec: spec, received: received({ at: T0 + 100 }) }),
      );
      assert.equal(replay.kind, 'duplicate');
      const fresh = run({ name: 'After the copy', createdAt: T0 + 200 });
      assert.equal(
        kind(
          await store.accept(
            command({ runs: [fresh], events: [event({ text: 'new event' })], received: received({ at: T0 + 200 }) }),
          ),
        ),
        'accepted',
      );
      assert.equal(
        (await store.listRuns({ limit: 1 }))[0]?.id,
        fresh.id,
        'the new run is numbered after the copied ones',
      );
    } finally {
      await store.close();
    }
  });

  it('a second copy copies nothing and keeps what changed since', async () => {
    const again = await copySqliteToPostgres({ from: join(dir, 'data/hookgate.db'), to: url, batchRows: 1 });
    for (const t of again) {
      assert.equal(t.copied, 0, t.table);
      assert.equal(t.present, t.total, t.table);
    }
  });

  it('a destination that holds other work under the same seqs is refused', async () => {
    const other = `${schema}_b`;
    await admin.query(`CREATE SCHEMA ${other}`);
    try {
      const otherUrl = schemaUrl(other);
      const s = await openStore({ driver: 'postgres', url: otherUrl, poolSize: 1 }, (p) => p, {
        schemaPolicy: 'migrate',
      });
      await s.accept(command({ runs: [run({ name: 'theirs' })], received: received() }));
      await s.close();
      await assert.rejects(copySqliteToPostgres({ from: join(dir, 'data/hookgate.db'), to: otherUrl }), {
        code: 'copy_destination_conflict',
      });
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS ${other} CASCADE`);
    }
  });
});
