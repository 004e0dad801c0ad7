/**
 * The `twilio` scheme against Twilio's own Node library (devDependency `twilio`): what `getExpectedTwilioSignature`
 * signs, `verifySignature` accepts, and what `twilioSignature` signs, `twilio.validateRequest` accepts; on random form
 * fields, query strings and URLs with and without their port, the two give the same answer. How Twilio signs:
 * https://www.twilio.com/docs/usage/security ("Validating requests are coming from Twilio").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { twilio } from '../../support/sender-sdks.js';
import { signatureSchema, type SignatureConfig } from '../../../src/config/schema/hooks.js';
import { twilioBodyHash, twilioSignature } from '../../../src/hooks/mappings/signature-twilio.js';
import { type SignatureHeaders, verifySignature } from '../../../src/hooks/mappings/signatures.js';

const TOKEN = 'twilio-auth-token-0123456789abcdef';
const URL_ = 'https://hooks.example.com/hooks/twilio';
const NOW = 1_760_000_000_000; // Twilio signs no time: any clock will do
const FORM = 'application/x-www-form-urlencoded';

const cfg = (input: Record<string, unknown>): SignatureConfig => signatureSchema.parse({ scheme: 'twilio', ...input });
const c = cfg({ secret: TOKEN, url: URL_ });

type Fields = Array<[string, string]>;
/** The fields as Express's urlencoded parser hands them to Twilio's library: one string, or an array when repeated. */
function paramsOf(fields: Fields): Record<string, string | string[]> {
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const [k, v] of fields) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}
const formBody = (fields: Fields) => Buffer.from(new URLSearchParams(fields).toString());

/** A form request Twilio sent to `url` (its query string, if any, in `rawQuery`), signed by `signature`. */
type TwilioRequest = { rawBody: Buffer; headers: SignatureHeaders; rawQuery?: string };
function formRequest(
  fields: Fields,
  signature: string,
  rawQuery?: string,
  extra: SignatureHeaders = {},
): TwilioRequest {
  return {
    rawBody: formBody(fields),
    headers: { 'content-type': `${FORM}; charset=UTF-8`, 'x-twilio-signature': signature, ...extra },
    ...(rawQuery === undefined ? {} : { rawQuery }),
  };
}
const reason = (r: ReturnType<typeof verifySignature>): string => (r.ok ? 'ok' : r.reason);

const SMS: Fields = [
  ['MessageSid', 'SM1234567890abcdef1234567890abcdef'],
  ['AccountSid', 'AC1234567890abcdef1234567890abcdef'],
  ['From', '+14158675309'],
  ['To', '+18005551212'],
  ['Body', 'Ahoy! Café & co, 100% sure?'],
  ['NumMedia', '0'],
];

describe('twilio: form bodies (HMAC-SHA1 over the URL and the sorted fields)', () => {
  it("verifies the documented example of Twilio's helper libraries (auth token 12345)", () => {
    // twilio-php's "Validate Incoming Requests" example, the one Twilio's libraries test with.
    const fields: Fields = [
      ['CallSid', 'CA1234567890ABCDE'],
      ['Caller', '+14158675309'],
      ['Digits', '1234'],
      ['From', '+14158675309'],
      ['To', '+18005551212'],
    ];
    const vc = cfg({ secret: '12345', url: 'https://mycompany.com/myapp.php' });
    assert.deepEqual(verifySignature(vc, formRequest(fields, 'RSOYDt4T1cUTdK1PDd93/VVr8B8=', 'foo=1&bar=2'), NOW), {
      ok: true,
    });
    const otherQuery = formRequest(fields, 'RSOYDt4T1cUTdK1PDd93/VVr8B8=', 'foo=1&bar=3');
    assert.equal(reason(verifySignature(vc, otherQuery, NOW)), 'signature mismatch');
  });

  it("accepts what Twilio's library signs and returns I-Twilio-Idempotency-Token as the delivery id", () => {
    const sig = twilio.getExpectedTwilioSignature(TOKEN, URL_, paramsOf(SMS));
    const r = verifySignature(
      c,
      formRequest(SMS, sig, undefined, { 'i-twilio-idempotency-token': 'a9c1f0e2-idem' }),
      NOW,
    );
    assert.deepEqual(r, { ok: true, deliveryId: 'a9c1f0e2-idem' });
    assert.deepEqual(verifySignature(c, formRequest(SMS, sig), NOW), { ok: true });
  });

  it('refuses tampering, a wrong token, missing, repeated and garbled headers, and a body that is not signed', () => {
    const sig = twilio.getExpectedTwilioSignature(TOKEN, URL_, paramsOf(SMS));
    const changed: Fields = SMS.map(([k, v]) => [k, k === 'Body' ? `${v}!` : v]);
    const unsigned = 'body not signed: not a form, and no bodySHA256 query parameter';
    const cases: Array<[TwilioRequest, string]> = [
      [formRequest(changed, sig), 'signature mismatch'],
      [formRequest([...SMS, ['Extra', '1']], sig), 'signature mismatch'],
      [formRequest(SMS, sig, 'x=1'), 'signature mismatch'],
      [formRequest(SMS, twilio.getExpectedTwilioSignature('another-token', URL_, paramsOf(SMS))), 'signature mismatch'],
      [formRequest(SMS, twilio.getExpectedTwilioSignature(TOKEN, `${URL_}/`, paramsOf(SMS))), 'signature mismatch'],
      [
        formRequest(SMS, twilio.getExpectedTwilioSignature(TOKEN, URL_.replace('https:', 'http:'), paramsOf(SMS))),
        'signature mismatch',
      ],
      [formRequest(SMS, `${sig}=`), 'signature mismatch'],
      [{ ...formRequest(SMS, sig), headers: { 'content-type': FORM } }, 'missing header x-twilio-signature'],
      [
        { ...formRequest(SMS, sig), headers: { 'content-type': FORM, 'x-twilio-signature': [sig, sig] } },
        'duplicate header x-twilio-signature',
      ],
      // the same bytes as JSON: without bodySHA256 the signature covers no body
      [
        { ...formRequest(SMS, sig), headers: { 'content-type': 'application/json', 'x-twilio-signature': sig } },
        unsigned,
      ],
    ];
    for (const [r, want] of cases) assert.equal(reason(verifySignature(c, r, NOW)), want, JSON.stringify(r.headers));
  });

  it('accepts any of several auth tokens (rotation: the primary and the secondary token)', () => {
    const rot = cfg({ secrets: ['new-primary-token', TOKEN], url: URL_ });
    for (const token of ['new-primary-token', TOKEN]) {
      const signed = formRequest(SMS, twilio.getExpectedTwilioSignature(token, URL_, paramsOf(SMS)));
      assert.equal(verifySignature(rot, signed, NOW).ok, true, token);
    }
  });

  it('signs each distinct value of a repeated field once, sorted, as the library does', () => {
    const repeated: Fields = [
      ['MediaUrl', 'https://b.example/2'],
      ['Body', 'x'],
      ['MediaUrl', 'https://a.example/1'],
      ['MediaUrl', 'https://b.example/2'],
    ];
    const sig = twilio.getExpectedTwilioSignature(TOKEN, URL_, paramsOf(repeated));
    assert.equal(reason(verifySignature(c, formRequest(repeated, sig), NOW)), 'ok');
    assert.equal(twilioSignature(TOKEN, URL_, repeated), sig);
  });

  it('an empty body: the URL alone is signed', () => {
    const sig = twilio.getExpectedTwilioSignature(TOKEN, `${URL_}?CallSid=CA1`, {});
    const empty = { rawBody: Buffer.alloc(0), headers: { 'x-twilio-signature': sig }, rawQuery: 'CallSid=CA1' };
    assert.equal(reason(verifySignature(c, empty, NOW)), 'ok');
  });

  it('X-Twilio-Webhooks-Signature-Settings: HMAC_SHA256 for SharedKey webhooks; an unknown algorithm is refused', () => {
    const settings = 'key=webhooks_sharedkey_123,algorithm=HMAC_SHA256';
    const sig = twilio.getExpectedTwilioSignature(TOKEN, URL_, paramsOf(SMS), 'HMAC_SHA256');
    const h = { 'x-twilio-webhooks-signature-settings': settings };
    assert.equal(reason(verifySignature(c, formRequest(SMS, sig, undefined, h), NOW)), 'ok');
    assert.equal(reason(verifySignature(c, formRequest(SMS, sig), NOW)), 'signature mismatch');
    assert.equal(twilioSignature(TOKEN, URL_, SMS, 'sha256'), sig);
    const sha1 = twilio.getExpectedTwilioSignature(TOKEN, URL_, paramsOf(SMS));
    const withSettings = (value: string) =>
      reason(
        verifySignature(c, formRequest(SMS, sha1, undefined, { 'x-twilio-webhooks-signature-settings': value }), NOW),
      );
    assert.equal(withSettings('key=k,algorithm=HMAC_SHA1'), 'ok');
    assert.equal(withSettings(''), 'ok');
    assert.equal(
      withSettings('algorithm=HMAC_MD5'),
      'unsupported algorithm in header x-twilio-webhooks-signature-settings',
    );
  });
});

describe('twilio: the URL (ports and query strings as the library treats them)', () => {
  const fields: Fields = [
    ['CallSid', 'CA1'],
    ['Digits', '42'],
  ];
  const verify = (configured: string, signedFor: string, rawQuery?: string) => {
    const signed = formRequest(fields, twilio.getExpectedTwilioSignature(TOKEN, signedFor, paramsOf(fields)), rawQuery);
    return reason(verifySignature(cfg({ secret: TOKEN, url: configured }), signed, NOW));
  };

  it('with and without the default port, either way round', () => {
    assert.equal(verify('https://hooks.example.com:443/hooks/twilio', 'https://hooks.example.com/hooks/twilio'), 'ok');
    assert.equal(verify('https://hooks.example.com/hooks/twilio', 'https://hooks.example.com:443/hooks/twilio'), 'ok');
    assert.equal(verify('http://hooks.example.com/hooks/twilio', 'http://hooks.example.com:80/hooks/twilio'), 'ok');
  });

  it('a port the sender named is not optional (like the library, which tries the URL with the default one)', () => {
    assert.equal(verify('https://hooks.example.com:8443/hooks/twilio', 'https://hooks.example.com/hooks/twilio'), 'ok'); // port removed
    assert.equal(
      verify('https://hooks.example.com/hooks/twilio', 'https://hooks.example.com:8443/hooks/twilio'),
      'signature mismatch',
    );
    const sig = twilio.getExpectedTwilioSignature(
      TOKEN,
      'https://hooks.example.com:8443/hooks/twilio',
      paramsOf(fields),
    );
    assert.equal(twilio.validateRequest(TOKEN, sig, 'https://hooks.example.com/hooks/twilio', paramsOf(fields)), false);
  });

  it("the request's query string is appended and signed, as received and as new URL() encodes it", () => {
    assert.equal(verify(URL_, `${URL_}?To=%2B1800&x=a+b`, 'To=%2B1800&x=a+b'), 'ok');
    assert.equal(verify(URL_, `${URL_}?q=it's`, "q=it's"), 'ok');
    assert.equal(verify(URL_, `${URL_}?q=it%27s`, "q=it's"), 'ok');
    assert.equal(verify(URL_, `${URL_}?x=1`, 'x=2'), 'signature mismatch');
    assert.equal(verify(URL_, URL_, 'x=1'), 'signature mismatch');
  });
});

describe('twilio: JSON bodies (bodySHA256 in the signed URL)', () => {
  const json = Buffer.from('{"ConversationSid":"CH123","EventType":"onMessageAdded","Body":"hi"}');
  const request = (raw: Buffer, rawQuery: string, sig: string) => ({
    rawBody: raw,
    headers: { 'content-type': 'application/json', 'x-twilio-signature': sig },
    rawQuery,
  });

  it('verifies the URL signature and the body hash, as validateRequestWithBody does', () => {
    const query = `bodySHA256=${twilio.getExpectedBodyHash(json.toString())}`;
    assert.equal(query, `bodySHA256=${twilioBodyHash(json)}`);
    const sig = twilio.getExpectedTwilioSignature(TOKEN, `${URL_}?${query}`, {});
    assert.equal(reason(verifySignature(c, request(json, query, sig), NOW)), 'ok');
    assert.equal(twilio.validateRequestWithBody(TOKEN, sig, `${URL_}?${query}`, json.toString()), true);
    const tampered = Buffer.from(json.toString().replace('hi', 'ho'));
    assert.equal(reason(verifySignature(c, request(tampered, query, sig), NOW)), 'body does not match bodySHA256');
    assert.equal(twilio.validateRequestWithBody(TOKEN, sig, `${URL_}?${query}`, tampered.toString()), false);
    assert.equal(
      reason(verifySignature(c, request(json, `${query}&${query}`, sig), NOW)),
      'duplicate query parameter bodySHA256',
    );
    assert.equal(
      reason(verifySignature(c, request(json, '', sig), NOW)),
      'body not signed: not a form, and no bodySHA256 query parameter',
    );
  });
});

describe('twilio: agreement with the library, both ways (properties)', () => {
  const text = fc.string({ unit: 'grapheme', maxLength: 12 });
  const name = fc.oneof(
    fc.constantFrom('Body', 'From', 'To', 'MediaUrl0', 'a', 'A', 'b', '_', 'Z9'),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }),
  );
  const fields = fc.array(fc.tuple(name, text), { maxLength: 8 });
  const hosts = ['hooks.example.com', 'hooks.example.com:443', 'hooks.example.com:8443'];
  const url = fc.record({
    host: fc.constantFrom(...hosts),
    path: fc.constantFrom('/hooks/twilio', '/h/t%20x', "/it's/ok"),
  });
  const query = fc.option(fc.array(fc.tuple(fc.constantFrom('a', 'To', 'x y', "q'"), text), { maxLength: 3 }), {
    nil: undefined,
  });

  it('whatever Twilio signed for whichever spelling of the URL, verifySignature and validateRequest agree', () => {
    fc.assert(
      fc.property(fields, url, url, query, fc.boolean(), (f, signedFor, configured, q, wrongToken) => {
        const rawQuery = q === undefined ? undefined : new URLSearchParams(q).toString();
        const search = rawQuery === undefined ? '' : `?${rawQuery}`;
        const signedUrl = `https://${signedFor.host}${configured.path}${search}`;
        const configuredUrl = `https://${configured.host}${configured.path}`;
        const sig = twilio.getExpectedTwilioSignature(wrongToken ? 'not-the-token' : TOKEN, signedUrl, paramsOf(f));
        const ours = verifySignature(cfg({ secret: TOKEN, url: configuredUrl }), formRequest(f, sig, rawQuery), NOW).ok;
        const theirs = twilio.validateRequest(TOKEN, sig, `${configuredUrl}${search}`, paramsOf(f));
        assert.equal(ours, theirs, JSON.stringify({ f, signedUrl, configuredUrl }));
        if (!wrongToken && signedFor.host === configured.host) assert.equal(ours, true);
      }),
      { numRuns: 400 },
    );
  });

  it('what twilioSignature signs (hookgate send hook --sign, the tests), validateRequest accepts', () => {
    fc.assert(
      fc.property(fields, url, query, (f, u, q) => {
        const search = q === undefined ? '' : `?${new URLSearchParams(q).toString()}`;
        const full = `https://${u.host}${u.path}${search}`;
        assert.equal(twilio.validateRequest(TOKEN, twilioSignature(TOKEN, full, f), full, paramsOf(f)), true);
      }),
      { numRuns: 300 },
    );
  });
});
