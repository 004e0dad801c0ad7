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
import { type HttpErrorCode, StoreError } from '../../src/errors.js';
import { ownSessionKey } from '../../src/store/own-session.js';
import type {
  AcceptCommand,
  AcceptResult,
  IdempotencyClaim,
  NewDelivery,
  NewRun,
  NewSystemEvent,
  NodeInfo,
  ReceivedHook,
  RefusalWindow,
  RunOutcome,
  RunState,
  SessionMessage,
  Store,
} from '../../src/store/types.js';
import { pagesContract } from './contract-pages.js';
import { gmailContract } from './gmail-contract.js';
import { provenanceContract } from './contract-provenance.js';
import { auditContract } from './audit-contract.js';
import { retentionContract } from './retention-contract.js';

export interface StoreHarness {
  store: Store;
  cleanup: () => Promise<void>;
  /** Test-only: force a run's state (and finishedAt for finished states), as the runtime would. */
  setRunState?: (id: string, state: RunState, at: number) => Promise<void>;
}

const T0 = Date.parse('2026-01-01T00:00:00Z');

export function event(over: Partial<NewSystemEvent> = {}): NewSystemEvent {
  return {
    id: randomUUID(),
    sessionKey: 'main',
    agentId: 'main',
    text: 'ping',
    origin: 'wake',
    createdAt: T0,
    ...over,
  };
}

/** A run as buildRun makes it: without a `sessionKey` of its own, it is in its own session (`hook:<its id>`). */
export function run(over: Partial<NewRun> = {}): NewRun {
  const id = over.id ?? randomUUID();
  return {
    id,
    agentId: 'main',
    sessionKey: ownSessionKey(id),
    sessionMode: 'isolated',
    name: 'Hook',
    message: 'do the thing',
    wakeMode: 'now',
    deliver: true,
    channel: 'last',
    to: null,
    accountId: null,
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
  return {
    scope: 'agent',
    keyHash: 'k'.repeat(64),
    fingerprint: 'f'.repeat(64),
    expiresAt: T0 + 86_400_000,
    sender: '127.0.0.1',
    maxPerSender: 10_000,
    ...over,
  };
}

export function command(over: Partial<AcceptCommand> = {}): AcceptCommand {
  return { events: [], runs: [], answerSpec: { kind: 'test' }, received: received(), ...over };
}

export function delivery(over: Partial<NewDelivery> = {}): NewDelivery {
  return {
    id: randomUUID(),
    runId: 'run-1',
    heartbeatId: null,
    sessionKey: 'hook:test',
    agentId: 'main',
    hookName: 'Hook',
    channel: 'telegram',
    to: '1001',
    accountId: null,
    text: 'a reply',
    explicitRoute: false,
    createdAt: T0,
    ...over,
  };
}

export function message(over: Partial<SessionMessage> = {}): SessionMessage {
  return { sessionKey: 'main', agentId: 'main', role: 'user', content: 'hello', runId: null, createdAt: T0, ...over };
}

/** A successful completion by `owner` that writes nothing else, unless overridden. */
export function completion(runId: string, owner: string, over: Partial<RunOutcome> = {}): RunOutcome {
  return {
    runId,
    owner,
    state: 'succeeded',
    finishedAt: T0 + 100,
    error: null,
    reply: 'done',
    deliveryStatus: 'suppressed:deliver_false',
    events: [],
    deliveries: [],
    messages: [],
    ...over,
  };
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
  'id',
  'agentId',
  'sessionKey',
  'sessionMode',
  'name',
  'message',
  'wakeMode',
  'deliver',
  'channel',
  'to',
  'accountId',
  'model',
  'thinking',
  'timeoutSeconds',
  'allowUnsafeExternalContent',
  'contentSource',
  'hookPath',
  'mappingId',
  'createdAt',
] as const;
const NEW_DELIVERY_KEYS = [
  'id',
  'runId',
  'heartbeatId',
  'sessionKey',
  'agentId',
  'hookName',
  'channel',
  'to',
  'accountId',
  'text',
  'explicitRoute',
  'createdAt',
] as const;
const RECEIVED_KEYS = [
  'at',
  'method',
  'path',
  'clientIp',
  'status',
  'code',
  'eventIds',
  'runIds',
  'mappingId',
  'durationMs',
] as const;

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
  // The whole suite's bound, not a test's: about 130 tests, each opening a fresh store (a writer thread for some
  // harnesses). On a loaded 2-core machine a test took 1.4 s, which passed 120 s once the page tests were added.
  describe(`store contract: ${name}`, { timeout: 300_000 }, () => {
    let h: StoreHarness;
    let store: Store;
    beforeEach(async () => {
      h = await open();
      store = h.store;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    pagesContract(() => h);
    gmailContract(() => store);
    provenanceContract(() => store);
    auditContract(() => store);
    retentionContract(() => store);

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
        assert.deepEqual(
          s?.pending.map((e) => e.id),
          [first.id],
        );
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
        assert.deepEqual(
          s?.pending.map((e) => e.text),
          ['A', 'B', 'A'],
        );
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
        assert.deepEqual(
          (await store.getSession('other'))?.pending.map((e) => e.id),
          [b.id],
        );
        assert.deepEqual(
          (await store.getSession('main'))?.pending.map((e) => e.id),
          [a.id],
        );
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
          accountId: 'alerts',
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
        assert.deepEqual(
          pick(got, ['state', 'attempts', 'startedAt', 'finishedAt', 'error', 'reply', 'deliveryStatus']),
          {
            state: 'queued',
            attempts: 0,
            startedAt: null,
            finishedAt: null,
            error: null,
            reply: null,
            deliveryStatus: null,
          },
        );
        assert.equal(typeof got.updatedAt, 'number');
        assert.ok(got.updatedAt >= r.createdAt);
        const listed = await store.listRuns();
        assert.equal(listed.length, 1);
        assert.deepEqual(listed[0], got);
      });

      it('keeps booleans and nulls distinct from falsy values', async () => {
        const a = run({
          deliver: true,
          allowUnsafeExternalContent: false,
          to: null,
          model: null,
          thinking: null,
          mappingId: null,
        });
        const b = run({
          deliver: false,
          allowUnsafeExternalContent: true,
          to: '',
          model: 'echo/echo',
          thinking: 'low',
          mappingId: 'm1',
        });
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
        assert.deepEqual(
          (await store.listRuns()).map((r) => r.id),
          [...ids].reverse(),
        );
        assert.deepEqual(
          (await store.listRuns({ limit: 2 })).map((r) => r.id),
          [ids[4], ids[3]],
        );
        assert.deepEqual(
          (await store.listRuns({ sessionKey: 'hook:odd' })).map((r) => r.id),
          [ids[3], ids[1]],
        );
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
          await store.accept(
            command({
              runs: [first],
              idempotency: claim(),
              answerSpec: spec1,
              received: received({ status: 202, path: 'agent' }),
            }),
          ),
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
        assert.deepEqual(
          (await store.listRuns()).map((r) => r.id),
          [first.id],
        );
        assert.equal(await store.getSession('main'), undefined);
      });

      it('replays the first outcome of a wake (event id and coalescing) to a repeat', async () => {
        const ev = event({ text: 'hello' });
        const r1 = accepted(
          await store.accept(
            command({ events: [ev], idempotency: claim({ scope: 'wake' }), answerSpec: { kind: 'wake', mode: 'now' } }),
          ),
        );
        const r2 = duplicate(
          await store.accept(
            command({
              events: [event({ text: 'hello' })],
              idempotency: claim({ scope: 'wake' }),
              received: received({ at: T0 + 1 }),
            }),
          ),
        );
        assert.deepEqual(r2.replay.outcome, r1.outcome);
        assert.deepEqual(r2.replay.spec, { kind: 'wake', mode: 'now' });
        assert.equal(r2.status, 200);
        assert.equal((await store.getSession('main'))?.pendingEvents, 1);
      });

      it('answers the same key with another body as a conflict, storing nothing', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim() })));
        const other = run();
        const r = await store.accept(
          command({
            runs: [other],
            idempotency: claim({ fingerprint: 'e'.repeat(64) }),
            received: received({ at: T0 + 1 }),
          }),
        );
        assert.deepEqual(r, { kind: 'conflict' });
        assert.equal(await store.getRun(other.id), undefined);
        assert.equal((await store.listRuns()).length, 1);
      });

      it('keeps scopes independent', async () => {
        accepted(await store.accept(command({ runs: [run()], idempotency: claim({ scope: 'agent' }) })));
        const other = run({ hookPath: 'github' });
        accepted(await store.accept(command({ runs: [other], idempotency: claim({ scope: 'github' }) })));
        // and with a different body as well: still not a conflict in another scope
        accepted(
          await store.accept(
            command({ runs: [run()], idempotency: claim({ scope: 'gmail', fingerprint: '0'.repeat(64) }) }),
          ),
        );
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
        accepted(
          await store.accept(command({ runs: [run()], idempotency: claim({ expiresAt }), answerSpec: { n: 1 } })),
        );
        // one ms before expiry: still a duplicate
        duplicate(
          await store.accept(
            command({ runs: [run()], idempotency: claim({ expiresAt }), received: received({ at: expiresAt - 1 }) }),
          ),
        );
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
          await store.accept(
            command({
              runs: [run()],
              idempotency: claim({ fingerprint: '1'.repeat(64) }),
              received: received({ at: expiresAt + 5 }),
            }),
          ),
        );
        assert.deepEqual(rep.replay.spec, { n: 2 });
        assert.equal(rep.status, 202);
        const conflict = await store.accept(
          command({ runs: [run()], idempotency: claim(), received: received({ at: expiresAt + 6 }) }),
        );
        assert.equal(conflict.kind, 'conflict');
        assert.equal((await store.listRuns()).length, 2);
      });

      it('lets exactly one of many concurrent requests with the same key through', async () => {
        const results = await Promise.all(
          Array.from({ length: 25 }, (_, i) =>
            store.accept(command({ runs: [run()], idempotency: claim(), received: received({ at: T0 + i }) })),
          ),
        );
        assert.equal(results.filter((r) => r.kind === 'accepted').length, 1);
        assert.equal(results.filter((r) => r.kind === 'duplicate').length, 24);
        assert.equal((await store.listRuns()).length, 1);
      });
    });

    describe('received-hook records', () => {
      it('keeps the unknown fields a request named, and adds none to a record without them', async () => {
        accepted(
          await store.accept(
            command({
              events: [event({ text: 'u1' })],
              received: received({ at: T0 + 50, unknownFields: ['sesionKey', 'extra'] }),
            }),
          ),
        );
        await store.recordReceived(received({ at: T0 + 51, status: 400, code: 'invalid_payload' }));
        const [plain, withUnknown] = await store.listReceived(2);
        assert.equal(plain?.unknownFields, undefined);
        assert.deepEqual(withUnknown?.unknownFields, ['sesionKey', 'extra']);
      });

      it('names the hook token id a request presented (accepted, duplicate and refused), and none when there was none', async () => {
        const ev = event({ text: 'tok' });
        accepted(
          await store.accept(
            command({
              events: [ev],
              idempotency: claim({ scope: 'wake' }),
              received: received({ at: T0 + 60, tokenId: 'ci-2026' }),
            }),
          ),
        );
        duplicate(
          await store.accept(
            command({
              events: [event({ text: 'tok' })],
              idempotency: claim({ scope: 'wake' }),
              received: received({ at: T0 + 61, tokenId: 'default' }),
            }),
          ),
        );
        await store.recordReceived(
          received({ at: T0 + 62, status: 400, code: 'invalid_payload', tokenId: 'ci-2026', unknownFields: ['x'] }),
        );
        await store.recordReceived(received({ at: T0 + 63, tokenId: null }));
        const [none, refused, dup, first] = await store.listReceived(4);
        assert.equal(none?.tokenId, undefined, 'no token: no id, nothing stored');
        assert.equal(refused?.tokenId, 'ci-2026');
        assert.deepEqual(refused?.unknownFields, ['x']);
        assert.equal(dup?.code, 'duplicate');
        assert.equal(dup?.tokenId, 'default');
        assert.equal(first?.tokenId, 'ci-2026');
        const page = (await store.pageReceived({ limit: 4 })).items;
        assert.deepEqual(
          page.map((r) => r.tokenId ?? null),
          [null, 'ci-2026', 'default', 'ci-2026'],
        );
      });

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
              received: received({
                at: T0 + 1,
                path: 'github',
                clientIp: '203.0.113.9',
                status: 202,
                mappingId: 'gh',
                durationMs: 4.25,
              }),
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
        accepted(
          await store.accept(
            command({ events: [ev], idempotency: claim({ scope: 'wake' }), received: received({ status: 200 }) }),
          ),
        );
        const again = event({ text: 'other text' });
        const dupRun = run();
        duplicate(
          await store.accept(
            command({
              events: [again],
              runs: [dupRun],
              idempotency: claim({ scope: 'wake' }),
              received: received({ at: T0 + 1, status: 200 }),
            }),
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
        await store.accept(
          command({
            runs: [r],
            idempotency: claim({ fingerprint: '2'.repeat(64) }),
            received: received({ at: T0 + 1, path: 'agent' }),
          }),
        );
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
        assert.deepEqual(
          (await store.listReceived()).map((r) => pick(r, RECEIVED_KEYS)),
          [...recs].reverse(),
        );
        assert.deepEqual(
          (await store.listReceived(2)).map((r) => pick(r, RECEIVED_KEYS)),
          [recs[2], recs[1]],
        );
      });

      it('listReceived({ rejected: true }) keeps only answers of 400 and more, still newest first and limited', async () => {
        accepted(await store.accept(command({ events: [event()], received: received({ at: T0 + 1, status: 200 }) })));
        await store.recordReceived(received({ at: T0 + 2, status: 401, code: 'unauthorized' }));
        accepted(
          await store.accept(
            command({ events: [event({ text: 'other' })], received: received({ at: T0 + 3, status: 200 }) }),
          ),
        );
        await store.recordReceived(received({ at: T0 + 4, status: 413, code: 'payload_too_large' }));
        await store.recordReceived(received({ at: T0 + 5, status: 204, code: null }));
        assert.deepEqual(
          (await store.listReceived(10, { rejected: true })).map((r) => [r.at, r.code]),
          [
            [T0 + 4, 'payload_too_large'],
            [T0 + 2, 'unauthorized'],
          ],
        );
        assert.deepEqual(
          (await store.listReceived(1, { rejected: true })).map((r) => r.at),
          [T0 + 4],
        );
        assert.equal((await store.listReceived(10)).length, 5);
      });
    });

    describe('refusal counts', () => {
      const windowOf = (
        at: number,
        ...counts: Array<[number, HttpErrorCode, string, string, number]>
      ): RefusalWindow => ({
        at,
        windowMs: 60_000,
        counts: counts.map(([status, code, path, bucket, count]) => ({ status, code, path, bucket, count })),
      });

      it('recordRefusals stores a window as counts; listReceived shows them (largest first) among older single records', async () => {
        // An older store's single refusal record still reads, in time order with the counts.
        await store.recordReceived(
          received({ at: T0, status: 401, code: 'unauthorized', path: 'agent', clientIp: '198.51.100.7' }),
        );
        accepted(await store.accept(command({ events: [event()], received: received({ at: T0 + 1, status: 200 }) })));
        await store.recordRefusals(
          windowOf(
            T0 + 60_000,
            [401, 'unauthorized', 'agent', '203.0.113.7', 3],
            [401, 'unauthorized', 'other', '2001:db8:0:1::/64', 9000],
          ),
          10,
        );
        const rejected = await store.listReceived(10, { rejected: true });
        assert.deepEqual(
          rejected.map((r) => [r.at, r.status, r.code, r.path, r.clientIp, r.count, r.windowMs]),
          [
            [T0 + 60_000, 401, 'unauthorized', 'other', '2001:db8:0:1::/64', 9000, 60_000],
            [T0 + 60_000, 401, 'unauthorized', 'agent', '203.0.113.7', 3, 60_000],
            [T0, 401, 'unauthorized', 'agent', '198.51.100.7', undefined, undefined],
          ],
        );
        assert.equal((await store.listReceived(10)).length, 4);
        assert.deepEqual(
          (await store.listReceived(1, { rejected: true })).map((r) => r.count),
          [9000],
        );
      });

      it('keeps only the newest `keepWindows` windows, the oldest deleted first', async () => {
        for (let i = 0; i < 5; i++)
          await store.recordRefusals(windowOf(T0 + i * 60_000, [404, 'not_found', 'other', '192.0.2.1', i + 1]), 3);
        assert.deepEqual(
          (await store.listReceived(10, { rejected: true })).map((r) => r.count),
          [5, 4, 3],
        );
      });

      it('prune deletes the windows that ended before the cut-off', async () => {
        await store.recordRefusals(windowOf(T0, [401, 'unauthorized', 'wake', '192.0.2.1', 2]), 10);
        await store.recordRefusals(windowOf(T0 + 60_000, [401, 'unauthorized', 'wake', '192.0.2.1', 7]), 10);
        await store.prune(T0, T0 + 60_000);
        assert.deepEqual(
          (await store.listReceived(10, { rejected: true })).map((r) => r.count),
          [7],
        );
      });
    });

    describe('idempotency keys per sender', () => {
      const key = (n: number, sender: string, at: number) =>
        command({
          runs: [run()],
          idempotency: claim({ keyHash: String(n).padStart(64, '0'), sender, maxPerSender: 2 }),
          received: received({ at }),
        });

      it('keeps at most maxPerSender keys of a sender, the oldest expiring first; other senders keep theirs', async () => {
        accepted(await store.accept(key(1, 'A', T0)));
        accepted(await store.accept(key(9, 'B', T0 + 1)));
        accepted(await store.accept(key(2, 'A', T0 + 2)));
        accepted(await store.accept(key(3, 'A', T0 + 3))); // A's third: its first key goes
        accepted(await store.accept(key(1, 'A', T0 + 4))); // so this is new again (and pushes key 2 out)
        duplicate(await store.accept(key(3, 'A', T0 + 5)));
        duplicate(await store.accept(key(9, 'B', T0 + 6)));
        accepted(await store.accept(key(2, 'A', T0 + 7)));
      });
    });

    describe('concurrency', () => {
      it('commits 500 concurrent accepts, every one visible', async () => {
        const N = 500;
        const cmds = Array.from({ length: N }, (_, i) =>
          i % 2
            ? command({ runs: [run({ createdAt: T0 + i })], received: received({ at: T0 + i, path: 'agent' }) })
            : command({
                events: [event({ sessionKey: `s${i}`, text: `t${i}`, createdAt: T0 + i })],
                received: received({ at: T0 + i }),
              }),
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
          if (ev)
            assert.deepEqual(
              (await store.getSession(ev.sessionKey))?.pending.map((e) => e.id),
              [ev.id],
            );
        }
        assert.equal((await store.listReceived(N + 10)).length, N);
        assert.equal((await store.listSessions(N + 10)).length, N);
      });

      it('commits concurrent recordReceived calls', async () => {
        await Promise.all(
          Array.from({ length: 100 }, (_, i) =>
            store.recordReceived(received({ at: T0 + i, status: 401, code: 'unauthorized' })),
          ),
        );
        assert.equal((await store.listReceived(1000)).length, 100);
      });
    });

    describe('sessions', () => {
      it('lists sessions with counts, newest activity first', async () => {
        accepted(
          await store.accept(
            command({ events: [event({ text: 'a', createdAt: T0 + 10 }), event({ text: 'b', createdAt: T0 + 20 })] }),
          ),
        );
        accepted(
          await store.accept(command({ runs: [run({ sessionKey: 'hook:x', agentId: 'ops', createdAt: T0 + 30 })] })),
        );
        accepted(
          await store.accept(command({ runs: [run({ sessionKey: 'hook:x', agentId: 'ops', createdAt: T0 + 40 })] })),
        );
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
        assert.deepEqual(
          (await store.listSessions(1)).map((s) => s.key),
          ['hook:x'],
        );
      });

      it('getSession gives pending events in order, recent runs newest first, and counts', async () => {
        const evs = [1, 2, 3].map((i) => event({ text: `e${i}`, createdAt: T0 + i }));
        for (const ev of evs) accepted(await store.accept(command({ events: [ev] })));
        const r1 = run({ sessionKey: 'main', createdAt: T0 + 4 });
        const r2 = run({ sessionKey: 'main', createdAt: T0 + 5 });
        accepted(await store.accept(command({ runs: [r1] })));
        accepted(await store.accept(command({ runs: [r2] })));
        accepted(
          await store.accept(
            command({
              events: [event({ sessionKey: 'elsewhere', text: 'e1' })],
              runs: [run({ sessionKey: 'elsewhere' })],
            }),
          ),
        );
        const s = await store.getSession('main');
        assert.ok(s);
        assert.equal(s.key, 'main');
        assert.equal(s.agentId, 'main');
        assert.deepEqual(
          s.pending.map((e) => e.id),
          evs.map((e) => e.id),
        );
        assert.equal(s.pendingEvents, 3);
        assert.equal(s.runs, 2);
        assert.deepEqual(
          s.recentRuns.map((r) => r.id),
          [r2.id, r1.id],
        );
        assert.deepEqual(new Set(s.recentEvents.map((e) => e.id)), new Set(evs.map((e) => e.id)));
        assert.equal(s.lastActivityAt, T0 + 5);
      });

      it("a run's own session lists its own run and the runs that name its key, and counts them", async () => {
        const own = run({ createdAt: T0 + 1 });
        const named = run({ sessionKey: own.sessionKey, createdAt: T0 + 2 });
        accepted(await store.accept(command({ runs: [own] })));
        accepted(await store.accept(command({ runs: [named, run({ createdAt: T0 + 3 })] })));
        const s = await store.getSession(own.sessionKey);
        assert.ok(s);
        assert.equal(s.runs, 2);
        assert.equal(s.lastActivityAt, T0 + 2);
        assert.deepEqual(
          s.recentRuns.map((r) => r.id),
          [named.id, own.id],
        );
        assert.deepEqual(
          (await store.listRuns({ sessionKey: own.sessionKey })).map((r) => r.id),
          [named.id, own.id],
        );
        assert.deepEqual(
          (await store.listRuns({ sessionKey: own.sessionKey, limit: 1 })).map((r) => r.id),
          [named.id],
        );
        assert.deepEqual(
          (await store.listRuns({ sessionKey: own.sessionKey, state: 'queued' })).map((r) => r.id),
          [named.id, own.id],
        );
        const listed = (await store.listSessions()).find((x) => x.key === own.sessionKey);
        assert.equal(listed?.runs, 2);
        const alone = await store.getSession(`hook:${named.id}`);
        assert.equal(alone, undefined, 'a run that named another key is not in a session of its own');
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
        assert.deepEqual(
          s.recentRuns.map((x) => x.id),
          [r.id],
        );
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
          assert.deepEqual(
            (await store.listRuns({ state: 'queued' })).map((x) => x.id),
            [r.id],
          );
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
        accepted(
          await store.accept(
            command({
              runs: [run()],
              idempotency: claim({ keyHash: 'a'.repeat(64), expiresAt: T0 + 1000 }),
              received: received({ at: T0 }),
            }),
          ),
        );
        accepted(
          await store.accept(
            command({
              runs: [run()],
              idempotency: claim({ keyHash: 'b'.repeat(64), expiresAt: T0 + 2000 }),
              received: received({ at: T0 + 10 }),
            }),
          ),
        );
        accepted(
          await store.accept(
            command({
              runs: [run()],
              idempotency: claim({ keyHash: 'c'.repeat(64), expiresAt: T0 + 9000 }),
              received: received({ at: T0 + 20 }),
            }),
          ),
        );
        await store.recordReceived(received({ at: T0 + 30, status: 401, code: 'unauthorized' }));

        const res = await store.prune(T0 + 2000, T0 + 20);
        assert.deepEqual([res.idempotency, res.received], [2, 2]);
        assert.ok(res.steps >= 3, 'in steps: keys, received records, the rest');
        assert.deepEqual(
          (await store.listReceived()).map((r) => r.at),
          [T0 + 30, T0 + 20],
        );
        // the key that is still live still answers repeats
        duplicate(
          await store.accept(
            command({
              runs: [run()],
              idempotency: claim({ keyHash: 'c'.repeat(64) }),
              received: received({ at: T0 + 2500 }),
            }),
          ),
        );
        // prune() leaves runs and events alone (finished work is pruneFinished's: retention-contract.ts)
        assert.equal((await store.listRuns()).length, 3);
        const again = await store.prune(T0 + 2000, T0 + 20);
        assert.deepEqual([again.idempotency, again.received], [0, 0]);
      });
    });

    // ——— runtime: the run worker, the heartbeat and the outbox ———
    describe('runtime: runs', () => {
      const A = 'owner-a';
      const B = 'owner-b';
      const LEASE = 30_000;
      /** Each run in its own command, so acceptance order is the argument order. */
      const queue = async (...rs: NewRun[]) => {
        for (const r of rs) accepted(await store.accept(command({ runs: [r] })));
      };

      it('claimRuns leases queued runs oldest first, up to the limit: running, attempt 1, every field kept', async () => {
        const rs = [1, 2, 3].map((i) => run({ createdAt: T0 + i, name: `r${i}` }));
        await queue(...rs);
        const got = await store.claimRuns(A, T0 + 100, LEASE, 2);
        assert.deepEqual(
          got.map((r) => r.id),
          [rs[0]!.id, rs[1]!.id],
        );
        for (const [i, r] of got.entries()) {
          assert.deepEqual(pick(r, NEW_RUN_KEYS), pick(rs[i], NEW_RUN_KEYS));
          assert.equal(r.state, 'running');
          assert.equal(r.attempts, 1);
          assert.equal(r.startedAt, T0 + 100);
          assert.equal(r.finishedAt, null);
          assert.deepEqual(await store.getRun(r.id), r);
        }
        assert.deepEqual(
          (await store.claimRuns(B, T0 + 100, LEASE, 10)).map((r) => r.id),
          [rs[2]!.id],
        );
        assert.deepEqual(await store.claimRuns(B, T0 + 101, LEASE, 10), []);
      });

      it('a run records the node that claimed it last, and keeps it once finished (runs list shows it)', async () => {
        const r = run({ createdAt: T0 + 1 });
        await queue(r);
        assert.equal((await store.getRun(r.id))?.node ?? null, null, 'no node before a claim');
        const [claimed] = await store.claimRuns(A, T0 + 100, LEASE, 1);
        assert.equal(claimed?.node, A);
        assert.equal(await store.completeRun(completion(r.id, A, { finishedAt: T0 + 200, state: 'succeeded' })), true);
        assert.equal((await store.getRun(r.id))?.node, A);
        assert.equal((await store.listRuns({ limit: 10 })).find((x) => x.id === r.id)?.node, A);
      });

      it('deferRun queues a leased run again for later: not claimable before, its session waits, retries count, the start does not', async () => {
        const r = run({ sessionKey: 'hook:s' });
        const next = run({ sessionKey: 'hook:s', name: 'next' });
        await queue(r, next);
        await store.claimRuns(A, T0, LEASE, 1);
        assert.equal(
          await store.deferRun({
            runId: r.id,
            owner: B,
            until: T0 + 5000,
            error: 'provider_unreachable: down',
            now: T0 + 10,
          }),
          false,
          'not the owner',
        );
        assert.equal(
          await store.deferRun({
            runId: r.id,
            owner: A,
            until: T0 + 5000,
            error: 'provider_unreachable: down',
            now: T0 + 10,
          }),
          true,
        );
        const deferred = await store.getRun(r.id);
        assert.deepEqual(pick(deferred, ['state', 'attempts', 'retries', 'retryingSince', 'nextAttemptAt', 'error']), {
          state: 'queued',
          attempts: 0,
          retries: 1,
          retryingSince: T0 + 10,
          nextAttemptAt: T0 + 5000,
          error: 'provider_unreachable: down',
        });
        assert.deepEqual(
          await store.claimRuns(B, T0 + 4999, LEASE, 5),
          [],
          'neither it nor its session’s next run before it is due',
        );
        const again = await store.claimRuns(B, T0 + 5000, LEASE, 5);
        assert.deepEqual(
          again.map((x) => x.id),
          [r.id],
        );
        await store.deferRun({ runId: r.id, owner: B, until: T0 + 20_000, error: 'still down', now: T0 + 6000 });
        assert.equal((await store.getRun(r.id))?.retryingSince, T0 + 10, 'the window runs from the first failure');
        assert.equal((await store.getRun(r.id))?.retries, 2);
        await store.claimRuns(A, T0 + 20_000, LEASE, 1);
        assert.equal(
          await store.completeRun(completion(r.id, A, { finishedAt: T0 + 21_000, state: 'failed', error: 'gave up' })),
          true,
        );
        const requeued = await store.requeueRun(r.id, T0 + 30_000);
        assert.deepEqual(
          pick(requeued, ['state', 'retries', 'retryingSince', 'nextAttemptAt']),
          { state: 'queued', retries: 0, retryingSince: null, nextAttemptAt: null },
          'a manual retry starts a fresh window',
        );
      });

      it('requeueFailedRuns queues again the failed runs finished since a time, and nothing else', async () => {
        const [old, recent, ok] = [run({ name: 'old' }), run({ name: 'recent' }), run({ name: 'ok' })];
        await queue(old, recent, ok);
        await store.claimRuns(A, T0, LEASE, 3);
        await store.completeRun(completion(old.id, A, { state: 'failed', error: 'x', finishedAt: T0 + 100 }));
        await store.completeRun(completion(recent.id, A, { state: 'failed', error: 'x', finishedAt: T0 + 5000 }));
        await store.completeRun(completion(ok.id, A, { state: 'succeeded', finishedAt: T0 + 5000 }));
        assert.deepEqual(await store.requeueFailedRuns(T0 + 1000, T0 + 9000), [recent.id]);
        assert.equal((await store.getRun(recent.id))?.state, 'queued');
        assert.equal((await store.getRun(old.id))?.state, 'failed');
        assert.equal((await store.getRun(ok.id))?.state, 'succeeded');
        assert.deepEqual(await store.requeueFailedRuns(0, T0 + 9000), [old.id]);
      });

      it('a leased run is handed out again only after its lease expired: same id, attempt 2', async () => {
        const r = run();
        await queue(r);
        assert.equal((await store.claimRuns(A, T0, LEASE, 5)).length, 1);
        assert.deepEqual(await store.claimRuns(B, T0 + LEASE - 1, LEASE, 5), []);
        const again = await store.claimRuns(B, T0 + LEASE + 1, LEASE, 5);
        assert.deepEqual(
          again.map((x) => [x.id, x.attempts, x.state]),
          [[r.id, 2, 'running']],
        );
      });

      it("renewRunLeases extends the owner's leases only", async () => {
        const mine = run();
        const theirs = run();
        await queue(mine, theirs);
        assert.equal((await store.claimRuns(A, T0, LEASE, 5)).length, 2);
        await store.renewRunLeases(A, [mine.id], T0 + 3 * LEASE);
        await store.renewRunLeases(B, [theirs.id], T0 + 3 * LEASE);
        assert.deepEqual(
          (await store.claimRuns(B, T0 + LEASE + 1, LEASE, 5)).map((x) => x.id),
          [theirs.id],
        );
        assert.equal(await store.completeRun(completion(theirs.id, B)), true);
        assert.deepEqual(await store.claimRuns(B, T0 + 2 * LEASE, LEASE, 5), []);
        assert.deepEqual(
          (await store.claimRuns(B, T0 + 3 * LEASE + 1, LEASE, 5)).map((x) => x.id),
          [mine.id],
        );
      });

      it("one session key's runs are handed out one at a time, in order; other sessions are not held up", async () => {
        const a1 = run({ sessionKey: 'hook:a' });
        const a2 = run({ sessionKey: 'hook:a' });
        const a3 = run({ sessionKey: 'hook:a' });
        const b1 = run({ sessionKey: 'hook:b' });
        await queue(a1, a2, a3, b1);
        assert.deepEqual(
          (await store.claimRuns(A, T0, LEASE, 10)).map((r) => r.id),
          [a1.id, b1.id],
        );
        assert.deepEqual(await store.claimRuns(A, T0 + 1, LEASE, 10), []);
        assert.equal(
          await store.completeRun(completion(a1.id, A, { state: 'failed', error: 'boom', reply: null })),
          true,
        );
        assert.deepEqual(
          (await store.claimRuns(A, T0 + 2, LEASE, 10)).map((r) => r.id),
          [a2.id],
        );
        await store.failRun(a2.id, 'gave up', T0 + 3);
        assert.deepEqual(
          (await store.claimRuns(A, T0 + 4, LEASE, 10)).map((r) => r.id),
          [a3.id],
        );
      });

      it("a run in its own session holds back a later run that names that session's key", async () => {
        // The own run is not in the session indexes (own-session.ts): the claim finds it by its id.
        const own = run();
        const named = run({ sessionKey: own.sessionKey });
        const other = run();
        await queue(own, named, other);
        assert.deepEqual(
          (await store.claimRuns(A, T0, LEASE, 10)).map((r) => r.id),
          [own.id, other.id],
        );
        assert.deepEqual(await store.claimRuns(A, T0 + 1, LEASE, 10), []);
        assert.equal(await store.completeRun(completion(own.id, A)), true);
        assert.deepEqual(
          (await store.claimRuns(A, T0 + 2, LEASE, 10)).map((r) => r.id),
          [named.id],
        );
      });

      it('a run in its own session whose lease expired goes again before a later run that names its key', async () => {
        const own = run();
        const named = run({ sessionKey: own.sessionKey });
        await queue(own, named);
        assert.deepEqual(
          (await store.claimRuns(A, T0, LEASE, 10)).map((r) => r.id),
          [own.id],
        );
        // Its worker died: the lease expires and the own run is handed out again; the later run still waits.
        assert.deepEqual(
          (await store.claimRuns(B, T0 + LEASE + 1, LEASE, 10)).map((r) => r.id),
          [own.id],
        );
      });

      it('completeRun writes the outcome, the summary events, the deliveries and the transcript together', async () => {
        const r = run({ sessionKey: 'hook:done', agentId: 'ops' });
        await queue(r);
        await store.claimRuns(A, T0 + 10, LEASE, 5);
        const summary = event({ text: 'Hook X: hello', origin: 'summary', runId: r.id, createdAt: T0 + 500 });
        const d = delivery({
          runId: r.id,
          sessionKey: r.sessionKey,
          agentId: 'ops',
          accountId: 'alerts',
          createdAt: T0 + 500,
        });
        const msgs = [
          message({
            sessionKey: r.sessionKey,
            agentId: 'ops',
            role: 'user',
            content: 'prompt',
            runId: r.id,
            createdAt: T0 + 10,
          }),
          message({
            sessionKey: r.sessionKey,
            agentId: 'ops',
            role: 'assistant',
            content: 'hello',
            runId: r.id,
            createdAt: T0 + 500,
          }),
        ];
        const ok = await store.completeRun(
          completion(r.id, A, {
            finishedAt: T0 + 500,
            reply: 'hello',
            deliveryStatus: 'outbox',
            events: [summary],
            deliveries: [d],
            messages: msgs,
          }),
        );
        assert.equal(ok, true);
        const got = await store.getRun(r.id);
        assert.equal(got?.state, 'succeeded');
        assert.equal(got?.finishedAt, T0 + 500);
        assert.equal(got?.reply, 'hello');
        assert.equal(got?.error, null);
        assert.equal(got?.deliveryStatus, 'outbox');
        assert.equal(got?.attempts, 1);
        assert.deepEqual(
          (await store.pendingEvents('main')).map((e) => pick(e, EVENT_KEYS)),
          [{ ...summary, consumedAt: null }],
        );
        const rows = await store.listDeliveries({ runId: r.id });
        assert.equal(rows.length, 1);
        assert.deepEqual(pick(rows[0], NEW_DELIVERY_KEYS), d);
        assert.equal(rows[0]!.state, 'pending');
        assert.equal(rows[0]!.attempts, 0);
        assert.equal(rows[0]!.chunksSent, 0);
        assert.equal(rows[0]!.lastError, null);
        assert.equal(rows[0]!.deliveredAt, null);
        assert.deepEqual(await store.getDelivery(d.id), rows[0]);
        assert.deepEqual(await store.sessionMessages('ops', r.sessionKey, 10), msgs);
        assert.deepEqual(
          await store.claimRuns(B, T0 + 10 * LEASE, LEASE, 5),
          [],
          'a finished run was handed out again',
        );
      });

      it("getSession's transcript holds every agent's turns of the session, the last 40 in order", async () => {
        const ops = run({ sessionKey: 'hook:shared', agentId: 'ops' });
        const main = run({ sessionKey: 'hook:shared' });
        const elsewhere = run({ agentId: 'ops' });
        await queue(ops, main, elsewhere);
        const turns = (r: NewRun, n: number, at: number) =>
          Array.from({ length: n }, (_, i) =>
            message({ sessionKey: r.sessionKey, agentId: r.agentId, content: `${r.agentId} ${i}`, createdAt: at + i }),
          );
        // One run at a time per session key: ops's first, then main's; the other session's alongside.
        await store.claimRuns(A, T0, LEASE, 5);
        assert.equal(await store.completeRun(completion(ops.id, A, { messages: turns(ops, 30, T0 + 1) })), true);
        assert.equal(await store.completeRun(completion(elsewhere.id, A, { messages: turns(elsewhere, 5, T0) })), true);
        await store.claimRuns(A, T0 + 50, LEASE, 5);
        assert.equal(await store.completeRun(completion(main.id, A, { messages: turns(main, 15, T0 + 100) })), true);
        const s = await store.getSession('hook:shared');
        assert.ok(s);
        assert.deepEqual(
          s.transcript.map((m) => m.content),
          [
            ...Array.from({ length: 25 }, (_, i) => `ops ${i + 5}`),
            ...Array.from({ length: 15 }, (_, i) => `main ${i}`),
          ],
        );
      });

      it("completeRun is fenced by the lease: another owner's completion, or one after a takeover, writes nothing", async () => {
        const r = run();
        await queue(r);
        await store.claimRuns(A, T0, LEASE, 5);
        const withWrites = (owner: string) =>
          completion(r.id, owner, {
            events: [event({ text: `summary by ${owner}`, origin: 'summary', runId: r.id })],
            deliveries: [delivery({ runId: r.id, text: `reply by ${owner}` })],
            messages: [message({ sessionKey: r.sessionKey, content: `said by ${owner}`, runId: r.id })],
          });
        assert.equal(await store.completeRun(withWrites(B)), false);
        assert.equal((await store.getRun(r.id))?.state, 'running');
        assert.deepEqual(await store.pendingEvents('main'), []);
        assert.deepEqual(await store.listDeliveries({ runId: r.id }), []);
        assert.deepEqual(await store.sessionMessages('main', r.sessionKey, 10), []);

        // A's lease expires and B takes the run over: A's late result no longer counts, B's does, once.
        assert.equal((await store.claimRuns(B, T0 + LEASE + 1, LEASE, 5)).length, 1);
        assert.equal(await store.completeRun(withWrites(A)), false);
        assert.equal(await store.completeRun(withWrites(B)), true);
        assert.equal(await store.completeRun(withWrites(B)), false, 'a finished run was finished again');
        assert.deepEqual(
          (await store.pendingEvents('main')).map((e) => e.text),
          ['summary by owner-b'],
        );
        assert.deepEqual(
          (await store.listDeliveries({ runId: r.id })).map((d) => d.text),
          ['reply by owner-b'],
        );
        assert.deepEqual(
          (await store.sessionMessages('main', r.sessionKey, 10)).map((m) => m.content),
          ['said by owner-b'],
        );
      });

      it('completeRun is all or nothing: when one of its writes cannot be made, nothing of it is kept', async () => {
        const first = run();
        const second = run();
        await queue(first, second);
        await store.claimRuns(A, T0, LEASE, 5);
        const taken = delivery({ runId: first.id });
        assert.equal(await store.completeRun(completion(first.id, A, { deliveries: [taken] })), true);
        // The second completion reuses that delivery id: the delivery cannot be inserted as a new row.
        const ev = event({ text: 'summary of second', origin: 'summary', runId: second.id });
        const c = completion(second.id, A, {
          events: [ev],
          deliveries: [delivery({ runId: second.id, text: 'fresh' }), { ...taken, runId: second.id }],
          messages: [message({ sessionKey: second.sessionKey, content: 'second prompt', runId: second.id })],
        });
        const result = await store.completeRun(c).then(
          (v) => v,
          (err: unknown) => err,
        );
        if (result === true) {
          // A driver may tolerate the duplicate; then everything else must be there.
          assert.equal((await store.getRun(second.id))?.state, 'succeeded');
          assert.ok(
            (await store.pendingEvents('main')).some((e) => e.id === ev.id),
            'completed without its summary event',
          );
        } else {
          assert.equal((await store.getRun(second.id))?.state, 'running', 'the run was finished without its writes');
          assert.ok(!(await store.pendingEvents('main')).some((e) => e.id === ev.id), 'the summary event was kept');
          assert.deepEqual(await store.listDeliveries({ runId: second.id }), [], 'part of the deliveries was kept');
          assert.deepEqual(await store.sessionMessages('main', second.sessionKey, 10), [], 'the transcript was kept');
        }
      });

      it('releaseRuns gives leased runs back with a note, without counting the attempt; only the owner can', async () => {
        const r = run();
        await queue(r);
        await store.claimRuns(A, T0, LEASE, 5);
        await store.releaseRuns(B, [r.id], T0 + 5, 'not yours');
        assert.equal((await store.getRun(r.id))?.state, 'running');
        assert.equal((await store.getRun(r.id))?.error, null);
        await store.releaseRuns(A, [r.id], T0 + 10, 'interrupted by a stop');
        const back = await store.getRun(r.id);
        assert.equal(back?.state, 'queued');
        assert.equal(back?.attempts, 0);
        assert.equal(back?.error, 'interrupted by a stop', 'the reason is kept on the run');
        const again = await store.claimRuns(B, T0 + 11, LEASE, 5);
        assert.deepEqual(
          again.map((x) => [x.id, x.attempts]),
          [[r.id, 1]],
        );
        await store.completeRun(completion(r.id, B));
        assert.equal(
          (await store.getRun(r.id))?.error,
          null,
          'a finished run keeps no note of an earlier interruption',
        );
      });

      it('recoverLeases puts every running run back in the queue (same id) and counts them', async () => {
        const rs = [run(), run(), run()];
        await queue(...rs);
        assert.equal((await store.claimRuns(A, T0, LEASE, 2)).length, 2);
        if (store.shared) {
          // Another node may hold these leases: a shared store takes nobody's back (expired ones are claimable).
          assert.equal(await store.recoverLeases(T0 + 5), 0);
          assert.deepEqual(
            (await store.claimRuns(B, T0 + 6, LEASE, 10)).map((x) => x.id),
            [rs[2]!.id],
          );
          return;
        }
        assert.equal(await store.recoverLeases(T0 + 5), 2);
        for (const r of rs) assert.equal((await store.getRun(r.id))?.state, 'queued');
        const again = await store.claimRuns(B, T0 + 6, LEASE, 10);
        assert.deepEqual(
          again.map((x) => [x.id, x.attempts]),
          [
            [rs[0]!.id, 2],
            [rs[1]!.id, 2],
            [rs[2]!.id, 1],
          ],
        );
        await store.completeRun(completion(rs[0]!.id, B));
        assert.equal(await store.recoverLeases(T0 + 7), 2);
        assert.equal((await store.getRun(rs[0]!.id))?.state, 'succeeded');
        assert.equal(await store.recoverLeases(T0 + 8), 0);
      });

      it('failRun marks a run failed with its error; it is not handed out', async () => {
        const r = run();
        await queue(r);
        await store.failRun(r.id, 'interrupted too often', T0 + 9);
        const got = await store.getRun(r.id);
        assert.equal(got?.state, 'failed');
        assert.equal(got?.error, 'interrupted too often');
        assert.equal(got?.finishedAt, T0 + 9);
        assert.deepEqual(await store.claimRuns(A, T0 + 10, LEASE, 5), []);
      });
    });

    describe('runtime: events, heartbeats, transcripts, routes', () => {
      it('pendingEvents lists one session’s unconsumed events oldest first, up to a limit; addEvents adds to them', async () => {
        const e1 = event({ text: 'one', createdAt: T0 + 1 });
        const e2 = event({ text: 'two', createdAt: T0 + 2 });
        accepted(await store.accept(command({ events: [e1, e2, event({ sessionKey: 'other', text: 'x' })] })));
        const e3 = event({ text: 'Hook A: done', origin: 'summary', runId: 'run-1', createdAt: T0 + 3 });
        await store.addEvents([e3]);
        assert.deepEqual(
          (await store.pendingEvents('main')).map((e) => pick(e, EVENT_KEYS)),
          [e1, e2, e3].map((e) => ({ runId: null, ...e, consumedAt: null })),
        );
        assert.deepEqual(
          (await store.pendingEvents('main', 2)).map((e) => e.id),
          [e1.id, e2.id],
        );
        assert.deepEqual(await store.pendingEvents('nobody'), []);
      });

      it('sessionsWithPendingEvents lists each session with unconsumed events once, and drops a session once they are consumed', async () => {
        accepted(
          await store.accept(
            command({
              events: [
                event({ text: 'm' }),
                event({ sessionKey: 'ops:a', text: 'a1' }),
                event({ sessionKey: 'ops:a', text: 'a2' }),
                event({ sessionKey: 'ops:b', text: 'b' }),
              ],
            }),
          ),
        );
        assert.deepEqual((await store.sessionsWithPendingEvents()).sort(), ['main', 'ops:a', 'ops:b']);
        assert.equal((await store.sessionsWithPendingEvents(1)).length, 1, 'the limit holds');
        const pendingA = await store.pendingEvents('ops:a');
        await store.completeHeartbeat({
          heartbeatId: 'hb-a',
          sessionKey: 'ops:a',
          eventIds: pendingA.map((e) => e.id),
          consumedAt: T0 + 9,
          deliveries: [],
          messages: [],
        });
        assert.deepEqual((await store.sessionsWithPendingEvents()).sort(), ['main', 'ops:b']);
      });

      it('completeHeartbeat consumes exactly the events it names, with its deliveries and transcript', async () => {
        const evs = [1, 2, 3].map((i) => event({ text: `e${i}`, createdAt: T0 + i }));
        accepted(await store.accept(command({ events: evs })));
        const d = delivery({ runId: null, heartbeatId: 'hb-1', sessionKey: 'main', hookName: null, text: 'disk full' });
        const msgs = [
          message({ content: 'System events (2): ...' }),
          message({ role: 'assistant', content: 'disk full', createdAt: T0 + 60 }),
        ];
        await store.completeHeartbeat({
          heartbeatId: 'hb-1',
          sessionKey: 'main',
          eventIds: [evs[0]!.id, evs[1]!.id],
          consumedAt: T0 + 60,
          deliveries: [d],
          messages: msgs,
        });
        // e3 arrived while the turn ran (not in its prompt): it stays pending.
        assert.deepEqual(
          (await store.pendingEvents('main')).map((e) => e.id),
          [evs[2]!.id],
        );
        const s = await store.getSession('main');
        assert.equal(s?.pendingEvents, 1);
        const consumed = s?.recentEvents.filter((e) => e.consumedAt !== null) ?? [];
        assert.deepEqual(
          consumed.map((e) => [e.id, e.consumedAt]).sort(),
          [
            [evs[0]!.id, T0 + 60],
            [evs[1]!.id, T0 + 60],
          ].sort(),
        );
        assert.deepEqual(
          (await store.listDeliveries({})).map((x) => pick(x, NEW_DELIVERY_KEYS)),
          [d],
        );
        assert.deepEqual(await store.sessionMessages('main', 'main', 10), msgs);
      });

      it('completeHeartbeat over a backlog consumes the oldest events it read, and the next read starts after them', async () => {
        const evs = Array.from({ length: 3000 }, (_, i) => event({ text: `backlog ${i}`, createdAt: T0 + i }));
        await store.addEvents(evs);
        const first = await store.pendingEvents('main', 1000);
        assert.deepEqual(
          first.map((e) => e.id),
          evs.slice(0, 1000).map((e) => e.id),
        );
        await store.completeHeartbeat({
          heartbeatId: 'hb-1',
          sessionKey: 'main',
          eventIds: first.map((e) => e.id),
          consumedAt: T0 + 5000,
          deliveries: [],
          messages: [],
        });
        const next = await store.pendingEvents('main', 1000);
        assert.deepEqual(
          next.map((e) => e.id),
          evs.slice(1000, 2000).map((e) => e.id),
        );
        assert.equal((await store.getSession('main'))?.pendingEvents, 2000);
      });

      it('an event is consumed once: a later completion naming it again keeps the first consumedAt', async () => {
        const e = event();
        accepted(await store.accept(command({ events: [e] })));
        await store.completeHeartbeat({
          heartbeatId: 'hb-1',
          sessionKey: 'main',
          eventIds: [e.id],
          consumedAt: T0 + 10,
          deliveries: [],
          messages: [],
        });
        await store.completeHeartbeat({
          heartbeatId: 'hb-2',
          sessionKey: 'main',
          eventIds: [e.id],
          consumedAt: T0 + 20,
          deliveries: [],
          messages: [],
        });
        assert.equal((await store.getSession('main'))?.recentEvents.find((x) => x.id === e.id)?.consumedAt, T0 + 10);
      });

      it('completeHeartbeat is all or nothing: when a delivery cannot be inserted, its events stay pending', async () => {
        const e = event();
        accepted(await store.accept(command({ events: [e] })));
        const taken = delivery({ heartbeatId: 'hb-0', runId: null });
        await store.completeHeartbeat({
          heartbeatId: 'hb-0',
          sessionKey: 'main',
          eventIds: [],
          consumedAt: T0,
          deliveries: [taken],
          messages: [],
        });
        const result = await store
          .completeHeartbeat({
            heartbeatId: 'hb-1',
            sessionKey: 'main',
            eventIds: [e.id],
            consumedAt: T0 + 5,
            deliveries: [{ ...taken, heartbeatId: 'hb-1' }],
            messages: [message({ content: 'hb prompt' })],
          })
          .then(
            () => 'ok',
            () => 'rejected',
          );
        if (result === 'rejected') {
          assert.deepEqual(
            (await store.pendingEvents('main')).map((x) => x.id),
            [e.id],
            'the events were consumed without the delivery',
          );
          assert.deepEqual(await store.sessionMessages('main', 'main', 10), []);
        } else {
          assert.deepEqual(await store.pendingEvents('main'), []);
        }
      });

      it('sessionMessages gives the latest `limit` messages of one agent and session key, oldest first', async () => {
        const mine = [1, 2, 3, 4, 5].map((i) =>
          message({ sessionKey: 'hook:s', content: `m${i}`, role: i % 2 ? 'user' : 'assistant', createdAt: T0 + i }),
        );
        await store.completeHeartbeat({
          heartbeatId: 'hb',
          sessionKey: 'main',
          eventIds: [],
          consumedAt: T0,
          deliveries: [],
          messages: [
            mine[0]!,
            message({ sessionKey: 'hook:s', agentId: 'ops', content: 'other agent' }),
            mine[1]!,
            message({ sessionKey: 'hook:t', content: 'other key' }),
            ...mine.slice(2),
          ],
        });
        assert.deepEqual(await store.sessionMessages('main', 'hook:s', 3), mine.slice(2));
        assert.deepEqual(await store.sessionMessages('main', 'hook:s', 100), mine);
        assert.deepEqual(
          (await store.sessionMessages('ops', 'hook:s', 100)).map((m) => m.content),
          ['other agent'],
        );
        assert.deepEqual(await store.sessionMessages('main', 'hook:none', 100), []);
      });

      it('getRoute is undefined until setRoute; setRoute overwrites; sessions show it', async () => {
        assert.equal(await store.getRoute('main'), undefined);
        await store.setRoute('main', 'main', 'telegram', '1001', T0 + 1);
        assert.deepEqual(await store.getRoute('main'), { channel: 'telegram', to: '1001', accountId: null });
        const s = await store.getSession('main');
        assert.equal(s?.lastChannel, 'telegram');
        assert.equal(s?.lastTo, '1001');
        await store.setRoute('main', 'main', 'webhook', 'ops', T0 + 2);
        assert.deepEqual(await store.getRoute('main'), { channel: 'webhook', to: 'ops', accountId: null });
        const listed = (await store.listSessions()).find((x) => x.key === 'main');
        assert.equal(listed?.lastChannel, 'webhook');
        assert.equal(listed?.lastTo, 'ops');
        assert.equal(await store.getRoute('hook:other'), undefined);
      });

      it('a route remembers its account: setRoute with one, and without one (back to the default account)', async () => {
        await store.setRoute('main', 'main', 'telegram', '1001', T0 + 1, 'alerts');
        assert.deepEqual(await store.getRoute('main'), { channel: 'telegram', to: '1001', accountId: 'alerts' });
        assert.equal((await store.getSession('main'))?.lastAccountId, 'alerts');
        assert.equal((await store.listSessions()).find((x) => x.key === 'main')?.lastAccountId, 'alerts');
        await store.setRoute('main', 'main', 'telegram', '1001', T0 + 2);
        assert.deepEqual(await store.getRoute('main'), { channel: 'telegram', to: '1001', accountId: null });
        assert.equal((await store.getSession('main'))?.lastAccountId, null);
      });
    });

    describe('runtime: deliveries (the outbox)', () => {
      const A = 'outbox-a';
      const B = 'outbox-b';
      const LEASE = 60_000;
      const add = (...ds: NewDelivery[]) =>
        store.completeHeartbeat({
          heartbeatId: 'hb',
          sessionKey: 'main',
          eventIds: [],
          consumedAt: T0,
          deliveries: ds,
          messages: [],
        });

      it('claimDeliveries leases due deliveries oldest first, up to the limit, counting the attempt', async () => {
        const ds = [1, 2, 3].map((i) => delivery({ to: `chat-${i}`, createdAt: T0 + i }));
        await add(...ds);
        assert.deepEqual(await store.claimDeliveries(A, T0, LEASE, 10), [], 'claimed before it was due');
        const got = await store.claimDeliveries(A, T0 + 10, LEASE, 2);
        assert.deepEqual(
          got.map((d) => d.id),
          [ds[0]!.id, ds[1]!.id],
        );
        for (const [i, d] of got.entries()) {
          assert.deepEqual(pick(d, NEW_DELIVERY_KEYS), ds[i]);
          assert.equal(d.attempts, 1);
          assert.equal(d.state, 'pending');
        }
        assert.deepEqual(
          (await store.claimDeliveries(B, T0 + 10, LEASE, 10)).map((d) => d.id),
          [ds[2]!.id],
        );
        assert.deepEqual(await store.claimDeliveries(B, T0 + 11, LEASE, 10), []);
      });

      it('one recipient’s deliveries go one at a time, in order, also while the first waits for a retry', async () => {
        const d1 = delivery({ channel: 'telegram', to: '1001', createdAt: T0 + 1 });
        const d2 = delivery({ channel: 'telegram', to: '1001', createdAt: T0 + 2 });
        const other = delivery({ channel: 'telegram', to: '2002', createdAt: T0 + 3 });
        const sameToOtherChannel = delivery({ channel: 'slack', to: '1001', createdAt: T0 + 4 });
        await add(d1, d2, other, sameToOtherChannel);
        assert.deepEqual(
          (await store.claimDeliveries(A, T0 + 10, LEASE, 10)).map((d) => d.id),
          [d1.id, other.id, sameToOtherChannel.id],
        );
        await store.finishDelivery(
          d1.id,
          A,
          { kind: 'retry', nextAttemptAt: T0 + 1000, error: 'telegram error 429' },
          T0 + 20,
        );
        assert.deepEqual(
          await store.claimDeliveries(A, T0 + 30, LEASE, 10),
          [],
          'a later delivery overtook one waiting for its retry',
        );
        const again = await store.claimDeliveries(A, T0 + 1000, LEASE, 10);
        assert.deepEqual(
          again.map((d) => [d.id, d.attempts]),
          [[d1.id, 2]],
        );
        await store.finishDelivery(d1.id, A, { kind: 'delivered', at: T0 + 1001 }, T0 + 1001);
        assert.deepEqual(
          (await store.claimDeliveries(A, T0 + 1002, LEASE, 10)).map((d) => d.id),
          [d2.id],
        );
        // A dead delivery no longer holds its recipient up either.
        const d3 = delivery({ channel: 'telegram', to: '1001', createdAt: T0 + 5 });
        await add(d3);
        await store.finishDelivery(d2.id, A, { kind: 'dead', error: 'chat not found', at: T0 + 1003 }, T0 + 1003);
        assert.deepEqual(
          (await store.claimDeliveries(A, T0 + 1004, LEASE, 10)).map((d) => d.id),
          [d3.id],
        );
      });

      it('claimDeliveries with followers: a head, then only its own route in order, while each is due; releaseDeliveries gives them back uncounted', async () => {
        const r = [1, 2, 3].map((i) => delivery({ channel: 'telegram', to: '3003', createdAt: T0 + i }));
        const other = delivery({ channel: 'telegram', to: '4004', createdAt: T0 + 4 });
        await add(...r, other);
        const got = await store.claimDeliveries(A, T0 + 10, LEASE, 10, 5);
        const ids = got.map((d) => d.id);
        // Heads of both routes, each head's followers right after it, in order (both drivers claim them).
        assert.deepEqual(ids, [...r.map((d) => d.id), other.id]);
        const followers = ids.filter((id) => id !== r[0]!.id && id !== other.id);
        assert.deepEqual(
          await store.claimDeliveries(B, T0 + 11, LEASE, 10, 5),
          [],
          'nothing of a claimed route is handed to another worker',
        );
        await store.finishDelivery(r[0]!.id, A, { kind: 'retry', nextAttemptAt: T0 + 100, error: 'later' }, T0 + 12);
        await store.releaseDeliveries(A, followers, T0 + 12);
        await store.finishDelivery(other.id, A, { kind: 'delivered', at: T0 + 12 }, T0 + 12);
        assert.deepEqual(
          await store.claimDeliveries(B, T0 + 13, LEASE, 10, 5),
          [],
          'a released follower does not overtake its head',
        );
        const again = await store.claimDeliveries(B, T0 + 100, LEASE, 10, 5);
        assert.deepEqual(again[0] && [again[0].id, again[0].attempts], [r[0]!.id, 2]);
        for (const d of again.slice(1)) assert.equal(d.attempts, 1, 'a released follower was not counted as tried');
      });

      it('a leased delivery is claimed again only after its lease expired, or at once after recoverLeases', async () => {
        const d = delivery();
        const e = delivery({ to: 'elsewhere' });
        await add(d, e);
        assert.equal((await store.claimDeliveries(A, T0, LEASE, 10)).length, 2);
        assert.deepEqual(await store.claimDeliveries(B, T0 + LEASE - 1, LEASE, 10), []);
        assert.deepEqual(
          (await store.claimDeliveries(B, T0 + LEASE + 1, LEASE, 10)).map((x) => [x.id, x.attempts]).sort(),
          [
            [d.id, 2],
            [e.id, 2],
          ].sort(),
        );
        if (store.shared) {
          assert.equal(await store.recoverLeases(T0 + LEASE + 2), 0);
          assert.deepEqual(
            await store.claimDeliveries(A, T0 + LEASE + 3, LEASE, 10),
            [],
            'a shared store frees no lease',
          );
          return;
        }
        await store.recoverLeases(T0 + LEASE + 2);
        const freed = await store.claimDeliveries(A, T0 + LEASE + 3, LEASE, 10);
        assert.deepEqual(freed.map((x) => x.id).sort(), [d.id, e.id].sort());
      });

      it('deliveryProgress records the chunks sent, for the lease holder only, and a later attempt starts there', async () => {
        const d = delivery({ text: 'long reply' });
        await add(d);
        await store.claimDeliveries(A, T0, LEASE, 10);
        await store.deliveryProgress(d.id, B, 5, T0 + 1);
        assert.equal((await store.getDelivery(d.id))?.chunksSent, 0);
        await store.deliveryProgress(d.id, A, 2, T0 + 2);
        assert.equal((await store.getDelivery(d.id))?.chunksSent, 2);
        await store.finishDelivery(d.id, A, { kind: 'retry', nextAttemptAt: T0 + 100, error: 'HTTP 500' }, T0 + 3);
        const again = await store.claimDeliveries(B, T0 + 100, LEASE, 10);
        assert.deepEqual(
          again.map((x) => [x.chunksSent, x.attempts]),
          [[2, 2]],
        );
      });

      it("finishDelivery: delivered (never moving a session's route), retry (error kept, due later), dead; lease holder only", async () => {
        const ok = delivery({ channel: 'webhook', to: 'ops', explicitRoute: true });
        const plain = delivery({ channel: 'log', to: '' });
        const later = delivery({ to: 'later' });
        const gone = delivery({ to: 'gone', runId: 'run-9' });
        await add(ok, plain, later, gone);
        assert.equal((await store.claimDeliveries(A, T0, LEASE, 10)).length, 4);

        await store.finishDelivery(ok.id, B, { kind: 'delivered', at: T0 + 1 }, T0 + 1);
        assert.equal((await store.getDelivery(ok.id))?.state, 'pending', "another owner's outcome was applied");

        await store.finishDelivery(plain.id, A, { kind: 'delivered', at: T0 + 2 }, T0 + 2);
        assert.equal(await store.getRoute('main'), undefined, 'a delivery set a route');
        await store.finishDelivery(ok.id, A, { kind: 'delivered', at: T0 + 3 }, T0 + 3);
        const done = await store.getDelivery(ok.id);
        assert.equal(done?.state, 'delivered');
        assert.equal(done?.deliveredAt, T0 + 3);
        assert.equal(done?.lastError, null);
        assert.equal(done?.explicitRoute, true);
        assert.equal(await store.getRoute('main'), undefined, "an explicit delivery set the main session's route");
        // The operator's route stays what the operator set, whatever an explicit delivery through an account says.
        await store.setRoute('main', 'main', 'telegram', 'owner-chat', T0 + 3, 'alerts');
        const viaAlerts = delivery({ channel: 'telegram', to: 'elsewhere', accountId: 'alerts', explicitRoute: true });
        await add(viaAlerts);
        assert.equal((await store.claimDeliveries(A, T0 + 3, LEASE, 10)).length, 1);
        await store.finishDelivery(viaAlerts.id, A, { kind: 'delivered', at: T0 + 3 }, T0 + 3);
        assert.deepEqual(await store.getRoute('main'), { channel: 'telegram', to: 'owner-chat', accountId: 'alerts' });
        assert.equal((await store.getDelivery(viaAlerts.id))?.accountId, 'alerts');

        await store.finishDelivery(later.id, A, { kind: 'retry', nextAttemptAt: T0 + 500, error: 'HTTP 503' }, T0 + 4);
        const waiting = await store.getDelivery(later.id);
        assert.equal(waiting?.state, 'pending');
        assert.equal(waiting?.nextAttemptAt, T0 + 500);
        assert.equal(waiting?.lastError, 'HTTP 503');
        assert.equal(waiting?.deliveredAt, null);

        await store.finishDelivery(
          gone.id,
          A,
          { kind: 'dead', error: 'gave up after 8 attempts: HTTP 500', at: T0 + 5 },
          T0 + 5,
        );
        const dead = await store.getDelivery(gone.id);
        assert.equal(dead?.state, 'dead');
        assert.equal(dead?.lastError, 'gave up after 8 attempts: HTTP 500');
        assert.equal(dead?.deliveredAt, null);

        // The retry released its lease: due at nextAttemptAt, long before the lease would have expired. Nothing else is.
        assert.deepEqual(await store.claimDeliveries(B, T0 + 499, LEASE, 10), []);
        assert.deepEqual(
          (await store.claimDeliveries(B, T0 + 500, LEASE, 10)).map((d) => d.id),
          [later.id],
        );
      });

      it('listDeliveries filters by state and run id, newest first', async () => {
        const a = delivery({ runId: 'run-a', to: 'x', createdAt: T0 + 1 });
        const b = delivery({ runId: 'run-b', to: 'y', createdAt: T0 + 2 });
        const c = delivery({ runId: 'run-a', to: 'z', createdAt: T0 + 3 });
        await add(a, b, c);
        await store.claimDeliveries(A, T0 + 10, LEASE, 10);
        await store.finishDelivery(b.id, A, { kind: 'dead', error: 'no', at: T0 + 11 }, T0 + 11);
        assert.deepEqual(
          (await store.listDeliveries()).map((d) => d.id),
          [c.id, b.id, a.id],
        );
        assert.deepEqual(
          (await store.listDeliveries({ runId: 'run-a' })).map((d) => d.id),
          [c.id, a.id],
        );
        assert.deepEqual(
          (await store.listDeliveries({ state: 'dead' })).map((d) => d.id),
          [b.id],
        );
        assert.deepEqual(
          (await store.listDeliveries({ state: 'pending', limit: 1 })).map((d) => d.id),
          [c.id],
        );
        assert.equal(await store.getDelivery('no-such-delivery'), undefined);
      });

      it('retryDelivery puts a dead delivery back: pending, attempts 0, due now; not a delivered or unknown one', async () => {
        const d = delivery();
        const ok = delivery({ to: 'fine' });
        await add(d, ok);
        await store.claimDeliveries(A, T0, LEASE, 10);
        await store.finishDelivery(d.id, A, { kind: 'dead', error: 'HTTP 500', at: T0 + 1 }, T0 + 1);
        await store.finishDelivery(ok.id, A, { kind: 'delivered', at: T0 + 1 }, T0 + 1);
        const back = await store.retryDelivery(d.id, T0 + 50);
        assert.equal(back?.id, d.id);
        assert.equal(back?.state, 'pending');
        assert.equal(back?.attempts, 0);
        assert.equal(back?.nextAttemptAt, T0 + 50);
        assert.deepEqual(await store.getDelivery(d.id), back);
        assert.deepEqual(
          (await store.claimDeliveries(B, T0 + 50, LEASE, 10)).map((x) => [x.id, x.attempts]),
          [[d.id, 1]],
        );
        assert.equal(await store.retryDelivery(ok.id, T0 + 60), undefined);
        assert.equal((await store.getDelivery(ok.id))?.state, 'delivered');
        assert.equal(await store.retryDelivery('no-such-delivery', T0 + 60), undefined);
      });
    });

    describe('cluster seams (ClusterStore)', () => {
      const node = (id: string, lastSeenAt: number): NodeInfo => ({
        id,
        host: 'host-a',
        pid: 4242,
        version: '1.2.3',
        url: 'http://127.0.0.1:8080',
        startedAt: T0,
        lastSeenAt,
      });

      it('heartbeat lease: another owner is refused while held, the owner renews, it is granted after expiry', async () => {
        assert.equal(await store.leaseHeartbeat('main', 'A', T0, 1000), true);
        assert.equal(await store.leaseHeartbeat('main', 'B', T0 + 500, 1000), false);
        assert.equal(await store.leaseHeartbeat('main', 'A', T0 + 900, 1000), true, 'the owner renews');
        assert.equal(await store.leaseHeartbeat('main', 'B', T0 + 1500, 1000), false, 'renewed until T0 + 1900');
        assert.equal(await store.leaseHeartbeat('other', 'B', T0 + 1500, 1000), true, 'sessions are independent');
        assert.equal(await store.leaseHeartbeat('main', 'B', T0 + 1900, 1000), true, 'granted once expired');
        assert.equal(await store.leaseHeartbeat('main', 'A', T0 + 2000, 1000), false);
      });

      it("releaseHeartbeat frees only the caller's own lease", async () => {
        assert.equal(await store.leaseHeartbeat('main', 'A', T0, 60_000), true);
        await store.releaseHeartbeat('main', 'B');
        assert.equal(await store.leaseHeartbeat('main', 'B', T0 + 1, 60_000), false, 'B released nothing of A');
        await store.releaseHeartbeat('main', 'A');
        assert.equal(await store.leaseHeartbeat('main', 'B', T0 + 2, 60_000), true);
      });

      it('shareLockout keeps the later until; activeLockouts lists those running and drops expired ones', async () => {
        await store.shareLockout('10.0.0.0/24', T0 + 5000);
        await store.shareLockout('10.0.0.0/24', T0 + 3000); // earlier: ignored
        await store.shareLockout('192.0.2.7', T0 + 1000);
        const byBucket = (l: { bucket: string }[]) => [...l].sort((a, b) => a.bucket.localeCompare(b.bucket));
        assert.deepEqual(byBucket(await store.activeLockouts(T0)), [
          { bucket: '10.0.0.0/24', until: T0 + 5000 },
          { bucket: '192.0.2.7', until: T0 + 1000 },
        ]);
        assert.deepEqual(
          await store.activeLockouts(T0 + 1000),
          [{ bucket: '10.0.0.0/24', until: T0 + 5000 }],
          'until is exclusive',
        );
        await store.shareLockout('10.0.0.0/24', T0 + 8000);
        assert.deepEqual(await store.activeLockouts(T0 + 6000), [{ bucket: '10.0.0.0/24', until: T0 + 8000 }]);
        assert.deepEqual(await store.activeLockouts(T0 + 8000), []);
      });

      it('registerNode / listNodes / removeNode: round trip, refresh, most recently seen first', async () => {
        assert.deepEqual(await store.listNodes(), []);
        await store.registerNode(node('n1', T0));
        await store.registerNode(node('n2', T0 + 10));
        assert.deepEqual(await store.listNodes(), [node('n2', T0 + 10), node('n1', T0)]);
        await store.registerNode(node('n1', T0 + 20)); // refresh
        assert.deepEqual(
          (await store.listNodes()).map((n) => [n.id, n.lastSeenAt]),
          [
            ['n1', T0 + 20],
            ['n2', T0 + 10],
          ],
        );
        assert.equal((await store.listNodes())[0]!.startedAt, T0, 'a refresh keeps startedAt');
        await store.removeNode('n1');
        assert.deepEqual(
          (await store.listNodes()).map((n) => n.id),
          ['n2'],
        );
        await store.removeNode('unknown');
      });

      it('subscribe returns an unsubscribe function', async () => {
        const stop = store.subscribe(() => {});
        assert.equal(typeof stop, 'function');
        stop();
        stop(); // twice: harmless
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
