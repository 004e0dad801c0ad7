/**
 * The handler in-process, where the e2e tests cannot reach: a store that really fails (its database locked by
 * another connection) must give 503 and never a 2xx; a forged signature over a large body is refused unparsed; a
 * verified signature that no mapping takes settles the client's failure count instead of adding to it.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pino from 'pino';
import { validateConfig } from '../../src/config/load.js';
import { PENDING } from '../../src/hooks/completion.js';
import type { RuntimeSignals } from '../../src/hooks/dispatch.js';
import { buildHooksContext } from '../../src/hooks/context.js';
import { buildIngressContext } from '../../src/ingress/context.js';
import { createHandler } from '../../src/ingress/handler.js';
import { BUSY_COMMITTING, BUSY_HOLD_MS, IngressPressure } from '../../src/ingress/pressure.js';
import { AuthFailureLimiter } from '../../src/net/limiter.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { AcceptCommand, AcceptResult } from '../../src/store/types.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';
import { waitFor } from '../support/wait.js';

/**
 * The handler on a plain `node:http` server, with `hooks` (plus the test token) as its config. `reload` swaps in the
 * next generation, as a config reload does; `arrived` is told of each request before the handler sees it.
 */
async function serve(
  dir: string,
  hooks: Record<string, unknown>,
  store: SqliteStore,
  signals: RuntimeSignals = { heartbeatRequested: () => {}, runsQueued: () => {} },
  arrived: () => void = () => {},
  limiter?: AuthFailureLimiter,
  pressure?: IngressPressure,
  ended?: () => void,
): Promise<{ server: Server; url: string; reload(hooks: Record<string, unknown>): void }> {
  const configOf = (h: Record<string, unknown>) =>
    validateConfig({ hooks: { enabled: true, token: TOKEN, ...h } }, undefined, dir, { env: {} });
  const config = configOf(hooks);
  let current = buildIngressContext(buildHooksContext(config, 1), null);
  const handler = createHandler(() => current, {
    store,
    signals,
    completions: { wait: async () => PENDING },
    logger: pino({ level: 'silent' }),
    limiter: limiter ?? new AuthFailureLimiter(config.hooks.authFailureLimit),
    ...(pressure ? { pressure } : {}),
  });
  const server = createServer((req, res) => void (arrived(), handler(req, res, ended)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const reload = (next: Record<string, unknown>) => {
    current = buildIngressContext(buildHooksContext(configOf(next), current.generation + 1), current.routeLimits);
  };
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reload };
}

describe('handler: store failures', () => {
  let dir: string;
  let store: SqliteStore;
  let server: Server;
  let url: string;
  const signals = { heartbeats: 0, runs: 0 };

  before(async () => {
    dir = tempDir('hookgate-handler-');
    store = new SqliteStore({ path: join(dir, 'h.db'), writer: 'thread', busyTimeoutMs: 100 });
    ({ server, url } = await serve(dir, {}, store, {
      heartbeatRequested: () => void signals.heartbeats++,
      runsQueued: () => void signals.runs++,
    }));
  });
  after(async () => {
    server.close();
    await store.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${url}/hooks/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });

  it('answers 503 unavailable while the database is locked, and accepts again after', async () => {
    const ok = await post('wake', { text: 'before lock' });
    assert.equal(ok.status, 200);
    assert.equal(signals.heartbeats, 1, 'a now-wake is signalled after the commit');

    const locker = new Database(join(dir, 'h.db'));
    locker.prepare('BEGIN IMMEDIATE').run();
    try {
      const [w, a] = await Promise.all([
        post('wake', { text: 'during lock' }),
        post('agent', { message: 'during lock' }),
      ]);
      for (const r of [w, a]) {
        assert.equal(r.status, 503);
        assert.equal(
          r.headers.get('retry-after'),
          '1',
          'nothing was accepted: the caller is told when to send it again',
        );
        const body = (await r.json()) as Record<string, unknown>;
        assert.equal(body.code, 'unavailable');
        assert.equal(body.ok, false);
      }
      assert.equal(signals.runs, 0, 'nothing signalled for refused work');
    } finally {
      locker.prepare('ROLLBACK').run();
      locker.close();
    }
    const again = await post('agent', { message: 'after lock' });
    assert.equal(again.status, 200);
    assert.equal(signals.runs, 1);
    const main = await store.getSession('main');
    assert.deepEqual(
      main?.pending.map((e) => e.text),
      ['before lock'],
    );
  });
});

// Signed paths refuse a forgery before parsing it: in-process, so JSON.parse can be watched.
const SECRET = 'gh-secret-for-refusal-tests';
const sign = (body: string, secret = SECRET) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

describe('handler: signed paths verify before they parse', () => {
  let store: SqliteStore;
  let server: Server;
  let url: string;

  before(async () => {
    const dir = tempDir('hookgate-refusal-');
    store = new SqliteStore({ path: join(dir, 'h.db'), writer: 'inline' });
    const mappings = [
      {
        id: 'gh',
        match: { path: 'github' },
        messageTemplate: 'PR {{action}}',
        signature: { scheme: 'github', secret: SECRET },
      },
      {
        id: 'stripe',
        match: { path: 'stripe' },
        messageTemplate: 'event {{type}}',
        signature: { scheme: 'stripe', secret: 'whsec_test' },
      },
    ];
    ({ server, url } = await serve(dir, { mappings }, store));
  });
  after(async () => {
    server.close();
    await store.close();
  });

  /** Calls of JSON.parse on a text at least `min` long while `fn` runs. */
  async function bigParses<T>(min: number, fn: () => Promise<T>): Promise<{ result: T; parses: number }> {
    const original = JSON.parse;
    let parses = 0;
    JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      if (typeof text === 'string' && text.length >= min) parses++;
      return original(text, reviver);
    }) as typeof JSON.parse;
    try {
      return { result: await fn(), parses };
    } finally {
      JSON.parse = original;
    }
  }

  const big = JSON.stringify({
    action: 'opened',
    items: Array.from({ length: 5000 }, (_, i) => ({ i, s: 'abcdefghijklmnop' })),
  });
  const post = (path: string, body: string, headers: Record<string, string>) =>
    fetch(`${url}/hooks/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });

  it('a forged signature over a large JSON body is 401 without the body ever being parsed', async () => {
    const { result, parses } = await bigParses(100_000, () =>
      post('github', big, { 'x-hub-signature-256': sign(big, 'forged') }),
    );
    assert.equal(result.status, 401);
    assert.equal(((await result.json()) as { error: string }).error, 'missing or invalid signature');
    assert.equal(parses, 0);
  });

  it('a verified delivery is parsed once (Stripe reads its event id from the same parse)', async () => {
    const gh = await bigParses(100_000, () => post('github', big, { 'x-hub-signature-256': sign(big) }));
    assert.equal(gh.result.status, 200);
    assert.equal(gh.parses, 1);
    const body = JSON.stringify({ id: 'evt_1', type: 'invoice.paid', pad: 'x'.repeat(120_000) });
    const t = Math.floor(Date.now() / 1000);
    const sig = createHmac('sha256', 'whsec_test').update(`${t}.${body}`).digest('hex');
    const st = await bigParses(100_000, () => post('stripe', body, { 'stripe-signature': `t=${t},v1=${sig}` }));
    assert.equal(st.result.status, 200);
    assert.equal(st.parses, 1);
  });

  it('with the token on a signed path the token authenticates as before: a mapping without a signature is not there, so 401 for a forgery', async () => {
    const r = await post('github', big, {
      authorization: `Bearer ${TOKEN}`,
      'x-hub-signature-256': sign(big, 'forged'),
    });
    assert.equal(r.status, 401);
  });
});

describe('handler: a request in flight across a reload', () => {
  const ROTATED = 'rotated-hook-token-0123456789abcdef';
  let store: SqliteStore;
  let server: Server;
  let url: string;
  let reload: (hooks: Record<string, unknown>) => void;
  let arrivedOnce: (() => void) | undefined;

  before(async () => {
    const dir = tempDir('hookgate-inflight-');
    store = new SqliteStore({ path: join(dir, 'h.db'), writer: 'inline' });
    const mappings = [{ id: 'note', match: { path: 'note' }, action: 'wake', textTemplate: 'first generation: {{n}}' }];
    ({ server, url, reload } = await serve(dir, { mappings }, store, undefined, () => arrivedOnce?.()));
  });
  after(async () => {
    server.close();
    await store.close();
  });

  it('uses the generation it started with to its end: a token rotated while its body is on the way', async () => {
    const started = new Promise<void>((r) => (arrivedOnce = r));
    const req = request(`${url}/hooks/note`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
    });
    req.flushHeaders();
    await started;
    arrivedOnce = undefined;
    // The reload lands after the token was checked, before the body is read and routed.
    reload({
      token: ROTATED,
      mappings: [{ id: 'note', match: { path: 'note' }, action: 'wake', textTemplate: 'second generation: {{n}}' }],
    });
    req.end(JSON.stringify({ n: 1 }));
    const answer = await answered;
    assert.equal(answer.status, 200, answer.body);
    const main = await store.getSession('main');
    assert.deepEqual(
      main?.pending.map((e) => e.text),
      ['first generation: 1'],
      "routed by the first generation's mapping",
    );

    const after = await fetch(`${url}/hooks/note`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ n: 2 }),
    });
    assert.equal(after.status, 401, 'the next request is of the new generation: the old token is refused');
  });
});

describe('handler: a verified signature that no mapping takes', () => {
  const SECRET = 'gh-secret-for-tests';
  const CLIENT = '127.0.0.1';
  let store: SqliteStore;
  let server: Server;
  let url: string;
  let limiter: AuthFailureLimiter;

  before(async () => {
    const dir = tempDir('hookgate-unmatched-');
    store = new SqliteStore({ path: join(dir, 'h.db'), writer: 'inline' });
    const authFailureLimit = { maxFailures: 3, windowSeconds: 600, lockoutSeconds: 600, maxTrackedClients: 100 };
    limiter = new AuthFailureLimiter(authFailureLimit);
    const mappings = [
      {
        id: 'gh-prs',
        match: { path: 'github', headers: { 'x-github-event': 'pull_request' } },
        messageTemplate: 'PR {{action}}',
        signature: { scheme: 'github', secret: SECRET },
      },
    ];
    ({ server, url } = await serve(dir, { mappings, authFailureLimit }, store, undefined, undefined, limiter));
  });
  after(async () => {
    server.close();
    await store.close();
  });

  const post = (event: string, secret = SECRET) => {
    const body = JSON.stringify({ action: 'opened', event });
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    return fetch(`${url}/hooks/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-github-event': event, 'x-hub-signature-256': signature },
      body,
    });
  };

  it('is answered 200 ignored, recorded unmatched, never counted, and resets the count like any authenticated request', async () => {
    assert.equal((await post('issues', 'forged')).status, 401);
    assert.equal((await post('issues', 'forged')).status, 401);
    for (let i = 0; i < 5; i++) {
      const r = await post(i % 2 === 0 ? 'issues' : 'push');
      assert.equal(r.status, 200);
      assert.deepEqual(await r.json(), { ok: true, ignored: true });
      assert.match(r.headers.get('x-request-id') ?? '', /^[0-9a-f]{16}$/);
    }
    assert.equal(limiter.retryAfter(CLIENT, Date.now()), 0, 'not locked out');
    // Reset by the first ignored request: two more failures stay under maxFailures (3) and are answered 401, not 429.
    assert.equal((await post('issues', 'forged')).status, 401);
    assert.equal((await post('issues', 'forged')).status, 401);
    assert.equal(limiter.retryAfter(CLIENT, Date.now()), 0, 'the count was reset: two failures since');
    assert.equal((await post('pull_request')).status, 200, 'the mapped event is accepted');

    // Recorded after the answer (as a handshake's or a skip's record is): waited for, not assumed.
    const records = await waitFor('5 unmatched records', async () => {
      const list = (await store.listReceived(50)).filter((r) => r.code === 'unmatched');
      return list.length === 5 ? list : undefined;
    });
    for (const r of records)
      assert.deepEqual(
        [r.status, r.path, r.mappingId, r.runIds, r.eventIds, r.tokenId ?? null],
        [200, 'github', null, [], [], null],
      );
    assert.equal((await store.listRuns({ limit: 50 })).length, 1, 'only the mapped event queued a run');
  });
});

/** A store whose accepts wait until `release` (a slow commit: a round trip to a busy database). */
class HeldStore extends SqliteStore {
  held = 0;
  release: () => void = () => {};
  private readonly gate = new Promise<void>((r) => (this.release = r));
  override async accept(cmd: AcceptCommand): Promise<AcceptResult> {
    this.held++;
    await this.gate;
    return super.accept(cmd);
  }
}

describe('handler: ingress pressure', () => {
  const N = BUSY_COMMITTING + 2;
  // After the hold: only requests waiting now can say busy, not the turn they arrived in.
  const busyNow = (p: IngressPressure) => p.busy(performance.now() + BUSY_HOLD_MS + 1);

  async function withServer(
    fn: (url: string, store: HeldStore, p: IngressPressure, arrivals: () => number) => Promise<void>,
  ) {
    const dir = tempDir('hookgate-pressure-');
    const store = new HeldStore({ path: join(dir, 'h.db'), writer: 'inline' });
    const pressure = new IngressPressure();
    let arrived = 0;
    const { server, url } = await serve(dir, {}, store, undefined, () => void arrived++, undefined, pressure);
    try {
      await fn(url, store, pressure, () => arrived);
    } finally {
      store.release();
      server.closeAllConnections();
      server.close();
      await store.close();
    }
  }
  const post = (url: string, path: string, body: unknown) =>
    fetch(`${url}/hooks/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });

  it('counts the requests waiting for a slow commit: busy while they wait, quiet after the hold', async () => {
    await withServer(async (url, store, pressure) => {
      const answers = Array.from({ length: N }, (_, i) => post(url, 'agent', { message: `m${i}` }));
      await waitFor(`${N} commits under way`, () => store.held === N);
      assert.equal(pressure.waiting, N);
      assert.equal(busyNow(pressure), true);
      store.release();
      for (const r of await Promise.all(answers)) assert.equal(r.status, 200);
      assert.equal(pressure.waiting, 0, 'every one counted out, once');
      assert.equal(busyNow(pressure), false);
    });
  });

  it('does not count a sender trickling its body: it waits on itself, not on this node', async () => {
    await withServer(async (url, _store, pressure, arrivals) => {
      const { port } = new URL(url);
      const reqs = Array.from({ length: N }, () => {
        const req = request({
          host: '127.0.0.1',
          port,
          path: '/hooks/agent',
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-length': '100' },
        });
        req.on('error', () => {}); // closed by the server at the end
        req.write('{"message":"slow');
        return req;
      });
      // Each is in the handler, reading its body (the handler runs once the headers are in).
      await waitFor(`${N} requests in`, () => arrivals() === N);
      assert.equal(pressure.waiting, 0);
      assert.equal(busyNow(pressure), false);
      for (const r of reqs) r.destroy();
    });
  });

  it('does not count a request held for its run (waitForCompletion): that wait is the runtime work', async () => {
    await withServer(async (url, store, pressure) => {
      const answers = Array.from({ length: N }, (_, i) =>
        post(url, 'agent', { message: `m${i}`, waitForCompletion: true }),
      );
      await waitFor(`${N} commits under way`, () => store.held === N);
      assert.equal(pressure.waiting, 0);
      assert.equal(busyNow(pressure), false);
      store.release();
      for (const r of await Promise.all(answers)) assert.equal(r.status, 200);
    });
  });
});

describe('handler: the end of each request', () => {
  class BrokenLimiter extends AuthFailureLimiter {
    override retryAfter(): number {
      throw new Error('the limiter broke');
    }
  }

  it('tells the listener once per request: accepted, refused, or failed in a stage that throws (500, then the next one is served)', async () => {
    const dir = tempDir('hookgate-ended-');
    const store = new SqliteStore({ path: join(dir, 'h.db'), writer: 'inline' });
    const limits = validateConfig({ hooks: { enabled: true, token: TOKEN } }, undefined, dir, { env: {} }).hooks;
    let ended = 0;
    const { server, url } = await serve(
      dir,
      {},
      store,
      undefined,
      undefined,
      new BrokenLimiter(limits.authFailureLimit),
      undefined,
      () => void ended++,
    );
    const send = (method: string, token: string) =>
      fetch(`${url}/hooks/wake`, {
        method,
        headers: { authorization: `Bearer ${token}` },
        ...(method === 'POST' ? { body: JSON.stringify({ text: 'ping' }) } : {}),
      });
    try {
      assert.equal((await send('POST', TOKEN)).status, 200);
      await waitFor('the accepted request to end', () => ended === 1);
      assert.equal((await send('GET', TOKEN)).status, 405);
      await waitFor('the refused request to end', () => ended === 2);
      // A wrong token asks the limiter, which throws: a stage's error is answered, not left hanging.
      const failed = await send('POST', 'not-the-token-0000000000');
      assert.equal(failed.status, 500);
      assert.equal(((await failed.json()) as { code: string }).code, 'internal');
      await waitFor('the failed request to end', () => ended === 3);
      assert.equal((await send('POST', TOKEN)).status, 200);
      await waitFor('the next request to end', () => ended === 4);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(ended, 4, 'each request ended once');
    } finally {
      server.closeAllConnections();
      server.close();
      await store.close();
    }
  });
});
