import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { HttpError } from '../../src/errors.js';
import { extractIdempotencyKey, idempotencyClaim, MAX_IDEMPOTENCY_KEY_LENGTH } from '../../src/hooks/idempotency.js';

function rejects400(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof HttpError, `expected an HttpError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'invalid_payload');
    assert.match(err.message, message);
    return true;
  });
}

describe('extractIdempotencyKey', () => {
  it('reads the Idempotency-Key header, trimmed', () => {
    assert.equal(extractIdempotencyKey({ 'idempotency-key': ' abc-123 ' }, {}), 'abc-123');
    assert.equal(extractIdempotencyKey({ 'x-openclaw-idempotency-key': 'oc-1' }, {}), 'oc-1');
  });

  it('lets the header win over the body and over a delivery id', () => {
    assert.equal(
      extractIdempotencyKey({ 'idempotency-key': 'from-header' }, { idempotencyKey: 'from-body' }, 'delivery'),
      'from-header',
    );
    // the header wins even when the body value would be invalid
    assert.equal(extractIdempotencyKey({ 'idempotency-key': 'from-header' }, { idempotencyKey: 42 }), 'from-header');
  });

  it('falls back to idempotencyKey in the body, then to the delivery id', () => {
    assert.equal(extractIdempotencyKey({}, { idempotencyKey: ' from-body ' }, 'delivery'), 'from-body');
    assert.equal(extractIdempotencyKey({}, {}, 'gh-delivery-uuid'), 'gh-delivery-uuid');
    assert.equal(extractIdempotencyKey({}, {}), undefined);
  });

  it('treats a blank header or body key as absent', () => {
    assert.equal(extractIdempotencyKey({ 'idempotency-key': '   ' }, { idempotencyKey: 'from-body' }), 'from-body');
    assert.equal(extractIdempotencyKey({ 'idempotency-key': '' }, { idempotencyKey: '  ' }, 'delivery'), 'delivery');
    assert.equal(extractIdempotencyKey({ 'idempotency-key': '' }, { idempotencyKey: '' }), undefined);
  });

  it('refuses a body key that is not a string', () => {
    for (const idempotencyKey of [42, true, null, { k: 1 }, ['k']]) {
      rejects400(() => extractIdempotencyKey({}, { idempotencyKey }), /idempotencyKey must be a string/);
    }
  });

  it('accepts 256 characters and refuses 257, from any source', () => {
    assert.equal(MAX_IDEMPOTENCY_KEY_LENGTH, 256);
    const ok = 'k'.repeat(256);
    const tooLong = 'k'.repeat(257);
    assert.equal(extractIdempotencyKey({ 'idempotency-key': ok }, {}), ok);
    assert.equal(extractIdempotencyKey({}, { idempotencyKey: ok }), ok);
    assert.equal(extractIdempotencyKey({}, {}, ok), ok);
    rejects400(() => extractIdempotencyKey({ 'idempotency-key': tooLong }, {}), /at most 256 characters/);
    rejects400(() => extractIdempotencyKey({}, { idempotencyKey: tooLong }), /at most 256 characters/);
    rejects400(() => extractIdempotencyKey({}, {}, tooLong), /at most 256 characters/);
    // the limit applies after trimming
    assert.equal(extractIdempotencyKey({ 'idempotency-key': `  ${ok}  ` }, {}), ok);
  });
});

describe('extractIdempotencyKey: length in characters', () => {
  it('counts characters (code points), not UTF-16 units: 256 non-BMP characters are within the limit', () => {
    const key = '\u{1F600}'.repeat(256);
    assert.equal([...key].length, 256);
    // in the JSON body (a header value reaches Node as latin1 bytes, so there a character is a byte)
    assert.equal(extractIdempotencyKey({}, { idempotencyKey: key }), key);
    rejects400(() => extractIdempotencyKey({}, { idempotencyKey: '\u{1F600}'.repeat(257) }), /at most 256 characters/);
  });
});

describe('idempotencyClaim', () => {
  const claimBy = (ttl: number) => ({
    sender: '203.0.113.7',
    hooks: { idempotencyTtlSeconds: ttl, idempotencyMaxKeys: 10_000 },
  });
  const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

  it('stores hashes, never the key in clear, and expires after the TTL', () => {
    const body = Buffer.from('{"message":"hi"}');
    const c = idempotencyClaim('agent', 'my-key', body, claimBy(86_400), 1_000);
    assert.deepEqual(c, {
      scope: 'agent',
      keyHash: sha('my-key'),
      fingerprint: sha(body),
      expiresAt: 1_000 + 86_400_000,
      sender: '203.0.113.7',
      maxPerSender: 10_000,
    });
    assert.ok(!JSON.stringify(c).includes('my-key'));
  });

  it('gives the same key and body the same claim, another body another fingerprint', () => {
    const a = idempotencyClaim('wake', 'k', Buffer.from('{"text":"a"}'), claimBy(60), 0);
    assert.deepEqual(idempotencyClaim('wake', 'k', Buffer.from('{"text":"a"}'), claimBy(60), 0), a);
    const b = idempotencyClaim('wake', 'k', Buffer.from('{"text":"b"}'), claimBy(60), 0);
    assert.equal(b.keyHash, a.keyHash);
    assert.notEqual(b.fingerprint, a.fingerprint);
    assert.notEqual(idempotencyClaim('wake', 'k2', Buffer.from('{"text":"a"}'), claimBy(60), 0).keyHash, a.keyHash);
  });
});
