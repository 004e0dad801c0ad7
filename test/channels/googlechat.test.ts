import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  checkGoogleChatRecipient,
  createGoogleChatChannel,
  GOOGLECHAT_MAX_TEXT,
  requestIdFor,
  toSpaceName,
} from '../../src/channels/googlechat.js';
import { ChannelError } from '../../src/channels/types.js';
import { googlechatSchema } from '../../src/config/schema/channels.js';
import { transportCases } from '../support/platforms/conformance.js';
import { assertNoSecrets, outbound, recordingContext } from '../support/platforms/fixtures.js';
import {
  createServiceAccountKey,
  GOOGLECHAT_TEST_SPACE,
  startGoogleChat,
  type GoogleChatStandIn,
} from '../support/platforms/googlechat.js';
import { tempDir } from '../support/temp-dir.js';

const STATIC = 'ya29.static-test-token';

describe('googlechat channel (Chat API spaces.messages.create, app auth)', () => {
  const sa = createServiceAccountKey();
  const stranger = createServiceAccountKey('stranger@other.iam.gserviceaccount.com');
  let api: GoogleChatStandIn;
  let dir: string;
  const ctx = recordingContext();
  before(async () => {
    api = await startGoogleChat({
      serviceAccounts: [{ clientEmail: sa.key.client_email ?? '', publicKey: sa.publicKey }],
      staticTokens: [STATIC],
      spacesWithoutApp: ['spaces/AAAAnoapp'],
    });
    dir = tempDir('hookgate-gchat-');
  });
  after(() => api.close());

  const withKey = (over: Record<string, unknown> = {}) =>
    createGoogleChatChannel(
      googlechatSchema.parse({
        serviceAccount: JSON.stringify(sa.key),
        apiBaseUrl: api.url,
        tokenUrl: api.tokenUrl,
        ...over,
      }),
      ctx,
    );
  const withStatic = (over: Record<string, unknown> = {}) =>
    createGoogleChatChannel(
      googlechatSchema.parse({ accessToken: STATIC, apiBaseUrl: api.url, tokenUrl: api.tokenUrl, ...over }),
      ctx,
    );

  it('gets a token with a signed JWT (verified by the stand-in) and posts { text } to /v1/{space}/messages', async () => {
    const tokensBefore = api.tokenRequests();
    const m = outbound(GOOGLECHAT_TEST_SPACE, 'weekly report ready');
    const r = await withKey().send(m);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(r.ok && r.platformIds, [api.received.at(-1)?.name]);
    assert.equal(api.tokenRequests(), tokensBefore + 1);
    const tokenReq = api.requests.find((q) => q.path === '/token');
    assert.match(String(tokenReq?.headers['content-type']), /^application\/x-www-form-urlencoded/);
    const req = api.requests.at(-1);
    assert.equal(req?.path, `/v1/${GOOGLECHAT_TEST_SPACE}/messages`);
    assert.equal(req?.query.get('requestId'), requestIdFor(m.deliveryId));
    assert.match(String(req?.headers.authorization), /^Bearer ya29\./);
    assert.deepEqual(req?.body, { text: 'weekly report ready' });
  });

  it('caches the token: several sends, one token request', async () => {
    const ch = withKey();
    const before = api.tokenRequests();
    const results = await Promise.all([1, 2, 3].map((i) => ch.send(outbound(GOOGLECHAT_TEST_SPACE, `n${i}`))));
    await ch.send(outbound(GOOGLECHAT_TEST_SPACE, 'n4'));
    assert.ok(results.every((r) => r.ok));
    assert.equal(api.tokenRequests(), before + 1);
  });

  it('refreshes a token that is about to expire', async () => {
    const shortLived = await startGoogleChat({
      serviceAccounts: [{ clientEmail: sa.key.client_email ?? '', publicKey: sa.publicKey }],
      tokenLifetimeS: 30, // inside the 60 s refresh margin
    });
    try {
      const ch = createGoogleChatChannel(
        googlechatSchema.parse({ serviceAccount: sa.key, apiBaseUrl: shortLived.url, tokenUrl: shortLived.tokenUrl }),
        ctx,
      );
      assert.equal((await ch.send(outbound(GOOGLECHAT_TEST_SPACE, 'a'))).ok, true);
      assert.equal((await ch.send(outbound(GOOGLECHAT_TEST_SPACE, 'b'))).ok, true);
      assert.equal(shortLived.tokenRequests(), 2);
    } finally {
      await shortLived.close();
    }
  });

  it('a revoked cached token (401) is replaced once and the send succeeds', async () => {
    const ch = withKey();
    assert.equal((await ch.send(outbound(GOOGLECHAT_TEST_SPACE, 'first'))).ok, true);
    api.revokeTokens();
    const before = api.tokenRequests();
    const r = await ch.send(outbound(GOOGLECHAT_TEST_SPACE, 'second'));
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(api.tokenRequests(), before + 1);
    assert.equal(api.received.at(-1)?.text, 'second');
  });

  it('a key Google does not know (invalid_grant) is permanent and leaks no key material', async () => {
    const r = await withKey({ serviceAccount: JSON.stringify(stranger.key) }).send(
      outbound(GOOGLECHAT_TEST_SPACE, 'text'),
    );
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 400);
    assert.match(!r.ok ? r.error : '', /invalid_grant/);
    assertNoSecrets(r, ['PRIVATE KEY', stranger.key.private_key ?? '', 'text']);
  });

  it('a failing token endpoint (503) is retryable', async () => {
    api.failNextToken(1, 'server_error');
    const r = await withKey().send(outbound(GOOGLECHAT_TEST_SPACE, 'hi'));
    assert.ok(!r.ok && r.retryable);
    assert.equal(!r.ok && r.status, 503);
  });

  it('a wrong static token is permanent (401, not retried) without leaking it', async () => {
    const before = api.requests.length;
    const r = await withStatic({ accessToken: 'ya29.wrong' }).send(outbound(GOOGLECHAT_TEST_SPACE, 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(!r.ok && r.status, 401);
    assert.equal(api.requests.length, before + 1);
    assertNoSecrets(r, ['ya29.wrong']);
  });

  it('an unknown space (404) and a space without the app (403) are permanent, with hints', async () => {
    const unknown = await withStatic().send(outbound('spaces/AAAAunknown', 'hi'));
    assert.ok(!unknown.ok && !unknown.retryable);
    assert.match(!unknown.ok ? unknown.error : '', /NOT_FOUND.*not a member/);
    const noApp = await withStatic().send(outbound('spaces/AAAAnoapp', 'hi'));
    assert.ok(!noApp.ok && !noApp.retryable);
    assert.match(!noApp.ok ? noApp.error : '', /PERMISSION_DENIED.*add the Chat app/);
  });

  it('accepts a bare space id and rejects a `to` that is not a space, without calling the API', async () => {
    assert.equal(toSpaceName('AAAAhookgate1'), GOOGLECHAT_TEST_SPACE);
    assert.equal(toSpaceName('spaces/AAAA/messages/x'), undefined);
    assert.equal((await withStatic().send(outbound('AAAAhookgate1', 'bare'))).ok, true);
    const before = api.requests.length;
    const r = await withStatic().send(outbound('not a space', 'hi'));
    assert.ok(!r.ok && !r.retryable);
    assert.equal(api.requests.length, before);
  });

  it('declares 4096; 4097 characters are a permanent INVALID_ARGUMENT', async () => {
    assert.equal(withStatic().maxTextLength, 4096);
    assert.equal(GOOGLECHAT_MAX_TEXT, 4096);
    assert.equal((await withStatic().send(outbound(GOOGLECHAT_TEST_SPACE, 'g'.repeat(4096)))).ok, true);
    const r = await withStatic().send(outbound(GOOGLECHAT_TEST_SPACE, 'g'.repeat(4097)));
    assert.ok(!r.ok && !r.retryable);
    assert.match(!r.ok ? r.error : '', /INVALID_ARGUMENT/);
  });

  it('a retried chunk (same delivery id) is created once: requestId', async () => {
    const m = outbound(GOOGLECHAT_TEST_SPACE, 'exactly once');
    const before = api.received.length;
    const a = await withStatic().send(m);
    const b = await withStatic().send(m);
    assert.deepEqual(a, b);
    assert.equal(api.received.length, before + 1);
  });

  it('429 RESOURCE_EXHAUSTED and 503 UNAVAILABLE are retryable', async () => {
    api.failNext(1, 'rate_limit');
    const limited = await withStatic().send(outbound(GOOGLECHAT_TEST_SPACE, 'hi'));
    assert.ok(!limited.ok && limited.retryable);
    assert.equal(!limited.ok && limited.status, 429);
    api.failNext(1, 'server_error');
    const down = await withStatic().send(outbound(GOOGLECHAT_TEST_SPACE, 'hi'));
    assert.ok(!down.ok && down.retryable);
  });

  it('reads serviceAccountFile relative to the config directory; a missing file fails at creation, by key path', async () => {
    writeFileSync(join(dir, 'sa.json'), JSON.stringify(sa.key));
    const ch = createGoogleChatChannel(
      googlechatSchema.parse({ serviceAccountFile: 'sa.json', apiBaseUrl: api.url, tokenUrl: api.tokenUrl }),
      recordingContext(dir),
    );
    assert.equal((await ch.send(outbound(GOOGLECHAT_TEST_SPACE, 'from file'))).ok, true);
    assert.throws(
      () =>
        createGoogleChatChannel(googlechatSchema.parse({ serviceAccountFile: 'missing.json' }), recordingContext(dir)),
      (err: unknown) =>
        err instanceof ChannelError && /serviceAccountFile: cannot read .*missing\.json \(ENOENT\)/.test(err.message),
    );
  });

  it('a key whose private_key is not a usable PEM fails at creation without echoing it', () => {
    const broken = { ...sa.key, private_key: '-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----\n' };
    assert.throws(
      () => createGoogleChatChannel(googlechatSchema.parse({ serviceAccount: broken }), ctx),
      (err: unknown) => err instanceof ChannelError && !String((err as Error).message).includes('not-a-key'),
    );
  });

  transportCases({
    standIn: () => api,
    channel: (timeoutMs) => withStatic({ timeoutMs }),
    to: GOOGLECHAT_TEST_SPACE,
    secrets: () => [STATIC],
  });
});

describe('googlechat recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of ['spaces/AAAAxxxx', 'AAAA_b-1']) assert.equal(checkGoogleChatRecipient(to), undefined, to);
    for (const to of ['', '.', '..', 'a/b', '../x', '1?x=1', '#1', '1 2', '1\n2'].concat([
      'spaces/',
      'spaces/a/messages',
      'users/123',
    ]))
      assert.match(checkGoogleChatRecipient(to) ?? '', /space name like spaces\/AAAAxxxx/, JSON.stringify(to));
  });
});
