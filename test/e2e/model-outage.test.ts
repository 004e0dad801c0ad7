/**
 * Against the real server process: runs survive a model outage. The model's port is closed when the
 * runs arrive; they go back to the queue with the error visible, and once the model answers on that port they
 * succeed and are delivered, in order per session key. (`npm run build` first when running this file alone.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { closedPortUrl } from '../support/platforms/index.js';
import {
  openServerStore,
  postAgent,
  startServer,
  waitFor,
  waitForRun,
  webhookDeliveries,
  webhookSecret,
} from '../support/runtime-kit.js';
import { type ScriptedModel, startScriptedModel } from '../support/scripted-model.js';
import { type Hookgate, runCli } from '../support/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

describe('a model outage (real process)', { timeout: 90_000 }, () => {
  let hg: Hookgate;
  let store: SqliteStore;
  let receiver: WebhookReceiver;
  let model: ScriptedModel | undefined;
  let port: number;
  const secret = webhookSecret();

  before(async () => {
    const url = await closedPortUrl();
    port = Number(new URL(url).port);
    receiver = await startWebhookReceiver(secret);
    hg = await startServer({
      heartbeat: { every: 'off' },
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
      models: {
        providers: { local: { api: 'openai-chat', baseUrl: `${url}/v1`, apiKey: 'test-key', maxAttempts: 1 } },
      },
      agents: {
        defaults: { retry: { maxSeconds: 60, initialBackoffMs: 300, maxBackoffMs: 600 } },
        list: [{ id: 'main', default: true, model: 'local/main-model' }],
      },
      channels: { webhook: { targets: { ops: { url: receiver.url, secret } } } },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    store?.close();
    await hg?.cleanup();
    await model?.close();
    await receiver?.close();
  });

  it('runs wait while the model is unreachable and are delivered, in order, once it is back', async () => {
    const first = await postAgent(hg, {
      message: 'first',
      sessionKey: 'hook:ci',
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });
    const second = await postAgent(hg, {
      message: 'second',
      sessionKey: 'hook:ci',
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });

    const waiting = await waitFor(
      'the first run queued again after a refused connection',
      async () => {
        const r = await store.getRun(first);
        return r && r.retries >= 2 && r.state === 'queued' ? r : undefined;
      },
      10_000,
    );
    assert.match(waiting.error ?? '', /^provider_unreachable: .*ECONNREFUSED/, 'the reason is visible while it waits');
    assert.equal((await store.getRun(second))?.state, 'queued');
    assert.equal((await store.getRun(second))?.retries, 0, 'the session’s next run waits behind it, untried');
    await hg.waitForLog(
      (l) => l.msg === 'model unavailable: the run is queued again and retried later' && l.runId === first,
    );

    model = await startScriptedModel((c) => `done: ${c.lastUser.includes('first') ? 'first' : 'second'}`, { port });
    const r1 = await waitForRun(store, first, 15_000);
    const r2 = await waitForRun(store, second, 15_000);
    assert.equal(r1.state, 'succeeded');
    assert.equal(r1.error, null);
    assert.equal(r2.state, 'succeeded');
    assert.ok((r2.startedAt ?? 0) >= (r1.finishedAt ?? Infinity), 'order per session key held through the outage');
    const texts = await waitFor('both deliveries', () => {
      const got = webhookDeliveries(receiver).filter((d) => d.body.runId === first || d.body.runId === second);
      return got.length === 2 ? got.map((d) => d.body.text) : undefined;
    });
    assert.deepEqual(texts, ['done: first', 'done: second']);
  });
});

describe('after an outage: runs retry --failed (real process and CLI)', { timeout: 90_000 }, () => {
  let hg: Hookgate;
  let store: SqliteStore;
  let model: ScriptedModel | undefined;
  let port: number;

  before(async () => {
    const url = await closedPortUrl();
    port = Number(new URL(url).port);
    hg = await startServer({
      heartbeat: { every: 'off' },
      models: {
        providers: { local: { api: 'openai-chat', baseUrl: `${url}/v1`, apiKey: 'test-key', maxAttempts: 1 } },
      },
      // Retries off: the runs fail at once, as they would once the retry window has passed.
      agents: {
        defaults: { retry: { maxSeconds: 0 } },
        list: [{ id: 'main', default: true, model: 'local/main-model' }],
      },
      channels: { default: { channel: 'log' } },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    store?.close();
    await hg?.cleanup();
    await model?.close();
  });

  const cli = (...args: string[]) => runCli([...args, '--config', hg.configFile], { cwd: hg.dir });

  it('queues every failed run again in one command, and they succeed once the model is back', async () => {
    const ids = [
      await postAgent(hg, { message: 'one', wakeMode: 'next-heartbeat' }),
      await postAgent(hg, { message: 'two', wakeMode: 'next-heartbeat' }),
    ];
    for (const id of ids) assert.equal((await waitForRun(store, id)).state, 'failed');

    const usage = await cli('runs', 'retry');
    assert.equal(usage.code, 1);
    assert.match(usage.stderr, /give a run id, or --failed/);
    const badSince = await cli('runs', 'retry', '--failed', '--since', 'yesterday-ish');
    assert.equal(badSince.code, 1);
    assert.match(badSince.stderr, /--since: expected a duration/);

    model = await startScriptedModel(() => 'recovered', { port });
    const r = await cli('runs', 'retry', '--failed', '--since', '1h', '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as string[]).sort(), [...ids].sort());
    for (const id of ids) {
      const run = await waitForRun(store, id, 15_000);
      assert.equal(run.state, 'succeeded');
      assert.equal(run.reply, 'recovered');
    }
    const none = await cli('runs', 'retry', '--failed');
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /no failed runs in that time/);
  });
});
