/** The outbound client's concerns, each against a local HTTP server: no stand-in of fetch. */
import assert from 'node:assert/strict';
import { generateKeyPairSync, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { agent, asFetch, request } from '../../src/http/client.js';
import { GoogleApiError, OutboundError, statusCode } from '../../src/http/errors.js';
import { googleJson } from '../../src/http/google.js';
import { withRetry } from '../../src/http/retry.js';
import {
  clientCredentials,
  jwtBearer,
  readServiceAccount,
  requestToken,
  TokenCache,
  withBearer,
  type TokenFetched,
} from '../../src/http/token.js';
import { closedPortUrl } from '../support/platforms/fixtures.js';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

async function serve(handler: Handler): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('http client: one request, one outcome', () => {
  let srv: Awaited<ReturnType<typeof serve>>;
  let slowStarted = 0;
  before(async () => {
    srv = await serve((req, res, body) => {
      if (req.url === '/json')
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ got: body, method: req.method }));
      if (req.url === '/redirect') return void res.writeHead(302, { location: '/json' }).end();
      if (req.url === '/big') return void res.writeHead(200).end('x'.repeat(256 * 1024));
      if (req.url === '/slow') {
        slowStarted++;
        return void setTimeout(() => res.writeHead(200).end('late'), 2000).unref();
      }
      res.writeHead(404).end();
    });
  });
  after(() => srv.close());

  // timeoutMs 20 s where the request should succeed: a bound for a busy machine, not what is tested.
  it('answers status, headers, text and JSON; POST when there is a body', async () => {
    const o = await request(
      `${srv.url}/json`,
      { body: 'hello', headers: { 'content-type': 'text/plain' } },
      { timeoutMs: 20_000 },
    );
    assert.equal(o.kind, 'response');
    assert.ok(o.kind === 'response');
    assert.equal(o.status, 200);
    assert.equal(o.headers.get('content-type'), 'application/json');
    assert.deepEqual(o.json, { got: 'hello', method: 'POST' });
    assert.equal(o.truncated, false);
  });

  it('does not follow a redirect: the 3xx is the outcome', async () => {
    const o = await request(`${srv.url}/redirect`, {}, { timeoutMs: 20_000 });
    assert.equal(o.kind === 'response' && o.status, 302);
  });

  it('reads at most maxBytes of a body, and marks it truncated', async () => {
    const o = await request(`${srv.url}/big`, {}, { timeoutMs: 20_000, maxBytes: 1000 });
    assert.ok(o.kind === 'response');
    assert.equal(o.text.length, 1000);
    assert.equal(o.truncated, true);
    const none = await request(`${srv.url}/big`, {}, { timeoutMs: 20_000, maxBytes: 0 });
    assert.ok(none.kind === 'response' && none.text === '' && none.status === 200);
  });

  it('times out as `timeout`, and a caller stop is `aborted`', async () => {
    const t0 = Date.now();
    assert.deepEqual(await request(`${srv.url}/slow`, {}, { timeoutMs: 100 }), { kind: 'timeout' });
    assert.ok(Date.now() - t0 < 1500);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    assert.deepEqual(await request(`${srv.url}/slow`, {}, { timeoutMs: 5000, signal: ac.signal }), { kind: 'aborted' });
    assert.ok(slowStarted >= 2);
  });

  it('names the network cause of a refused connection by its code', async () => {
    assert.deepEqual(await request(`${await closedPortUrl()}/x?password=hunter2`, {}, { timeoutMs: 20_000 }), {
      kind: 'network',
      code: 'ECONNREFUSED',
    });
  });

  it('lends itself as a fetch to a library that takes one: the answer as a Response, a refusal as an error with its code', async () => {
    const f = asFetch();
    const res = await f(`${srv.url}/json`, {
      method: 'GET',
      headers: new Headers(),
      signal: AbortSignal.timeout(2000),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { got: '', method: 'GET' });
    assert.equal((await f(`${srv.url}/redirect`, { signal: AbortSignal.timeout(2000) })).status, 302);
    await assert.rejects(
      f(`${await closedPortUrl()}/x`, {}),
      (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED',
    );
    await assert.rejects(
      f(`${srv.url}/slow`, { signal: AbortSignal.timeout(50) }),
      (err: Error) => err.name === 'TimeoutError',
    );
  });

  it('takes a dispatcher of its own (an Agent without idle limits)', async () => {
    const o = await request(
      `${srv.url}/json`,
      {},
      { timeoutMs: 20_000, dispatcher: await agent({ headersTimeout: 0, bodyTimeout: 0 }) },
    );
    assert.ok(o.kind === 'response' && o.status === 200);
  });
});

describe('http client: retries with Retry-After', () => {
  it('retries 429 and 503, waits at least Retry-After, and stops at a permanent status', async () => {
    const statuses = [429, 503, 200];
    let calls = 0;
    const srv = await serve((_req, res) => {
      const status = statuses[calls++] ?? 404;
      res
        .writeHead(
          status,
          status === 429
            ? { 'retry-after': '1', 'content-type': 'application/json' }
            : { 'content-type': 'application/json' },
        )
        .end('{"ok":true}');
    });
    try {
      const waits: number[] = [];
      const policy = { attempts: 5, baseDelayMs: 10, maxDelayMs: 2000 };
      const v = await withRetry(
        () => googleJson<{ ok: boolean }>('a call', `${srv.url}/x`, {}),
        policy,
        async (ms) => void waits.push(ms),
      );
      assert.deepEqual(v, { ok: true });
      assert.equal(calls, 3);
      assert.ok(waits[0]! >= 1000, `Retry-After honoured: ${waits[0]}`);
      assert.ok(waits[1]! < 1000);

      const err = await withRetry(
        () => googleJson('a call', `${srv.url}/x`, {}),
        policy,
        async () => {},
      ).catch((e: unknown) => e);
      assert.ok(err instanceof GoogleApiError);
      assert.equal(err.code, 'outbound_refused');
      assert.equal(err.status, 404);
      assert.equal(calls, 4, 'a 404 is not retried');
    } finally {
      await srv.close();
    }
  });

  it('gives a status error a stable code: busy for 408/429/5xx, refused for other 4xx', () => {
    const said = (status: number) => new OutboundError(statusCode(status), 'x', status);
    assert.equal(said(503).code, 'outbound_busy');
    assert.equal(said(408).transient, true);
    assert.equal(said(403).code, 'outbound_refused');
    assert.equal(said(302).transient, false);
    assert.equal(new GoogleApiError('x', 429).code, 'outbound_busy');
    assert.equal(new GoogleApiError('x', 0).code, 'outbound_unreachable');
  });
});

describe('http client: bearer tokens', () => {
  it('caches the token until shortly before expiry, refreshes it then, and after a 401 to a cached token', async () => {
    let issued = 0;
    const forms: Array<Record<string, string>> = [];
    let revoked = '';
    const srv = await serve((req, res, body) => {
      if (req.url === '/token') {
        forms.push(Object.fromEntries(new URLSearchParams(body)));
        issued++;
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ access_token: `t${issued}`, expires_in: 3600 }));
      }
      const auth = req.headers.authorization;
      res.writeHead(auth === `Bearer ${revoked}` || !auth ? 401 : 200).end(auth ?? '');
    });
    try {
      let now = 1_000_000;
      const grant = clientCredentials({ clientId: 'id', clientSecret: 'secret' }, 'scope-x');
      const cache = new TokenCache<string>(
        async (): Promise<TokenFetched<string>> => {
          const a = await requestToken(`${srv.url}/token`, grant, {
            timeoutMs: 20_000,
            defaultLifetimeMs: 300_000,
            now: () => now,
          });
          return a.ok ? a : { ok: false, failure: 'no token' };
        },
        () => now,
      );
      const call = (token: string) =>
        request(`${srv.url}/api`, { headers: { authorization: `Bearer ${token}` } }, { timeoutMs: 20_000 });

      const first = await withBearer(cache, call);
      assert.ok(first.ok && first.outcome.kind === 'response' && first.outcome.text === 'Bearer t1');
      assert.deepEqual(forms[0], {
        grant_type: 'client_credentials',
        client_id: 'id',
        client_secret: 'secret',
        scope: 'scope-x',
      });
      await withBearer(cache, call);
      assert.equal(issued, 1, 'cached');

      now += 3_600_000 - 30_000; // inside the minute before expiry
      const second = await withBearer(cache, call);
      assert.ok(second.ok && second.outcome.kind === 'response' && second.outcome.text === 'Bearer t2');
      assert.equal(issued, 2, 'refreshed on expiry');

      revoked = 't2';
      const third = await withBearer(cache, call);
      assert.ok(
        third.ok &&
          third.outcome.kind === 'response' &&
          third.outcome.status === 200 &&
          third.outcome.text === 'Bearer t3',
      );
      assert.equal(issued, 3, 'refreshed after a 401 to the cached token');

      revoked = 't3';
      cache.invalidate('t3');
      const fresh401 = await withBearer(cache, (t) => ((revoked = t), call(t)));
      assert.ok(
        fresh401.ok && fresh401.outcome.kind === 'response' && fresh401.outcome.status === 401,
        'a 401 to a token fetched just now is the answer',
      );
      assert.equal(issued, 4);
    } finally {
      await srv.close();
    }
  });

  it('signs one RS256 assertion for the JWT-bearer grant', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const account = readServiceAccount({
      client_email: 'sa@p.iam.gserviceaccount.com',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
      private_key_id: 'k1',
    });
    assert.ok(typeof account === 'object');
    assert.equal(readServiceAccount({ client_email: 'x' }), 'fields');
    assert.equal(readServiceAccount({ client_email: 'x', private_key: 'not a key' }), 'key');
    const form = jwtBearer(account, 'scope-y').form('https://oauth2.example/token', 1000);
    assert.equal(form.grant_type, 'urn:ietf:params:oauth:grant-type:jwt-bearer');
    const [h, c, s] = form.assertion!.split('.');
    assert.deepEqual(JSON.parse(Buffer.from(h!, 'base64url').toString()), { alg: 'RS256', typ: 'JWT', kid: 'k1' });
    assert.deepEqual(JSON.parse(Buffer.from(c!, 'base64url').toString()), {
      iss: 'sa@p.iam.gserviceaccount.com',
      scope: 'scope-y',
      aud: 'https://oauth2.example/token',
      iat: 1000,
      exp: 4600,
    });
    assert.ok(verify('sha256', Buffer.from(`${h}.${c}`), publicKey, Buffer.from(s!, 'base64url')));
  });
});
