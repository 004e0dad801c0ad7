import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { errorReason, mergeHeaders, parseRetryAfter, postJson } from '../../src/providers/http.js';
import { redact } from '../../src/providers/redact.js';

describe('parseRetryAfter', () => {
  const h = (init: Record<string, string>) => new Headers(init);
  it('reads seconds, an HTTP date, and retry-after-ms (preferred)', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    assert.equal(parseRetryAfter(h({ 'retry-after': '3' }), now), 3000);
    assert.equal(parseRetryAfter(h({ 'retry-after': '0.5' }), now), 500);
    assert.equal(parseRetryAfter(h({ 'retry-after': 'Wed, 01 Jan 2025 00:00:10 GMT' }), now), 10_000);
    assert.equal(parseRetryAfter(h({ 'retry-after': 'Tue, 31 Dec 2024 23:00:00 GMT' }), now), 0);
    assert.equal(parseRetryAfter(h({ 'retry-after': '3', 'retry-after-ms': '250' }), now), 250);
  });
  it('ignores absent or unparseable values', () => {
    assert.equal(parseRetryAfter(h({})), undefined);
    assert.equal(parseRetryAfter(h({ 'retry-after': 'soon' })), undefined);
    assert.equal(parseRetryAfter(h({ 'retry-after': '-5' })), undefined);
  });
});

describe('errorReason', () => {
  it('reads the common error body shapes', () => {
    assert.equal(errorReason('{"error":{"message":"bad model","type":"invalid_request_error","code":"model_not_found"}}', 'application/json'), 'model_not_found: bad model');
    assert.equal(errorReason('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', null), 'overloaded_error: Overloaded');
    assert.equal(errorReason('{"error":"model \\"x\\" not found, try pulling it first"}', null), 'model "x" not found, try pulling it first');
    assert.equal(errorReason('{"object":"error","message":"context too long","type":"BadRequestError","code":400}', null), 'context too long');
    assert.equal(errorReason('{"detail":"Not authenticated"}', null), 'Not authenticated');
    assert.equal(errorReason('upstream timed out', 'text/plain'), 'upstream timed out');
  });
  it('never returns an HTML page', () => {
    assert.equal(errorReason('<html><body><h1>502 Bad Gateway</h1></body></html>', 'text/html'), '');
  });
});

describe('redact', () => {
  it('masks configured secrets and key-shaped strings, strips control chars, bounds the length', () => {
    assert.equal(redact('key my-secret-value rejected', ['my-secret-value']), 'key [redacted] rejected');
    assert.equal(redact('Incorrect API key provided: sk-proj-abc***********xyz1.', []), 'Incorrect API key provided: [redacted]');
    assert.equal(redact('got Authorization: Bearer abc.def.ghi', []), 'got Authorization: Bearer [redacted]');
    assert.equal(redact('a\u0000\nb\t c', []), 'a b c');
    const long = redact('x'.repeat(1000), []);
    assert.equal(long.length, 200);
    assert.ok(long.endsWith('…'));
  });
  it('masks the longer of two overlapping secrets whole', () => {
    assert.equal(redact('token abcdef123456', ['abcd', 'abcdef123456']), 'token [redacted]');
  });
});

describe('mergeHeaders', () => {
  it('lets the provider headers win whatever the case of a configured name', () => {
    assert.deepEqual(mergeHeaders({ Authorization: 'Bearer other', 'X-Title': 't' }, { authorization: 'Bearer mine' }), {
      'X-Title': 't',
      authorization: 'Bearer mine',
    });
  });
});

describe('postJson transport errors', () => {
  it('names the code inside an AggregateError (::1 and 127.0.0.1 both refused)', async (t) => {
    const refused = (address: string) => Object.assign(new Error(`connect ECONNREFUSED ${address}:1`), { code: 'ECONNREFUSED', address });
    mock.method(globalThis, 'fetch', async () => {
      throw new TypeError('fetch failed', { cause: new AggregateError([refused('::1'), refused('127.0.0.1')]) });
    });
    t.after(() => mock.restoreAll());
    const req = { url: 'http://localhost:1/v1/chat', headers: {}, body: {}, signal: new AbortController().signal, label: 'test', secrets: [] };
    await assert.rejects(postJson(req), { code: 'provider_unreachable', retryable: true, message: 'test: cannot reach http://localhost:1 (ECONNREFUSED)' });
  });
});
