import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it, mock } from 'node:test';
import { postJson, secondsToMs, type SendFailure, sentOn2xx } from '../../src/channels/http.js';
import { TokenCache as AccessTokenCache, type TokenFetched } from '../../src/http/token.js';

type TokenOutcome = TokenFetched<SendFailure>;
import { errorCode, isRetryableStatus, joinUrl } from '../../src/http-util.js';
import { parseRetryAfter } from '../../src/retry-after.js';
import { logSafeOptional as describeText } from '../../src/text-safe.js';
import { closedPortUrl, happyEyeballsRefused } from '../support/platforms/fixtures.js';

describe('channel http helpers', () => {
  it('parseRetryAfter reads delay-seconds and HTTP dates', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('1.5', now), 1500);
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:27:00 GMT', now), 0, 'a past date means now');
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('-5', now), undefined);
    assert.equal(parseRetryAfter('', now), undefined);
    assert.equal(parseRetryAfter(null, now), undefined);
  });

  it('secondsToMs takes fractional seconds and rejects junk', () => {
    assert.equal(secondsToMs(1.234), 1234);
    assert.equal(secondsToMs(7), 7000);
    assert.equal(secondsToMs('7'), undefined);
    assert.equal(secondsToMs(-1), undefined);
  });

  it('classifies statuses: 408, 429, 5xx retryable; other 4xx permanent', () => {
    for (const s of [408, 429, 500, 502, 503, 504]) assert.equal(isRetryableStatus(s), true, String(s));
    for (const s of [400, 401, 403, 404, 409, 413, 422]) assert.equal(isRetryableStatus(s), false, String(s));
  });

  it('describe strips control characters and bounds length', () => {
    assert.equal(describeText('bad\r\nthing\u0000'), 'bad thing');
    // text-safe bounds the whole result, ellipsis included (the old channel-local copy allowed max + 1).
    assert.equal(describeText('x'.repeat(300))?.length, 200);
    assert.equal(describeText(42), undefined);
    assert.equal(describeText('  '), undefined);
  });

  it('errorCode finds a code on the cause chain and inside an AggregateError, never a message', () => {
    assert.equal(errorCode(happyEyeballsRefused()), 'ECONNREFUSED');
    assert.equal(errorCode(new TypeError('fetch failed', { cause: { code: 'ENOTFOUND' } })), 'ENOTFOUND');
    assert.equal(errorCode(Object.assign(new Error('x'), { code: 'UND_ERR_SOCKET' })), 'UND_ERR_SOCKET');
    assert.equal(errorCode(new Error('plain')), undefined);
    assert.equal(errorCode(new TypeError('fetch failed', { cause: { code: 'see http://user:pw@host/' } })), undefined);
  });

  it('joinUrl neither doubles nor loses the slash', () => {
    assert.equal(joinUrl('https://a/teams/', '/v3/x'), 'https://a/teams/v3/x');
    assert.equal(joinUrl('https://a/api', 'chat.postMessage'), 'https://a/api/chat.postMessage');
  });

  describe('postJson', () => {
    let url = '';
    const server = createServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/elsewhere' }).end();
      } else if (req.url === '/big') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(3 * 1024 * 1024));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }
    });
    before(async () => {
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(() => new Promise<void>((r) => server.close(() => r())));

    // timeoutMs 20 s where the request should get its answer: a bound for a busy machine, not what is tested.
    it('parses a JSON answer', async () => {
      const o = await postJson(`${url}/x`, { a: 1 }, { timeoutMs: 20_000 });
      assert.equal(o.kind, 'response');
      assert.deepEqual(o.kind === 'response' && o.json, { ok: true });
    });

    it('does not follow redirects (credentials would go elsewhere)', async () => {
      const o = await postJson(`${url}/redirect`, {}, { timeoutMs: 20_000 });
      assert.equal(o.kind === 'response' && o.status, 302);
    });

    it('bounds how much of an answer it reads', async () => {
      const o = await postJson(`${url}/big`, {}, { timeoutMs: 5000 });
      assert.ok(o.kind === 'response' && o.text.length <= 1024 * 1024);
    });

    it('reports a refused connection by code only', async () => {
      const o = await postJson(`${await closedPortUrl()}/secret-path?password=hunter2`, {}, { timeoutMs: 20_000 });
      assert.deepEqual(o, { kind: 'network', code: 'ECONNREFUSED' });
    });

    it('reports the code inside an AggregateError (::1 and 127.0.0.1 both refused)', async (t) => {
      mock.method(globalThis, 'fetch', async () => {
        throw happyEyeballsRefused();
      });
      t.after(() => mock.restoreAll());
      const o = await postJson('http://localhost:1/x', {}, { timeoutMs: 20_000 });
      assert.deepEqual(o, { kind: 'network', code: 'ECONNREFUSED' });
    });
  });

  describe('AccessTokenCache', () => {
    it('fetches once for concurrent callers and reuses the token until the margin before expiry', async () => {
      let now = 1_000_000;
      let fetches = 0;
      const cache = new AccessTokenCache(
        async (): Promise<TokenOutcome> => {
          fetches++;
          await new Promise((r) => setTimeout(r, 5));
          return { ok: true, token: `t${fetches}`, expiresAtMs: now + 3_600_000 };
        },
        () => now,
      );
      // A function, so TypeScript does not narrow the counter after the first assertion.
      const count = () => fetches;
      const got = await Promise.all([cache.get(), cache.get(), cache.get()]);
      assert.equal(count(), 1);
      assert.deepEqual(
        got.map((g) => g.ok && g.token),
        ['t1', 't1', 't1'],
      );
      const cached = await cache.get();
      assert.ok(cached.ok && !cached.fresh);
      now += 3_600_000 - 59_000; // inside the 60 s margin
      const refreshed = await cache.get();
      assert.ok(refreshed.ok && refreshed.fresh && refreshed.token === 't2');
      cache.invalidate('t1'); // an old token: no effect
      assert.ok((await cache.get()).ok);
      assert.equal(count(), 2);
      cache.invalidate('t2');
      await cache.get();
      assert.equal(count(), 3);
    });

    it('does not cache a failure', async () => {
      let calls = 0;
      const cache = new AccessTokenCache(async (): Promise<TokenOutcome> => {
        calls++;
        return calls === 1
          ? { ok: false, failure: { ok: false, retryable: true, error: 'down' } }
          : { ok: true, token: 'ok', expiresAtMs: Date.now() + 3_600_000 };
      });
      assert.equal((await cache.get()).ok, false);
      assert.equal((await cache.get()).ok, true);
    });
  });
});

describe('a send counted as sent without a readable body', () => {
  it("is logged with the delivery's ids, so the line joins the delivery's own (docs/operations.md, Logs)", () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = { warn: (obj: object) => void lines.push(obj as Record<string, unknown>) };
    const outcome = {
      kind: 'response',
      status: 200,
      headers: {},
      text: '<html>',
      json: undefined,
    } as unknown as Parameters<typeof sentOn2xx>[1];
    const sent = sentOn2xx('discord', outcome, logger, () => undefined, { deliveryId: 'd1_2', runId: 'r1' });
    assert.deepEqual(sent, { ok: true });
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.deliveryId, 'd1_2');
    assert.equal(lines[0]!.runId, 'r1');
  });
});
