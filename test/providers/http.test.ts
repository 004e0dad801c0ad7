import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { Agent, fetch, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { errorReason, mergeHeaders, parseRetryAfter, postJson } from '../../src/providers/http.js';
import { redactSecrets as redact } from '../../src/text-safe.js';

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
    assert.equal(
      errorReason(
        '{"error":{"message":"bad model","type":"invalid_request_error","code":"model_not_found"}}',
        'application/json',
      ),
      'model_not_found: bad model',
    );
    assert.equal(
      errorReason('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', null),
      'overloaded_error: Overloaded',
    );
    assert.equal(
      errorReason('{"error":"model \\"x\\" not found, try pulling it first"}', null),
      'model "x" not found, try pulling it first',
    );
    assert.equal(
      errorReason('{"object":"error","message":"context too long","type":"BadRequestError","code":400}', null),
      'context too long',
    );
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
    assert.equal(
      redact('Incorrect API key provided: sk-proj-abc***********xyz1.', []),
      'Incorrect API key provided: [redacted]',
    );
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
    assert.deepEqual(
      mergeHeaders({ Authorization: 'Bearer other', 'X-Title': 't' }, { authorization: 'Bearer mine' }),
      {
        'X-Title': 't',
        authorization: 'Bearer mine',
      },
    );
  });
});

describe('postJson transport errors', () => {
  it('names the code of a refused connection, never more of the error', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    await new Promise((r) => server.close(r)); // the port is free again: connections are refused
    const req = {
      url: `http://127.0.0.1:${port}/v1/chat`,
      headers: {},
      body: {},
      signal: new AbortController().signal,
      label: 'test',
      secrets: [],
    };
    await assert.rejects(postJson(req), {
      code: 'provider_unreachable',
      retryable: true,
      message: `test: cannot reach http://127.0.0.1:${port} (ECONNREFUSED)`,
    });
  });
});

describe('postJson and slow models', () => {
  it('waits for a model that sends no headers for longer than fetch would by default', async (t) => {
    // Stand-in for a model thinking before its first byte. undici's default dispatcher is shrunk from 300 s to 300 ms
    // so the test can show the difference in seconds.
    const server = createServer((req, res) => {
      req.resume();
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true}');
      }, 2000); // well past 300 ms: undici checks its timeouts on a coarse clock
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat`;
    const before = getGlobalDispatcher();
    setGlobalDispatcher(new Agent({ headersTimeout: 300 }));
    t.after(() => {
      setGlobalDispatcher(before);
      server.close();
    });

    const plain = await fetch(url, { method: 'POST', body: '{}' }).then(
      () => 'answered',
      (err: Error) => (err.cause as { code?: string } | undefined)?.code,
    );
    assert.equal(plain, 'UND_ERR_HEADERS_TIMEOUT', 'the default dispatcher gives up: the stand-in is slow enough');

    const req = { url, headers: {}, body: {}, signal: AbortSignal.timeout(10_000), label: 'test', secrets: [] };
    assert.deepEqual(await postJson(req), { json: { ok: true }, status: 200 });
  });
});
