/**
 * `dispatch` with `wait` (waitForCompletion) in-process, with a stand-in for the runtime's waiters: the commit comes
 * first, the bound, the 200, a replay waiting on the first run, and the stored answer staying the plain one.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { type Completion, type CompletionWaiters, WAIT_GRACE_SECONDS } from '../../src/hooks/completion.js';
import { buildHooksContext, type HooksContext } from '../../src/hooks/context.js';
import { dispatch, type DispatchRequest } from '../../src/hooks/dispatch.js';
import { idempotencyClaim } from '../../src/hooks/idempotency.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { received, run } from '../store/contract.js';
import { TOKEN } from '../support/token.js';

const DONE: Completion = {
  status: 'ok',
  replyDisposition: 'visible',
  reply: 'done',
  deliveryStatus: 'outbox',
  deliveryAttempted: true,
  delivered: true,
};
const noSignals = { heartbeatRequested: () => {}, runsQueued: () => {} };

describe('dispatch with waitForCompletion', () => {
  let store: SqliteStore;
  let ctx: HooksContext;
  let calls: Array<{ runId: string; timeoutMs: number; stateAtWait: string | undefined }>;
  let completions: CompletionWaiters;

  beforeEach(() => {
    store = new SqliteStore({ path: ':memory:', writer: 'inline' });
    const config = validateConfig(
      { hooks: { enabled: true, token: TOKEN, agentAcceptedStatus: 202, maxWaitSeconds: 30 } },
      undefined,
      process.cwd(),
      { env: {} },
    );
    ctx = buildHooksContext(config, 1);
    calls = [];
    completions = {
      async wait(runId, timeoutMs) {
        calls.push({ runId, timeoutMs, stateAtWait: (await store.getRun(runId))?.state });
        return DONE;
      },
    };
  });
  afterEach(() => store.close());

  const request = (timeoutSeconds: number, over: Partial<DispatchRequest> = {}): DispatchRequest => ({
    actions: [{ kind: 'agent', run: run({ timeoutSeconds, createdAt: Date.now() }) }],
    idempotency: undefined,
    received: received({ at: Date.now() }),
    ...over,
  });
  const signal = new AbortController().signal;

  it('holds the answer after the commit: 200 (not agentAcceptedStatus) with the completion', async () => {
    const req = request(600, { wait: { completions, signal } });
    const answer = await dispatch(ctx, store, noSignals, req);
    const runId = (req.actions[0] as { run: { id: string } }).run.id;
    assert.deepEqual(answer, { status: 200, body: { ok: true, runId, completion: DONE } });
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.stateAtWait, 'queued', 'the run was committed before the wait began');
  });

  it('bounds the wait by the run timeout plus the grace, and by hooks.maxWaitSeconds', async () => {
    await dispatch(ctx, store, noSignals, request(3, { wait: { completions, signal } }));
    await dispatch(ctx, store, noSignals, request(600, { wait: { completions, signal } }));
    assert.deepEqual(
      calls.map((c) => c.timeoutMs),
      [(3 + WAIT_GRACE_SECONDS) * 1000, 30_000],
    );
  });

  it('without wait nothing waits, and the status is agentAcceptedStatus', async () => {
    const answer = await dispatch(ctx, store, noSignals, request(600));
    assert.equal(answer.status, 202);
    assert.ok(!('completion' in answer.body));
    assert.equal(calls.length, 0);
  });

  it('a replay waits for the first run and says duplicate; the stored answer stays the plain accept answer', async () => {
    const claim = () =>
      idempotencyClaim(
        'agent',
        'key-1',
        Buffer.from('{"message":"m","waitForCompletion":true}'),
        { sender: '127.0.0.1', hooks: { idempotencyTtlSeconds: 3600, idempotencyMaxKeys: 10_000 } },
        Date.now(),
      );
    const first = await dispatch(
      ctx,
      store,
      noSignals,
      request(600, { idempotency: claim(), wait: { completions, signal } }),
    );
    const runId = first.body.runId as string;

    const again = await dispatch(
      ctx,
      store,
      noSignals,
      request(600, { idempotency: claim(), wait: { completions, signal } }),
    );
    assert.deepEqual(again, {
      status: 200,
      body: { ok: true, runId, duplicate: true, completion: DONE },
      duplicate: true,
    });
    assert.deepEqual(
      calls.map((c) => c.runId),
      [runId, runId],
      'the replay waited on the first run, not on a new one',
    );

    const plain = await dispatch(ctx, store, noSignals, request(600, { idempotency: claim() }));
    assert.deepEqual(plain, { status: 202, body: { ok: true, runId, duplicate: true }, duplicate: true });
    assert.equal((await store.listRuns()).length, 1, 'nothing new queued');
  });
});
