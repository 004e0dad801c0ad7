import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { webhookChannelSchema } from '../../src/config/schema/channels.js';
import type { ChannelContext, OutboundMessage } from '../../src/channels/types.js';
import {
  createWebhookChannel,
  deliveryRecord,
  signStandardWebhook,
  webhookRecipientRule,
} from '../../src/channels/webhook.js';
import { parseRetryAfter } from '../../src/retry-after.js';
import { happyEyeballsRefused } from '../support/platforms/fixtures.js';
import { startWebhookReceiver, verifyStandardWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

const ctx: ChannelContext = { configDir: process.cwd(), logger: { info() {}, warn() {}, error() {} } };
/** 32 random-looking bytes, base64. */
const SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD4Xz3sE4sU2s=';

function message(over: Partial<OutboundMessage> = {}): OutboundMessage {
  return {
    deliveryId: 'dlv_01HZX3',
    channel: 'webhook',
    to: 'ops',
    text: 'Build #42 failed: see https://ci.example/42',
    runId: 'run_7',
    sessionKey: 'hook:ci:42',
    agentId: 'main',
    hookName: 'CI',
    createdAt: '2025-01-02T03:04:05.000Z',
    ...over,
  };
}

describe('Standard Webhooks signature', () => {
  it('reproduces the published test vector', () => {
    // From standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts ("sign function works"),
    // the same vector the other reference libraries (PHP, Rust, Go...) check.
    const sig = signStandardWebhook(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    assert.equal(sig, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('is what an independent verifier accepts, and nothing else', () => {
    const body = '{"a":1}';
    const sig = signStandardWebhook(SECRET, 'id1', 1700000000, body);
    const headers = { 'webhook-id': 'id1', 'webhook-timestamp': '1700000000', 'webhook-signature': sig };
    assert.deepEqual(verifyStandardWebhook(SECRET, headers, body, 1700000000), { ok: true });
    assert.equal(verifyStandardWebhook(SECRET, headers, '{"a":2}', 1700000000).ok, false);
    assert.equal(verifyStandardWebhook(SECRET, { ...headers, 'webhook-id': 'id2' }, body, 1700000000).ok, false);
    assert.equal(verifyStandardWebhook(SECRET, headers, body, 1700000000 + 301).ok, false);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('7'), 7000);
    assert.equal(parseRetryAfter(new Date(1_000_000 + 5000).toUTCString(), 1_000_000), 5000);
    assert.equal(parseRetryAfter('soon'), undefined);
    assert.equal(parseRetryAfter(null), undefined);
  });
});

describe('webhook config schema', () => {
  it('accepts a whsec_ secret of at least 24 bytes and refuses the rest', () => {
    const target = (secret: string) => ({ targets: { ops: { url: 'https://x.example/h', secret } } });
    assert.ok(webhookChannelSchema.safeParse(target(SECRET)).success);
    assert.ok(webhookChannelSchema.safeParse(target('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).success);
    assert.ok(!webhookChannelSchema.safeParse(target('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).success);
    assert.ok(!webhookChannelSchema.safeParse(target('whsec_c2hvcnQ=')).success);
  });

  it('refuses extra headers that would replace the signed ones, or inject a line', () => {
    const withHeaders = (headers: Record<string, string>) => ({
      targets: { ops: { url: 'https://x.example/h', secret: SECRET, headers } },
    });
    assert.ok(webhookChannelSchema.safeParse(withHeaders({ 'X-Env': 'prod' })).success);
    assert.ok(!webhookChannelSchema.safeParse(withHeaders({ 'Webhook-Signature': 'v1,x' })).success);
    assert.ok(!webhookChannelSchema.safeParse(withHeaders({ 'X-Env': 'a\r\nX-Evil: 1' })).success);
    assert.ok(
      !webhookChannelSchema.safeParse({ targets: { ops: { url: 'https://x.example/h', secret: SECRET, extra: 1 } } })
        .success,
    );
  });
});

describe('webhook channel', () => {
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await startWebhookReceiver(SECRET);
  });
  after(async () => receiver.close());

  function channel(over: Record<string, unknown> = {}) {
    const config = webhookChannelSchema.parse({
      targets: { ops: { url: receiver.url, secret: SECRET, headers: { 'X-Env': 'test' }, ...over } },
    });
    return createWebhookChannel(config, ctx);
  }

  it('POSTs the delivery object, signed so that a Standard Webhooks consumer verifies it', async () => {
    receiver.received.length = 0;
    const m = message();
    const r = await channel().send(m);
    assert.deepEqual(r, { ok: true });
    const got = receiver.received[0];
    assert.ok(got);
    assert.equal(got.method, 'POST');
    assert.equal(got.verified, true, got.failure);
    assert.equal(got.headers['webhook-id'], m.deliveryId);
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['x-env'], 'test');
    const ts = Number(got.headers['webhook-timestamp']);
    assert.ok(Math.abs(ts - Date.now() / 1000) < 10);
    const body = JSON.parse(got.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), [
      'runId',
      'sessionKey',
      'agentId',
      'hookName',
      'channel',
      'to',
      'text',
      'createdAt',
    ]);
    assert.deepEqual(body, deliveryRecord(m));
  });

  it('keeps webhook-id across retries and signs each attempt afresh; runId null for a heartbeat reply', async () => {
    receiver.received.length = 0;
    receiver.script.push({ status: 503 });
    const ch = channel();
    const m = message({ runId: null, hookName: null });
    const first = await ch.send(m);
    assert.ok(!first.ok && first.retryable && first.status === 503);
    const second = await ch.send(m);
    assert.deepEqual(second, { ok: true });
    assert.equal(receiver.received.length, 2);
    assert.equal(receiver.received[0]?.headers['webhook-id'], receiver.received[1]?.headers['webhook-id']);
    assert.ok(receiver.received.every((x) => x.verified));
    assert.equal((JSON.parse(receiver.received[1]?.body ?? '{}') as { runId: unknown }).runId, null);
  });

  it('maps answers: 410 permanent, 429/5xx retryable with Retry-After, other 4xx permanent, redirects permanent', async () => {
    const ch = channel();
    const cases: Array<[number, Record<string, string>, { retryable: boolean; retryAfterMs?: number }]> = [
      [410, {}, { retryable: false }],
      [429, { 'retry-after': '12' }, { retryable: true, retryAfterMs: 12_000 }],
      [500, {}, { retryable: true }],
      [502, { 'retry-after': '3' }, { retryable: true, retryAfterMs: 3000 }],
      [400, {}, { retryable: false }],
      [401, {}, { retryable: false }],
      [404, {}, { retryable: false }],
      [408, {}, { retryable: true }],
      [302, { location: 'http://elsewhere.example/' }, { retryable: false }],
    ];
    for (const [status, headers, want] of cases) {
      receiver.script.push({ status, headers });
      const r = await ch.send(message());
      assert.ok(!r.ok, `status ${status}`);
      if (r.ok) continue;
      assert.equal(r.retryable, want.retryable, `status ${status}`);
      assert.equal(r.status, status);
      assert.equal(r.retryAfterMs, want.retryAfterMs, `status ${status}`);
      assert.ok(!r.error.includes('Build #42'), 'no message text in errors');
      assert.ok(!r.error.includes(SECRET.slice(6, 20)), 'no secret in errors');
    }
  });

  it('times out retryably', async () => {
    receiver.script.push({ status: 200, delayMs: 1000 });
    const r = await channel({ timeoutMs: 100 }).send(message());
    assert.ok(!r.ok && r.retryable, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /within 100 ms/);
  });

  it('treats a refused connection as retryable, and an unknown target as permanent', async () => {
    const srv = createServer();
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const port = (srv.address() as AddressInfo).port;
    await new Promise<void>((resolve) => srv.close(() => resolve()));
    const ch = createWebhookChannel(
      webhookChannelSchema.parse({
        targets: { down: { url: `http://127.0.0.1:${port}/h?token=abc`, secret: SECRET } },
      }),
      ctx,
    );
    const refused = await ch.send(message({ to: 'down' }));
    assert.ok(!refused.ok && refused.retryable, JSON.stringify(refused));
    assert.match(!refused.ok ? refused.error : '', /ECONNREFUSED/);
    assert.ok(
      !(!refused.ok && refused.error.includes('token=abc')),
      'the URL (which may hold a token) is not in the error',
    );

    const unknown = await ch.send(message({ to: 'nope' }));
    assert.ok(!unknown.ok && unknown.retryable === false);
    assert.match(
      !unknown.ok ? unknown.error : '',
      /must be the name of a configured target \(channels.webhook.targets: .*"down"/,
    );
  });

  it('names the code of a refused connection inside an AggregateError (::1 and 127.0.0.1 both refused)', async () => {
    const config = webhookChannelSchema.parse({ targets: { ops: { url: 'http://localhost:1/h', secret: SECRET } } });
    const ch = createWebhookChannel(config, ctx, {
      transport: async () => {
        throw happyEyeballsRefused(1);
      },
    });
    const r = await ch.send(message());
    assert.ok(!r.ok && r.retryable, JSON.stringify(r));
    assert.equal(!r.ok && r.error, 'webhook target "ops": network error (ECONNREFUSED)');
  });

  it('stops when the caller aborts', async () => {
    receiver.script.push({ status: 200, delayMs: 1000 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await channel().send(message(), ac.signal);
    assert.ok(!r.ok && r.retryable);
  });
});

describe('webhook recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes the name of a configured target, never a URL or an inherited property name', () => {
    const rule = webhookRecipientRule({
      targets: {
        ops: { url: 'http://127.0.0.1:1/h', secret: 'whsec_x', timeoutMs: 1000 },
        'team-a': { url: 'http://127.0.0.1:1/a', secret: 'whsec_x', timeoutMs: 1000 },
      },
    } as never);
    for (const to of ['ops', 'team-a']) assert.equal(rule(to), undefined, to);
    for (const to of ['', 'OPS', 'http://169.254.169.254/latest', '..', 'constructor', '__proto__', 'toString']) {
      assert.equal(rule(to), 'the name of a configured target (channels.webhook.targets: "ops", "team-a")', to);
    }
    assert.equal(
      webhookRecipientRule(undefined)('ops'),
      'the name of a configured target (channels.webhook.targets: none)',
    );
  });
});
