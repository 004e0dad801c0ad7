/**
 * The sender schemes beside Twilio (signatures-twilio.test.ts): gitlab, linear, sentry, shopify and bearer, each
 * signed the way its vendor documents it (the URL is in each block), then the config rules of the new schemes.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { signatureSchema, type SignatureConfig } from '../../../src/config/schema/hooks.js';
import {
  type SignatureHeaders,
  signedQuery,
  signRequest,
  verifySignature,
} from '../../../src/hooks/mappings/signatures.js';

/** Builds a config the way the config loader does (defaults, `secret` → `secrets`). */
const cfg = (input: Record<string, unknown>): SignatureConfig => signatureSchema.parse(input);
const hmacHex = (key: string, data: string | Buffer) => createHmac('sha256', key).update(data).digest('hex');
const hmacB64 = (key: string, data: string | Buffer) => createHmac('sha256', key).update(data).digest('base64');

const NOW_S = 1_760_000_000;
const NOW_MS = NOW_S * 1000 + 999;
const body = Buffer.from('{"action":"create","type":"Issue","data":{"id":"2174","title":"Crash on login"}, "n" : 1}');
const tampered = Buffer.from(body.toString().replace('"n" : 1', '"n" : 2'));

const req = (headers: SignatureHeaders, raw: Buffer = body) => ({ rawBody: raw, headers });
const reason = (r: ReturnType<typeof verifySignature>): string => (r.ok ? 'ok' : r.reason);
/** The failure reasons of `cases` ([headers, body, expected reason]) under `c`, as [got, expected] pairs. */
function check(c: SignatureConfig, cases: Array<[SignatureHeaders, Buffer, string]>, now = NOW_MS): void {
  for (const [h, raw, want] of cases)
    assert.equal(reason(verifySignature(c, req(h, raw), now)), want, JSON.stringify(h));
}

// ---------------------------------------------------------------------------------------------------------------
describe('gitlab', () => {
  // https://docs.gitlab.com/user/project/integrations/webhooks/ ("Secret token"; "Delivery headers"): the token is
  // sent as it is in X-Gitlab-Token; X-Gitlab-Event-UUID per event; Idempotency-Key (recent GitLab) across retries.
  const secret = 'gitlab-secret-token';
  const c = cfg({ scheme: 'gitlab', secret });
  const uuid = 'b7d8d3a9-8f3e-4a67-9a3c-2a5a5a3e1f00';

  it('accepts the token and returns X-Gitlab-Event-UUID (else Idempotency-Key) as the delivery id', () => {
    const withUuid = req({ 'x-gitlab-token': secret, 'x-gitlab-event-uuid': uuid });
    assert.deepEqual(verifySignature(c, withUuid, NOW_MS), { ok: true, deliveryId: uuid });
    const withKey = req({ 'x-gitlab-token': secret, 'idempotency-key': 'idem-1' });
    assert.deepEqual(verifySignature(c, withKey, NOW_MS), { ok: true, deliveryId: 'idem-1' });
    assert.deepEqual(verifySignature(c, req({ 'X-Gitlab-Token': secret }), NOW_MS), { ok: true });
  });

  it('signs nothing: the body and the time do not matter', () => {
    assert.equal(verifySignature(c, req({ 'x-gitlab-token': secret }, tampered), 0).ok, true);
  });

  it('refuses a wrong, missing or repeated token; no reason names the token', () => {
    check(c, [
      [{ 'x-gitlab-token': 'gitlab-secret-tokeN' }, body, 'token mismatch'],
      [{ 'x-gitlab-token': `${secret}x` }, body, 'token mismatch'],
      [{ 'x-gitlab-token': secret.slice(1) }, body, 'token mismatch'],
      [{}, body, 'missing header x-gitlab-token'],
      [{ 'x-gitlab-token': '  ' }, body, 'missing header x-gitlab-token'],
      [{ 'x-gitlab-token': [secret, secret] }, body, 'duplicate header x-gitlab-token'],
      [{ authorization: `Bearer ${secret}` }, body, 'missing header x-gitlab-token'],
    ]);
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'gitlab', secrets: ['new-token', 'old-token'] });
    assert.equal(verifySignature(rot, req({ 'x-gitlab-token': 'old-token' }), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req({ 'x-gitlab-token': 'new-token' }), NOW_MS).ok, true);
    assert.equal(reason(verifySignature(rot, req({ 'x-gitlab-token': 'gone' }), NOW_MS)), 'token mismatch');
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('linear', () => {
  // https://linear.app/developers/webhooks ("Securing webhooks"): Linear-Signature = hex HMAC-SHA256 of the raw body
  // with the webhook's signing secret; webhookTimestamp (Unix ms) in the body; Linear-Delivery is the delivery's id.
  const secret = 'lin_wh_signing_secret';
  const c = cfg({ scheme: 'linear', secret });
  const linearBody = (ts: number, extra = '') =>
    Buffer.from(`{"action":"create","type":"Issue","data":{"id":"2174"},"webhookTimestamp":${ts}${extra}}`);
  const headers = (raw: Buffer, key = secret): SignatureHeaders => ({
    'linear-signature': hmacHex(key, raw),
    'linear-delivery': '234d1a4e-b617-4388-90fe-adc3633d6b72',
    'linear-event': 'Issue',
  });

  it('accepts a fresh delivery and returns Linear-Delivery as the delivery id', () => {
    const raw = linearBody(NOW_MS - 1500);
    assert.deepEqual(verifySignature(c, req(headers(raw), raw), NOW_MS), {
      ok: true,
      deliveryId: '234d1a4e-b617-4388-90fe-adc3633d6b72',
    });
  });

  it('reads webhookTimestamp in milliseconds, at the edges of toleranceSeconds, in both directions', () => {
    const at = (ts: number, c2 = c) => {
      const raw = linearBody(ts);
      return reason(verifySignature(c2, req(headers(raw), raw), NOW_MS));
    };
    assert.equal(at(NOW_MS - 300_000), 'ok');
    assert.equal(at(NOW_MS - 300_001), 'timestamp outside tolerance');
    assert.equal(at(NOW_MS + 300_000), 'ok');
    assert.equal(at(NOW_MS + 300_001), 'timestamp outside tolerance');
    // Linear's own recommendation, 60 s
    const sixty = cfg({ scheme: 'linear', secret, toleranceSeconds: 60 });
    assert.equal(at(NOW_MS - 60_000, sixty), 'ok');
    assert.equal(at(NOW_MS - 61_000, sixty), 'timestamp outside tolerance');
    // seconds where milliseconds are expected: half a century ago
    assert.equal(at(NOW_S), 'timestamp outside tolerance');
  });

  it('refuses a body without a usable webhookTimestamp, even correctly signed', () => {
    const bodies = [
      '{"action":"create"}',
      '{"webhookTimestamp":"1760000000000"}',
      '{"webhookTimestamp":1.5}',
      '{"webhookTimestamp":-1}',
    ];
    bodies.push('not json');
    for (const raw of bodies) {
      const b = Buffer.from(raw);
      assert.equal(reason(verifySignature(c, req(headers(b), b), NOW_MS)), 'no webhookTimestamp in the body', raw);
    }
  });

  it('refuses tampering, a wrong secret, missing, repeated and garbled headers', () => {
    const raw = linearBody(NOW_MS);
    const good = headers(raw);
    const sig = good['linear-signature'] as string;
    check(c, [
      [good, linearBody(NOW_MS, ',"x":1'), 'signature mismatch'],
      [good, linearBody(NOW_MS - 1), 'signature mismatch'],
      [headers(raw, 'other-secret'), raw, 'signature mismatch'],
      [{ 'linear-delivery': 'd' }, raw, 'missing header linear-signature'],
      [{ 'linear-signature': [sig, sig] }, raw, 'duplicate header linear-signature'],
      [{ 'linear-signature': `sha256=${sig}` }, raw, 'malformed header linear-signature'],
      [{ 'linear-signature': hmacB64(secret, raw) }, raw, 'malformed header linear-signature'],
    ]);
  });

  it('accepts any of several secrets (rotation)', () => {
    const raw = linearBody(NOW_MS);
    const rot = cfg({ scheme: 'linear', secrets: ['lin_new', secret] });
    assert.equal(verifySignature(rot, req(headers(raw), raw), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req(headers(raw, 'lin_new'), raw), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('sentry', () => {
  // https://docs.sentry.io/organization/integrations/integration-platform/webhooks/ ("Verifying the signature"):
  // Sentry-Hook-Signature = hex HMAC-SHA256 of the body with the integration's client secret; Sentry-Hook-Timestamp
  // in Unix seconds; Request-ID names the request. The raw bytes are verified, as received.
  const secret = 'sentry-client-secret-0123456789abcdef';
  const c = cfg({ scheme: 'sentry', secret });
  const headers = (raw: Buffer = body, ts: string | null = String(NOW_S), key = secret): SignatureHeaders => ({
    'sentry-hook-signature': hmacHex(key, raw),
    'sentry-hook-resource': 'issue',
    'request-id': 'ef0dd634-e830-4aa4-a690-5fca54a11a18',
    ...(ts === null ? {} : { 'sentry-hook-timestamp': ts }),
  });

  it('accepts a signed delivery and returns Request-ID as the delivery id', () => {
    assert.deepEqual(verifySignature(c, req(headers()), NOW_MS), {
      ok: true,
      deliveryId: 'ef0dd634-e830-4aa4-a690-5fca54a11a18',
    });
  });

  it('verifies the bytes as received, not a re-serialisation of the parsed body', () => {
    const spaced = Buffer.from('{ "action": "created",  "data": {"issue": {"id": "1"}} }');
    assert.equal(verifySignature(c, req(headers(spaced), spaced), NOW_MS).ok, true);
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(spaced.toString())));
    assert.equal(reason(verifySignature(c, req(headers(spaced), reserialised), NOW_MS)), 'signature mismatch');
  });

  it('checks Sentry-Hook-Timestamp when sent (edges of the tolerance, fractions allowed); without it, no time check', () => {
    const at = (ts: string) => reason(verifySignature(c, req(headers(body, ts)), NOW_MS));
    assert.equal(at(String(NOW_S - 300)), 'ok');
    assert.equal(at(String(NOW_S - 301)), 'timestamp outside tolerance');
    assert.equal(at(String(NOW_S + 300)), 'ok');
    assert.equal(at(String(NOW_S + 301)), 'timestamp outside tolerance');
    assert.equal(at(`${NOW_S}.25`), 'ok');
    assert.equal(at('2022-03-06T11:31:04Z'), 'malformed header sentry-hook-timestamp');
    assert.equal(at(String(NOW_S * 1000)), 'malformed header sentry-hook-timestamp'); // milliseconds: 13 digits
    assert.equal(reason(verifySignature(c, req(headers(body, null)), 0)), 'ok');
  });

  it('refuses tampering, a wrong secret, missing, repeated and garbled headers', () => {
    const good = headers();
    check(c, [
      [good, tampered, 'signature mismatch'],
      [headers(body, String(NOW_S), 'other'), body, 'signature mismatch'],
      [{ 'request-id': 'r' }, body, 'missing header sentry-hook-signature'],
      [
        { ...good, 'sentry-hook-signature': [hmacHex(secret, body), 'x'] },
        body,
        'duplicate header sentry-hook-signature',
      ],
      [{ ...good, 'sentry-hook-signature': 'v0=abc' }, body, 'malformed header sentry-hook-signature'],
      [
        { ...good, 'sentry-hook-timestamp': [String(NOW_S), String(NOW_S)] },
        body,
        'duplicate header sentry-hook-timestamp',
      ],
      [{ ...good, 'sentry-hook-timestamp': '' }, body, 'missing header sentry-hook-timestamp'],
    ]);
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'sentry', secrets: ['new-client-secret', secret] });
    assert.equal(verifySignature(rot, req(headers()), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('shopify', () => {
  // https://shopify.dev/docs/apps/build/webhooks/subscribe/https ("Verify the webhook"): X-Shopify-Hmac-Sha256 =
  // base64 HMAC-SHA256 of the raw body with the app's client secret. Delivery headers:
  // https://shopify.dev/docs/apps/build/webhooks/delivery-structure (X-Shopify-Webhook-Id: one per delivery).
  const secret = 'shpss_0123456789abcdef0123456789abcdef';
  const c = cfg({ scheme: 'shopify', secret });
  const headers = (raw: Buffer = body, key = secret): SignatureHeaders => ({
    'x-shopify-hmac-sha256': hmacB64(key, raw),
    'x-shopify-topic': 'orders/create',
    'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    'x-shopify-event-id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
    'x-shopify-triggered-at': '2025-04-22T19:30:00.000Z',
  });

  it('accepts a signed delivery and returns X-Shopify-Webhook-Id (not the event id) as the delivery id', () => {
    assert.deepEqual(verifySignature(c, req(headers()), NOW_MS), {
      ok: true,
      deliveryId: 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
    });
  });

  it('refuses tampering, a wrong secret, hex, missing, repeated and garbled headers', () => {
    const good = headers();
    const sig = good['x-shopify-hmac-sha256'] as string;
    check(c, [
      [good, tampered, 'signature mismatch'],
      [headers(body, 'other'), body, 'signature mismatch'],
      [{ 'x-shopify-topic': 'orders/create' }, body, 'missing header x-shopify-hmac-sha256'],
      [{ 'x-shopify-hmac-sha256': [sig, sig] }, body, 'duplicate header x-shopify-hmac-sha256'],
      [{ 'x-shopify-hmac-sha256': hmacHex(secret, body) }, body, 'malformed header x-shopify-hmac-sha256'],
      [{ 'x-shopify-hmac-sha256': sig.slice(0, -1) }, body, 'malformed header x-shopify-hmac-sha256'],
    ]);
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'shopify', secrets: ['shpss_new', secret] });
    assert.equal(verifySignature(rot, req(headers()), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req(headers(body, 'shpss_new')), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('bearer', () => {
  // Prometheus Alertmanager's webhook_config http_config.authorization (type Bearer by default), and any sender that
  // can only set a bearer token: https://prometheus.io/docs/alerting/latest/configuration/#http_config
  const secret = 'alertmanager-bearer-secret-0123456789';
  const c = cfg({ scheme: 'bearer', secret });

  it('accepts Authorization: Bearer <secret> (the scheme in any case); no delivery id, no time', () => {
    assert.deepEqual(verifySignature(c, req({ authorization: `Bearer ${secret}` }), NOW_MS), { ok: true });
    assert.deepEqual(verifySignature(c, req({ Authorization: `bearer  ${secret} ` }, tampered), 0), { ok: true });
    assert.deepEqual(verifySignature(c, req({ authorization: `Bearer ${secret}`, 'idempotency-key': 'k' }), NOW_MS), {
      ok: true,
    });
  });

  it('refuses a wrong, missing, repeated or non-Bearer credential; no reason names it', () => {
    check(c, [
      [{ authorization: `Bearer ${secret}x` }, body, 'token mismatch'],
      [{ authorization: `Bearer ${secret.toUpperCase()}` }, body, 'token mismatch'],
      [{}, body, 'missing header authorization'],
      [{ authorization: [`Bearer ${secret}`, `Bearer ${secret}`] }, body, 'duplicate header authorization'],
      [
        { authorization: `Basic ${Buffer.from(`u:${secret}`).toString('base64')}` },
        body,
        'malformed header authorization',
      ],
      [{ authorization: 'Bearer' }, body, 'malformed header authorization'],
      [{ authorization: secret }, body, 'malformed header authorization'],
      [{ 'x-hookgate-token': secret }, body, 'missing header authorization'],
    ]);
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'bearer', secrets: ['new-bearer', 'old-bearer'] });
    assert.equal(verifySignature(rot, req({ authorization: 'Bearer old-bearer' }), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req({ authorization: 'Bearer new-bearer' }), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('the new schemes: config', () => {
  it('url: required for twilio, refused for other schemes, an absolute http(s) URL without query, fragment or credentials', () => {
    const issues = (input: Record<string, unknown>) => {
      const r = signatureSchema.safeParse(input);
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    const required = 'url: required for scheme "twilio": the public URL Twilio calls (and signs)';
    assert.deepEqual(issues({ scheme: 'twilio', secret: 't' }), [required]);
    assert.deepEqual(issues({ scheme: 'github', secret: 's', url: 'https://example.com/hooks/gh' }), [
      'url: only applies to scheme "twilio"',
    ]);
    const bad: Array<[string, RegExp]> = [
      ['/hooks/twilio', /absolute http\(s\) URL/],
      ['ftp://example.com/hooks/twilio', /absolute http\(s\) URL/],
      ['https://example.com/hooks/twilio?x=1', /must not contain a query string/],
      ['https://example.com/hooks/twilio#f', /must not contain a fragment/],
      ['https://user:pass@example.com/hooks/twilio', /user name or password/],
    ];
    for (const [url, want] of bad) {
      const got = issues({ scheme: 'twilio', secret: 't', url });
      assert.equal(got.length, 1, url);
      assert.match(got[0]!, /^url: /);
      assert.match(got[0]!, want, url);
    }
    const trimmed = cfg({ scheme: 'twilio', secret: 't', url: ' https://example.com:8443/hooks/twilio ' });
    assert.equal(trimmed.url, 'https://example.com:8443/hooks/twilio');
  });

  it('a gitlab or bearer secret is sent as a header: printable ASCII only', () => {
    for (const scheme of ['gitlab', 'bearer']) {
      const r = signatureSchema.safeParse({ scheme, secrets: ['fine token', 'caf\u00e9'] });
      assert.equal(r.success, false);
      if (!r.success)
        assert.deepEqual(
          r.error.issues.map((i) => i.path.join('.')),
          ['secrets.1'],
        );
      assert.equal(signatureSchema.safeParse({ scheme, secret: 'line\nbreak' }).success, false);
    }
    assert.equal(signatureSchema.safeParse({ scheme: 'linear', secret: 'caf\u00e9' }).success, true);
  });

  it('header/encoding/prefix stay hmac-sha256 only', () => {
    for (const scheme of ['gitlab', 'linear', 'sentry', 'shopify', 'bearer'])
      assert.equal(signatureSchema.safeParse({ scheme, secret: 's', header: 'x-sig' }).success, false, scheme);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('the new schemes: signRequest', () => {
  it('signRequest (hookgate send hook --sign): what it signs, verifySignature accepts; another secret it does not', () => {
    const now = NOW_MS;
    const json = Buffer.from(`{"action":"create","webhookTimestamp":${now - 2000},"id":"x"}`);
    const configs: Array<Record<string, unknown>> = [
      { scheme: 'gitlab', secret: 'gl-token' },
      { scheme: 'linear', secrets: ['lin-1', 'lin-2'] },
      { scheme: 'sentry', secret: 'sentry-secret' },
      { scheme: 'shopify', secret: 'shpss_x' },
      { scheme: 'twilio', secret: 'twilio-auth-token', url: 'https://example.com/hooks/twilio' },
      { scheme: 'bearer', secret: 'bearer-secret' },
    ];
    for (const raw of configs) {
      const c = cfg(raw);
      const signed = {
        rawBody: json,
        headers: signRequest(c, json, now),
        rawQuery: signedQuery(c, json).slice(1) || undefined,
      };
      assert.equal(reason(verifySignature(c, signed, now)), 'ok', JSON.stringify(raw));
      const other = cfg({ ...raw, secret: undefined, secrets: ['some-other-secret'] });
      assert.notEqual(reason(verifySignature(other, signed, now)), 'ok', JSON.stringify(raw));
    }
  });
});
