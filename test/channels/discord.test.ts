import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  checkDiscordRecipient,
  createDiscordChannel,
  DISCORD_MAX_TEXT,
  discordNonce,
} from '../../src/channels/discord.js';
import { discordSchema } from '../../src/config/schema/channels.js';
import type { StandIn } from '../support/platforms/base.js';
import { transportCases } from '../support/platforms/conformance.js';
import { DISCORD_TEST_TOKEN, startDiscord, type DiscordMessage } from '../support/platforms/discord.js';
import { assertNoSecrets, outbound, recordingContext } from '../support/platforms/fixtures.js';

const CHANNEL = '1100000000000000001';

describe('discord channel (REST Create Message)', () => {
  let api: StandIn<DiscordMessage>;
  const ctx = recordingContext();
  before(async () => {
    api = await startDiscord({ noAccess: ['1100000000000000099'], retryAfterS: 1.234 });
  });
  after(() => api.close());

  const channel = (over: Record<string, unknown> = {}) =>
    createDiscordChannel(discordSchema.parse({ botToken: DISCORD_TEST_TOKEN, apiBaseUrl: api.url, ...over }), ctx);

  it('a recipient that is not a snowflake is refused without a request: "." and ".." never change the API path', async () => {
    const before = api.requests.length;
    for (const to of ['..', '.', '../users/@me', '']) {
      const r = await channel().send(outbound(to, 'x'));
      assert.ok(!r.ok && !r.retryable, JSON.stringify(r));
      assert.match(!r.ok ? r.error : '', /^discord: `to` must be a channel id: a snowflake/);
    }
    assert.equal(api.requests.length, before, 'nothing was sent');
  });

  it('posts { content } with "Authorization: Bot <token>" and returns the message id', async () => {
    const r = await channel().send(outbound(CHANNEL, 'build #12 is green'));
    assert.equal(r.ok, true);
    const got = api.received.at(-1);
    assert.deepEqual(r.ok && r.platformIds, [got?.id]);
    const req = api.requests.at(-1);
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, `/channels/${CHANNEL}/messages`);
    assert.equal(req?.headers.authorization, `Bot ${DISCORD_TEST_TOKEN}`);
    assert.match(String(req?.headers['user-agent']), /^DiscordBot \(/);
    assert.equal(got?.content, 'build #12 is green');
  });

  it('never lets agent text ping @everyone: allowed_mentions parses nothing', async () => {
    await channel().send(outbound(CHANNEL, '@everyone look'));
    assert.deepEqual(api.received.at(-1)?.allowedMentions, { parse: [] });
  });

  it('a retried chunk (same delivery id) is posted once: nonce + enforce_nonce', async () => {
    const m = outbound(CHANNEL, 'only once please');
    const before = api.received.length;
    const a = await channel().send(m);
    const b = await channel().send(m);
    assert.equal(api.received.length, before + 1);
    assert.deepEqual(a, b);
    assert.equal(api.received.at(-1)?.nonce, discordNonce(m.deliveryId));
    assert.ok(discordNonce(m.deliveryId).length <= 25);
    assert.notEqual(discordNonce('a'), discordNonce('b'));
  });

  it('declares 2000; 2000 characters pass, 2001 are a permanent Invalid Form Body naming the field', async () => {
    assert.equal(channel().maxTextLength, 2000);
    assert.equal(DISCORD_MAX_TEXT, 2000);
    assert.equal((await channel().send(outbound(CHANNEL, 'z'.repeat(2000)))).ok, true);
    const r = await channel().send(outbound(CHANNEL, 'z'.repeat(2001)));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 400);
    assert.match(!r.ok ? r.error : '', /Invalid Form Body \(code 50035\): content: Must be 2000 or fewer/);
  });

  it('a wrong token is permanent (401) without leaking it', async () => {
    const wrong = 'd3JvbmctdG9rZW4.x.y';
    const r = await channel({ botToken: wrong }).send(outbound(CHANNEL, 'hidden'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 401);
    assertNoSecrets(r, [wrong, DISCORD_TEST_TOKEN, 'hidden']);
  });

  it('Unknown Channel (404) and Missing Access (403) are permanent', async () => {
    const unknown = await channel().send(outbound('1100000000000000777', 'hi'));
    assert.ok(!unknown.ok && !unknown.retryable);
    assert.match(!unknown.ok ? unknown.error : '', /Unknown Channel \(code 10003\)/);
    const hidden = await channel().send(outbound('1100000000000000099', 'hi'));
    assert.ok(!hidden.ok && !hidden.retryable);
    assert.equal(!hidden.ok && hidden.status, 403);
  });

  it('429 is retryable with the body retry_after (float seconds) as the wait', async () => {
    api.failNext(1, 'rate_limit');
    const r = await channel().send(outbound(CHANNEL, 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 429);
    assert.equal(!r.ok && r.retryAfterMs, 1234);
  });

  it('5xx is retryable', async () => {
    api.failNext(1, 'server_error');
    const r = await channel().send(outbound(CHANNEL, 'hi'));
    assert.ok(!r.ok && r.retryable);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: CHANNEL,
    secrets: () => [DISCORD_TEST_TOKEN],
  });
});

describe('discord recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of ['1100000000000000001', '81384788765712384', '1'])
      assert.equal(checkDiscordRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat(['abc', '1'.repeat(21), '-1']))
      assert.match(checkDiscordRecipient(to) ?? '', /snowflake, digits only/, JSON.stringify(to));
  });
});
