import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkSlackRecipient, createSlackChannel, SLACK_MAX_TEXT } from '../../src/channels/slack.js';
import { slackSchema } from '../../src/config/schema/channels.js';
import type { StandIn } from '../support/platforms/base.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, outbound, recordingContext } from '../support/platforms/fixtures.js';
import { SLACK_TEST_TOKEN, startSlack, type SlackMessage } from '../support/platforms/slack.js';

describe('slack channel (Web API chat.postMessage)', () => {
  let api: StandIn<SlackMessage>;
  const ctx = recordingContext();
  before(async () => {
    api = await startSlack({ notInChannel: ['C0NOTINVITED'], archived: ['C0ARCHIVED'], retryAfterS: 3 });
  });
  after(() => api.close());

  const channel = (over: Record<string, unknown> = {}) =>
    createSlackChannel(slackSchema.parse({ botToken: SLACK_TEST_TOKEN, apiBaseUrl: api.url, ...over }), ctx);

  it('posts { channel, text } with the bot token as Bearer and returns the message ts', async () => {
    const r = await channel().send(outbound('C0123456789', 'deploy finished'));
    assert.equal(r.ok, true);
    assert.deepEqual(r.ok && r.platformIds, [api.received.at(-1)?.ts]);
    const req = api.requests.at(-1);
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, '/chat.postMessage');
    assert.equal(req?.headers.authorization, `Bearer ${SLACK_TEST_TOKEN}`);
    assert.match(String(req?.headers['content-type']), /^application\/json; charset=utf-8$/);
    assert.deepEqual(req?.body, { channel: 'C0123456789', text: 'deploy finished' });
  });

  it("splits at 4000 (Slack's recommendation) although the API takes up to 40,000", async () => {
    assert.equal(channel().maxTextLength, 4000);
    assert.equal(SLACK_MAX_TEXT, 4000);
    assert.equal((await channel().send(outbound('C0123456789', 'a'.repeat(40_000)))).ok, true);
    const r = await channel().send(outbound('C0123456789', 'a'.repeat(40_001)));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /msg_too_long/);
  });

  it('invalid_auth (HTTP 200, ok:false) is permanent and does not leak the token', async () => {
    const wrong = 'xoxb-wrong-token-value';
    const r = await channel({ botToken: wrong }).send(outbound('C0123456789', 'private words'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 200);
    assert.match(!r.ok ? r.error : '', /invalid_auth/);
    assertNoSecrets(r, [wrong, SLACK_TEST_TOKEN, 'private words']);
  });

  it('channel_not_found, not_in_channel and is_archived are permanent, with a hint', async () => {
    for (const [to, code, hint] of [
      ['C0UNKNOWN', 'channel_not_found', /unknown conversation/],
      ['C0NOTINVITED', 'not_in_channel', /invite the bot/],
      ['C0ARCHIVED', 'is_archived', /archived/],
    ] as const) {
      const r = await channel().send(outbound(to, 'hi'));
      assert.ok(!r.ok && !r.retryable, code);
      assert.match(!r.ok ? r.error : '', new RegExp(code));
      assert.match(!r.ok ? r.error : '', hint);
    }
  });

  it('HTTP 429 is retryable with Retry-After as the wait', async () => {
    api.failNext(1, 'rate_limit');
    const r = await channel().send(outbound('C0123456789', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 429);
    assert.equal(!r.ok && r.retryAfterMs, 3000);
  });

  it('internal_error (HTTP 200, ok:false) is retryable', async () => {
    api.failNext(1, 'server_error');
    const r = await channel().send(outbound('C0123456789', 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.match(!r.ok ? r.error : '', /internal_error/);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: 'C0123456789',
    secrets: () => [SLACK_TEST_TOKEN],
  });
});

describe('slack recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of ['C0123ABCD', 'U024BE7LH', 'D42', 'G1', 'W0123', '#general', 'general', '#dev-ops_2', '#канал'])
      assert.equal(checkSlackRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '1 2', '1\n2'].concat(['#', '#General Chat', '#a,b']))
      assert.match(checkSlackRecipient(to) ?? '', /conversation id \(C…, G…, D…\)/, JSON.stringify(to));
  });
});
