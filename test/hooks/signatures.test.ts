import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { signatureSchema, type SignatureConfig } from '../../src/config/schema/hooks.js';
import {
  signRequest,
  standardWebhooksKeys,
  verifySignature,
  type SignatureHeaders,
} from '../../src/hooks/mappings/signatures.js';

/** Builds a config the way the config loader does (defaults, `secret` → `secrets`). */
function cfg(input: Record<string, unknown>): SignatureConfig {
  return signatureSchema.parse(input);
}

const hmacHex = (key: string | Buffer, data: string | Buffer) => createHmac('sha256', key).update(data).digest('hex');
const hmacB64 = (key: string | Buffer, data: string | Buffer) =>
  createHmac('sha256', key).update(data).digest('base64');

const body = Buffer.from('{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"ping", "n" : 1}');
const NOW_S = 1_760_000_000;
const NOW_MS = NOW_S * 1000 + 999; // the fractional second must not matter

function req(headers: SignatureHeaders, raw: Buffer = body, payload?: unknown) {
  return payload === undefined ? { rawBody: raw, headers } : { rawBody: raw, headers, payload };
}

function reason(r: ReturnType<typeof verifySignature>): string {
  return r.ok ? 'ok' : r.reason;
}

// ---------------------------------------------------------------------------------------------------------------
describe('github', () => {
  const secret = 'gh-secret';
  const c = cfg({ scheme: 'github', secret });
  const sign = (raw: Buffer, key = secret) => `sha256=${hmacHex(key, raw)}`;

  it("verifies GitHub's documented example (docs.github.com, validating webhook deliveries)", () => {
    const r = verifySignature(
      cfg({ scheme: 'github', secret: "It's a Secret to Everybody" }),
      req(
        { 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' },
        Buffer.from('Hello, World!'),
      ),
      NOW_MS,
    );
    assert.deepEqual(r, { ok: true });
  });

  it('accepts a correct signature and returns X-GitHub-Delivery as the delivery id', () => {
    const r = verifySignature(
      c,
      req({ 'x-hub-signature-256': sign(body), 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' }),
      NOW_MS,
    );
    assert.deepEqual(r, { ok: true, deliveryId: '72d3162e-cc78-11e3-81ab-4c9367dc0958' });
  });

  it('ignores time entirely (GitHub signs no timestamp)', () => {
    assert.equal(verifySignature(c, req({ 'x-hub-signature-256': sign(body) }), 0).ok, true);
  });

  it('finds headers in any case when the header object was built by hand', () => {
    assert.equal(verifySignature(c, req({ 'X-Hub-Signature-256': sign(body) }), NOW_MS).ok, true);
  });

  it('accepts upper-case hex', () => {
    const s = sign(body);
    assert.equal(
      verifySignature(c, req({ 'x-hub-signature-256': `sha256=${s.slice(7).toUpperCase()}` }), NOW_MS).ok,
      true,
    );
  });

  it('rejects tampered bodies, wrong secrets, missing and garbled headers', () => {
    const good = sign(body);
    const cases: Array<[SignatureHeaders, Buffer, string]> = [
      [
        { 'x-hub-signature-256': good },
        Buffer.from(body.toString().replace('"n" : 1', '"n" : 2')),
        'signature mismatch',
      ],
      [{ 'x-hub-signature-256': sign(body, 'other') }, body, 'signature mismatch'],
      [{}, body, 'missing header x-hub-signature-256'],
      [{ 'x-hub-signature-256': '' }, body, 'missing header x-hub-signature-256'],
      [{ 'x-hub-signature': `sha1=${'0'.repeat(40)}` }, body, 'missing header x-hub-signature-256'],
      [{ 'x-hub-signature-256': good.slice(7) }, body, 'malformed header x-hub-signature-256'],
      [{ 'x-hub-signature-256': good.slice(0, -2) }, body, 'malformed header x-hub-signature-256'],
      [{ 'x-hub-signature-256': `${good}00` }, body, 'malformed header x-hub-signature-256'],
      [{ 'x-hub-signature-256': `sha256=${'z'.repeat(64)}` }, body, 'malformed header x-hub-signature-256'],
      [{ 'x-hub-signature-256': `sha1=${good.slice(7)}` }, body, 'malformed header x-hub-signature-256'],
      [{ 'x-hub-signature-256': [good, good] }, body, 'duplicate header x-hub-signature-256'],
    ];
    for (const [h, raw, want] of cases)
      assert.equal(reason(verifySignature(c, req(h, raw), NOW_MS)), want, JSON.stringify(h));
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'github', secrets: ['new-secret', 'old-secret'] });
    assert.equal(verifySignature(rot, req({ 'x-hub-signature-256': sign(body, 'old-secret') }), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req({ 'x-hub-signature-256': sign(body, 'new-secret') }), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req({ 'x-hub-signature-256': sign(body, 'gone') }), NOW_MS).ok, false);
  });

  it('never leaks the secret or the digest in a reason', () => {
    const r = verifySignature(c, req({ 'x-hub-signature-256': sign(body, 'x') }), NOW_MS);
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.doesNotMatch(r.reason, new RegExp(secret));
      assert.doesNotMatch(r.reason, /[0-9a-f]{16}/);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('stripe', () => {
  const secret = 'whsec_test_secret_used_as_is';
  const c = cfg({ scheme: 'stripe', secret });
  // Stripe computes v1 = hex(HMAC-SHA256(endpoint secret string, "<t>.<raw body>")).
  const v1 = (t: number, raw: Buffer = body, key = secret) => hmacHex(key, Buffer.concat([Buffer.from(`${t}.`), raw]));
  const header = (t: number, ...sigs: string[]) => `t=${t},${sigs.map((s) => `v1=${s}`).join(',')}`;

  it('accepts a fresh signature and uses the event id as the delivery id', () => {
    const r = verifySignature(c, req({ 'stripe-signature': header(NOW_S, v1(NOW_S)) }), NOW_MS);
    assert.deepEqual(r, { ok: true, deliveryId: 'evt_1NG8Du2eZvKYlo2CUI79vXWy' });
  });

  it('prefers the already-parsed payload for the delivery id', () => {
    const r = verifySignature(
      c,
      req({ 'stripe-signature': header(NOW_S, v1(NOW_S)) }, body, { id: 'evt_parsed' }),
      NOW_MS,
    );
    assert.deepEqual(r, { ok: true, deliveryId: 'evt_parsed' });
  });

  it('has no delivery id when the body carries none', () => {
    const raw = Buffer.from('not json');
    const r = verifySignature(c, req({ 'stripe-signature': header(NOW_S, v1(NOW_S, raw)) }, raw), NOW_MS);
    assert.deepEqual(r, { ok: true });
  });

  it('accepts when any of several v1 entries matches, ignoring v0 and unknown schemes', () => {
    const h = `t=${NOW_S},v0=${'1'.repeat(64)},v1=${'0'.repeat(64)},v1=${v1(NOW_S)},v9=whatever`;
    assert.equal(verifySignature(c, req({ 'stripe-signature': h }), NOW_MS).ok, true);
    const spaced = `t=${NOW_S}, v1=${v1(NOW_S)}`;
    assert.equal(verifySignature(c, req({ 'stripe-signature': spaced }), NOW_MS).ok, true);
  });

  it('applies the tolerance at its edges, in both directions', () => {
    const at = (t: number) => reason(verifySignature(c, req({ 'stripe-signature': header(t, v1(t)) }), NOW_MS));
    assert.equal(at(NOW_S - 300), 'ok');
    assert.equal(at(NOW_S - 301), 'timestamp outside tolerance');
    assert.equal(at(NOW_S + 300), 'ok');
    assert.equal(at(NOW_S + 301), 'timestamp outside tolerance');
    const tight = cfg({ scheme: 'stripe', secret, toleranceSeconds: 5 });
    assert.equal(
      verifySignature(tight, req({ 'stripe-signature': header(NOW_S - 6, v1(NOW_S - 6)) }), NOW_MS).ok,
      false,
    );
    assert.equal(
      verifySignature(tight, req({ 'stripe-signature': header(NOW_S - 5, v1(NOW_S - 5)) }), NOW_MS).ok,
      true,
    );
  });

  it('binds the timestamp: moving t breaks the signature', () => {
    assert.equal(
      reason(verifySignature(c, req({ 'stripe-signature': header(NOW_S, v1(NOW_S - 1000)) }), NOW_MS)),
      'signature mismatch',
    );
  });

  it('rejects tampering and garbled headers', () => {
    const good = v1(NOW_S);
    const cases: Array<[SignatureHeaders, Buffer, string]> = [
      [{ 'stripe-signature': header(NOW_S, good) }, Buffer.from(`${body.toString()} `), 'signature mismatch'],
      [{ 'stripe-signature': header(NOW_S, v1(NOW_S, body, 'whsec_other')) }, body, 'signature mismatch'],
      [{}, body, 'missing header stripe-signature'],
      [{ 'stripe-signature': `v1=${good}` }, body, 'malformed header stripe-signature'],
      [{ 'stripe-signature': `t=${NOW_S}` }, body, 'no v1 signature'],
      [{ 'stripe-signature': `t=${NOW_S},v0=${good}` }, body, 'no v1 signature'],
      [{ 'stripe-signature': `t=soon,v1=${good}` }, body, 'malformed header stripe-signature'],
      [{ 'stripe-signature': `t=${NOW_S}.5,v1=${good}` }, body, 'malformed header stripe-signature'],
      [{ 'stripe-signature': `t=${NOW_S},t=${NOW_S},v1=${good}` }, body, 'malformed header stripe-signature'],
      [{ 'stripe-signature': `t=${NOW_S},v1=${good.slice(1)}` }, body, 'malformed header stripe-signature'],
      [{ 'stripe-signature': `t=${NOW_S},,v1=${good}` }, body, 'malformed header stripe-signature'],
      [{ 'stripe-signature': 'garbage' }, body, 'malformed header stripe-signature'],
    ];
    for (const [h, raw, want] of cases)
      assert.equal(reason(verifySignature(c, req(h, raw), NOW_MS)), want, JSON.stringify(h));
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'stripe', secrets: ['whsec_new', 'whsec_old'] });
    const h = header(NOW_S, v1(NOW_S, body, 'whsec_old'));
    assert.equal(verifySignature(rot, req({ 'stripe-signature': h }), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('slack', () => {
  // Slack's documented example ("Verifying requests from Slack",
  // https://api.slack.com/authentication/verifying-requests-from-slack); the signing secret is Slack's placeholder.
  const vector = {
    secret: '8f742231b10e8888abcd99yyyzzz85a5',
    timestamp: '1531420618',
    body:
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V' +
      '&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=' +
      '&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN' +
      '&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
  };

  it("verifies Slack's documented example inside its 5-minute window", () => {
    const c = cfg({ scheme: 'slack', secret: vector.secret });
    const h = { 'x-slack-signature': vector.signature, 'x-slack-request-timestamp': vector.timestamp };
    const t = Number(vector.timestamp) * 1000;
    assert.deepEqual(verifySignature(c, req(h, Buffer.from(vector.body)), t + 30_000), { ok: true });
    assert.equal(
      reason(verifySignature(c, req(h, Buffer.from(vector.body)), t + 301_000)),
      'timestamp outside tolerance',
    );
    assert.equal(
      reason(verifySignature(c, req(h, Buffer.from(vector.body.replace('text=', 'text=x'))), t)),
      'signature mismatch',
    );
  });

  const secret = 'slack-signing-secret';
  const c = cfg({ scheme: 'slack', secret });
  const sign = (ts: number | string, raw: Buffer = body, key = secret) =>
    `v0=${hmacHex(key, `v0:${ts}:${raw.toString()}`)}`;
  const headers = (ts: number, sig = sign(ts)) => ({
    'x-slack-signature': sig,
    'x-slack-request-timestamp': String(ts),
  });

  it('applies the tolerance at its edges and carries no delivery id', () => {
    const at = (ts: number) => reason(verifySignature(c, req(headers(ts)), NOW_MS));
    assert.equal(at(NOW_S), 'ok');
    assert.deepEqual(verifySignature(c, req(headers(NOW_S)), NOW_MS), { ok: true });
    assert.equal(at(NOW_S - 300), 'ok');
    assert.equal(at(NOW_S - 301), 'timestamp outside tolerance');
    assert.equal(at(NOW_S + 300), 'ok');
    assert.equal(at(NOW_S + 301), 'timestamp outside tolerance');
  });

  it('rejects tampering and garbled headers', () => {
    const good = headers(NOW_S);
    const cases: Array<[SignatureHeaders, Buffer, string]> = [
      [good, Buffer.from('{}'), 'signature mismatch'],
      [{ ...good, 'x-slack-request-timestamp': String(NOW_S + 1) }, body, 'signature mismatch'],
      [headers(NOW_S, sign(NOW_S, body, 'other')), body, 'signature mismatch'],
      [{ 'x-slack-request-timestamp': String(NOW_S) }, body, 'missing header x-slack-signature'],
      [{ 'x-slack-signature': good['x-slack-signature'] }, body, 'missing header x-slack-request-timestamp'],
      [{ ...good, 'x-slack-request-timestamp': 'yesterday' }, body, 'malformed header x-slack-request-timestamp'],
      [{ ...good, 'x-slack-request-timestamp': '-5' }, body, 'malformed header x-slack-request-timestamp'],
      [
        { ...good, 'x-slack-signature': good['x-slack-signature'].slice(3) },
        body,
        'malformed header x-slack-signature',
      ],
      [
        { ...good, 'x-slack-signature': `v1=${good['x-slack-signature'].slice(3)}` },
        body,
        'malformed header x-slack-signature',
      ],
      [{ ...good, 'x-slack-signature': 'v0=abc' }, body, 'malformed header x-slack-signature'],
    ];
    for (const [h, raw, want] of cases)
      assert.equal(reason(verifySignature(c, req(h, raw), NOW_MS)), want, JSON.stringify(h));
  });

  it('accepts any of several secrets (rotation)', () => {
    const rot = cfg({ scheme: 'slack', secrets: ['a-new', 'b-old'] });
    assert.equal(verifySignature(rot, req(headers(NOW_S, sign(NOW_S, body, 'b-old'))), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('standard-webhooks', () => {
  // The reference vector of the Standard Webhooks libraries ("sign function works",
  // standard-webhooks/standard-webhooks libraries/javascript/src/webhook.test.ts).
  const vector = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: '1614265330',
    body: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const vectorHeaders = {
    'webhook-id': vector.id,
    'webhook-timestamp': vector.timestamp,
    'webhook-signature': vector.signature,
  };
  const vectorNow = Number(vector.timestamp) * 1000;

  it('verifies the reference vector, with and without the whsec_ prefix', () => {
    for (const secret of [vector.secret, vector.secret.slice('whsec_'.length)]) {
      const r = verifySignature(
        cfg({ scheme: 'standard-webhooks', secret }),
        req(vectorHeaders, Buffer.from(vector.body)),
        vectorNow,
      );
      assert.deepEqual(r, { ok: true, deliveryId: vector.id }, secret);
    }
  });

  it('reads the Svix-branded svix-* headers when no webhook-signature is sent', () => {
    const svix = {
      'svix-id': vector.id,
      'svix-timestamp': vector.timestamp,
      'svix-signature': vector.signature,
    };
    const c = cfg({ scheme: 'standard-webhooks', secret: vector.secret });
    assert.deepEqual(verifySignature(c, req(svix, Buffer.from(vector.body)), vectorNow), {
      ok: true,
      deliveryId: vector.id,
    });
    const noId: SignatureHeaders = { ...svix };
    delete noId['svix-id'];
    assert.equal(reason(verifySignature(c, req(noId, Buffer.from(vector.body)), vectorNow)), 'missing header svix-id');
    // webhook-* wins when both families are present
    const mixed = { ...svix, 'webhook-signature': `v1,${'A'.repeat(43)}=` };
    assert.equal(
      reason(verifySignature(c, req(mixed, Buffer.from(vector.body)), vectorNow)),
      'missing header webhook-id',
    );
  });

  it('rejects the reference vector with a re-serialised body (the raw bytes are what is signed)', () => {
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(vector.body)));
    const r = verifySignature(
      cfg({ scheme: 'standard-webhooks', secret: vector.secret }),
      req(vectorHeaders, reserialised),
      vectorNow,
    );
    assert.equal(reason(r), 'signature mismatch');
  });

  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const secret = `whsec_${key.toString('base64')}`;
  const c = cfg({ scheme: 'standard-webhooks', secret });
  const sign = (id: string, ts: number, raw: Buffer = body, k: Buffer = key) =>
    `v1,${hmacB64(k, Buffer.concat([Buffer.from(`${id}.${ts}.`), raw]))}`;
  const headers = (ts: number, sig = sign('msg_1', ts), id = 'msg_1') => ({
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': sig,
  });

  it('accepts a space-separated list where one v1 entry matches, skipping other versions', () => {
    const good = sign('msg_1', NOW_S);
    const list = [
      `v1a,${Buffer.alloc(64).toString('base64')}`,
      `v2,${good.slice(3)}`,
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      'v1,not-base64!',
      good,
    ].join(' ');
    assert.deepEqual(verifySignature(c, req(headers(NOW_S, list)), NOW_MS), { ok: true, deliveryId: 'msg_1' });
  });

  it('ignores versions other than v1 even when they carry a valid v1 digest', () => {
    const good = sign('msg_1', NOW_S);
    assert.equal(reason(verifySignature(c, req(headers(NOW_S, `v1a,${good.slice(3)}`)), NOW_MS)), 'no v1 signature');
  });

  it('applies the tolerance at its edges', () => {
    const at = (ts: number) => reason(verifySignature(c, req(headers(ts, sign('msg_1', ts))), NOW_MS));
    assert.equal(at(NOW_S - 300), 'ok');
    assert.equal(at(NOW_S - 301), 'timestamp outside tolerance');
    assert.equal(at(NOW_S + 300), 'ok');
    assert.equal(at(NOW_S + 301), 'timestamp outside tolerance');
    assert.equal(
      reason(verifySignature(c, req(vectorHeaders, Buffer.from(vector.body)), NOW_MS)),
      'signature mismatch',
    );
    const vc = cfg({ scheme: 'standard-webhooks', secret: vector.secret });
    assert.equal(
      reason(verifySignature(vc, req(vectorHeaders, Buffer.from(vector.body)), vectorNow + 301_000)),
      'timestamp outside tolerance',
    );
  });

  it('binds the id and the timestamp into the signature', () => {
    const good = sign('msg_1', NOW_S);
    assert.equal(reason(verifySignature(c, req(headers(NOW_S, good, 'msg_2')), NOW_MS)), 'signature mismatch');
    assert.equal(reason(verifySignature(c, req(headers(NOW_S + 1, good)), NOW_MS)), 'signature mismatch');
  });

  it('rejects tampering, missing and garbled headers', () => {
    const good = headers(NOW_S);
    const without = (name: keyof typeof good) => {
      const h: SignatureHeaders = { ...good };
      delete h[name];
      return h;
    };
    const cases: Array<[SignatureHeaders, Buffer, string]> = [
      [good, Buffer.from('{"tampered":true}'), 'signature mismatch'],
      [
        headers(NOW_S, sign('msg_1', NOW_S, body, Buffer.from('another key of 32 bytes........'))),
        body,
        'signature mismatch',
      ],
      [without('webhook-id'), body, 'missing header webhook-id'],
      [without('webhook-timestamp'), body, 'missing header webhook-timestamp'],
      [without('webhook-signature'), body, 'missing header webhook-signature'],
      [{ ...good, 'webhook-timestamp': 'hello' }, body, 'malformed header webhook-timestamp'],
      [{ ...good, 'webhook-signature': 'v1,dawfeoifkpqwoekfpqoekf' }, body, 'no v1 signature'],
      [{ ...good, 'webhook-signature': good['webhook-signature'].slice(0, 8) }, body, 'no v1 signature'],
      [{ ...good, 'webhook-signature': 'v1,' }, body, 'no v1 signature'],
      [{ ...good, 'webhook-signature': 'nocomma' }, body, 'malformed header webhook-signature'],
    ];
    for (const [h, raw, want] of cases)
      assert.equal(reason(verifySignature(c, req(h, raw), NOW_MS)), want, JSON.stringify(h));
  });

  it('accepts any of several secrets (rotation)', () => {
    const other = Buffer.from('fedcba9876543210fedcba9876543210');
    const rot = cfg({ scheme: 'standard-webhooks', secrets: [`whsec_${other.toString('base64')}`, secret] });
    assert.equal(verifySignature(rot, req(headers(NOW_S)), NOW_MS).ok, true);
    assert.equal(verifySignature(rot, req(headers(NOW_S, sign('msg_1', NOW_S, body, other))), NOW_MS).ok, true);
  });

  it('accepts a raw (non-base64) secret used as the HMAC key as-is', () => {
    const raw = 'my-shared-secret!';
    const rc = cfg({ scheme: 'standard-webhooks', secret: raw });
    assert.equal(
      verifySignature(rc, req(headers(NOW_S, sign('msg_1', NOW_S, body, Buffer.from(raw)))), NOW_MS).ok,
      true,
    );
  });

  it('derives no key from a broken whsec_ secret (the schema refuses it too)', () => {
    assert.deepEqual(standardWebhooksKeys('whsec_not*base64'), []);
    assert.deepEqual(standardWebhooksKeys('whsec_'), []);
    const broken = { scheme: 'standard-webhooks' as const, secrets: ['whsec_***'], toleranceSeconds: 300 };
    assert.equal(reason(verifySignature(broken, req(headers(NOW_S)), NOW_MS)), 'invalid secret');
    assert.equal(signatureSchema.safeParse({ scheme: 'standard-webhooks', secret: 'whsec_***' }).success, false);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('hmac-sha256 (generic)', () => {
  const secret = 'generic-secret';

  it('defaults to hex in x-signature and takes Idempotency-Key as the delivery id', () => {
    const c = cfg({ scheme: 'hmac-sha256', secret });
    const h = { 'x-signature': hmacHex(secret, body), 'idempotency-key': 'key-1' };
    assert.deepEqual(verifySignature(c, req(h), NOW_MS), { ok: true, deliveryId: 'key-1' });
    assert.deepEqual(verifySignature(c, req({ 'x-signature': hmacHex(secret, body) }), NOW_MS), { ok: true });
  });

  it('supports a custom header, a prefix and base64 (padded, unpadded and url-safe)', () => {
    const c = cfg({ scheme: 'hmac-sha256', secret, header: 'X-Shopify-Hmac-Sha256', encoding: 'base64' });
    const b64 = hmacB64(secret, body);
    assert.equal(verifySignature(c, req({ 'x-shopify-hmac-sha256': b64 }), NOW_MS).ok, true);
    assert.equal(verifySignature(c, req({ 'x-shopify-hmac-sha256': b64.replace(/=+$/, '') }), NOW_MS).ok, true);
    const url = b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    assert.equal(verifySignature(c, req({ 'x-shopify-hmac-sha256': url }), NOW_MS).ok, true);
    const p = cfg({ scheme: 'hmac-sha256', secret, prefix: 'sha256=' });
    assert.equal(verifySignature(p, req({ 'x-signature': `sha256=${hmacHex(secret, body)}` }), NOW_MS).ok, true);
    assert.equal(
      reason(verifySignature(p, req({ 'x-signature': hmacHex(secret, body) }), NOW_MS)),
      'malformed header x-signature',
    );
  });

  it('rejects tampering, wrong encodings and missing headers', () => {
    const c = cfg({ scheme: 'hmac-sha256', secret });
    assert.equal(
      reason(verifySignature(c, req({ 'x-signature': hmacHex(secret, body) }, Buffer.from('x')), NOW_MS)),
      'signature mismatch',
    );
    assert.equal(
      reason(verifySignature(c, req({ 'x-signature': hmacB64(secret, body) }), NOW_MS)),
      'malformed header x-signature',
    );
    assert.equal(reason(verifySignature(c, req({}), NOW_MS)), 'missing header x-signature');
  });

  it('accepts any of several secrets (rotation)', () => {
    const c = cfg({ scheme: 'hmac-sha256', secrets: ['one', 'two'] });
    assert.equal(verifySignature(c, req({ 'x-signature': hmacHex('two', body) }), NOW_MS).ok, true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('signatureSchema', () => {
  it('normalises secret → secrets and lower-cases the header name', () => {
    const c = cfg({ scheme: 'hmac-sha256', secret: 's', header: 'X-My-Sig' });
    assert.deepEqual(c, { scheme: 'hmac-sha256', secrets: ['s'], toleranceSeconds: 300, header: 'x-my-sig' });
  });

  it('refuses unusable configs', () => {
    const bad: Array<Record<string, unknown>> = [
      { scheme: 'github' },
      { scheme: 'github', secret: 'a', secrets: ['b'] },
      { scheme: 'github', secret: 'a', header: 'x-sig' },
      { scheme: 'hmac-sha256', secret: 'a', header: 'bad header' },
      { scheme: 'standard-webhooks', secrets: ['whsec_dGVzdA==', 'whsec_%%%'] },
      { scheme: 'nope', secret: 'a' },
      { scheme: 'github', secret: 'a', extra: true },
      { scheme: 'slack', secret: 'a', toleranceSeconds: 0 },
    ];
    for (const input of bad) assert.equal(signatureSchema.safeParse(input).success, false, JSON.stringify(input));
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('verifySignature: properties', () => {
  // Every scheme but twilio (its own properties: test/hooks/mappings/signatures-twilio.test.ts).
  const schemes = [
    'github',
    'stripe',
    'slack',
    'standard-webhooks',
    'hmac-sha256',
    'gitlab',
    'linear',
    'sentry',
    'shopify',
    'bearer',
  ] as const;
  const names = [
    'x-gitlab-token',
    'linear-signature',
    'sentry-hook-signature',
    'sentry-hook-timestamp',
    'x-shopify-hmac-sha256',
    'authorization',
    'x-hub-signature-256',
    'x-github-delivery',
    'stripe-signature',
    'x-slack-signature',
    'x-slack-request-timestamp',
    'webhook-id',
    'webhook-timestamp',
    'webhook-signature',
    'x-signature',
    'idempotency-key',
    '__proto__',
    'constructor',
  ];
  const value = fc.oneof(
    fc.string(),
    fc.constantFrom('sha256=', 'v0=', 'v1,', 't=1,v1=', 'Bearer ', 'bearer x', `${NOW_S}`, `v1,${'A'.repeat(43)}=`),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.constant(undefined),
  );
  const headers = fc.dictionary(fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 8 })), value);

  it('never throws and never verifies a random request', () => {
    fc.assert(
      fc.property(fc.constantFrom(...schemes), headers, fc.uint8Array({ maxLength: 64 }), (scheme, h, raw) => {
        const c: SignatureConfig = { scheme, secrets: ['whsec_dGVzdA==', 'plain'], toleranceSeconds: 300 };
        const r = verifySignature(c, { rawBody: Buffer.from(raw), headers: h }, NOW_MS);
        assert.equal(r.ok, false);
        if (!r.ok) assert.ok(r.reason.length < 80);
      }),
      { numRuns: 1500 },
    );
  });
});

describe('signRequest (hookgate send hook --sign)', () => {
  const body = Buffer.from('{"id":"evt_1","event_id":"Ev1","action":"opened"}');
  const now = 1_700_000_000_000;
  const configs: Array<Record<string, unknown>> = [
    { scheme: 'github', secret: 'gh-secret' },
    { scheme: 'stripe', secrets: ['whsec_first', 'whsec_second'] },
    { scheme: 'slack', secret: 'slack-secret' },
    {
      scheme: 'standard-webhooks',
      secret: `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`,
    },
    { scheme: 'standard-webhooks', secret: 'plain-unprefixed-secret' },
    { scheme: 'hmac-sha256', secret: 'generic' },
    { scheme: 'hmac-sha256', secret: 'generic', header: 'X-Acme-Sig', prefix: 'sha256=', encoding: 'base64' },
  ];
  for (const raw of configs) {
    it(`${JSON.stringify(raw)}: what it signs, verifySignature accepts; another body or secret it does not`, () => {
      const cfg = signatureSchema.parse(raw);
      const headers = signRequest(cfg, body, now);
      assert.deepEqual(verifySignature(cfg, { rawBody: body, headers }, now).ok, true);
      assert.equal(verifySignature(cfg, { rawBody: Buffer.from(`${body.toString()} `), headers }, now).ok, false);
      const other = signatureSchema.parse({ ...raw, secret: undefined, secrets: ['some-other-secret'] });
      assert.equal(verifySignature(other, { rawBody: body, headers }, now).ok, false);
    });
  }
});
