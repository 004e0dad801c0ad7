import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { StoreError, StoreSchemaError } from '../../src/errors.js';
import { PG_SCHEMA_VERSION } from '../../src/store/postgres-migrate.js';
import { PG_MIGRATIONS } from '../../src/store/postgres-schema.js';
import { checkPostgres, type PostgresStore } from '../../src/store/postgres.js';
import type { ClusterNotice, NewSystemEvent, RunState } from '../../src/store/types.js';
import { holdPassLock, openTestStore, PG_URL, postgresSkipReason, sqlIn, testSchema } from '../support/postgres.js';
import { waitFor } from '../support/wait.js';
import { claim, command, event, received, run, storeContract, type StoreHarness } from './contract.js';
import { finishedRun } from './retention-contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const skip = await postgresSkipReason();

async function harness(): Promise<StoreHarness> {
  const { schema, drop } = await testSchema();
  const store = await openTestStore(schema);
  return {
    store,
    cleanup: async () => {
      await store.close();
      await drop();
    },
    setRunState: async (id: string, state: RunState, at: number) => {
      const finished = state === 'failed' || state === 'timed_out' || state === 'succeeded';
      const { rowCount } = await sqlIn(
        schema,
        'UPDATE runs SET state = $1, updated_at = $2, started_at = $2, finished_at = $3 WHERE id = $4',
        [state, at, finished ? at : null, id],
      );
      assert.equal(rowCount, 1);
    },
  };
}

describe('postgres driver', { skip: skip ?? false }, () => {
  storeContract('postgres', harness);

  describe('postgres: several stores ("nodes") on one schema', { timeout: 60_000 }, () => {
    let schema: string;
    let drop: () => Promise<void>;
    let a: PostgresStore;
    let b: PostgresStore;
    before(async () => {
      ({ schema, drop } = await testSchema());
      // Three nodes opening together on an empty schema: the migrations run once (under the advisory lock).
      const stores = await Promise.all([openTestStore(schema), openTestStore(schema), openTestStore(schema)]);
      [a, b] = [stores[0]!, stores[1]!];
      await stores[2]!.close();
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await drop?.();
    });

    it('retention: one node prunes at a time; a node that finds the pass taken skips it', async () => {
      const old = await finishedRun(a, { at: T0, finishedAt: T0 + 100 });
      const cut = T0 + 86_400_000;
      // Another node's pass under way: its session holds the lock (keyed by the schema).
      const other = await holdPassLock(schema, 'prune-finished');
      try {
        const skipped = await b.pruneFinished(cut, { keepMessages: 40 });
        assert.deepEqual([skipped.steps, skipped.runs], [0, 0]);
        assert.ok(await a.getRun(old.run.id), 'kept while the other pass holds the lock');
      } finally {
        await other.release();
      }
      const done = await b.pruneFinished(cut, { keepMessages: 40 });
      assert.ok(done.runs >= 1);
      assert.equal(await a.getRun(old.run.id), undefined);
      // The lock was given back: the next pass runs (and finds nothing left).
      assert.ok((await a.pruneFinished(cut, { keepMessages: 40 })).steps > 0);
    });

    it('retention: expired records too are pruned by one node at a time, in steps', async () => {
      const at = T0 - 86_400_000; // older than anything the other tests of this schema accept
      await a.accept(command({ events: [event()], received: received({ at }) }));
      const other = await holdPassLock(schema, 'prune-expired');
      try {
        const skipped = await b.prune(at + 1, at + 1);
        assert.deepEqual([skipped.steps, skipped.received], [0, 0]);
      } finally {
        await other.release();
      }
      const done = await b.prune(at + 1, at + 1);
      assert.deepEqual([done.received, done.steps], [1, 3], 'keys, received records, refusal windows: a step each');
      assert.equal((await a.prune(at + 1, at + 1)).received, 0);
    });

    it('migrated once: one row per migration step', async () => {
      const { rows } = await sqlIn<{ version: number }>(
        schema,
        'SELECT version FROM schema_migrations ORDER BY version',
      );
      assert.deepEqual(
        rows.map((r) => r.version),
        Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1),
      );
    });

    it('group commit: N concurrent accepts are one statement (one round trip, one transaction)', async () => {
      await a.accept(command({ events: [event()], received: received() })); // warm
      const before = a.db.queries;
      const cmds = Array.from({ length: 40 }, (_, i) =>
        command({ runs: [run()], idempotency: claim({ keyHash: String(i).padStart(64, 'g') }), received: received() }),
      );
      const results = await Promise.all([
        ...cmds.map((c) => a.accept(c)),
        a.recordReceived(received({ status: 401, code: 'unauthorized' })),
      ]);
      assert.equal(a.db.queries - before, 1);
      assert.equal(results.filter((r) => (r as { kind?: string } | undefined)?.kind === 'accepted').length, 40);
      const { rows } = await sqlIn<{ n: number }>(
        schema,
        'SELECT count(*)::int AS n FROM received_log WHERE records LIKE $1',
        ['%unauthorized%'],
      );
      assert.equal(rows[0]!.n, 1);
    });

    it('one batch coalesces as one command after another would: into the pending event, then into its own new ones', async () => {
      const session = `batch-${Date.now()}`;
      const pending = event({ sessionKey: session, text: 'same' });
      await a.accept(command({ events: [pending] }));
      const [e1, e2, e3, e4] = [
        event({ sessionKey: session, text: 'same' }),
        event({ sessionKey: session, text: 'other' }),
        event({ sessionKey: session, text: 'other' }),
        event({ sessionKey: `${session}-b`, text: 'same' }),
      ];
      const before = a.db.queries;
      const results = await Promise.all([e1, e2, e3, e4].map((e) => a.accept(command({ events: [e] }))));
      assert.equal(a.db.queries - before, 1, 'one batch');
      const outcomes = results.map((r) => (r.kind === 'accepted' ? r.outcome.events[0] : r));
      assert.deepEqual(outcomes, [
        { eventId: pending.id, outcome: 'coalesced' },
        { eventId: e2.id, outcome: 'queued' },
        { eventId: e2.id, outcome: 'coalesced' },
        { eventId: e4.id, outcome: 'queued' },
      ]);
      const { rows } = await sqlIn<{ id: string }>(
        schema,
        'SELECT id FROM system_events WHERE session_key LIKE $1 ORDER BY seq',
        [`${session}%`],
      );
      assert.deepEqual(
        rows.map((r) => r.id),
        [pending.id, e2.id, e4.id],
        'inserted in the order of the batch',
      );
    });

    it('any batch coalesces as its commands one after another would (property: the quick insert and the merging statement agree)', async () => {
      // Sessions, texts and provenances drawn from few values, so that batches both merge (the merging statement) and
      // do not (the quick insert); an optional stored pending event first, per session.
      const provenance = fc.constantFrom<Pick<NewSystemEvent, 'untrusted' | 'source'>>(
        {},
        { untrusted: true, source: 'gmail' },
        { untrusted: true, source: 'github' },
      );
      const ev = fc.record({ s: fc.nat(1), text: fc.constantFrom('x', 'y'), p: provenance });
      let round = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.option(ev.map((e) => ({ ...e, s: 0 }))), { minLength: 2, maxLength: 2 }),
          fc.array(fc.array(ev, { minLength: 1, maxLength: 2 }), { minLength: 1, maxLength: 8 }),
          async (stored, batch) => {
            const sessions = [0, 1].map((i) => `prop-${Date.now()}-${round}-${i}`);
            round++;
            const make = (e: { s: number; text: string; p: Pick<NewSystemEvent, 'untrusted' | 'source'> }) =>
              event({ sessionKey: sessions[e.s]!, text: e.text, ...e.p });
            const latest = new Map<string, NewSystemEvent>();
            const storedIds = new Set<string>();
            for (const [i, e] of stored.entries()) {
              if (!e) continue;
              const pending = make({ ...e, s: i });
              await a.accept(command({ events: [pending] }));
              latest.set(pending.sessionKey, pending);
              storedIds.add(pending.id);
            }
            const commands = batch.map((events) => command({ events: events.map(make) }));
            // The model: each event against its session's latest pending one, command after command.
            const alike = (x: NewSystemEvent, y: NewSystemEvent) =>
              x.text === y.text && (x.untrusted ?? false) === (y.untrusted ?? false) && x.source === y.source;
            const expected = commands.map((c) =>
              c.events.map((e) => {
                const prev = latest.get(e.sessionKey);
                if (prev && alike(prev, e)) return { eventId: prev.id, outcome: 'coalesced' };
                latest.set(e.sessionKey, e);
                return { eventId: e.id, outcome: 'queued' };
              }),
            );
            const before = a.db.queries;
            const results = await Promise.all(commands.map((c) => a.accept(c)));
            assert.equal(a.db.queries - before, 1, 'one batch');
            assert.deepEqual(
              results.map((r) => (r.kind === 'accepted' ? r.outcome.events : r)),
              expected,
            );
            const queued = expected
              .flat()
              .filter((o) => o.outcome === 'queued')
              .map((o) => o.eventId);
            const { rows } = await sqlIn<{ id: string }>(
              schema,
              'SELECT id FROM system_events WHERE session_key = ANY($1) ORDER BY seq',
              [sessions],
            );
            assert.deepEqual(
              rows.map((r) => r.id).filter((id) => !storedIds.has(id)),
              queued,
              'the queued ones, in batch order',
            );
          },
        ),
        { numRuns: 60 },
      );
    });

    it('one key twice in one batch: the first is accepted, the second answered as its duplicate', async () => {
      const key = claim({ keyHash: 'b'.repeat(64) });
      const session = `twice-${Date.now()}`;
      const [first, second] = [1, 2].map(() =>
        command({
          events: [event({ sessionKey: session, text: 'once' })],
          idempotency: key,
          answerSpec: { kind: 'wake', status: 200 },
          received: received({ status: 200 }),
        }),
      );
      const [r1, r2] = await Promise.all([a.accept(first!), a.accept(second!)]);
      assert.equal(r1.kind, 'accepted');
      assert.deepEqual(r2, {
        kind: 'duplicate',
        status: 200,
        replay: { spec: { kind: 'wake', status: 200 }, outcome: r1.kind === 'accepted' && r1.outcome },
      });
      const { rows } = await sqlIn<{ n: number }>(
        schema,
        'SELECT count(*)::int AS n FROM system_events WHERE session_key = $1',
        [session],
      );
      assert.equal(rows[0]!.n, 1, 'the duplicate queued nothing');
    });

    it('one bad command of a batch fails alone; the others of its batch are committed', async () => {
      const taken = run();
      await a.accept(command({ runs: [taken], received: received() }));
      const good = Array.from({ length: 5 }, () => command({ runs: [run()], received: received() }));
      const bad = command({ runs: [{ ...taken }], received: received() }); // the same run id again: a unique violation
      const results = await Promise.allSettled([...good.map((c) => a.accept(c)), a.accept(bad)]);
      assert.deepEqual(
        results.map((r) => r.status),
        [...good.map(() => 'fulfilled'), 'rejected'],
      );
      const err = (results[5] as PromiseRejectedResult).reason as unknown;
      assert.ok(err instanceof StoreError && err.code === 'store_unavailable');
      for (const c of good) assert.equal((await b.getRun(c.runs[0]!.id))?.state, 'queued');
    });

    it('an idempotency replay on another node gets the first answer with duplicate', async () => {
      const c = command({
        runs: [run()],
        idempotency: claim({ keyHash: 'x'.repeat(64) }),
        answerSpec: { status: 202, runId: 'r1' },
        received: received({ status: 202 }),
      });
      const first = await a.accept(c);
      assert.equal(first.kind, 'accepted');
      const again = await b.accept(command({ ...c, runs: [run()], received: received({ status: 202 }) }));
      assert.equal(again.kind, 'duplicate');
      assert.deepEqual(again.kind === 'duplicate' && again.replay, {
        spec: { status: 202, runId: 'r1' },
        outcome: first.kind === 'accepted' && first.outcome,
      });
    });

    it('concurrent requests with one key on two nodes: exactly one is accepted', async () => {
      const c = () =>
        command({
          events: [event({ text: 'k2' })],
          idempotency: claim({ keyHash: 'y'.repeat(64) }),
          received: received(),
        });
      const results = await Promise.all([
        ...Array.from({ length: 10 }, () => a.accept(c())),
        ...Array.from({ length: 10 }, () => b.accept(c())),
      ]);
      assert.equal(results.filter((r) => r.kind === 'accepted').length, 1);
      assert.equal(results.filter((r) => r.kind === 'duplicate').length, 19);
    });

    it('two nodes claiming concurrently never get the same run', async () => {
      await sqlIn(schema, 'DELETE FROM runs');
      await a.accept(command({ runs: Array.from({ length: 60 }, () => run()), received: received() }));
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).claimRuns(`node${i % 2}`, T0, 60_000, 7)),
      );
      const ids = claims.flat().map((r) => r.id);
      assert.equal(ids.length, 60);
      assert.equal(new Set(ids).size, 60);
    });

    it("an expired lease of one node is claimed by the other; the first node's completion is then refused", async () => {
      await sqlIn(schema, 'DELETE FROM runs');
      const r = run();
      await a.accept(command({ runs: [r], received: received() }));
      assert.equal((await a.claimRuns('nodeA', T0, 1000, 5)).length, 1);
      assert.equal((await b.claimRuns('nodeB', T0 + 500, 1000, 5)).length, 0);
      const taken = await b.claimRuns('nodeB', T0 + 2000, 1000, 5);
      assert.deepEqual(
        taken.map((x) => [x.id, x.attempts]),
        [[r.id, 2]],
      );
      const done = {
        runId: r.id,
        state: 'succeeded' as const,
        finishedAt: T0 + 2500,
        error: null,
        reply: 'ok',
        deliveryStatus: 'suppressed:test',
        events: [],
        deliveries: [],
        messages: [],
      };
      assert.equal(await a.completeRun({ ...done, owner: 'nodeA' }), false);
      const got: ClusterNotice[] = [];
      const stop = a.subscribe((n) => got.push(n));
      await a.noticesReady();
      const next = run({ sessionKey: r.sessionKey });
      await b.accept(command({ runs: [next], received: received() }));
      assert.equal(await b.completeRun({ ...done, owner: 'nodeB' }), true);
      // The session's next run is runnable now: a 'runs' notice besides the accept's own.
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && got.length < 2) await new Promise((res) => setTimeout(res, 20));
      stop();
      assert.deepEqual(got, [{ kind: 'runs' }, { kind: 'runs' }]);
    });

    it("a node keeps a route while it listens; another node's setRoute makes it read the new one (the route notice)", async () => {
      const key = `route-${Date.now()}`;
      const stop = a.subscribe(() => {});
      try {
        await a.noticesReady();
        assert.equal(await a.getRoute(key), undefined);
        let before = a.db.queries;
        assert.equal(await a.getRoute(key), undefined);
        assert.equal(a.db.queries - before, 0, 'kept: no statement');
        await b.setRoute(key, 'main', 'telegram', '1001', T0);
        await waitFor('node a uses the route node b set', async () => (await a.getRoute(key))?.to === '1001');
        before = a.db.queries;
        assert.deepEqual(await a.getRoute(key), { channel: 'telegram', to: '1001', accountId: null });
        assert.equal(a.db.queries - before, 0, 'the new route is kept in turn');
        // Its own write: used by the very next read, without waiting for its notice.
        await a.setRoute(key, 'main', 'slack', 'C9', T0 + 1, 'ops');
        assert.deepEqual(await a.getRoute(key), { channel: 'slack', to: 'C9', accountId: 'ops' });
      } finally {
        stop();
      }
      // Not listening any more: nothing is kept, every call reads.
      const before = a.db.queries;
      await a.getRoute(key);
      await a.getRoute(key);
      assert.equal(a.db.queries - before, 2);
    });

    it('heartbeat leases and lockouts hold across nodes', async () => {
      assert.equal(await a.leaseHeartbeat('main', 'nodeA', T0, 1000), true);
      assert.equal(await b.leaseHeartbeat('main', 'nodeB', T0 + 10, 1000), false);
      assert.equal(await b.leaseHeartbeat('main', 'nodeB', T0 + 1000, 1000), true);
      await a.shareLockout('10.0.0.0/24', T0 + 5000);
      assert.deepEqual(await b.activeLockouts(T0), [{ bucket: '10.0.0.0/24', until: T0 + 5000 }]);
    });

    it("notices from one node arrive at the other's subscribe: runs, deliveries, lockout", async () => {
      const got: ClusterNotice[] = [];
      const stop = b.subscribe((n) => got.push(n));
      await b.noticesReady();
      await a.accept(command({ runs: [run()], received: received() }));
      await a.shareLockout('192.0.2.0/24', T0 + 9000);
      const d = await a.accept(command({ runs: [run()], received: received() }));
      assert.equal(d.kind, 'accepted');
      const [leased] = await a.claimRuns('nodeA', Date.now() + 10 * 86_400_000 * 365, 60_000, 1);
      if (leased) {
        const delivery = {
          id: `d-${leased.id}`,
          runId: leased.id,
          heartbeatId: null,
          sessionKey: leased.sessionKey,
          agentId: 'main',
          hookName: null,
          channel: 'slack',
          to: 'C1',
          accountId: null,
          text: 'hi',
          explicitRoute: false,
          createdAt: T0,
        };
        await a.completeRun({
          runId: leased.id,
          owner: 'nodeA',
          state: 'succeeded',
          finishedAt: T0,
          error: null,
          reply: 'hi',
          deliveryStatus: 'outbox',
          events: [],
          deliveries: [delivery],
          messages: [],
        });
      }
      const deadline = Date.now() + 5000;
      while (
        Date.now() < deadline &&
        !(got.some((n) => n.kind === 'deliveries') && got.some((n) => n.kind === 'lockout'))
      )
        await new Promise((r) => setTimeout(r, 20));
      stop();
      assert.ok(
        got.some((n) => n.kind === 'runs'),
        JSON.stringify(got),
      );
      assert.ok(
        got.some((n) => n.kind === 'deliveries'),
        JSON.stringify(got),
      );
      assert.deepEqual(
        got.find((n) => n.kind === 'lockout'),
        { kind: 'lockout', bucket: '192.0.2.0/24', until: T0 + 9000 },
      );
    });
  });

  describe('postgres: schema versions and failures', { timeout: 60_000 }, () => {
    it('a store at the previous schema step gets the current hookgate_accept_batch when opened', async () => {
      const { schema: old, drop: dropOld } = await testSchema();
      try {
        await (await openTestStore(old)).close();
        // As a store migrated by the version before the last step that redefines the function: its function lacks
        // this version's changes (here: it fails). The steps after that one run again too.
        const redefined =
          PG_MIGRATIONS.map((step) => step.includes('FUNCTION hookgate_accept_batch(')).lastIndexOf(true) + 1;
        await sqlIn(old, 'DELETE FROM schema_migrations WHERE version >= $1', [redefined]);
        await sqlIn(
          old,
          `CREATE OR REPLACE FUNCTION hookgate_accept_batch(new_events jsonb, new_runs jsonb, claims jsonb, records text,
            records_at bigint, notice_channel text) RETURNS jsonb LANGUAGE plpgsql
          AS $fn$ BEGIN RAISE EXCEPTION 'the previous definition'; END $fn$`,
        );
        const store = await openTestStore(old);
        try {
          const r = await store.accept(command({ events: [event()] }));
          assert.equal(r.kind, 'accepted');
          const { rows } = await sqlIn<{ v: number }>(old, 'SELECT max(version) AS v FROM schema_migrations');
          assert.equal(rows[0]!.v, PG_SCHEMA_VERSION);
        } finally {
          await store.close();
        }
      } finally {
        await dropOld();
      }
    });

    it('refuses a schema newer than it knows, with a clear message', async () => {
      const { schema, drop } = await testSchema();
      try {
        await (await openTestStore(schema)).close();
        await sqlIn(schema, 'INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [
          PG_SCHEMA_VERSION + 1,
        ]);
        await assert.rejects(openTestStore(schema), (err: unknown) => {
          assert.ok(err instanceof StoreSchemaError);
          assert.equal(err.code, 'store_schema_newer');
          assert.match(
            err.message,
            new RegExp(
              `written by a newer hookgate \\(schema ${PG_SCHEMA_VERSION + 1}\\); this one knows up to ${PG_SCHEMA_VERSION}: upgrade hookgate`,
            ),
          );
          return true;
        });
      } finally {
        await drop();
      }
    });

    it('checkPostgres reports the server and schema versions without migrating', async () => {
      const { schema, drop } = await testSchema();
      try {
        const fresh = await checkPostgres(PG_URL, { schema });
        assert.equal(fresh.schemaVersion, null);
        assert.equal(fresh.knownVersion, PG_SCHEMA_VERSION);
        assert.match(fresh.serverVersion, /^\d+/);
        await (await openTestStore(schema)).close();
        assert.equal((await checkPostgres(PG_URL, { schema })).schemaVersion, PG_SCHEMA_VERSION);
      } finally {
        await drop();
      }
    });

    it('PostgreSQL unreachable: open and check reject with a StoreError quickly, without the password', async () => {
      const url = 'postgres://hookgate:s3cret-pw@127.0.0.1:9/test';
      const t0 = Date.now();
      for (const p of [
        openTestStore('public', { url, connectionTimeoutMs: 2000 }),
        checkPostgres(url, { connectionTimeoutMs: 2000 }),
      ]) {
        await assert.rejects(p, (err: unknown) => {
          assert.ok(err instanceof StoreError, String(err));
          assert.equal(err.code, 'store_unavailable');
          assert.doesNotMatch(err.message, /s3cret/);
          return true;
        });
      }
      assert.ok(Date.now() - t0 < 5000);
    });

    it('a store whose server goes away answers StoreError (503), and its notices reconnect without crashing', async () => {
      const { schema, drop } = await testSchema();
      const app = `hookgate-test-${schema}`;
      const store = await openTestStore(schema, { applicationName: app });
      try {
        const got: ClusterNotice[] = [];
        const stop = store.subscribe((n) => got.push(n));
        await store.noticesReady();
        // Kill every connection of this schema's store (a server restart, as the store sees it).
        await sqlIn(schema, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
          app,
        ]);
        // The pool replaces broken connections: a later accept works again (possibly after one failed attempt).
        let ok = false;
        for (let i = 0; i < 5 && !ok; i++) {
          try {
            ok = (await store.accept(command({ events: [event()], received: received() }))).kind === 'accepted';
          } catch (err) {
            assert.ok(err instanceof StoreError);
          }
        }
        assert.ok(ok);
        // The LISTEN connection comes back by itself: notices arrive again.
        const other = await openTestStore(schema);
        try {
          const deadline = Date.now() + 8000;
          while (Date.now() < deadline && !got.some((n) => n.kind === 'lockout')) {
            await other.shareLockout('198.51.100.0/24', T0);
            await new Promise((r) => setTimeout(r, 200));
          }
        } finally {
          await other.close();
        }
        assert.ok(
          got.some((n) => n.kind === 'lockout'),
          'a notice after the reconnect',
        );
        stop();
      } finally {
        await store.close();
        await drop();
      }
    });
  });
});
