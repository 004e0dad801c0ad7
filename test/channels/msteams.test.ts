import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  checkTeamsRecipient,
  createMsTeamsChannel,
  defaultTeamsTokenUrl,
  MSTEAMS_MAX_TEXT,
} from '../../src/channels/msteams.js';
import { msteamsSchema } from '../../src/config/schema/channels.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, outbound, recordingContext } from '../support/platforms/fixtures.js';
import {
  MSTEAMS_MAX_REQUEST_BYTES,
  MSTEAMS_TEST_APP_ID,
  MSTEAMS_TEST_APP_PASSWORD,
  MSTEAMS_TEST_CONVERSATION,
  startMsTeams,
  type MsTeamsStandIn,
} from '../support/platforms/msteams.js';

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';

describe('msteams channel (Bot Framework Connector)', () => {
  let api: MsTeamsStandIn;
  const ctx = recordingContext();
  before(async () => {
    api = await startMsTeams({ tenants: [TENANT], notInRoster: ['19:removed@thread.tacv2'] });
  });
  after(() => api.close());

  // A real serviceUrl ends in "/" and carries a region prefix.
  const channel = (over: Record<string, unknown> = {}) =>
    createMsTeamsChannel(
      msteamsSchema.parse({
        appId: MSTEAMS_TEST_APP_ID,
        appPassword: MSTEAMS_TEST_APP_PASSWORD,
        serviceUrl: `${api.url}/amer/`,
        tokenUrl: api.tokenUrl(),
        ...over,
      }),
      ctx,
    );

  it('a recipient that is not a conversation id is refused without a request: "." and ".." never change the API path', async () => {
    const before = api.requests.length;
    for (const to of ['..', '.', '', 'a/b']) {
      const r = await channel().send(outbound(to, 'x'));
      assert.ok(!r.ok && !r.retryable, JSON.stringify(r));
      assert.match(!r.ok ? r.error : '', /^msteams: `to` must be a conversation id/);
    }
    assert.equal(api.requests.length, before, 'nothing was sent (not even a token request)');
  });

  it('gets a client-credentials token, then posts { type:"message", text } to v3/conversations/{id}/activities', async () => {
    const r = await channel().send(outbound(MSTEAMS_TEST_CONVERSATION, 'incident resolved'));
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(r.ok && r.platformIds, [api.received.at(-1)?.id]);
    const tokenReq = api.requests.find((q) => q.path.endsWith('/oauth2/v2.0/token'));
    assert.deepEqual(tokenReq?.body, {
      grant_type: 'client_credentials',
      client_id: MSTEAMS_TEST_APP_ID,
      client_secret: MSTEAMS_TEST_APP_PASSWORD,
      scope: 'https://api.botframework.com/.default',
    });
    const req = api.requests.at(-1);
    assert.equal(req?.path, `/amer/v3/conversations/${encodeURIComponent(MSTEAMS_TEST_CONVERSATION)}/activities`);
    assert.match(String(req?.headers.authorization), /^Bearer eyJ/);
    assert.deepEqual(req?.body, { type: 'message', text: 'incident resolved' });
    assert.equal(api.received.at(-1)?.conversationId, MSTEAMS_TEST_CONVERSATION);
  });

  it('the default token URL is the botframework.com tenant, or the configured tenant', () => {
    assert.equal(
      defaultTeamsTokenUrl(undefined),
      'https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token',
    );
    assert.equal(defaultTeamsTokenUrl(TENANT), `https://login.microsoftonline.com/${TENANT}/oauth2/v2.0/token`);
  });

  it('works with a single-tenant token URL', async () => {
    const r = await channel({ tenantId: TENANT, tokenUrl: api.tokenUrl(TENANT) }).send(
      outbound(MSTEAMS_TEST_CONVERSATION, 'hi'),
    );
    assert.equal(r.ok, true);
  });

  it('caches the token across sends', async () => {
    const ch = channel();
    const before = api.tokenRequests();
    for (const t of ['a', 'b', 'c']) assert.equal((await ch.send(outbound(MSTEAMS_TEST_CONVERSATION, t))).ok, true);
    assert.equal(api.tokenRequests(), before + 1);
  });

  it('a revoked cached token (401) is replaced once and the send succeeds', async () => {
    const ch = channel();
    assert.equal((await ch.send(outbound(MSTEAMS_TEST_CONVERSATION, 'one'))).ok, true);
    api.revokeTokens();
    const r = await ch.send(outbound(MSTEAMS_TEST_CONVERSATION, 'two'));
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(api.received.at(-1)?.text, 'two');
  });

  it('a wrong client secret is permanent (invalid_client) without leaking it', async () => {
    const wrong = 'not-the-secret';
    const r = await channel({ appPassword: wrong }).send(outbound(MSTEAMS_TEST_CONVERSATION, 'sensitive'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 401);
    assert.match(!r.ok ? r.error : '', /invalid_client/);
    assertNoSecrets(r, [wrong, MSTEAMS_TEST_APP_PASSWORD, 'sensitive']);
  });

  it('an unknown app id is permanent', async () => {
    const r = await channel({ appId: '00000000-0000-0000-0000-000000000000' }).send(
      outbound(MSTEAMS_TEST_CONVERSATION, 'hi'),
    );
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /unauthorized_client/);
  });

  it('a throttled or failing token endpoint is retryable', async () => {
    api.failNextToken(1, 'rate_limit');
    const r = await channel().send(outbound(MSTEAMS_TEST_CONVERSATION, 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.retryAfterMs, 5000);
  });

  it('ConversationNotFound (404) and BotNotInConversationRoster (403) are permanent', async () => {
    const missing = await channel().send(outbound('19:nope@thread.tacv2', 'hi'));
    assert.ok(!missing.ok && !missing.retryable);
    assert.match(!missing.ok ? missing.error : '', /ConversationNotFound/);
    const removed = await channel().send(outbound('19:removed@thread.tacv2', 'hi'));
    assert.ok(!removed.ok && !removed.retryable);
    assert.equal(!removed.ok && removed.status, 403);
  });

  it(`declares ${MSTEAMS_MAX_TEXT}: a full chunk of 3-byte characters fits in 28 KB; a larger one is a permanent 413`, async () => {
    assert.equal(channel().maxTextLength, 8000);
    const cjk = '漢'.repeat(MSTEAMS_MAX_TEXT);
    assert.ok(Buffer.byteLength(cjk) < MSTEAMS_MAX_REQUEST_BYTES);
    assert.equal((await channel().send(outbound(MSTEAMS_TEST_CONVERSATION, cjk))).ok, true);
    const r = await channel().send(outbound(MSTEAMS_TEST_CONVERSATION, '漢'.repeat(10_000)));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 413);
  });

  it('429 is retryable with Retry-After; 502 is retryable', async () => {
    api.failNext(1, 'rate_limit');
    const limited = await channel().send(outbound(MSTEAMS_TEST_CONVERSATION, 'hi'));
    assert.ok(!limited.ok && limited.retryable);
    assert.equal(!limited.ok && limited.retryAfterMs, 2000);
    api.failNext(1, 'server_error');
    const bad = await channel().send(outbound(MSTEAMS_TEST_CONVERSATION, 'hi'));
    assert.ok(!bad.ok && bad.retryable);
    assert.equal(!bad.ok && bad.status, 502);
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => channel({ timeoutMs }),
    to: MSTEAMS_TEST_CONVERSATION,
    secrets: () => [MSTEAMS_TEST_APP_PASSWORD],
  });
});

describe('msteams recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of [
      '19:abc123@thread.tacv2',
      '19:meeting_Zm9v@thread.v2',
      'a:1xYz_-AbC',
      '8:orgid:0f1e-2d3c',
      '29:1abc;messageid=1700000000000',
    ])
      assert.equal(checkTeamsRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat([
      'x',
      '19:a/b',
      '19:a%2e',
      'a:b c',
      ':x',
    ]))
      assert.match(checkTeamsRecipient(to) ?? '', /conversation id like 19:/, JSON.stringify(to));
  });
});
