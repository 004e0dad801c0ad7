import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkTelegramRecipient, createTelegramChannel, TELEGRAM_MAX_TEXT } from '../../src/channels/telegram.js';
import { telegramSchema } from '../../src/config/schema/channels.js';
import type { StandIn } from '../support/platforms/base.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, closedPortUrl, outbound, recordingContext } from '../support/platforms/fixtures.js';
import { startTelegram, TELEGRAM_TEST_TOKEN, type TelegramMessage } from '../support/platforms/telegram.js';

describe('telegram channel (Bot API sendMessage)', () => {
  let api: StandIn<TelegramMessage>;
  const ctx = recordingContext();
  before(async () => {
    api = await startTelegram({ blocked: ['666'], migrated: { '-4242': '-1004242' }, retryAfterS: 7 });
  });
  after(() => api.close());

  const channel = (over: Record<string, unknown> = {}) =>
    createTelegramChannel(telegramSchema.parse({ botToken: TELEGRAM_TEST_TOKEN, apiBaseUrl: api.url, ...over }), ctx);

  it('posts { chat_id, text } as JSON to /bot<token>/sendMessage and returns the message id', async () => {
    const r = await channel().send(outbound('1001', 'hello from hookgate'));
    assert.deepEqual(r, { ok: true, platformIds: ['1'] });
    const req = api.requests.at(-1);
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, `/bot${TELEGRAM_TEST_TOKEN}/sendMessage`);
    assert.match(String(req?.headers['content-type']), /^application\/json/);
    assert.deepEqual(req?.body, { chat_id: '1001', text: 'hello from hookgate' });
    assert.deepEqual(api.received.at(-1), { chatId: '1001', text: 'hello from hookgate', messageId: 1 });
  });

  it('declares 4096 characters; exactly 4096 is accepted, one more is rejected by the API as permanent', async () => {
    assert.equal(channel().maxTextLength, 4096);
    assert.equal(TELEGRAM_MAX_TEXT, 4096);
    const ok = await channel().send(outbound('1001', 'x'.repeat(4096)));
    assert.equal(ok.ok, true);
    const long = 'y'.repeat(4097);
    const r = await channel().send(outbound('1001', long));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 400);
    assert.match(!r.ok ? r.error : '', /message is too long/);
    assertNoSecrets(r, [long]);
  });

  it('a wrong token is permanent (401) and the token appears nowhere', async () => {
    const wrong = '999:wrong-token';
    const r = await channel({ botToken: wrong }).send(outbound('1001', 'secret text'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 401);
    assert.match(!r.ok ? r.error : '', /Unauthorized/);
    assertNoSecrets(r, [wrong, TELEGRAM_TEST_TOKEN, 'secret text']);
  });

  it('an unknown chat is permanent', async () => {
    const r = await channel().send(outbound('424242', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /chat not found/);
  });

  it('a user who blocked the bot is permanent (403)', async () => {
    const r = await channel().send(outbound('666', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 403);
  });

  it('a group upgraded to a supergroup is permanent and names the new chat id', async () => {
    const r = await channel().send(outbound('-4242', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /-1004242/);
  });

  it('429 is retryable with parameters.retry_after as the wait', async () => {
    api.failNext(1, 'rate_limit');
    const r = await channel().send(outbound('1001', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 429);
    assert.equal(!r.ok && r.retryAfterMs, 7000);
  });

  it('5xx is retryable', async () => {
    api.failNext(1, 'server_error');
    const r = await channel().send(outbound('1001', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 500);
    assert.equal(!r.ok && r.retryAfterMs, undefined);
  });

  it('5xx with a Retry-After header waits as asked (seconds or an HTTP date)', async () => {
    api.failNext(1, 'server_error', { 'retry-after': '3' });
    const r = await channel().send(outbound('1001', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 500);
    assert.equal(!r.ok && r.retryAfterMs, 3000);

    api.failNext(1, 'server_error', { 'retry-after': new Date(Date.now() + 60_000).toUTCString() });
    const dated = await channel().send(outbound('1001', 'hi'));
    assert.ok(
      !dated.ok && dated.retryAfterMs !== undefined && dated.retryAfterMs > 55_000 && dated.retryAfterMs <= 60_000,
      JSON.stringify(dated),
    );
  });

  it('a server that is not there is retryable, and the error does not contain the URL (which holds the token)', async () => {
    const r = await channel({ apiBaseUrl: await closedPortUrl() }).send(outbound('1001', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assertNoSecrets(r, [TELEGRAM_TEST_TOKEN, 'bot']);
    assertNoSecrets(ctx.logs, [TELEGRAM_TEST_TOKEN]);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: '1001',
    secrets: () => [TELEGRAM_TEST_TOKEN],
  });
});

describe('telegram recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of ['123456789', '-1001234567890', '@my_channel'])
      assert.equal(checkTelegramRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat([
      'alerts-chat',
      '@',
      '@a b',
      '12a',
    ]))
      assert.match(checkTelegramRecipient(to) ?? '', /chat id like 123456789/, JSON.stringify(to));
  });
});
