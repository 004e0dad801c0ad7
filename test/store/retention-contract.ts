/** The `RetentionStore` part of the store contract (called from contract.ts inside `storeContract`). */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { type FinishedWorkPolicy, NOTHING_PRUNED } from '../../src/store/retention.js';
import type { NewRun, Store } from '../../src/store/types.js';
import { command, completion, delivery, event, message, run } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const DAY = 86_400_000;
/** The cut-off of every prune here: everything at T0 + a few seconds is older, everything after it newer. */
const CUT = T0 + 7 * DAY;
const A = 'node-a';
const LEASE = 365 * DAY;
const KEEP = 4;
const policy = (over: Partial<FinishedWorkPolicy> = {}): FinishedWorkPolicy => ({ keepMessages: KEEP, ...over });

async function accept(store: Store, runs: NewRun[]): Promise<void> {
  const r = await store.accept(command({ runs }));
  assert.equal(r.kind, 'accepted');
}

/** One run accepted, claimed and finished by A at `finishedAt`, with a delivery of its reply and its two turns. */
export async function finishedRun(
  store: Store,
  o: {
    at: number;
    finishedAt: number;
    state?: 'succeeded' | 'failed' | 'timed_out';
    sessionKey?: string;
    sessionMode?: 'isolated' | 'persistent';
    deliver?: 'delivered' | 'dead' | 'pending';
  },
) {
  const r = run({
    createdAt: o.at,
    sessionKey: o.sessionKey ?? `hook:${randomUUID()}`,
    sessionMode: o.sessionMode ?? 'isolated',
  });
  await accept(store, [r]);
  const claimed = await store.claimRuns(A, o.at, LEASE, 1);
  assert.deepEqual(
    claimed.map((c) => c.id),
    [r.id],
  );
  const d = delivery({ runId: r.id, sessionKey: r.sessionKey, to: `to-${r.id}`, createdAt: o.finishedAt });
  const summary = event({ origin: 'summary', runId: r.id, text: `Hook: ${r.id}`, createdAt: o.finishedAt });
  const turns = [
    message({ sessionKey: r.sessionKey, runId: r.id, content: 'prompt', createdAt: o.at + 1 }),
    message({ sessionKey: r.sessionKey, runId: r.id, role: 'assistant', content: 'reply', createdAt: o.finishedAt }),
  ];
  const state = o.state ?? 'succeeded';
  assert.equal(
    await store.completeRun(
      completion(r.id, A, {
        state,
        error: state === 'succeeded' ? null : 'model: upstream 503',
        finishedAt: o.finishedAt,
        deliveryStatus: 'outbox',
        deliveries: o.deliver ? [d] : [],
        events: [summary],
        messages: turns,
      }),
    ),
    true,
  );
  if (o.deliver && o.deliver !== 'pending') {
    const [got] = await store.claimDeliveries(A, o.finishedAt, LEASE, 1);
    assert.equal(got?.id, d.id);
    const at = o.finishedAt + 10;
    const outcome =
      o.deliver === 'delivered' ? { kind: 'delivered' as const, at } : { kind: 'dead' as const, error: 'gone', at };
    await store.finishDelivery(d.id, A, outcome, at);
  }
  return { run: r, delivery: d, summary };
}

export function retentionContract(store: () => Store): void {
  describe('retention of finished work (RetentionStore)', () => {
    it('deletes finished runs older than the cut-off with their deliveries; keeps unfinished, pending and recent work', async () => {
      const s = store();
      const oldOk = await finishedRun(s, { at: T0, finishedAt: T0 + 100, deliver: 'delivered' });
      const oldFailed = await finishedRun(s, { at: T0 + 1, finishedAt: T0 + 200, state: 'failed', deliver: 'dead' });
      const oldTimedOut = await finishedRun(s, { at: T0 + 2, finishedAt: T0 + 300, state: 'timed_out' });
      // Created before the cut-off but finished after it.
      const lateFinish = await finishedRun(s, { at: T0 + 4, finishedAt: CUT + 10, deliver: 'delivered' });
      const recent = await finishedRun(s, { at: CUT + 100, finishedAt: CUT + 200, deliver: 'delivered' });
      // Its reply is still on its way: the run and its delivery stay, however old. (Made after the others: its
      // delivery, due, would be the one their claims take.)
      const oldUndelivered = await finishedRun(s, { at: T0 + 3, finishedAt: T0 + 400, deliver: 'pending' });
      // Never finished: one running (leased), one queued. Old as they are, they stay.
      const running = run({ createdAt: T0 + 5 });
      const queued = run({ createdAt: T0 + 6 });
      await accept(s, [running, queued]);
      assert.deepEqual(
        (await s.claimRuns(A, T0 + 5, LEASE, 1)).map((r) => r.id),
        [running.id],
      );

      const res = await s.pruneFinished(CUT, policy());
      assert.equal(res.runs, 3);
      assert.equal(res.deliveries, 2);
      for (const gone of [oldOk, oldFailed, oldTimedOut]) {
        assert.equal(await s.getRun(gone.run.id), undefined, `${gone.run.id} was pruned`);
        assert.deepEqual(await s.listDeliveries({ runId: gone.run.id }), []);
      }
      assert.equal(await s.getDelivery(oldOk.delivery.id), undefined);
      for (const kept of [oldUndelivered, lateFinish, recent]) {
        assert.ok(await s.getRun(kept.run.id), `${kept.run.id} is kept`);
        assert.ok(await s.getDelivery(kept.delivery.id), `the delivery of ${kept.run.id} is kept`);
      }
      assert.equal((await s.getRun(running.id))?.state, 'running');
      assert.equal((await s.getRun(queued.id))?.state, 'queued');
      // The pending delivery is still claimable, its run still shown.
      assert.deepEqual(
        (await s.claimDeliveries(A, CUT, LEASE, 10)).map((d) => d.id),
        [oldUndelivered.delivery.id],
      );
      // Nothing more to do: a second prune deletes nothing.
      const again = await s.pruneFinished(CUT, policy());
      assert.deepEqual([again.runs, again.deliveries, again.events, again.messages], [0, 0, 0, 0]);
    });

    it('deletes events consumed before the cut-off and sent heartbeat deliveries; pending ones stay', async () => {
      const s = store();
      const consumedOld = [1, 2, 3].map((i) => event({ text: `old ${i}`, createdAt: T0 + i }));
      const pendingOld = event({ sessionKey: 'ops', text: 'never consumed', createdAt: T0 + 4 });
      await s.accept(command({ events: [...consumedOld, pendingOld] }));
      const sent = delivery({ runId: null, heartbeatId: 'hb-1', sessionKey: 'main', hookName: null, to: 'a' });
      const waiting = delivery({ runId: null, heartbeatId: 'hb-1', sessionKey: 'main', hookName: null, to: 'b' });
      await s.completeHeartbeat({
        heartbeatId: 'hb-1',
        sessionKey: 'main',
        eventIds: consumedOld.map((e) => e.id),
        consumedAt: T0 + 100,
        deliveries: [sent, waiting],
        messages: [],
      });
      const [claimedSent] = await s.claimDeliveries(A, T0 + 100, LEASE, 1);
      assert.equal(claimedSent?.id, sent.id);
      await s.finishDelivery(sent.id, A, { kind: 'delivered', at: T0 + 110 }, T0 + 110);
      // Consumed after the cut-off: kept.
      const consumedLate = event({ text: 'late', createdAt: T0 + 5 });
      await s.accept(command({ events: [consumedLate] }));
      await s.completeHeartbeat({
        heartbeatId: 'hb-2',
        sessionKey: 'main',
        eventIds: [consumedLate.id],
        consumedAt: CUT + 1,
        deliveries: [],
        messages: [],
      });
      await s.accept(command({ events: [event({ text: 'recent', createdAt: CUT + 5 })] }));

      const res = await s.pruneFinished(CUT, policy());
      assert.equal(res.events, 3);
      assert.equal(res.deliveries, 1);
      assert.equal(await s.getDelivery(sent.id), undefined);
      assert.equal((await s.getDelivery(waiting.id))?.state, 'pending');
      assert.deepEqual(
        (await s.pendingEvents('ops')).map((e) => e.id),
        [pendingOld.id],
      );
      const main = await s.getSession('main');
      assert.deepEqual(main?.recentEvents.map((e) => e.text).sort(), ['late', 'recent']);
    });

    it("transcripts: an idle isolated run's turns go; every session keeps its newest turns, however old", async () => {
      const s = store();
      // An isolated run of its own session, idle since: its two turns go (with the run).
      const iso = await finishedRun(s, { at: T0, finishedAt: T0 + 100 });
      // A persistent session: KEEP + 3 runs, all old. Its newest KEEP turns stay for the next run to read.
      const chat = 'hook:chat';
      for (let i = 0; i < 5; i++)
        await finishedRun(s, {
          at: T0 + 1000 * (i + 1),
          finishedAt: T0 + 1000 * (i + 1) + 500,
          sessionKey: chat,
          sessionMode: 'persistent',
        });
      // The main session's heartbeat transcript: KEEP + 2 old turns, no run.
      const hb = Array.from({ length: KEEP + 2 }, (_, i) => message({ content: `hb ${i}`, createdAt: T0 + 10 * i }));
      await s.completeHeartbeat({
        heartbeatId: 'hb',
        sessionKey: 'main',
        eventIds: [],
        consumedAt: T0,
        deliveries: [],
        messages: hb,
      });
      // An isolated run whose session (a shared key) was used again after the cut-off: not idle, its turns are
      // among the session's newest, so they stay.
      const shared = 'hook:shared';
      const sharedOld = await finishedRun(s, { at: T0 + 5, finishedAt: T0 + 50, sessionKey: shared });
      await finishedRun(s, { at: CUT + 1, finishedAt: CUT + 2, sessionKey: shared });

      const res = await s.pruneFinished(CUT, policy());
      assert.deepEqual(await s.sessionMessages('main', iso.run.sessionKey, 100), []);
      const chatTurns = await s.sessionMessages('main', chat, 100);
      assert.equal(chatTurns.length, KEEP);
      assert.deepEqual(
        chatTurns.map((m) => m.createdAt),
        [T0 + 4001, T0 + 4500, T0 + 5001, T0 + 5500],
        'the newest turns, in order',
      );
      assert.deepEqual(
        (await s.sessionMessages('main', 'main', 100)).map((m) => m.content),
        hb.slice(2).map((m) => m.content),
      );
      assert.deepEqual(
        (await s.sessionMessages('main', shared, 100)).map((m) => m.runId).filter((id) => id === sharedOld.run.id),
        [sharedOld.run.id, sharedOld.run.id],
      );
      assert.equal(res.messages, 2 + 6 + 2);
      // The persistent runs themselves are finished and old: they go; their session's turns do not.
      assert.equal(res.runs, 1 + 5 + 1);
    });

    it('works in bounded steps: a window of one row deletes at most one row per step, with the same result', async () => {
      const s = store();
      const n = 5;
      for (let i = 0; i < n; i++)
        await finishedRun(s, { at: T0 + i * 10, finishedAt: T0 + i * 10 + 5, deliver: 'delivered' });
      const one = { messages: 1, runs: 1, events: 1, deliveries: 1 };
      const res = await s.pruneFinished(CUT, policy({ stepRows: one }));
      assert.deepEqual([res.runs, res.deliveries, res.messages], [n, n, 2 * n]);
      // Summary events are not consumed (no heartbeat ran): they stay.
      assert.equal(res.events, 0);
      // Each step looked at one row: at least one step per deleted run, turn and kept event, plus the last ones.
      assert.ok(res.steps >= n + 2 * n + n, `steps: ${res.steps}`);
      // A step holds the other writes for at most its round trip (SQLite: its batch on the writer thread).
      assert.ok(Number.isFinite(res.longestHeldMs) && res.longestHeldMs <= res.longestStepMs, JSON.stringify(res));
      const whole = await s.pruneFinished(CUT, policy());
      assert.equal(whole.steps, 4, 'one step per table once nothing old is left');
    });

    it('an aborted prune starts no further step', async () => {
      const s = store();
      await finishedRun(s, { at: T0, finishedAt: T0 + 5 });
      const ac = new AbortController();
      ac.abort();
      const res = await s.pruneFinished(CUT, policy({ signal: ac.signal }));
      assert.deepEqual(res, NOTHING_PRUNED);
    });
  });
}
