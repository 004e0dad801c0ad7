import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  blueBubblesTempGuid,
  checkIMessageRecipient,
  createIMessageChannel,
  IMESSAGE_MAX_TEXT,
  toChatGuid,
} from '../../src/channels/imessage.js';
import { imessageSchema } from '../../src/config/schema/channels.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, closedPortUrl, outbound, recordingContext } from '../support/platforms/fixtures.js';
import { BLUEBUBBLES_TEST_PASSWORD, startIMessage, type IMessageStandIn } from '../support/platforms/imessage.js';

describe('imessage channel (BlueBubbles /api/v1/message/text)', () => {
  let api: IMessageStandIn;
  const ctx = recordingContext();
  before(async () => {
    api = await startIMessage();
  });
  after(() => api.close());

  const channel = (over: Record<string, unknown> = {}) =>
    createIMessageChannel(
      imessageSchema.parse({ serverUrl: api.url, password: BLUEBUBBLES_TEST_PASSWORD, ...over }),
      ctx,
    );

  it('posts { chatGuid, tempGuid, message, method } with the password in the query; returns the message guid', async () => {
    const m = outbound('iMessage;-;+15551234567', 'dinner is ready');
    const r = await channel().send(m);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(r.ok && r.platformIds, [api.received.at(-1)?.guid]);
    const req = api.requests.at(-1);
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, '/api/v1/message/text');
    assert.equal(req?.query.get('password'), BLUEBUBBLES_TEST_PASSWORD, 'password survives URL encoding');
    assert.deepEqual(req?.body, {
      chatGuid: 'iMessage;-;+15551234567',
      tempGuid: blueBubblesTempGuid(m.deliveryId),
      message: 'dinner is ready',
      method: 'apple-script',
    });
  });

  it('turns a bare address into the direct iMessage chat, and keeps full guids (groups, SMS) as they are', async () => {
    assert.equal(toChatGuid('+15551234567'), 'iMessage;-;+15551234567');
    assert.equal(toChatGuid('friend@icloud.com'), 'iMessage;-;friend@icloud.com');
    assert.equal(toChatGuid('iMessage;+;chat123456789'), 'iMessage;+;chat123456789');
    assert.equal(toChatGuid('SMS;-;+15551234567'), 'SMS;-;+15551234567');
    const r = await channel().send(outbound('friend@icloud.com', 'hi'));
    assert.equal(r.ok, true);
    assert.equal(api.received.at(-1)?.chatGuid, 'iMessage;-;friend@icloud.com');
  });

  it('uses the configured method', async () => {
    await channel({ method: 'private-api' }).send(outbound('iMessage;+;chat123456789', 'group hello'));
    assert.equal(api.received.at(-1)?.method, 'private-api');
  });

  it('declares its chosen limit', () => {
    assert.equal(channel().maxTextLength, IMESSAGE_MAX_TEXT);
    assert.equal(IMESSAGE_MAX_TEXT, 10_000);
  });

  it('a wrong password is permanent (401) and neither password nor URL appears in the result or logs', async () => {
    const wrong = 'wrong-bb-password';
    const r = await channel({ password: wrong }).send(outbound('+15551234567', 'private'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 401);
    assertNoSecrets(r, [wrong, BLUEBUBBLES_TEST_PASSWORD, 'password=', 'private']);
    assertNoSecrets(ctx.logs, [wrong, BLUEBUBBLES_TEST_PASSWORD, 'password=']);
  });

  it('an unknown server is retryable and the error holds no URL', async () => {
    const r = await channel({ serverUrl: await closedPortUrl() }).send(outbound('+15551234567', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assertNoSecrets(r, [BLUEBUBBLES_TEST_PASSWORD, 'password', '127.0.0.1']);
  });

  it('a chat Messages.app cannot send to (500 iMessage Error) is retryable, to be dead-lettered after the retries', async () => {
    const r = await channel().send(outbound('iMessage;-;+15550000000', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 500);
    assert.match(!r.ok ? r.error : '', /Chat does not exist/);
  });

  it('"already queued" for the same tempGuid (an earlier attempt still sending) is retryable, not a failure', async () => {
    const m = outbound('+15551234567', 'slow one');
    api.markInFlight(blueBubblesTempGuid(m.deliveryId));
    const r = await channel().send(m);
    assert.ok(!r.ok && r.retryable);
    assert.match(!r.ok ? r.error : '', /still being sent/);
  });

  it('a server-side send failure is retryable', async () => {
    api.failNext(1, 'server_error');
    const r = await channel().send(outbound('+15551234567', 'hi'));
    assert.ok(!r.ok && r.retryable);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: '+15551234567',
    secrets: () => [BLUEBUBBLES_TEST_PASSWORD, 'password='],
  });
});

describe('imessage recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of [
      'iMessage;-;+15551234567',
      'iMessage;+;chat123456',
      'SMS;-;+15551234567',
      '+15551234567',
      'someone@icloud.com',
    ])
      assert.equal(checkIMessageRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat([
      'someone',
      'a@b',
      'iMessage;x;1',
    ]))
      assert.match(checkIMessageRecipient(to) ?? '', /chat guid like iMessage;-;\+15551234567/, JSON.stringify(to));
  });
});
