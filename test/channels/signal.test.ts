import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkSignalRecipient, createSignalChannel, SIGNAL_MAX_TEXT } from '../../src/channels/signal.js';
import { signalSchema } from '../../src/config/schema/channels.js';
import type { StandIn } from '../support/platforms/base.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, outbound, recordingContext } from '../support/platforms/fixtures.js';
import { SIGNAL_TEST_NUMBER, startSignal, type SignalMessage } from '../support/platforms/signal.js';

const PEER = '+15552223333';
const GROUP = 'group.aG9va2dhdGUtdGVzdC1ncm91cA==';

describe('signal channel (signal-cli-rest-api /v2/send)', () => {
  let api: StandIn<SignalMessage>;
  const ctx = recordingContext();
  before(async () => {
    api = await startSignal();
  });
  after(() => api.close());

  const channel = (over: Record<string, unknown> = {}) =>
    createSignalChannel(signalSchema.parse({ apiBaseUrl: api.url, number: SIGNAL_TEST_NUMBER, ...over }), ctx);

  it('posts { message, number, recipients: [to] } to /v2/send and returns the timestamp', async () => {
    const r = await channel().send(outbound(PEER, 'backup done'));
    assert.equal(r.ok, true);
    assert.deepEqual(r.ok && r.platformIds, [api.received.at(-1)?.timestamp]);
    const req = api.requests.at(-1);
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, '/v2/send');
    assert.deepEqual(req?.body, { message: 'backup done', number: SIGNAL_TEST_NUMBER, recipients: [PEER] });
  });

  it('sends to a group by its group.<id>', async () => {
    const r = await channel().send(outbound(GROUP, 'to the group'));
    assert.equal(r.ok, true);
    assert.equal(api.received.at(-1)?.recipient, GROUP);
  });

  it('declares 2000 characters (inline-message size)', () => {
    assert.equal(channel().maxTextLength, 2000);
    assert.equal(SIGNAL_MAX_TEXT, 2000);
  });

  it('an unregistered recipient is permanent', async () => {
    const r = await channel().send(outbound('+15559999999', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 400);
    assert.match(!r.ok ? r.error : '', /Unregistered user/);
  });

  it('an unknown group is permanent', async () => {
    const r = await channel().send(outbound('group.bm9wZQ==', 'hi'));
    assert.ok(!r.ok && !r.retryable);
  });

  it('a sending number not registered with signal-cli is permanent', async () => {
    const r = await channel({ number: '+15550009999' }).send(outbound(PEER, 'msg body'));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /is not registered/);
    assertNoSecrets(r, ['msg body']);
  });

  it('429 (rate limit with challenge) is retryable and says how to lift it', async () => {
    api.failNext(1, 'rate_limit');
    const r = await channel().send(outbound(PEER, 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 429);
    assert.match(!r.ok ? r.error : '', /rate-limit challenge/);
  });

  it('429 with a Retry-After header waits as asked', async () => {
    api.failNext(1, 'rate_limit', { 'retry-after': '4' });
    const r = await channel().send(outbound(PEER, 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 429);
    assert.equal(!r.ok && r.retryAfterMs, 4000);
  });

  it("signal-cli's network failure (a 400 with an IO error) is retryable", async () => {
    api.failNext(1, 'server_error');
    const r = await channel().send(outbound(PEER, 'hi'));
    assert.ok(!r.ok && r.retryable, JSON.stringify(r));
    assert.equal(!r.ok && r.status, 400);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: PEER,
    secrets: () => [],
    hintedFailure: 'rate_limit',
  });
});

describe('signal recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of [
      '+15551234567',
      '0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
      'PNI:0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
      'alice.42',
      'u:alice.42',
      'group.ZmFrZWdyb3VwaWQ=',
    ])
      assert.equal(checkSignalRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat([
      '15551234567',
      'alice',
      'group.',
      'group.a b',
    ]))
      assert.match(
        checkSignalRecipient(to) ?? '',
        /phone number like \+15551234567, an account uuid/,
        JSON.stringify(to),
      );
  });
});
