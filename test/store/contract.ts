/**
 * The store contract: one driver-agnostic suite every `Store` driver must pass (SQLite now, PostgreSQL later).
 * A driver's test file calls `storeContract(name, open)`; `open` returns a fresh, empty store and a cleanup that
 * closes it (closing twice must be harmless) and removes what it created.
 *
 * Only the `Store` interface is used, except for one optional back door: the interface has no runner methods
 * yet (claim / finish a run), so a driver may pass `setRunState` to put a run in a finished state; the tests
 * that need it are skipped when it is absent.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { StoreError } from '../../src/errors.js';
import type {
  AcceptCommand,
  AcceptResult,
  IdempotencyClaim,
  NewRun,
  NewSystemEvent,
  ReceivedHook,
  RunState,
  Store,
} from '../../src/store/types.js';

export interface StoreHarness {
  store: Store;
  cleanup: () => Promise<void>;
  /** Test-only: force a run's state (and finishedAt for finished states), as the runtime would. */
  setRunState?: (id: string, state: RunState, at: number) => Promise<void>;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');

export function event(over: Partial<NewSystemEvent> = {}): NewSystemEvent {
  return { id: randomUUID(), sessionKey: 'main', agentId: 'main', text: 'ping', origin: 'wake', createdAt: T0, ...over };
}

export function run(over: Partial<NewRun> = {}): NewRun {
  return {
    id: randomUUID(),
    agentId: 'main',
    sessionKey: `hook:${randomUUID()}`,
    sessionMode: 'isolated',
    name: 'Hook',
    message: 'do the thing',
    wakeMode: 'now',
    deliver: true,
    channel: 'last',
    to: null,
    model: null,
    thinking: null,
    timeoutSeconds: 600,
    allowUnsafeExternalContent: false,
    contentSource: 'webhook',
    hookPath: 'agent',
    mappingId: null,
    createdAt: T0,
    ...over,
  };
}

export function received(over: Partial<ReceivedHook> = {}): ReceivedHook {
  return {
    at: T0,
    method: 'POST',
    path: 'wake',
    clientIp: '127.0.0.1',
    status: 200,
    code: null,
    eventIds: [],
    runIds: [],
    mappingId: null,
    durationMs: 1.5,
    ...over,
  };
}

export function claim(over: Partial<IdempotencyClaim> = {}): IdempotencyClaim {
  return { scope: 'agent', keyHash: 'k'.repeat(64), fingerprint: 'f'.repeat(64), expiresAt: T0 + 86_400_000, ...over };
}

export function command(over: Partial<AcceptCommand> = {}): AcceptCommand {
  return { events: [], runs: [], answerSpec: { kind: 'test' }, received: received(), ...over };
}

/** The fields a test knows about: drivers may add more (the interface grows), which must not break the suite. */
function pick<T extends object, K extends keyof T>(o: T | undefined, keys: readonly K[]): Pick<T, K> | undefined {
  if (o === undefined) return undefined;
  const out = {} as Pick<T, K>;
  for (const k of keys) out[k] = o[k];
  return out;
}

const EVENT_KEYS = ['id', 'sessionKey', 'agentId', 'text', 'origin', 'runId', 'createdAt', 'consumedAt'] as const;
const NEW_RUN_KEYS = [
  'id', 'agentId', 'sessionKey', 'sessionMode', 'name', 'message', 'wakeMode', 'deliver', 'channel', 'to', 'model',
  'thinking', 'timeoutSeconds', 'allowUnsafeExternalContent', 'contentSource', 'hookPath', 'mappingId', 'createdAt',
] as const;
const RECEIVED_KEYS = ['at', 'method', 'path', 'clientIp', 'status', 'code', 'eventIds', 'runIds', 'mappingId', 'durationMs'] as const;

function accepted(r: AcceptResult): Extract<AcceptResult, { kind: 'accepted' }> {
  assert.equal(r.kind, 'accepted', `expected accepted, got ${JSON.stringify(r)}`);
  return r as Extract<AcceptResult, { kind: 'accepted' }>;
}

function duplicate(r: AcceptResult): Extract<AcceptResult, { kind: 'duplicate' }> {
  assert.equal(r.kind, 'duplicate', `expected duplicate, got ${JSON.stringify(r)}`);
  return r as Extract<AcceptResult, { kind: 'duplicate' }>;
}

async function assertStoreError(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof StoreError, `expected a StoreError, got ${String(err)}`);
    assert.equal(err.code, 'store_unavailable');
    return true;
  });
}

export function storeContract(name: string, open: () => Promise<StoreHarness>): void {
  // A driver that hangs (a write never resolved) fails instead of stalling the run.
  describe(`store contract: ${name}`, { timeout: 120_000 }, () => {
    let h: StoreHarness;
    let store: Store;
    beforeEach(async () => {
      h = await open();
      store = h.store;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    describe('wake events', () => {
      it('queues an event and keeps every field', async () => {
        const ev = event({ text: 'build finished', createdAt: T0 + 5 });
        const r = accepted(await store.accept(command({ events: [ev] })));
        assert.deepEqual(r.outcome, { events: [{ eventId: ev.id, outcome: 'queued' }] });
        const s = await store.getSession('main');
        assert.ok(s);
        assert.equal(s.pending.length, 1);
        assert.deepEqual(pick(s.pending[0], EVENT_KEYS), { ...ev, runId: null, consumedAt: null });
        assert.equal(s.pendingEvents, 1);
      });

      it('coalesces a text equal to the previous pending event of the session, returning the earlier id', async () => {
        const first = event({ text: 'same' });
        accepted(await store.accept(command({ events: [first] })));
        const second = event({ text: 'same', createdAt: T0 + 1 });
        const r = accepted(await store.accept(command({ events: [second] })));
        assert.deepEqual(r.outcome.events, [{ eventId: first.id, outcome: 'coalesced' }]);
        const s = await store.getSession('main');
        assert.deepEqual(s?.pending.map((e) => e.id), [first.id]);
        assert.equal(s?.pendingEvents, 1);
      });

      it('coalesces only against the previous pending event, not an older one', async () => {
        const a = event({ text: 'A', createdAt: T0 + 1 });
        const b = event({ text: 'B', createdAt: T0 + 2 });
        const a2 = event({ text: 'A', createdAt: T0 + 3 });
        for (const ev of [a, b, a2]) {
          const r = accepted(await store.accept(command({ events: [ev] })));
          assert.deepEqual(r.outcome.events, [{ eventId: ev.id, outcome: 'queued' }]);
        }
        const s = await store.getSession('main');
        assert.deepEqual(s?.pending.map((e) => e.text), ['A', 'B', 'A']);
      });

      it('coalesces within one command too', async () => {
        const a = event({ text: 'dup' });
        const b = event({ text: 'dup' });
        const r = accepted(await store.accept(command({ events: [a, b] })));
        assert.deepEqual(r.outcome.events, [
          { eventId: a.id, outcome: 'queued' },
          { eventId: a.id, outcome: 'coalesced' },
        ]);
      });

      it('does not coalesce across sessions', async () => {
        const a = event({ sessionKey: 'main', text: 'same' });
        const b = event({ sessionKey: 'other', agentId: 'ops', text: 'same' });
        accepted(await store.accept(command({ events: [a] })));
        const r = accepted(await store.accept(command({ events: [b] })));
        assert.deepEqual(r.outcome.events, [{ eventId: b.id, outcome: 'queued' }]);
        assert.deepEqual((await store.getSession('other'))?.pending.map((e) => e.id), [b.id]);
        assert.deepEqual((await store.getSession('main'))?.pending.map((e) => e.id), [a.id]);
      });

      it('is case- and whitespace-exact when coalescing', async () => {
        accepted(await store.accept(command({ events: [event({ text: 'Deploy' })] })));
        const r1 = accepted(await store.accept(command({ events: [event({ text: 'deploy' })] })));
        assert.equal(r1.outcome.events[0]?.outcome, 'queued');
        const r2 = accepted(await store.accept(command({ events: [event({ text: 'deploy ' })] })));
        assert.equal(r2.outcome.events[0]?.outcome, 'queued');
      });

      it('keeps origin and runId of summary events', async () => {
        const ev = event({ origin: 'summary', runId: 'run-1', text: 'Hook X: done' });
        accepted(await store.accept(command({ events: [ev] })));
        const s = await store.getSession('main');
        assert.equal(s?.pending[0]?.origin, 'summary');
        assert.equal(s?.pending[0]?.runId, 'run-1');
      });
    });

    describe('runs', () => {
      it('stores a run as queued with every field round-tripping through getRun and listRuns', async () => {
        const r = run({
          agentId: 'ops',
          sessionKey: 'hook:ci:42',
          sessionMode: 'persistent',
          name: 'CI',
          message: 'Build #42 failed ✗ — «details»\nline 2',
          wakeMode: 'next-heartbeat',
          deliver: false,
          channel: 'telegram',
          to: '123456',
          model: 'local/llama3',
          thinking: 'high',
          timeoutSeconds: 1.5,
          allowUnsafeExternalContent: true,
          contentSource: 'email',
          hookPath: 'gmail',
          mappingId: 'gmail-map',
          createdAt: T0 + 123,
        });
        const res = accepted(await store.accept(command({ runs: [r], received: received({ path: 'gmail' }) })));
        assert.deepEqual(res.outcome.events, []);
        const got = await store.getRun(r.id);
        assert.ok(got);
        assert.deepEqual(pick(got, NEW_RUN_KEYS), r);
        assert.deepEqual(pick(got, ['state', 'attempts', 'startedAt', 'finishedAt', 'error', 'reply', 'deliveryStatus']), {
          state: 'queued',
          attempts: 0,
          startedAt: null,
          finishedAt: null,
          error: null,
          reply: null,
          deliveryStatus: null,
        });
        assert.equal(typeof got.updatedAt, 'number');
        assert.ok(got.updatedAt >= r.createdAt);
        const listed = await store.listRuns();
        assert.equal(listed.length, 1);
        assert.deepEqual(listed[0], got);
      });

      it('keeps booleans and nulls distinct from falsy values', async () => {
        const a = run({ deliver: true, allowUnsafeExternalContent: false, to: null, model: null, thinking: null, mappingId: null });
        const b = run({ deliver: false, allowUnsafeExternalContent: true, to: '', model: 'echo/echo', thinking: 'low', mappingId: 'm1' });
        accepted(await store.accept(command({ runs: [a, b] })));
        const ga = await store.getRun(a.id);
        const gb = await store.getRun(b.id);
        assert.equal(ga?.deliver, true);
        assert.equal(ga?.allowUnsafeExternalContent, false);
        assert.equal(ga?.to, null);
        assert.equal(ga?.model, null);
        assert.equal(ga?.thinking, null);
        assert.equal(ga?.mappingId, null);
        assert.equal(gb?.deliver, false);
        assert.equal(gb?.allowUnsafeExternalContent, true);
        assert.equal(gb?.to, '');
        assert.equal(gb?.model, 'echo/echo');
        assert.equal(gb?.thinking, 'low');
        assert.equal(gb?.mappingId, 'm1');
      });

      it('getRun of an unknown id is undefined', async () => {
        assert.equal(await store.getRun('no-such-run'), undefined);
      });

      it('listRuns lists newest first and filters by state, session and limit', async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = run({ sessionKey: i % 2 ? 'hook:odd' : 'hook:even', createdAt: T0 + i });
          ids.push(r.id);
          accepted(await store.accept(command({ runs: [r] })));
        }
        assert.deepEqual((await store.listRuns()).map((r) => r.id), [...ids].reverse());
        assert.deepEqual((await store.listRuns({ limit: 2 })).map((r) => r.id), [ids[4], ids[3]]);
        assert.deepEqual((await store.listRuns({ sessionKey: 'hook:odd' })).map((r) => r.id), [ids[3], ids[1]]);
        assert.equal((await store.listRuns({ state: 'queued' })).length, 5);
        assert.equal((await store.listRuns({ state: 'failed' })).length, 0);
      });

      it('commits events and runs of one command together', async () => {
        const ev = event({ text: 'also a wake' });
        const r1 = run();
        const r2 = run();
        const res = accepted(await store.accept(command({ events: [ev], runs: [r1, r2] })));
        assert.deepEqual(res.outcome.events, [{ eventId: ev.id, outcome: 'queued' }]);
        assert.ok(await store.getRun(r1.id));
        assert.ok(await store.getRun(r2.id));
        assert.equal((await store.getSession('main'))?.pendingEvents, 1);
      });
    });

    describe('idempotency', () => {
      it('answers a repeat (same scope, key and body) with the first replay and status, storing nothing new', async () => {
        const first = run();
        const spec1 = { kind: 'agent', status: 202, runId: first.id, nested: { a: [1, 'two', null, true] } };
        const r1 = accepted(
          await store.accept(command({ runs: [first], idempotency: claim(), answerSpec: spec1, received: received({ status: 202, path: 'agent' }) })),
        );
        const again = run();
        const ev = event({ text: 'would be new' });
        const r2 = duplicate(
          await store.accept(
            command({
              runs: [again],
              events: [ev],
              idempotency: claim(),
              answerSpec: { kind: 'agent', status: 200, runId: again.id },
              received: received({ at: T0 + 1000, status: 200, path: 'agent' }),
            }),
          ),
        );
        assert.equal(r2.status, 202);
        assert.deepEqual(r2.replay, { spec: spec1, outcome: r1.outcome });
        assert.equal(await store.getRun(again.id), undefined);
        assert.deepEqual((await store.listRuns()).map((r) => r.id), [first.id]);
        assert.equal(await store.getSession('main'), undefined);
      });

      it('replays the first outcome of a wake (event id and coalescing) to a repeat', async () => {
        const ev = event({ text: 'hello' });
        const r1 = accepted(await store.accept(command({ events: [ev], idempotency: claim({ scope: 'wake' }), answerSpec: { kind: 'wake', mode: 'now' } })));
        const r2 = duplicate(
          await store.accept(command({ events: [event({ text: 'hello' })], idempotency: claim({ scope: 'wake' }), received: received({ at: T0 + 1 }) })),
        );
        assert.deepEqual(r2.replay.outcome, r1.outcome);
        assert.deepEqual(r2.replay.spec, { kind: 'wake', mode: 'now' });
        assert.equal(r2.status, 200);
        assert.equal((await store.getSession('main'))?.pendingEvents, 1);
      });

      it('answers the same key with another body as a conflict, storing nothing', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim() })));
        const other = run();
        const r = await store.accept(command({ runs: [other], idempotency: claim({ fingerprint: 'e'.repeat(64) }), received: received({ at: T0 + 1 }) }));
        assert.deepEqual(r, { kind: 'conflict' });
        assert.equal(await store.getRun(other.id), undefined);
        assert.equal((await store.listRuns()).length, 1);
      });

      it('keeps scopes independent', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ scope: 'agent' }) })));
        const other = run({ hookPath: 'github' });
        accepted(await store.accept(command({ runs: [other], idempotency: claim({ scope: 'github' }) })));
        // and with a different body as well: still not a conflict in another scope
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ scope: 'gmail', fingerprint: '0'.repeat(64) }) })));
        assert.ok(await store.getRun(other.id));
        assert.equal((await store.listRuns()).length, 3);
      });

      it('keeps keys independent within a scope', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ keyHash: 'a'.repeat(64) }) })));
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ keyHash: 'b'.repeat(64) }) })));
        assert.equal((await store.listRuns()).length, 2);
      });

      it('accepts an expired key anew, and the new claim is the one repeats see', async () => {
        const expiresAt = T0 + 10_000;
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ expiresAt }), answerSpec: { n: 1 } })));
        // one ms before expiry: still a duplicate
        duplicate(await store.accept(command({ runs: [run()], idempotency: claim({ expiresAt }), received: received({ at: expiresAt - 1 }) })));
        // at expiry: accepted anew, even with another body
        const fresh = run();
        accepted(
          await store.accept(
            command({
              runs: [fresh],
              idempotency: claim({ fingerprint: '1'.repeat(64), expiresAt: expiresAt + 10_000 }),
              answerSpec: { n: 2 },
              received: received({ at: expiresAt, status: 202 }),
            }),
          ),
        );
        assert.ok(await store.getRun(fresh.id));
        const rep = duplicate(
          await store.accept(command({ runs: [run()], idempotency: claim({ fingerprint: '1'.repeat(64) }), received: received({ at: expiresAt + 5 }) })),
        );
        assert.deepEqual(rep.replay.spec, { n: 2 });
        assert.equal(rep.status, 202);
        const conflict = await store.accept(command({ runs: [run()], idempotency: claim(), received: received({ at: expiresAt + 6 }) }));
        assert.equal(conflict.kind, 'conflict');
        assert.equal((await store.listRuns()).length, 2);
      });

      it('lets exactly one of many concurrent requests with the same key through', async () => {
        const results = await Promise.all(
          Array.from({ length: 25 }, (_, i) => store.accept(command({ runs: [run()], idempotency: claim(), received: received({ at: T0 + i }) }))),
        );
        assert.equal(results.filter((r) => r.kind === 'accepted').length, 1);
        assert.equal(results.filter((r) => r.kind === 'duplicate').length, 24);
        assert.equal((await store.listRuns()).length, 1);
      });
    });

    describe('received-hook records', () => {
      it('records an accepted request with the ids the store committed', async () => {
        const prior = event({ text: 'x' });
        accepted(await store.accept(command({ events: [prior], received: received({ at: T0 }) })));
        const ev = event({ text: 'x' }); // coalesced into `prior`
        const r = run();
        accepted(
          await store.accept(
            command({
              events: [ev],
              runs: [r],
              received: received({ at: T0 + 1, path: 'github', clientIp: '203.0.113.9', status: 202, mappingId: 'gh', durationMs: 4.25 }),
            }),
          ),
        );
        const [latest] = await store.listReceived(1);
        assert.deepEqual(pick(latest, RECEIVED_KEYS), {
          at: T0 + 1,
          method: 'POST',
          path: 'github',
          clientIp: '203.0.113.9',
          status: 202,
          code: null,
          eventIds: [prior.id],
          runIds: [r.id],
          mappingId: 'gh',
          durationMs: 4.25,
        });
      });

      it('records a duplicate with the first status, code "duplicate" and the first event ids', async () => {
        const ev = event({ text: 'once' });
        accepted(await store.accept(command({ events: [ev], idempotency: claim({ scope: 'wake' }), received: received({ status: 200 }) })));
        const again = event({ text: 'other text' });
        const dupRun = run();
        duplicate(
          await store.accept(
            command({ events: [again], runs: [dupRun], idempotency: claim({ scope: 'wake' }), received: received({ at: T0 + 1, status: 200 }) }),
          ),
        );
        const [latest, firstRec] = await store.listReceived(2);
        assert.equal(latest?.status, 200);
        assert.equal(latest?.code, 'duplicate');
        assert.deepEqual(latest?.eventIds, [ev.id]);
        // never the ids of what the repeat would have created (they were not stored)
        assert.ok(!latest?.runIds.includes(dupRun.id));
        assert.ok(!latest?.eventIds.includes(again.id));
        assert.equal(firstRec?.code, null);
        assert.deepEqual(firstRec?.eventIds, [ev.id]);
      });

      it('records a conflict as 409 idempotency_conflict without ids', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim() })));
        const r = run();
        await store.accept(command({ runs: [r], idempotency: claim({ fingerprint: '2'.repeat(64) }), received: received({ at: T0 + 1, path: 'agent' }) }));
        const [latest] = await store.listReceived(1);
        assert.equal(latest?.status, 409);
        assert.equal(latest?.code, 'idempotency_conflict');
        assert.equal(latest?.path, 'agent');
        assert.deepEqual(latest?.eventIds, []);
        assert.deepEqual(latest?.runIds, []);
      });

      it('recordReceived stores a rejection as given; listReceived is newest first and limited', async () => {
        const recs = [
          received({ at: T0 + 1, status: 401, code: 'unauthorized', path: 'agent', clientIp: '198.51.100.7' }),
          received({ at: T0 + 2, status: 400, code: 'invalid_json', path: 'wake' }),
          received({ at: T0 + 3, status: 204, code: null, path: 'gmail', mappingId: 'gmail', durationMs: 0 }),
        ];
        for (const rec of recs) await store.recordReceived(rec);
        assert.deepEqual((await store.listReceived()).map((r) => pick(r, RECEIVED_KEYS)), [...recs].reverse());
        assert.deepEqual((await store.listReceived(2)).map((r) => pick(r, RECEIVED_KEYS)), [recs[2], recs[1]]);
      });
    });

    describe('concurrency', () => {
      it('commits 500 concurrent accepts, every one visible', async () => {
        const N = 500;
        const cmds = Array.from({ length: N }, (_, i) =>
          i % 2
            ? command({ runs: [run({ createdAt: T0 + i })], received: received({ at: T0 + i, path: 'agent' }) })
            : command({ events: [event({ sessionKey: `s${i}`, text: `t${i}`, createdAt: T0 + i })], received: received({ at: T0 + i }) }),
        );
        const results = await Promise.all(cmds.map((c) => store.accept(c)));
        assert.equal(results.length, N);
        results.forEach((r, i) => {
          const a = accepted(r);
          const ev = cmds[i]!.events[0];
          if (ev) assert.deepEqual(a.outcome.events, [{ eventId: ev.id, outcome: 'queued' }]);
        });
        const runs = await store.listRuns({ limit: N });
        assert.equal(runs.length, N / 2);
        for (const c of cmds) {
          const r = c.runs[0];
          if (r) assert.equal((await store.getRun(r.id))?.id, r.id);
          const ev = c.events[0];
          if (ev) assert.deepEqual((await store.getSession(ev.sessionKey))?.pending.map((e) => e.id), [ev.id]);
        }
        assert.equal((await store.listReceived(N + 10)).length, N);
        assert.equal((await store.listSessions(N + 10)).length, N);
      });

      it('commits concurrent recordReceived calls', async () => {
        await Promise.all(Array.from({ length: 100 }, (_, i) => store.recordReceived(received({ at: T0 + i, status: 401, code: 'unauthorized' }))));
        assert.equal((await store.listReceived(1000)).length, 100);
      });
    });

    describe('sessions', () => {
      it('lists sessions with counts, newest activity first', async () => {
        accepted(await store.accept(command({ events: [event({ text: 'a', createdAt: T0 + 10 }), event({ text: 'b', createdAt: T0 + 20 })] })));
        accepted(await store.accept(command({ runs: [run({ sessionKey: 'hook:x', agentId: 'ops', createdAt: T0 + 30 })] })));
        accepted(await store.accept(command({ runs: [run({ sessionKey: 'hook:x', agentId: 'ops', createdAt: T0 + 40 })] })));
        accepted(await store.accept(command({ runs: [run({ sessionKey: 'hook:old', createdAt: T0 + 1 })] })));
        const list = await store.listSessions();
        assert.deepEqual(
          list.map((s) => [s.key, s.agentId, s.pendingEvents, s.runs, s.lastActivityAt]),
          [
            ['hook:x', 'ops', 0, 2, T0 + 40],
            ['main', 'main', 2, 0, T0 + 20],
            ['hook:old', 'main', 0, 1, T0 + 1],
          ],
        );
        for (const s of list) {
          assert.equal(s.lastChannel, null);
          assert.equal(s.lastTo, null);
        }
        assert.deepEqual((await store.listSessions(1)).map((s) => s.key), ['hook:x']);
      });

      it('getSession gives pending events in order, recent runs newest first, and counts', async () => {
        const evs = [1, 2, 3].map((i) => event({ text: `e${i}`, createdAt: T0 + i }));
        for (const ev of evs) accepted(await store.accept(command({ events: [ev] })));
        const r1 = run({ sessionKey: 'main', createdAt: T0 + 4 });
        const r2 = run({ sessionKey: 'main', createdAt: T0 + 5 });
        accepted(await store.accept(command({ runs: [r1] })));
        accepted(await store.accept(command({ runs: [r2] })));
        accepted(await store.accept(command({ events: [event({ sessionKey: 'elsewhere', text: 'e1' })], runs: [run({ sessionKey: 'elsewhere' })] })));
        const s = await store.getSession('main');
        assert.ok(s);
        assert.equal(s.key, 'main');
        assert.equal(s.agentId, 'main');
        assert.deepEqual(s.pending.map((e) => e.id), evs.map((e) => e.id));
        assert.equal(s.pendingEvents, 3);
        assert.equal(s.runs, 2);
        assert.deepEqual(s.recentRuns.map((r) => r.id), [r2.id, r1.id]);
        assert.deepEqual(new Set(s.recentEvents.map((e) => e.id)), new Set(evs.map((e) => e.id)));
        assert.equal(s.lastActivityAt, T0 + 5);
      });

      it('getSession of an unknown key is undefined; a session with only runs exists', async () => {
        assert.equal(await store.getSession('nope'), undefined);
        const r = run({ sessionKey: 'hook:only-runs', agentId: 'ops' });
        accepted(await store.accept(command({ runs: [r] })));
        const s = await store.getSession('hook:only-runs');
        assert.ok(s);
        assert.equal(s.agentId, 'ops');
        assert.deepEqual(s.pending, []);
        assert.equal(s.pendingEvents, 0);
        assert.deepEqual(s.recentRuns.map((x) => x.id), [r.id]);
      });
    });

    describe('requeueRun', () => {
      it('does not requeue a queued or unknown run', async () => {
        const r = run();
        accepted(await store.accept(command({ runs: [r] })));
        assert.equal(await store.requeueRun(r.id, T0 + 100), undefined);
        assert.equal(await store.requeueRun('no-such-run', T0 + 100), undefined);
        const got = await store.getRun(r.id);
        assert.equal(got?.state, 'queued');
        assert.equal(got?.updatedAt, r.createdAt);
      });

      for (const state of ['failed', 'timed_out', 'succeeded'] as const) {
        it(`requeues a ${state} run`, async (t) => {
          if (!h.setRunState) return t.skip('the driver gives no setRunState back door');
          const r = run();
          accepted(await store.accept(command({ runs: [r] })));
          await h.setRunState(r.id, state, T0 + 50);
          assert.equal((await store.getRun(r.id))?.state, state);
          const back = await store.requeueRun(r.id, T0 + 100);
          assert.ok(back);
          assert.equal(back.id, r.id);
          assert.equal(back.state, 'queued');
          assert.equal(back.updatedAt, T0 + 100);
          assert.equal(back.finishedAt, null);
          assert.deepEqual(await store.getRun(r.id), back);
          assert.deepEqual((await store.listRuns({ state: 'queued' })).map((x) => x.id), [r.id]);
        });
      }

      it('does not requeue a running run', async (t) => {
        if (!h.setRunState) return t.skip('the driver gives no setRunState back door');
        const r = run();
        accepted(await store.accept(command({ runs: [r] })));
        await h.setRunState(r.id, 'running', T0 + 50);
        assert.equal(await store.requeueRun(r.id, T0 + 100), undefined);
        assert.equal((await store.getRun(r.id))?.state, 'running');
      });
    });

    describe('prune', () => {
      it('deletes expired idempotency keys and received records older than the cut-off', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ keyHash: 'a'.repeat(64), expiresAt: T0 + 1000 }), received: received({ at: T0 }) })));
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ keyHash: 'b'.repeat(64), expiresAt: T0 + 2000 }), received: received({ at: T0 + 10 }) })));
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ keyHash: 'c'.repeat(64), expiresAt: T0 + 9000 }), received: received({ at: T0 + 20 }) })));
        await store.recordReceived(received({ at: T0 + 30, status: 401, code: 'unauthorized' }));

        const res = await store.prune(T0 + 2000, T0 + 20);
        assert.deepEqual(res, { idempotency: 2, received: 2 });
        assert.deepEqual((await store.listReceived()).map((r) => r.at), [T0 + 30, T0 + 20]);
        // the key that is still live still answers repeats
        duplicate(await store.accept(command({ runs: [run()], idempotency: claim({ keyHash: 'c'.repeat(64) }), received: received({ at: T0 + 2500 }) })));
        // runs and events are never pruned
        assert.equal((await store.listRuns()).length, 3);
        assert.deepEqual(await store.prune(T0 + 2000, T0 + 20), { idempotency: 0, received: 0 });
      });
    });

    describe('close', () => {
      it('rejects writes after close with a StoreError (store_unavailable)', async () => {
        await store.close();
        await assertStoreError(store.accept(command({ runs: [run()] })));
        await assertStoreError(store.recordReceived(received()));
        await assertStoreError(store.requeueRun('x', T0));
        await assertStoreError(store.prune(T0, T0));
      });

      it('commits writes submitted before close', async () => {
        const p = store.accept(command({ runs: [run()] }));
        const q = store.recordReceived(received({ status: 401, code: 'unauthorized' }));
        await store.close();
        accepted(await p);
        await q;
      });

      it('may be called twice', async () => {
        await store.close();
        await store.close();
      });
    });
  });
}
