/**
 * Properties of the HTTP contract against the real server process (docs/reference.md#error-answers): whatever JSON
 * object is posted to /hooks/wake or /hooks/agent, and whatever method, path and headers a request has, the answer is a
 * 2xx or a 4xx `{ ok: false, error, code }` with a code from the catalogue (errors.ts), never a 5xx, and the process
 * stays up. Template rendering's properties (no prototype access, never throws) are in test/hooks/templates.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { Agent, fetch } from 'undici';
import { contractViolation } from '../support/fuzz.js';
import { type Hookgate, startHookgate, TOKEN } from '../support/server.js';
import { RELIABILITY_CONFIG } from './config.js';

let hg: Hookgate;
before(async () => {
  hg = await startHookgate({ config: RELIABILITY_CONFIG });
});
after(async () => {
  await hg.cleanup();
});

// The fields the routes read, so generated bodies reach the checks behind the first missing field.
const FIELDS = [
  'text',
  'mode',
  'message',
  'name',
  'agentId',
  'sessionKey',
  'sessionMode',
  'wakeMode',
  'deliver',
  'channel',
  'to',
  'accountId',
  'model',
  'thinking',
  'timeoutSeconds',
  'idempotencyKey',
  'allowUnsafeExternalContent',
  '__proto__',
  'constructor',
];
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom('now', 'next-heartbeat', 'last', 'main', 'echo/echo', 'hook:x', '', ' '),
  fc.integer(),
  fc.boolean(),
);
const body = fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 8 })), value, { maxKeys: 8 });
const xff = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255)).map(([a, b, c]) => `10.${a}.${b}.${c}`);

// A connection per request: the properties are about answers, and a pooled keep-alive connection the server closes
// (idle or timed out) just as the next request goes out on a busy machine fails that request before any answer.
// Keep-alive itself is tested in test/e2e/connections.test.ts.
const fresh = new Agent({ pipelining: 0 });
after(() => fresh.close());

async function answer(method: string, path: string, headers: Record<string, string>, payload?: string) {
  const body = method === 'GET' || method === 'HEAD' ? undefined : payload;
  const res = await fetch(hg.url + path, { method, headers, body, dispatcher: fresh });
  return { status: res.status, text: await res.text() };
}

describe('reliability: HTTP contract properties', { timeout: 60_000 }, () => {
  for (const route of ['/hooks/wake', '/hooks/agent']) {
    it(`any JSON object posted to ${route}: a 2xx or a documented 4xx, never a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(body, xff, async (b, addr) => {
          const a = await answer(
            'POST',
            route,
            { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-forwarded-for': addr },
            JSON.stringify(b),
          );
          assert.equal(contractViolation('POST', a), undefined);
          assert.ok(a.status < 300 || a.status >= 400, `status ${a.status}`);
        }),
        { numRuns: 200 },
      );
    });
  }

  it('any method, path and headers: a 2xx or a documented 4xx, never a 5xx', async () => {
    const segment = fc.oneof(
      fc.constantFrom('hooks', 'wake', 'agent', 'github', 'templated', '..', '.', '', '%2e%2e', '%00', 'x'.repeat(300)),
      fc.webSegment(),
    );
    const path = fc.array(segment, { maxLength: 4 }).map((s) => `/${s.join('/')}`);
    const query = fc.option(fc.constantFrom(`?token=${TOKEN}`, '?x=1', '?', '?a=%ff', '?__proto__=1'), { nil: '' });
    const headerName = fc.oneof(
      fc.constantFrom(
        'authorization',
        'x-openclaw-token',
        'content-type',
        'idempotency-key',
        'x-github-event',
        'x-hub-signature-256',
        'accept',
        'x-forwarded-for',
        'content-encoding',
      ),
      fc.stringMatching(/^x-[a-z0-9-]{1,12}$/),
    );
    const headerValue = fc.oneof(
      fc.constantFrom(
        `Bearer ${TOKEN}`,
        TOKEN,
        'Bearer ',
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'gzip',
        'sha256=00',
        '203.0.113.7, 10.0.0.1',
      ),
      fc.stringMatching(/^[\x20-\x7e]{0,40}$/),
    );
    const headers = fc.dictionary(headerName, headerValue, { maxKeys: 5 });
    const method = fc.constantFrom('POST', 'POST', 'GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
    const payload = fc.oneof(
      body.map((b) => JSON.stringify(b)),
      fc.string({ maxLength: 64 }),
    );
    await fc.assert(
      fc.asyncProperty(method, path, query, headers, payload, xff, async (m, p, q, h, b, addr) => {
        const a = await answer(m, p + q, { 'x-forwarded-for': addr, ...h }, b);
        assert.equal(contractViolation(m, a), undefined);
      }),
      { numRuns: 400 },
    );
    assert.equal(hg.proc.exitCode, null, 'the process exited');
    assert.equal((await hg.post('/hooks/wake', { text: 'still here' })).status, 200);
  });
});
