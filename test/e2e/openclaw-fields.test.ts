/**
 * Against the real server process: the OpenClaw request fields callers rely on are honoured or
 * refused, never accepted and dropped — `sessionMode: "persistent"` needs a key, `to` without `channel` goes to the
 * main session's last channel (or is refused when there is none), and `sessionKey` on `/hooks/wake` routes the event
 * to that session under the request-key policy, where its own heartbeat consumes it.
 * (`npm run build` first when running this file alone: the server runs from dist.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import {
  cli,
  openServerStore,
  postAgent,
  startServer,
  waitFor,
  waitForRun,
  webhookDeliveries,
  webhookSecret,
} from '../support/runtime-kit.js';
import { type ScriptedModel, startScriptedModel } from '../support/scripted-model.js';
import type { Hookgate } from '../support/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const uniq = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

describe('OpenClaw request fields (real process)', { timeout: 90_000 }, () => {
  let model: ScriptedModel;
  let receiver: WebhookReceiver;
  let hg: Hookgate;
  let store: SqliteStore;
  const secret = webhookSecret();

  before(async () => {
    model = await startScriptedModel((c) =>
      c.heartbeat ? `heartbeat saw: ${c.lastUser.split('\n').slice(1).join(' | ')}` : 'HEARTBEAT_OK',
    );
    receiver = await startWebhookReceiver(secret);
    // No channels.default: a request that names `to` without a channel depends on the main session's route.
    hg = await startServer({
      heartbeat: { every: 'off' },
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'ops:'] },
      models: { providers: { local: { api: 'openai-chat', baseUrl: model.url, apiKey: 'test-key', maxAttempts: 1 } } },
      agents: { list: [{ id: 'main', default: true, model: 'local/main-model' }] },
      channels: { webhook: { targets: { ops: { url: receiver.url, secret }, oncall: { url: receiver.url, secret } } } },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    store?.close();
    await hg?.cleanup();
    await receiver?.close();
    await model?.close();
  });

  describe('sessionMode: "persistent"', () => {
    it('without a sessionKey is 400 invalid_payload (a fresh key would never persist), nothing queued', async () => {
      const before = (await store.listRuns({ limit: 1000 })).length;
      const r = await hg.post('/hooks/agent', { message: 'remember this', sessionMode: 'persistent' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body?.code, 'invalid_payload');
      assert.match(String(r.body?.error), /sessionKey is required when sessionMode is persistent/);
      assert.equal((await store.listRuns({ limit: 1000 })).length, before);
    });

    it('with a sessionKey the run is accepted in that session, persistent', async () => {
      const key = `hook:${uniq('persist')}`;
      const runId = await postAgent(hg, {
        message: 'remember this',
        model: 'echo/echo',
        sessionMode: 'persistent',
        sessionKey: key,
        deliver: false,
      });
      const run = await waitForRun(store, runId);
      assert.equal(run.sessionKey, key);
      assert.equal(run.sessionMode, 'persistent');
    });
  });

  describe('`to` without `channel`', () => {
    it('is 400 invalid_channel while the main session has no route and there is no channels.default', async () => {
      const first = await postAgent(hg, {
        message: uniq('explicit'),
        model: 'echo/echo',
        channel: 'webhook',
        to: 'ops',
      });
      await waitFor('the explicit delivery', () => webhookDeliveries(receiver).find((d) => d.body.runId === first));
      assert.equal(await store.getRoute('main'), undefined, 'an explicit delivery set the main session route');
      const r = await hg.post('/hooks/agent', { message: 'page the on-call', model: 'echo/echo', to: 'oncall' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body?.code, 'invalid_channel');
      assert.match(String(r.body?.error), /"to" was sent without "channel"/);
      assert.match(String(r.body?.error), /webhook/, 'the message lists the channels to choose from');
    });

    it('deliver:false needs no route: nothing is delivered, so nothing is refused', async () => {
      const r = await hg.post('/hooks/agent', { message: 'quiet', model: 'echo/echo', to: 'oncall', deliver: false });
      assert.equal(r.status, 200, r.text);
    });

    it("once the operator set the main session's route, it goes on that route's channel to the named recipient", async () => {
      const set = await cli(hg, 'sessions', 'route', 'main', '--channel', 'webhook', '--to', 'ops');
      assert.equal(set.code, 0, set.stderr);

      const message = uniq('implicit channel');
      const runId = await postAgent(hg, { message, model: 'echo/echo', to: 'oncall' });
      const d = await waitFor('the delivery on the last channel', () =>
        webhookDeliveries(receiver).find((x) => x.body.runId === runId),
      );
      assert.equal(d.verified, true);
      assert.equal(d.body.channel, 'webhook');
      assert.equal(d.body.to, 'oncall');
      assert.equal(d.body.text, `echo: ${message}`);
    });
  });

  describe('sessionKey on /hooks/wake', () => {
    it('routes the event to that session: its own heartbeat consumes it, the main session is untouched', async () => {
      const key = `ops:${uniq('wake')}`;
      const text = uniq('disk 91% on db-2');
      const r = await hg.post('/hooks/wake', { text, mode: 'now', sessionKey: key });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body?.eventOutcome, 'queued');

      const call = await waitFor(
        'a heartbeat with the wake text',
        () => model.calls.find((c) => c.heartbeat && c.lastUser.includes(text)),
        5000,
      );
      assert.ok(call, 'heartbeat call');
      await waitFor('the event consumed', async () => (await store.pendingEvents(key)).length === 0);
      const transcript = await store.sessionMessages('main', key, 10);
      assert.ok(
        transcript.some((m) => m.role === 'user' && m.content.includes(text)),
        'the turn is in the named session',
      );
      const mainTranscript = await store.sessionMessages('main', 'main', 50);
      assert.ok(!mainTranscript.some((m) => m.content.includes(text)), 'the main session never saw it');
      const calls = model.calls.filter((c) => c.lastUser.includes(text));
      assert.equal(calls.length, 1, 'one heartbeat turn carried the event');
      const line = await hg.waitForLog((l) => l.msg === 'heartbeat finished' && l.sessionKey === key);
      assert.equal(line.events, 1);
    });

    it('next-heartbeat leaves it pending in that session until a heartbeat of it runs', async () => {
      const key = `ops:${uniq('later')}`;
      const text = uniq('backup done');
      const r = await hg.post('/hooks/wake', { text, mode: 'next-heartbeat', sessionKey: key });
      assert.equal(r.status, 200, r.text);
      const pending = await store.pendingEvents(key);
      assert.deepEqual(
        pending.map((e) => e.text),
        [text],
      );
      assert.ok(!model.calls.some((c) => c.lastUser.includes(text)), 'no heartbeat ran for it');
    });

    it('is refused with 400 session_key_not_allowed when the key is outside the allowed prefixes', async () => {
      const r = await hg.post('/hooks/wake', { text: 'x', sessionKey: 'agent:main:other' });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body?.code, 'session_key_not_allowed');
      assert.match(String(r.body?.error), /hook:, ops:/);
    });

    it('without a key the wake goes to the main session as before', async () => {
      const text = uniq('plain wake');
      const r = await hg.post('/hooks/wake', { text, mode: 'next-heartbeat' });
      assert.equal(r.status, 200, r.text);
      assert.ok((await store.pendingEvents('main')).some((e) => e.text === text));
    });
  });
});

describe('fields hookgate does not read (real process)', { timeout: 60_000 }, () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startServer({ heartbeat: { every: 'off' } });
  });
  after(async () => {
    await hg?.cleanup();
  });

  it('are accepted, listed in the received record and logged at debug, never an error', async () => {
    const r = await hg.post('/hooks/wake', { text: 'typo', sesionKey: 'hook:x', mode: 'next-heartbeat' });
    assert.equal(r.status, 200, r.text);
    const store = openServerStore(hg);
    try {
      const rec = await waitFor('the received record', async () =>
        (await store.listReceived(20)).find((x) => x.eventIds.includes(String(r.body?.eventId))),
      );
      assert.deepEqual(rec.unknownFields, ['sesionKey']);
    } finally {
      store.close();
    }
    const line = await hg.waitForLog((l) => l.msg === 'request fields hookgate does not read');
    assert.deepEqual(line.unknownFields, ['sesionKey']);
  });
});

describe('sessionKey on /hooks/wake without allowRequestSessionKey (real process)', { timeout: 60_000 }, () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startServer({ heartbeat: { every: 'off' } });
  });
  after(async () => {
    await hg?.cleanup();
  });

  it('is 400 session_key_not_allowed, never silently ignored', async () => {
    const r = await hg.post('/hooks/wake', { text: 'x', sessionKey: 'hook:elsewhere' });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body?.code, 'session_key_not_allowed');
    assert.match(String(r.body?.error), /allowRequestSessionKey/);
  });
});
