import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkWhatsAppRecipient, createWhatsAppChannel, WHATSAPP_MAX_TEXT } from '../../src/channels/whatsapp.js';
import { whatsappSchema } from '../../src/config/schema/channels.js';
import type { StandIn } from '../support/platforms/base.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, outbound, recordingContext } from '../support/platforms/fixtures.js';
import {
  startWhatsApp,
  WHATSAPP_TEST_PHONE_NUMBER_ID,
  WHATSAPP_TEST_TOKEN,
  type WhatsAppMessage,
} from '../support/platforms/whatsapp.js';

describe('whatsapp channel (Cloud API messages)', () => {
  let api: StandIn<WhatsAppMessage>;
  const ctx = recordingContext();
  before(async () => {
    api = await startWhatsApp();
  });
  after(() => api.close());

  const channel = (over: Record<string, unknown> = {}) =>
    createWhatsAppChannel(
      whatsappSchema.parse({
        accessToken: WHATSAPP_TEST_TOKEN,
        phoneNumberId: WHATSAPP_TEST_PHONE_NUMBER_ID,
        apiBaseUrl: api.url,
        ...over,
      }),
      ctx,
    );

  it('posts a text message to /{version}/{phoneNumberId}/messages with the Bearer token; returns the wamid', async () => {
    const r = await channel().send(outbound('+15551234567', 'your order shipped'));
    assert.equal(r.ok, true);
    assert.deepEqual(r.ok && r.platformIds, [api.received.at(-1)?.id]);
    const req = api.requests.at(-1);
    assert.equal(req?.path, `/v21.0/${WHATSAPP_TEST_PHONE_NUMBER_ID}/messages`);
    assert.equal(req?.headers.authorization, `Bearer ${WHATSAPP_TEST_TOKEN}`);
    assert.deepEqual(req?.body, {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '+15551234567',
      type: 'text',
      text: { body: 'your order shipped' },
    });
  });

  it('uses the configured apiVersion', async () => {
    await channel({ apiVersion: 'v19.0' }).send(outbound('15551234567', 'hi'));
    assert.match(String(api.requests.at(-1)?.path), /^\/v19\.0\//);
  });

  it('declares 4096; 4097 characters are a permanent (#100) error', async () => {
    assert.equal(channel().maxTextLength, 4096);
    assert.equal(WHATSAPP_MAX_TEXT, 4096);
    assert.equal((await channel().send(outbound('15551234567', 'w'.repeat(4096)))).ok, true);
    const r = await channel().send(outbound('15551234567', 'w'.repeat(4097)));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /code 100: \(#100\) Param text\['body'\] must be at most 4096/);
  });

  it('an invalid token (190) is permanent and says so, without the token', async () => {
    const wrong = 'EAAGwrongtokenZDZD';
    const r = await channel({ accessToken: wrong }).send(outbound('15551234567', 'confidential'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 401);
    assert.match(!r.ok ? r.error : '', /code 190.*access token is invalid/);
    assertNoSecrets(r, [wrong, WHATSAPP_TEST_TOKEN, 'confidential']);
  });

  it('a wrong phone number id is permanent', async () => {
    const r = await channel({ phoneNumberId: '999' }).send(outbound('15551234567', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /Unsupported post request/);
  });

  it('a recipient that may not be messaged (131030) is permanent', async () => {
    const r = await channel().send(outbound('+15550000000', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /131030/);
  });

  it('the rate-limit error 130429 is retryable although Graph sends it with HTTP 400', async () => {
    api.failNext(1, 'rate_limit');
    const r = await channel().send(outbound('15551234567', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 400);
    assert.match(!r.ok ? r.error : '', /130429/);
  });

  it('131000 "something went wrong" (HTTP 500) is retryable', async () => {
    api.failNext(1, 'server_error');
    const r = await channel().send(outbound('15551234567', 'hi'));
    assert.ok(!r.ok && r.retryable);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: '15551234567',
    secrets: () => [WHATSAPP_TEST_TOKEN],
  });
});

describe('whatsapp recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of ['+15551234567', '15551234567', '+1 (555) 123-4567', '4915123456789'])
      assert.equal(checkWhatsAppRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat([
      '+',
      '12345',
      'abc',
      '+1555123456789012345',
    ]))
      assert.match(checkWhatsAppRecipient(to) ?? '', /phone number in international format/, JSON.stringify(to));
  });
});
