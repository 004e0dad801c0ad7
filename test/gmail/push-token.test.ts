/** The OIDC check of a Gmail push (src/hooks/gmail-push.ts), against a JWKS server with keys generated here. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodePushEnvelope, verifyPushToken } from '../../src/hooks/gmail-push.js';
import { type GoogleStandin, pushEnvelope, SERVICE_ACCOUNT, startGoogleStandin } from '../support/gmail-standin.js';

const AUDIENCE = 'https://hookgate.test/hooks/gmail-push';

describe('gmail push OIDC token', () => {
  let google: GoogleStandin;
  let gmail: { audience: string; serviceAccountEmail: string; jwksUrl: string };
  before(async () => {
    google = await startGoogleStandin();
    gmail = { audience: AUDIENCE, serviceAccountEmail: SERVICE_ACCOUNT, jwksUrl: google.jwksUrl };
  });
  after(() => google.close());
  const check = async (token: string | undefined, now = Date.now()) =>
    verifyPushToken(token === undefined ? {} : { authorization: `Bearer ${token}` }, gmail, now);

  it('accepts Google-signed tokens with either issuer form; the key set is fetched once and cached', async () => {
    assert.deepEqual(await check(await google.token()), { ok: true });
    assert.deepEqual(await check(await google.token({ iss: 'accounts.google.com' })), { ok: true });
    assert.deepEqual(await check(await google.token({ email_verified: 'true' })), { ok: true });
    assert.equal(google.calls.filter((c) => c === 'GET /jwks').length, 1);
  });

  it('refuses, naming the failed check: forged signature, wrong aud, iss, email, email_verified, expired, none', async () => {
    const cases: Array<[string, Promise<string> | undefined, RegExp]> = [
      ['forged', google.token({}, { forge: true }), /signature/i],
      ['aud', google.token({ aud: 'https://other/' }), /aud/],
      ['iss', google.token({ iss: 'https://accounts.evil.com' }), /iss/],
      ['email', google.token({ email: 'x@proj.iam.gserviceaccount.com' }), /email is not/],
      ['email_verified', google.token({ email_verified: false }), /not verified/],
      ['expired', google.token({}, { expiresIn: -120 }), /expired/i],
      ['none', undefined, /no Bearer/],
    ];
    for (const [name, token, reason] of cases) {
      const r = await check(token === undefined ? undefined : await token);
      assert.equal(r.ok, false, name);
      assert.match((r as { reason: string }).reason, reason, name);
    }
    assert.equal((await check('not.a.jwt')).ok, false);
  });

  it('allows a small clock skew on exp (60 s), not more', async () => {
    const token = await google.token({}, { expiresIn: 10 });
    assert.deepEqual(await check(token, Date.now() + 50_000), { ok: true });
    assert.equal((await check(token, Date.now() + 120_000)).ok, false);
  });

  it('a key set that cannot be fetched is named with the network cause, not only an error class', async () => {
    const token = await google.token();
    // A port nothing listens on (one just freed): the connection is refused.
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const unreachable = { ...gmail, jwksUrl: `http://127.0.0.1:${port}/jwks` };
    const r = await verifyPushToken({ authorization: `Bearer ${token}` }, unreachable, Date.now());
    assert.equal(r.ok, false);
    assert.match((r as { reason: string }).reason, /cannot fetch the JWKS \(hooks\.gmail\.jwksUrl\): \w+ ECONNREFUSED/);
  });

  it('decodes the Pub/Sub envelope; anything else is a 400', () => {
    assert.deepEqual(decodePushEnvelope(pushEnvelope('42', 12345, 'a@b.c')), {
      messageId: '42',
      account: 'a@b.c',
      historyId: '12345',
    });
    assert.throws(() => decodePushEnvelope({}), /no message/);
    assert.throws(
      () =>
        decodePushEnvelope({
          message: { messageId: '1', data: Buffer.from('{"emailAddress":"a"}').toString('base64') },
        }),
      /historyId/,
    );
    assert.throws(() => decodePushEnvelope({ message: { messageId: '1', data: 'not base64 json' } }), /base64/);
    assert.throws(() => decodePushEnvelope({ message: { data: 'e30=' } }), /messageId/);
  });
});
