import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as tick } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { FeedStreams, feedRoutes, parseTypes } from '../../src/admin/events.js';
import type { AdminRoute } from '../../src/admin/route.js';
import { FeedBus, type FeedEvent, type RunFeedEvent } from '../../src/feed.js';
import { openSse, type SseStream } from '../support/sse.js';
import { waitFor } from '../support/wait.js';

const run = (runId: string, state: 'queued' | 'running' = 'queued'): RunFeedEvent => ({
  type: 'run',
  at: 1,
  runId,
  state,
  sessionKey: 'hook:x',
  hookName: 'agent',
  label: 'agent',
  error: null,
});
const hb = (n: number): FeedEvent => ({
  type: 'heartbeat',
  at: n,
  sessionKey: 'agent:main:main',
  outcome: 'ok',
  events: n,
});

/** A stand-in for the admin listener: matches method and path, checks the bearer token, calls the route. */
async function serve(routes: AdminRoute[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const route = routes.find((r) => r.method === req.method && r.path === url.pathname);
    if (!route) return void res.writeHead(404).end();
    if (route.auth !== false && req.headers.authorization !== 'Bearer admin') return void res.writeHead(401).end();
    void route.handle({ req, res, params: {}, query: url.searchParams });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('GET /api/v1/events (the live feed over SSE)', () => {
  const bus = new FeedBus(16);
  const stop = new AbortController();
  let url: string;
  let server: Server;
  const open: SseStream[] = [];
  const sse = async (query = '', lastEventId?: string) => {
    const s = await openSse(`${url}/api/v1/events${query}`, {
      token: 'admin',
      ...(lastEventId ? { lastEventId } : {}),
    });
    open.push(s);
    return s;
  };

  before(async () => {
    ({ server, url } = await serve(feedRoutes(bus, { keepAliveMs: 100, signal: stop.signal })));
  });
  after(async () => {
    for (const s of open) s.close();
    stop.abort();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('requires the admin token (the listener checks it: the route does not opt out)', async () => {
    const s = await openSse(`${url}/api/v1/events`);
    assert.equal(s.status, 401);
  });

  it('streams each event as id / event / data, live, with a keep-alive comment while idle', async () => {
    const s = await sse();
    assert.equal(s.status, 200);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    bus.publish(run('r1'));
    const f = await s.next((x) => x.event === 'run');
    assert.equal(f.id, `${bus.epoch}-${bus.last}`);
    assert.deepEqual(f.data, run('r1'));
    await waitFor('a keep-alive comment', () => s.comments.includes('keep-alive'));
  });

  it('Last-Event-ID resumes without loss: what was published while away comes first, in order, then live', async () => {
    const first = await sse();
    bus.publish(run('a1'));
    await first.next((f) => f.data.runId === 'a1');
    const lastId = first.lastId!;
    first.close();
    bus.publish(run('a2'));
    bus.publish(hb(7));
    bus.publish(run('a3'));
    const again = await sse('', lastId);
    bus.publish(run('a4'));
    await again.next((f) => f.data.runId === 'a4');
    assert.deepEqual(
      again.frames.map((f) => f.data.runId ?? f.event),
      ['a2', 'heartbeat', 'a3', 'a4'],
    );
  });

  it('an id it cannot resume from (older than the buffer, another node’s) gets `event: reset`, then the live feed', async () => {
    const s = await sse('', 'deadbeef-12');
    const reset = await s.next((f) => f.event === 'reset');
    assert.equal(reset.data.reason, 'unknown_id');
    assert.equal(reset.id, undefined, 'a reset has no id: the client keeps its last one');
    bus.publish(run('after-reset'));
    await s.next((f) => f.data.runId === 'after-reset');

    const gapBus = new FeedBus(2);
    const id = gapBus.idOf(1);
    for (let i = 0; i < 5; i++) gapBus.publish(hb(i));
    const { server: gapServer, url: gapUrl } = await serve(feedRoutes(gapBus));
    const g = await openSse(`${gapUrl}/api/v1/events`, { token: 'admin', lastEventId: id });
    assert.equal((await g.next((f) => f.event === 'reset')).data.reason, 'gap');
    g.close();
    gapServer.closeAllConnections();
    gapServer.close();
  });

  it('?types= keeps only the named event types; an unknown type is 400 invalid_query', async () => {
    const s = await sse('?types=heartbeat');
    bus.publish(run('filtered-out'));
    bus.publish(hb(42));
    await s.next((f) => f.data.events === 42);
    assert.deepEqual(
      s.frames.map((f) => f.event),
      ['heartbeat'],
    );
    const res = await fetch(`${url}/api/v1/events?types=run,nope`, { headers: { authorization: 'Bearer admin' } });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), {
      ok: false,
      error: 'types: unknown event type "nope"; use any of received, run, delivery, heartbeat',
      code: 'invalid_query',
    });
    assert.equal(parseTypes(null), undefined);
  });

  it('a client that does not read is dropped once its unsent bytes pass the limit; publishing never waits for it', async () => {
    const slowBus = new FeedBus(4096);
    const streams = new FeedStreams(slowBus, { maxUnsentBytes: 64 * 1024 });
    const server2 = createServer((_req, res) => streams.open(res, undefined, undefined));
    await new Promise<void>((r) => server2.listen(0, '127.0.0.1', r));
    const s = await openSse(`http://127.0.0.1:${(server2.address() as AddressInfo).port}/`);
    s.res.pause(); // reads nothing: the kernel's buffers fill, then the server's
    const reader = await openSse(`http://127.0.0.1:${(server2.address() as AddressInfo).port}/`);
    const padding = 'x'.repeat(1000);
    const started = Date.now();
    for (let round = 0; round < 400 && streams.dropped === 0; round++) {
      for (let i = 0; i < 50; i++) slowBus.publish({ ...run(`r${round}-${i}`), error: padding });
      await tick();
    }
    assert.equal(streams.dropped, 1, 'the paused client was dropped');
    assert.ok(Date.now() - started < 10_000);
    s.res.resume(); // reading again, it finds the end of its stream after what was buffered
    await waitFor('the dropped client saw its stream end', () => s.ended, 5000);
    assert.equal(streams.size, 1, 'the reading client stays');
    slowBus.publish(run('still-live'));
    await reader.next((f) => f.data.runId === 'still-live', 10_000);
    reader.close();
    s.close();
    server2.closeAllConnections();
    server2.close();
  });

  it('at most maxClients streams (503 beyond); stopping the listener ends every stream', async () => {
    const b = new FeedBus(4);
    const ac = new AbortController();
    const { server: s3, url: u3 } = await serve(feedRoutes(b, { maxClients: 1, signal: ac.signal }));
    const one = await openSse(`${u3}/api/v1/events`, { token: 'admin' });
    const two = await openSse(`${u3}/api/v1/events`, { token: 'admin' });
    assert.equal(one.status, 200);
    assert.equal(two.status, 503);
    ac.abort();
    await waitFor('the stream ended', () => one.ended);
    s3.close();
  });
});
