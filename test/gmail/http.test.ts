/** Google HTTP calls: transient failures retried with backoff and Retry-After, OAuth refresh and caching. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GoogleApiError, withGoogleRetry } from '../../src/gmail/http.js';
import { googleJson } from '../../src/http/google.js';
import { GoogleOAuth } from '../../src/gmail/oauth.js';

describe('withGoogleRetry', () => {
  const policy = { attempts: 4, baseDelayMs: 100, maxDelayMs: 1000 };
  it('retries 429 and 5xx with growing waits (at least Retry-After), then succeeds', async () => {
    const waits: number[] = [];
    let n = 0;
    const v = await withGoogleRetry(
      async () => {
        n++;
        if (n === 1) throw new GoogleApiError('x', 429, 700);
        if (n === 2) throw new GoogleApiError('x', 503);
        if (n === 3) throw new GoogleApiError('x', 0);
        return 'ok';
      },
      policy,
      async (ms) => void waits.push(ms),
    );
    assert.equal(v, 'ok');
    assert.equal(waits.length, 3);
    assert.ok(waits[0]! >= 700, 'Retry-After honoured');
    assert.ok(waits[1]! >= 100 && waits[1]! <= 200);
    assert.ok(waits[2]! >= 200 && waits[2]! <= 400);
  });
  it('does not retry a permanent error; gives up after the last attempt', async () => {
    let n = 0;
    await assert.rejects(
      withGoogleRetry(
        async () => (n++, Promise.reject(new GoogleApiError('x', 404))),
        policy,
        async () => {},
      ),
      /x/,
    );
    assert.equal(n, 1);
    n = 0;
    await assert.rejects(
      withGoogleRetry(
        async () => (n++, Promise.reject(new GoogleApiError('x', 500))),
        policy,
        async () => {},
      ),
    );
    assert.equal(n, 4);
  });
});

describe('Google HTTP errors and OAuth', () => {
  const fakeFetch = (
    answers: Array<{ status: number; body: unknown; headers?: Record<string, string> }>,
    seen: RequestInit[] = [],
  ) =>
    (async (_url: string, init: RequestInit) => {
      seen.push(init);
      const a = answers.shift()!;
      return new Response(JSON.stringify(a.body), { status: a.status, headers: a.headers });
    }) as unknown as typeof fetch;

  it("an error names the call, the status and Google's code and message", async () => {
    const f = fakeFetch([
      {
        status: 404,
        body: { error: { code: 404, message: 'Requested entity was not found: secret@x', status: 'NOT_FOUND' } },
      },
    ]);
    const err = (await googleJson('users.history.list', 'http://x', {}, f).catch((e: unknown) => e)) as GoogleApiError;
    assert.equal(err.status, 404);
    assert.equal(err.message, 'users.history.list: HTTP 404 (NOT_FOUND: Requested entity was not found: secret@x)');
  });

  it('refresh_token grant form; the access token is cached until a minute before expiry; invalidate forces a refresh', async () => {
    const seen: RequestInit[] = [];
    let now = 1_000_000;
    const f = fakeFetch(
      [
        { status: 200, body: { access_token: 'a1', expires_in: 3600 } },
        { status: 200, body: { access_token: 'a2', expires_in: 3600 } },
        { status: 200, body: { access_token: 'a3', expires_in: 3600 } },
      ],
      seen,
    );
    const o = new GoogleOAuth(
      { tokenUrl: 'http://t', clientId: 'c', clientSecret: 's', refreshToken: 'r' },
      f,
      () => now,
    );
    assert.equal(await o.accessToken(), 'a1');
    assert.equal(await o.accessToken(), 'a1');
    const form = new URLSearchParams(String(seen[0]!.body));
    assert.deepEqual(Object.fromEntries(form), {
      grant_type: 'refresh_token',
      client_id: 'c',
      client_secret: 's',
      refresh_token: 'r',
    });
    now += 3600_000 - 30_000;
    assert.equal(await o.accessToken(), 'a2');
    o.invalidate();
    assert.equal(await o.accessToken(), 'a3');
    assert.equal(seen.length, 3);
  });

  it('a refused grant is an error without the secret', async () => {
    const o = new GoogleOAuth(
      { tokenUrl: 'http://t', clientId: 'c', clientSecret: 'very-secret', refreshToken: 'r' },
      fakeFetch([
        { status: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } },
      ]),
    );
    const err = (await o.accessToken().catch((e: unknown) => e)) as Error;
    assert.equal(
      err.message,
      "Google's token endpoint refused the refresh token (invalid_grant: Token has been expired or revoked.)",
    );
    assert.doesNotMatch(err.message, /very-secret/);
  });
});
