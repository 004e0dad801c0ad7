import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connect, type Socket } from 'node:net';
import { adminAuthorizer, compileRoutes, startAdminServer, statusOf } from '../../src/admin/server.js';
import { createLogger } from '../../src/log.js';
import { tokenSetOf } from '../../src/ingress/auth.js';
import { ClientIpResolver } from '../../src/net/client-ip.js';
import type { AdminRoute } from '../../src/admin/route.js';
import { AdminError, HookgateError, StoreError } from '../../src/errors.js';
import { waitFor } from '../support/wait.js';

const route = (method: 'GET' | 'POST', path: string): AdminRoute => ({ method, path, handle: () => {} });

describe('admin router', () => {
  const routes = [
    route('GET', '/api/v1/runs'),
    route('GET', '/api/v1/runs/:id'),
    route('POST', '/api/v1/runs/:id/retry'),
    route('GET', '/healthz'),
  ];
  const match = compileRoutes(routes);

  it('matches method and path, with :params URL-decoded', () => {
    const m = match('GET', '/api/v1/runs/abc%3A1');
    assert.equal(m.kind, 'route');
    assert.deepEqual(m.kind === 'route' && [m.route.path, m.params], ['/api/v1/runs/:id', { id: 'abc:1' }]);
    const r = match('POST', '/api/v1/runs/x/retry');
    assert.deepEqual(r.kind === 'route' && r.params, { id: 'x' });
    assert.equal(match('GET', '/api/v1/runs').kind, 'route');
  });

  it('404 for an unknown path (an empty or malformed segment names nothing), 405 with the allowed methods', () => {
    for (const p of ['/api/v1/runs/', '/api/v1', '/api/v1/runs/x/y', '/', '/api/v1/runs/%E0%A4%A', '/healthz/'])
      assert.equal(match('GET', p).kind, 'not_found', p);
    assert.deepEqual(match('POST', '/api/v1/runs'), { kind: 'method_not_allowed', allow: ['GET'] });
    assert.deepEqual(match('GET', '/api/v1/runs/x/retry'), { kind: 'method_not_allowed', allow: ['POST'] });
    assert.deepEqual(match('DELETE', '/healthz'), { kind: 'method_not_allowed', allow: ['GET'] });
  });

  it('errors map by code: invalid_query 400, not_retryable 409, store_unavailable 503 unavailable, others 500 internal', () => {
    assert.deepEqual(statusOf(new AdminError(404, 'not_found', 'no run')).status, 404);
    assert.deepEqual(
      [
        statusOf(new HookgateError('invalid_query', 'cursor: bad')).status,
        statusOf(new HookgateError('invalid_query', 'cursor: bad')).code,
      ],
      [400, 'invalid_query'],
    );
    assert.equal(statusOf(new HookgateError('not_retryable', 'no')).status, 409);
    const s = statusOf(new StoreError('disk at /secret/path is full'));
    assert.deepEqual([s.status, s.code], [503, 'unavailable']);
    assert.ok(!s.message.includes('/secret/path'), 'a store message is not passed to callers');
    assert.deepEqual(
      [statusOf(new Error('boom')).status, statusOf(new Error('boom')).code, statusOf(new Error('boom')).message],
      [500, 'internal', 'internal error'],
    );
  });
});

describe('admin auth', () => {
  type Section = Parameters<typeof tokenSetOf>[0];
  const authorizer = (admin: () => Section, hooks: () => Section, now: () => number = Date.now) =>
    adminAuthorizer({ admin: () => tokenSetOf(admin()), hooks: () => tokenSetOf(hooks()) }, now);

  it('accepts the admin token only; never a hook token, a prefix, an extension, or anything without an admin token', () => {
    let admin: string | undefined = 'admin-secret';
    const ok = authorizer(
      () => ({ token: admin }),
      () => ({ token: 'hook-secret' }),
    );
    assert.equal(ok('admin-secret'), 'default');
    for (const bad of [undefined, '', 'hook-secret', 'admin-secre', 'admin-secretx', 'ADMIN-SECRET'])
      assert.equal(ok(bad), undefined, String(bad));
    admin = 'rotated'; // a reload: applies at once
    assert.equal(ok('admin-secret'), undefined);
    assert.equal(ok('rotated'), 'default');
    admin = undefined;
    assert.equal(ok('rotated'), undefined);
  });

  it('an admin token equal to the hook token is never accepted (config check warns)', () => {
    const ok = authorizer(
      () => ({ token: 'same' }),
      () => ({ token: 'same' }),
    );
    assert.equal(ok('same'), undefined);
  });

  it('admin.tokens: every listed unexpired token is accepted by its id; an expired one or one also listed as a hook token is not', () => {
    const now = Date.parse('2026-06-01T00:00:00Z');
    const ok = authorizer(
      () => ({
        token: 'admin-single',
        tokens: [
          { id: 'new', token: 'admin-new' },
          { id: 'old', token: 'admin-old', notAfter: now + 1 },
          { id: 'gone', token: 'admin-gone', notAfter: now },
          { id: 'shared', token: 'hook-listed' },
        ],
      }),
      () => ({ token: 'hook-secret', tokens: [{ id: 'h2', token: 'hook-listed', notAfter: 0 }] }),
      () => now,
    );
    assert.equal(ok('admin-single'), 'default');
    assert.equal(ok('admin-new'), 'new');
    assert.equal(ok('admin-old'), 'old');
    assert.equal(ok('admin-gone'), undefined, 'expired at notAfter');
    assert.equal(ok('hook-listed'), undefined, 'a hook token, even an expired one, is never an admin token');
    assert.equal(ok('hook-secret'), undefined);
  });
});

const POLICY = {
  clientIps: new ClientIpResolver([]),
  authFailureLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60, maxTrackedClients: 100 },
};

/** A raw connection from `localAddress`, with what it received and whether it closed. */
function open(
  port: number,
  localAddress = '127.0.0.1',
): Promise<{ socket: Socket; text: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () =>
      resolve({ socket, text: () => text, closed }),
    );
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.on('data', (c) => (text += c));
    socket.on('error', reject);
  });
}

describe('admin listener bounds', () => {
  it('an address at its share replaces its oldest idle connection; a busy one is never closed; all busy → the new one is closed unread', async () => {
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let entered = 0;
    const listener = await startAdminServer({
      bind: '127.0.0.1',
      port: 0,
      routes: [
        { method: 'GET', path: '/healthz', auth: false, handle: ({ res }) => void res.end('ok') },
        {
          method: 'GET',
          path: '/slow',
          auth: false,
          handle: async ({ res }) => (entered++, await held, void res.end('slow')),
        },
      ],
      tokens: { admin: () => tokenSetOf({ token: 'a' }), hooks: () => tokenSetOf({}) },
      clients: () => POLICY,
      logger: createLogger('silent'),
      // Alone on a listener of 4, an address holds 2 once it is half full: one share stays free for a newcomer.
      maxConnections: 4,
    });
    const port = Number(new URL(listener.url).port);
    const first = await open(port);
    first.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor('the first request is being answered', () => entered === 1);
    const second = await open(port);
    const third = await open(port);
    await second.closed; // the oldest idle one gave way, not the busy first
    assert.equal(second.text(), '', 'an evicted connection gets no bytes');
    third.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor('the third request is being answered', () => entered === 2);
    const fourth = await open(port);
    await fourth.closed; // all of this address's connections are busy
    assert.equal(fourth.text(), '');
    // Another address is served meanwhile.
    const other = await open(port, '127.0.0.2');
    other.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await other.closed;
    assert.match(other.text(), /^HTTP\/1\.1 200/);
    release();
    await waitFor('the busy ones are answered', () => /slow$/.test(first.text()) && /slow$/.test(third.text()));
    assert.deepEqual(
      { ...listener.connectionCounts() },
      { refusedPerAddress: 1, refusedTotal: 0, evictedIdle: 0, evictedUnfinished: 1 },
    );
    for (const c of [first, third]) c.socket.destroy();
    await listener.close();
  });
});
