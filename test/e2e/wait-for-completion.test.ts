/**
 * `waitForCompletion: true` on `/hooks/agent` (docs/reference.md#waiting-for-the-run) against the real server process:
 * the held answer with the completion of an echo run, a silent and an undelivered reply, a slow model past
 * `hooks.maxWaitSeconds` (pending, the run goes on), a failing and a timed-out model (error), a replay that waits for
 * the first run, a retry that only changes the flag (the same request), a caller that goes away mid-wait (the run is
 * still completed and delivered), a non-boolean flag (400), and a stop while a caller waits. Run `npm run build` first
 * when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { openServerStore, startServer, waitFor, waitForRun } from '../support/runtime-kit.js';
import { delay, gate, type ScriptedModel, startScriptedModel } from '../support/scripted-model.js';
import { type Hookgate, TOKEN } from '../support/server.js';

const uniq = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;
const MAX_WAIT_SECONDS = 2;

describe('waitForCompletion (hooks.maxWaitSeconds: 2)', { timeout: 90_000 }, () => {
  let model: ScriptedModel;
  let hg: Hookgate;
  let store: SqliteStore;
  before(async () => {
    model = await startScriptedModel((c) => `model: ${c.lastUser.length} chars`);
    hg = await startServer({
      hooks: { maxWaitSeconds: MAX_WAIT_SECONDS },
      heartbeat: { every: 'off' },
      models: { providers: { local: { api: 'openai-chat', baseUrl: model.url, apiKey: 'test-key', maxAttempts: 1 } } },
      agents: { list: [{ id: 'main', default: true, model: 'local/main-model' }] },
      channels: { default: { channel: 'log' } },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    store?.close();
    await hg?.cleanup();
    await model?.close();
  });

  /** POST /hooks/agent waiting for the run; no heartbeat afterwards (the summary only waits). */
  const postWaiting = (body: Record<string, unknown>, headers?: Record<string, string>) =>
    hg.post('/hooks/agent', { wakeMode: 'next-heartbeat', waitForCompletion: true, ...body }, headers);

  it('an echo run: 200 with the reply, the disposition and the queued delivery', async () => {
    const message = uniq('summarise the build');
    const r = await postWaiting({ message, model: 'echo/echo' });
    assert.equal(r.status, 200, r.text);
    const runId = r.body!.runId as string;
    assert.deepEqual(r.body, {
      ok: true,
      runId,
      completion: {
        status: 'ok',
        replyDisposition: 'visible',
        reply: `echo: ${message}`,
        deliveryStatus: 'outbox',
        deliveryAttempted: true,
        delivered: true,
      },
    });
    assert.equal((await store.getRun(runId))?.state, 'succeeded', 'the answer came after the run ended');
    await waitFor('the log-channel delivery', () =>
      hg.logs.find((l) => l.runId === runId && l.channel === 'log' && l.text === `echo: ${message}`),
    );
  });

  it('silent (only HEARTBEAT_OK: not delivered) and deliver: false are reported as the run recorded them', async () => {
    const ack = await postWaiting({ message: uniq('anything new?'), model: 'echo/ack' });
    assert.equal(ack.status, 200, ack.text);
    assert.deepEqual(ack.body!.completion, {
      status: 'ok',
      replyDisposition: 'silent',
      reply: 'HEARTBEAT_OK',
      deliveryStatus: 'suppressed:heartbeat_ack',
      deliveryAttempted: false,
      delivered: false,
      deliverySuppressionReason: 'heartbeat',
    });
    const quiet = await postWaiting({ message: 'keep it', model: 'echo/echo', deliver: false });
    assert.deepEqual(quiet.body!.completion, {
      status: 'ok',
      replyDisposition: 'visible',
      reply: 'echo: keep it',
      deliveryStatus: 'suppressed:deliver_false',
      deliveryAttempted: false,
      delivered: false,
    });
  });

  it('without the flag the answer is the plain accept answer, at once', async () => {
    const release = gate();
    model.setHandler(async () => (await release.wait, 'late'));
    try {
      const t0 = Date.now();
      const r = await hg.post('/hooks/agent', { message: uniq('no wait'), wakeMode: 'next-heartbeat' });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body!), ['ok', 'runId']);
      assert.ok(Date.now() - t0 < 1000, 'an answer without the flag waited');
    } finally {
      release.open();
    }
  });

  it('a slow model: pending once hooks.maxWaitSeconds passed, and the run still completes later', async () => {
    const release = gate();
    const message = uniq('slow one');
    model.setHandler(async (c) => (c.lastUser.includes(message) ? (await release.wait, 'finally done') : 'other'));
    const t0 = Date.now();
    const r = await postWaiting({ message });
    const waited = Date.now() - t0;
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body!.completion, { status: 'pending' });
    assert.ok(waited >= MAX_WAIT_SECONDS * 1000 - 100 && waited < MAX_WAIT_SECONDS * 1000 + 1500, `held ${waited} ms`);
    const runId = r.body!.runId as string;
    assert.equal((await store.getRun(runId))?.state, 'running');
    release.open();
    const run = await waitForRun(store, runId);
    assert.equal(run.state, 'succeeded');
    assert.equal(run.reply, 'finally done');
  });

  it('a failing model: status error with the error; a timed-out run: error with the timeout', async () => {
    model.setHandler(() => ({
      status: 400,
      body: { error: { message: 'context length exceeded', type: 'invalid_request_error' } },
    }));
    const failed = await postWaiting({ message: uniq('too long') });
    assert.equal(failed.status, 200, failed.text);
    const c = failed.body!.completion as Record<string, unknown>;
    assert.equal(c.status, 'error');
    assert.equal(c.replyDisposition, 'empty');
    assert.equal(c.reply, null);
    assert.match(String(c.error), /context length exceeded/);
    assert.equal(c.deliveryStatus, 'nowhere:failed');

    model.setHandler(() => 'hang');
    const timedOut = await postWaiting({ message: uniq('hangs'), timeoutSeconds: 0.5 });
    assert.deepEqual(timedOut.body!.completion, {
      status: 'error',
      replyDisposition: 'empty',
      reply: null,
      error: 'timed out after 0.5 s',
      deliveryStatus: 'nowhere:timed_out',
      deliveryAttempted: false,
      delivered: false,
    });
    model.setHandler(() => 'ok');
  });

  it('a replay of the idempotency key waits for the first run and says duplicate', async () => {
    const release = gate();
    const message = uniq('replayed');
    model.setHandler(async (c) => (c.lastUser.includes(message) ? (await release.wait, 'replayed reply') : 'other'));
    const key = { 'idempotency-key': uniq('key') };
    const first = await postWaiting({ message }, key);
    assert.deepEqual(first.body!.completion, { status: 'pending' }, 'the first caller gave up at the bound');
    const runId = first.body!.runId as string;

    const again = postWaiting({ message }, key);
    await delay(300);
    release.open();
    const r = await again;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body!.runId, runId);
    assert.equal(r.body!.duplicate, true);
    assert.deepEqual(r.body!.completion, {
      status: 'ok',
      replyDisposition: 'visible',
      reply: 'replayed reply',
      deliveryStatus: 'outbox',
      deliveryAttempted: true,
      delivered: true,
    });
    assert.equal(model.calls.filter((c) => c.lastUser.includes(message)).length, 1, 'the replay ran the model again');
  });

  it('a retry that only changes waitForCompletion is the same request (as in OpenClaw); another body is still 409', async () => {
    const message = uniq('flag only');
    const key = { 'idempotency-key': uniq('key') };
    const first = await hg.post('/hooks/agent', { message, model: 'echo/echo', wakeMode: 'next-heartbeat' }, key);
    assert.equal(first.status, 200, first.text);
    const waiting = await postWaiting({ message, model: 'echo/echo' }, key);
    assert.equal(waiting.status, 200, waiting.text);
    assert.equal(waiting.body!.runId, first.body!.runId);
    assert.equal(waiting.body!.duplicate, true);
    assert.equal((waiting.body!.completion as { status: string }).status, 'ok');
    const flagOff = await hg.post(
      '/hooks/agent',
      { message, model: 'echo/echo', wakeMode: 'next-heartbeat', waitForCompletion: false },
      key,
    );
    assert.equal(flagOff.status, 200, flagOff.text);
    assert.equal(flagOff.body!.runId, first.body!.runId);
    const other = await hg.post(
      '/hooks/agent',
      { message: `${message} 2`, model: 'echo/echo', wakeMode: 'next-heartbeat' },
      key,
    );
    assert.equal(other.status, 409);
    assert.equal(other.body!.code, 'idempotency_conflict');
  });

  it('a caller that goes away mid-wait changes nothing: the run completes and is delivered', async () => {
    const release = gate();
    const message = uniq('caller leaves');
    model.setHandler(async (c) => (c.lastUser.includes(message) ? (await release.wait, 'delivered anyway') : 'other'));
    const ac = new AbortController();
    const posted = fetch(`${hg.url}/hooks/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, wakeMode: 'next-heartbeat', waitForCompletion: true }),
      signal: ac.signal,
    });
    await waitFor('the model call', () => model.calls.find((c) => c.lastUser.includes(message)));
    ac.abort();
    await assert.rejects(posted, { name: 'AbortError' });
    await delay(100);
    release.open();
    const run = await waitFor('the run', async () =>
      (await store.listRuns({ limit: 20 })).find(
        (r) => r.message.includes(message) && r.state !== 'running' && r.state !== 'queued',
      ),
    );
    assert.equal(run.state, 'succeeded');
    assert.equal(run.reply, 'delivered anyway');
    await waitFor(
      'the delivery',
      async () => (await store.listDeliveries({ runId: run.id }))[0]?.state === 'delivered',
    );
    // The server wrote the line before it recorded the delivery, but its stdout reaches this process through a pipe
    // that may not have been read yet when the store already says delivered.
    await waitFor('the delivered line', () =>
      hg.logs.some((l) => l.runId === run.id && l.channel === 'log' && l.text === 'delivered anyway'),
    );
  });

  it('a non-boolean waitForCompletion is 400 invalid_payload naming the field, and nothing is queued', async () => {
    const before = (await store.listRuns({ limit: 1000 })).length;
    for (const value of ['true', 1, {}]) {
      const r = await hg.post('/hooks/agent', { message: 'm', waitForCompletion: value });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, {
        ok: false,
        error: 'waitForCompletion must be true or false',
        code: 'invalid_payload',
      });
    }
    assert.equal((await store.listRuns({ limit: 1000 })).length, before);
  });

  it('stopping answers a waiting caller pending at once', async () => {
    const release = gate();
    const message = uniq('during stop');
    model.setHandler(async (c) => (c.lastUser.includes(message) ? (await release.wait, 'after the stop') : 'other'));
    const posted = postWaiting({ message });
    await waitFor('the model call', () => model.calls.find((c) => c.lastUser.includes(message)));
    const t0 = Date.now();
    const stopped = hg.stop();
    const r = await posted;
    assert.ok(Date.now() - t0 < 1000, `answered ${Date.now() - t0} ms after the stop began`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body!.completion, { status: 'pending' });
    // The stop gives the running run its grace: let it finish instead of waiting for the abort.
    release.open();
    await stopped;
  });
});
