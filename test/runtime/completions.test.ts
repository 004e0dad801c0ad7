/**
 * The runtime's side of `waitForCompletion` in-process: the store first, the run worker's notification, the slow
 * poll for runs finished elsewhere, and every way a waiter leaves (completion, bound, caller gone, cap, close).
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type Completion, PENDING } from '../../src/hooks/completion.js';
import { CompletionWaiterRegistry, completionOf } from '../../src/runtime/completions.js';
import { RunWorker } from '../../src/runtime/run-worker.js';
import type { Run } from '../../src/store/types.js';
import { waitForRun } from '../support/runtime-kit.js';
import { delay, gate } from '../support/scripted-model.js';
import { type RuntimeKit, startRuntimeKit } from './kit.js';

const never = () => new AbortController().signal;

describe('completion waiters', () => {
  let kit: RuntimeKit;
  let worker: RunWorker | undefined;
  let waiters: CompletionWaiterRegistry;

  const newWaiters = (options?: ConstructorParameters<typeof CompletionWaiterRegistry>[1]) =>
    (waiters = new CompletionWaiterRegistry(
      { store: kit.store, logger: kit.deps.logger, ackMaxChars: () => 300 },
      options,
    ));
  /** A worker that tells `waiters` about finished runs, as startRuntime wires it. */
  const startWorker = () => {
    worker = new RunWorker(kit.deps, { onFinished: (run, committed) => committed && waiters.finished(run.id) });
    worker.notify();
  };
  /** Finish a run the way another node would: through the store, without telling this process. */
  const finishElsewhere = async (id: string, reply: string) => {
    const [claimed] = await kit.store.claimRuns('other-node', Date.now(), 30_000, 1);
    assert.equal(claimed?.id, id);
    const ok = await kit.store.completeRun({
      runId: id,
      owner: 'other-node',
      state: 'succeeded',
      finishedAt: Date.now(),
      error: null,
      reply,
      deliveryStatus: 'suppressed:deliver_false',
      events: [],
      deliveries: [],
      messages: [],
    });
    assert.ok(ok);
  };

  beforeEach(async () => {
    kit = await startRuntimeKit();
  });
  afterEach(async () => {
    waiters?.close();
    await worker?.close(0);
    worker = undefined;
    await kit.close();
  });

  it('answers from the run worker notification, with the reply and what delivery did', async () => {
    const release = gate();
    kit.model.setHandler(async () => (await release.wait, 'deployed v2'));
    // A poll far beyond the test: only the notification can answer in time.
    newWaiters({ pollMs: 60_000 });
    const id = await kit.queueRun();
    startWorker();
    const waiting = waiters.wait(id, 10_000, never());
    await delay(50);
    assert.equal(waiters.size, 1);
    const t0 = Date.now();
    release.open();
    const c = await waiting;
    assert.deepEqual(c, {
      status: 'ok',
      replyDisposition: 'visible',
      reply: 'deployed v2',
      deliveryStatus: 'outbox',
      deliveryAttempted: true,
      delivered: true,
    });
    assert.ok(Date.now() - t0 < 2000, 'answered late');
    assert.equal(waiters.size, 0, 'the waiter is removed on completion');
  });

  it('reads the store first: a run finished before the wait (a replay) is answered at once', async () => {
    newWaiters({ pollMs: 60_000 });
    const id = await kit.queueRun();
    startWorker();
    await waitForRun(kit.store, id);
    const c = await waiters.wait(id, 10_000, never());
    assert.equal(c.status, 'ok');
    assert.equal(waiters.size, 0);
  });

  it('polls the store for a run finished elsewhere (another node): no notification needed', async () => {
    newWaiters({ pollMs: 50 });
    const id = await kit.queueRun({ deliver: false });
    const waiting = waiters.wait(id, 10_000, never());
    await delay(80);
    await finishElsewhere(id, 'HEARTBEAT_OK');
    const c = await waiting;
    assert.deepEqual(c, {
      status: 'ok',
      replyDisposition: 'silent',
      reply: 'HEARTBEAT_OK',
      deliveryStatus: 'suppressed:deliver_false',
      deliveryAttempted: false,
      delivered: false,
    });
  });

  it('a failing run: status error with the error', async () => {
    kit.model.setHandler(() => ({
      status: 400,
      body: { error: { message: 'bad request', type: 'invalid_request_error' } },
    }));
    newWaiters({ pollMs: 60_000 });
    const id = await kit.queueRun();
    startWorker();
    const c = (await waiters.wait(id, 10_000, never())) as Exclude<Completion, typeof PENDING>;
    assert.equal(c.status, 'error');
    assert.equal(c.replyDisposition, 'empty');
    assert.equal(c.reply, null);
    assert.match(c.error ?? '', /bad request/);
    assert.equal(c.deliveryStatus, 'nowhere:failed');
    assert.equal(c.deliveryAttempted, false);
  });

  it('the bound passes first: pending, and the waiter is gone (the run is untouched)', async () => {
    newWaiters();
    const id = await kit.queueRun();
    const t0 = Date.now();
    assert.deepEqual(await waiters.wait(id, 100, never()), PENDING);
    assert.ok(Date.now() - t0 >= 95);
    assert.equal(waiters.size, 0);
    assert.equal((await kit.store.getRun(id))?.state, 'queued');
  });

  it('the caller goes away: pending at once, the waiter is gone', async () => {
    newWaiters();
    const id = await kit.queueRun();
    const ac = new AbortController();
    const waiting = waiters.wait(id, 10_000, ac.signal);
    assert.equal(waiters.size, 1);
    ac.abort();
    assert.deepEqual(await waiting, PENDING);
    assert.equal(waiters.size, 0);
    const gone = new AbortController();
    gone.abort();
    assert.deepEqual(await waiters.wait(id, 10_000, gone.signal), PENDING, 'a caller already gone is not registered');
    assert.equal(waiters.size, 0);
  });

  it('over the cap: pending at once and logged; the waiters within it still get their answer', async () => {
    newWaiters({ maxWaiters: 2, pollMs: 60_000 });
    const id = await kit.queueRun();
    const held = [waiters.wait(id, 10_000, never()), waiters.wait(id, 10_000, never())];
    assert.deepEqual(await waiters.wait(id, 10_000, never()), PENDING);
    assert.equal(kit.logged('too many callers waiting for runs: answered pending at once (the run goes on)').length, 1);
    startWorker();
    for (const c of await Promise.all(held)) assert.equal(c.status, 'ok');
    assert.equal(waiters.size, 0);
  });

  it('close answers every waiter pending, and later waits at once', async () => {
    newWaiters();
    const id = await kit.queueRun();
    const waiting = waiters.wait(id, 10_000, never());
    waiters.close();
    assert.deepEqual(await waiting, PENDING);
    assert.equal(waiters.size, 0);
    assert.deepEqual(await waiters.wait(id, 10_000, never()), PENDING);
  });
});

describe('completionOf', () => {
  const run = (over: Partial<Run>): Run => ({ reply: null, error: null, deliveryStatus: null, ...over }) as Run;

  it('replyDisposition: visible with text, silent for the HEARTBEAT_OK acknowledgement, empty without text', () => {
    assert.equal(completionOf(run({ reply: 'done' }), 'succeeded', 300).replyDisposition, 'visible');
    assert.equal(completionOf(run({ reply: '**HEARTBEAT_OK**' }), 'succeeded', 300).replyDisposition, 'silent');
    assert.equal(completionOf(run({ reply: 'HEARTBEAT_OK nothing new' }), 'succeeded', 300).replyDisposition, 'silent');
    assert.equal(
      completionOf(run({ reply: 'HEARTBEAT_OK nothing new' }), 'succeeded', 0).replyDisposition,
      'visible',
      'ackMaxChars applies as for delivery',
    );
    assert.equal(completionOf(run({ reply: '  ' }), 'succeeded', 300).replyDisposition, 'empty');
    assert.equal(completionOf(run({ reply: null }), 'succeeded', 300).replyDisposition, 'empty');
  });

  it('a timed-out run is an error with its reason; no error key on success', () => {
    const c = completionOf(
      run({ error: 'timed out after 5 s', deliveryStatus: 'nowhere:timed_out' }),
      'timed_out',
      300,
    );
    assert.deepEqual(c, {
      status: 'error',
      replyDisposition: 'empty',
      reply: null,
      error: 'timed out after 5 s',
      deliveryStatus: 'nowhere:timed_out',
      deliveryAttempted: false,
      delivered: false,
    });
    assert.ok(!('error' in completionOf(run({ reply: 'x', deliveryStatus: 'outbox' }), 'succeeded', 300)));
  });
});
