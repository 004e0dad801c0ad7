/**
 * Several nodes on one store, in one process: two runtimes' parts with different owners on ONE SqliteStore (its
 * heartbeat leases are per store object, so they are shared like a shared driver's), and store wrappers that fail or
 * carry notices. The multi-process version of these runs on PostgreSQL (another suite).
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { StoreError } from '../../src/errors.js';
import type { RuntimeClusterStore, RuntimeDeps } from '../../src/runtime/env.js';
import type { Channel } from '../../src/channels/types.js';
import { SessionHeartbeats } from '../../src/runtime/session-heartbeats.js';
import { Outbox } from '../../src/runtime/outbox.js';
import { RunWorker } from '../../src/runtime/run-worker.js';
import { startRuntime } from '../../src/runtime/runtime.js';
import type { ClusterNotice, Delivery, DeliveryOutcome } from '../../src/store/types.js';
import { overlay } from '../support/overlay.js';
import { waitFor, waitForRun } from '../support/runtime-kit.js';
import { delay } from '../support/scripted-model.js';
import { envWithChannel, type RuntimeKit, startRuntimeKit } from './kit.js';

const unavailable = () => Promise.reject(new StoreError('database unreachable (test)'));

/** A store that is down while `down.now` is true: every method of `names` rejects with StoreError. */
function flaky(
  store: RuntimeClusterStore,
  names: Array<keyof RuntimeClusterStore>,
  down: { now: boolean },
): RuntimeClusterStore {
  const over: Record<string, unknown> = {};
  for (const name of names) {
    const real = (store[name] as (...a: unknown[]) => Promise<unknown>).bind(store);
    over[name] = (...args: unknown[]) => (down.now ? unavailable() : real(...args));
  }
  return overlay(store, over as Partial<RuntimeClusterStore>);
}

describe('cluster: several nodes on one store', () => {
  let kit: RuntimeKit;
  const closers: Array<() => Promise<void>> = [];

  beforeEach(async () => {
    kit = await startRuntimeKit();
  });
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
    await kit.close();
  });

  const node = (owner: string, store: RuntimeClusterStore = kit.store): RuntimeDeps => ({ ...kit.deps, owner, store });

  it("two nodes' heartbeats: each pending event goes to exactly one turn, never two turns at once for a session", async () => {
    kit.model.setHandler(async () => (await delay(150), 'noted'));
    const a = new SessionHeartbeats(node('node-a'), { retryDelayMs: () => 20 });
    const b = new SessionHeartbeats(node('node-b'), { retryDelayMs: () => 20 });
    closers.push(
      () => a.close(),
      () => b.close(),
    );
    const texts: string[] = [];
    for (let round = 0; round < 4; round++) {
      const text = `event ${round}`;
      texts.push(text);
      await kit.addEvents(text);
      a.request(`wake ${round}`);
      b.request(`wake ${round}`);
      await delay(60);
    }
    await waitFor('every event consumed', async () => (await kit.store.pendingEvents('main')).length === 0, 10_000);
    await waitFor('both heartbeats idle', () => a.busy === 0 && b.busy === 0, 10_000);

    assert.equal(kit.model.maxInFlight, 1, 'never two turns at once for the session');
    for (const text of texts) {
      const seenIn = kit.model.calls.filter((c) => c.lastUser.includes(text));
      assert.equal(seenIn.length, 1, `"${text}" was in ${seenIn.length} turns`);
    }
    const refused = kit.logged('heartbeat: another node beats this session now; asking again shortly');
    assert.ok(refused.length >= 1, 'one node was refused the lease at least once');
    assert.equal(
      kit.logged('heartbeat finished').length,
      kit.model.calls.length,
      'every turn completed; a retry that found nothing called no model',
    );
    assert.equal((await kit.store.listDeliveries()).length, kit.model.calls.length, 'one reply per turn');
  });

  it('a heartbeat whose lease cannot be renewed is aborted and not completed: its events stay pending', async () => {
    kit.model.setHandler(() => 'hang');
    let leases = 0;
    const store = overlay(kit.store, {
      // The first call takes the lease; every renewal fails (the store is unreachable).
      leaseHeartbeat: (...args) => (++leases === 1 ? kit.store.leaseHeartbeat(...args) : unavailable()),
    });
    const hb = new SessionHeartbeats(node('node-a', store), { leaseMs: 300, retryDelayMs: () => 60_000 });
    closers.push(() => hb.close());
    await kit.addEvents('disk almost full');
    hb.request('test');
    await waitFor(
      'the turn aborted',
      () =>
        kit.logged('heartbeat turn aborted: its lease could not be kept; not completed, its events stay pending')
          .length === 1,
      5000,
    );
    const line = kit.logged(
      'heartbeat turn aborted: its lease could not be kept; not completed, its events stay pending',
    )[0]!;
    assert.equal(line.code, 'lease_lost');
    await waitFor('the model call cut off', () => kit.model.calls[0]?.endedAt !== undefined);
    assert.equal(kit.model.calls[0]!.status, 0, 'the model call was aborted, not answered');
    assert.equal((await kit.store.pendingEvents('main')).length, 1);
    assert.equal((await kit.store.listDeliveries()).length, 0);
    assert.equal(kit.logged('heartbeat finished').length, 0);
    assert.equal(
      kit.logged('renewing heartbeat lease failed: paused, retrying with backoff (logged once until it works again)')
        .length,
      1,
    );
  });

  it('a run whose lease cannot be renewed is aborted locally and not completed; another node runs it once the lease lapses', async () => {
    kit.model.setHandler(() => 'hang');
    // Cut off after its first claim: renewals fail, and so do later claims (as for a node that lost the database).
    // Otherwise, on a loaded machine whose timers run late, node a could claim the run again itself once its lease
    // lapsed, before node b (seen in the full suite: attempts 3, not 2).
    let claims = 0;
    const store = overlay(kit.store, {
      renewRunLeases: unavailable,
      claimRuns: (...args: Parameters<RuntimeClusterStore['claimRuns']>) =>
        claims++ === 0 ? kit.store.claimRuns(...args) : unavailable(),
    });
    const finished: string[] = [];
    const a = new RunWorker(
      node('node-a', store),
      { onFinished: (r) => finished.push(r.id) },
      { leaseMs: 300, pollMs: 60_000 },
    );
    closers.push(() => a.close(0));
    const id = await kit.queueRun({ deliver: false });
    a.notify();
    const msg =
      'hook agent run aborted: its lease could not be kept; not completed here, it runs again once the lease lapses';
    await waitFor('the run aborted', () => kit.logged(msg).length === 1, 5000);
    assert.equal(kit.logged(msg)[0]!.code, 'lease_lost');
    await waitFor('the model call cut off', () => kit.model.calls[0]?.endedAt !== undefined);
    assert.equal(kit.model.calls[0]!.status, 0);
    const run = await kit.store.getRun(id);
    assert.equal(run?.state, 'running', 'not completed, not released: the lease lapses by itself');
    assert.deepEqual(finished, []);

    // Node b (its store works) claims it once the lease lapsed and finishes it: one reply, once.
    kit.model.setHandler(() => 'done on b');
    const b = new RunWorker(node('node-b'), { onFinished: () => {} }, { leaseMs: 300, pollMs: 50 });
    closers.push(() => b.close(0));
    const done = await waitForRun(kit.store, id, 5000);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.reply, 'done on b');
    assert.equal(done.attempts, 2);
  });

  it('a `runs` notice makes an idle worker claim at once, without waiting for the poll; stopping unsubscribes', async () => {
    const listeners = new Set<(n: ClusterNotice) => void>();
    let claims = 0;
    const store = overlay(kit.store, {
      subscribe: (l) => (listeners.add(l), () => listeners.delete(l)),
      claimRuns: (...args) => (claims++, kit.store.claimRuns(...args)),
    });
    const runtime = await startRuntime(node('node-a', store));
    closers.push(() => runtime.close());
    assert.equal(listeners.size, 1);
    await delay(50); // the start's own claim is done
    // Queued by "another node": straight into the store, no signal to this runtime.
    const id = await kit.queueRun({ deliver: false, wakeMode: 'next-heartbeat' });
    const before = claims;
    for (const l of listeners) l({ kind: 'runs' });
    assert.equal(claims, before + 1, 'claimed synchronously on the notice (the poll is 1 s)');
    assert.equal((await waitForRun(kit.store, id, 5000)).state, 'succeeded');
    runtime.stopClaiming();
    assert.equal(listeners.size, 0, 'unsubscribed at stop');
  });

  it('store outage: the worker and the heartbeat pause with backoff, log once, resume by themselves and do the work', async () => {
    const down = { now: true };
    const store = flaky(
      kit.store,
      ['claimRuns', 'pendingEvents', 'leaseHeartbeat', 'completeRun', 'completeHeartbeat', 'renewRunLeases'],
      down,
    );
    const worker = new RunWorker(node('node-a', store), { onFinished: () => {} }, { pollMs: 50 });
    const hb = new SessionHeartbeats(node('node-a', store), { retryDelayMs: () => 50 });
    closers.push(
      () => worker.close(0),
      () => hb.close(),
    );
    const id = await kit.queueRun({ deliver: false, wakeMode: 'next-heartbeat' });
    await kit.addEvents('while the store was down');
    worker.notify();
    hb.request('test');
    await delay(1500);
    const claimPaused = kit.logged(
      'claiming runs failed: paused, retrying with backoff (logged once until it works again)',
    );
    assert.equal(claimPaused.length, 1, 'one line per outage, however many polls');
    assert.equal(claimPaused[0]!.code, 'store_unavailable');
    assert.equal(
      kit.logged('heartbeat failed: paused, retrying with backoff (logged once until it works again)').length,
      1,
    );
    assert.equal(kit.model.calls.length, 0);

    down.now = false;
    assert.equal((await waitForRun(kit.store, id, 40_000)).state, 'succeeded');
    // (The run's summary is a pending event of main too: wait for the heartbeat over the event added above.)
    await waitFor(
      'the heartbeat done',
      async () => !(await kit.store.pendingEvents('main')).some((e) => e.text === 'while the store was down'),
      40_000,
    );
    assert.equal(kit.logged('heartbeat finished').length >= 1, true);
    assert.equal(kit.logged('claiming runs works again: resumed').length, 1);
    assert.equal(kit.logged('heartbeat works again: resumed').length, 1);
  });

  it('a delivery whose lease is about to run out stops sending and is not finished (it is sent again once the lease lapses)', async () => {
    const now = Date.now();
    const d = {
      id: 'dlv_1',
      runId: 'run_1',
      heartbeatId: null,
      sessionKey: 'hook:x',
      agentId: 'main',
      hookName: 'X',
      channel: 'slow',
      to: '1',
      accountId: null,
      text: 'hi',
      explicitRoute: false,
      createdAt: now,
      state: 'pending',
      chunksSent: 0,
      attempts: 1,
      nextAttemptAt: now,
      lastError: null,
      updatedAt: now,
      deliveredAt: null,
    } satisfies Delivery;
    let queue = [d];
    const finished: DeliveryOutcome[] = [];
    const store = overlay(kit.store, {
      claimDeliveries: async (_o, _n, _l, n) => queue.splice(0, n),
      finishDelivery: async (_id, _o, outcome) => void finished.push(outcome),
    });
    // A platform that never answers: only the abort ends the send.
    const slow: Channel = {
      id: 'slow',
      maxTextLength: 1000,
      send: (_m, signal) =>
        new Promise((resolve) =>
          signal?.addEventListener('abort', () => resolve({ ok: false, retryable: true, error: 'aborted' })),
        ),
    };
    const env = envWithChannel(kit.env, slow);
    const outbox = new Outbox({ ...node('node-a', store), env: () => env }, { leaseMs: 400, marginMs: 150 });
    closers.push(() => outbox.close(0));
    outbox.notify();
    const msg =
      'delivery stopped: its lease ran out before it was sent; it is sent again once the lease lapses (chunks already accepted are not repeated)';
    await waitFor('the send given up', () => kit.logged(msg).length === 1, 3000);
    assert.equal(kit.logged(msg)[0]!.code, 'lease_lost');
    await delay(50);
    assert.deepEqual(finished, [], 'not finished: no retry or dead letter recorded by a node that no longer holds it');
    queue = [];
  });
});
