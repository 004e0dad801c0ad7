/**
 * The live feed and the metrics on the real server process (docs/reference.md#live-feed): `GET /api/v1/events` over SSE
 * on the admin listener (a wake within a second, `Last-Event-ID` resumes without loss, a run's states and its
 * delivery), `/metrics` read with the real Prometheus text parser and checked against what was sent, the admin token
 * required, `hookgate tail --json`; and on PostgreSQL, one node's feed carrying what another node accepted.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, skipWithoutPostgres, type TestDatabase } from '../support/pg-database.js';
import { parseMetrics, sample, value } from '../support/prometheus.js';
import { CLI, type Hookgate, startHookgate, TOKEN } from '../support/server.js';
import { openSse, type SseFrame, type SseStream } from '../support/sse.js';
import { waitFor } from '../support/wait.js';

const ADMIN = 'test-admin-token-0123456789abcdef';
const CONFIG = {
  admin: { enabled: true, port: 0, token: ADMIN },
  heartbeat: { every: 'off' },
  channels: { default: { channel: 'log' }, log: {} },
};

const adminUrl = (hg: Hookgate) => String(hg.logs.find((l) => l.msg === 'hookgate listening')!.adminUrl);
const received = (f: SseFrame) => f.event === 'received';

describe('live feed and metrics (e2e)', () => {
  let hg: Hookgate;
  let admin: string;
  const streams: SseStream[] = [];
  const feed = async (lastEventId?: string, query = '') => {
    const s = await openSse(`${admin}/api/v1/events${query}`, {
      token: ADMIN,
      ...(lastEventId ? { lastEventId } : {}),
    });
    streams.push(s);
    assert.equal(s.status, 200);
    return s;
  };

  before(async () => {
    hg = await startHookgate({ config: CONFIG });
    admin = adminUrl(hg);
  });
  after(async () => {
    for (const s of streams) s.close();
    await hg?.cleanup();
  });

  it('the feed and /metrics require the admin token (none, or the hook token: 401)', async () => {
    for (const path of ['/api/v1/events', '/metrics']) {
      assert.equal((await fetch(`${admin}${path}`)).status, 401, path);
      assert.equal(
        (await fetch(`${admin}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
        401,
        `${path} with the hook token`,
      );
    }
  });

  it("a wake's `received` event arrives within a second, with its event id", async () => {
    const s = await feed();
    const sent = Date.now();
    const r = await hg.post('/hooks/wake', { text: 'feed me', mode: 'next-heartbeat' });
    assert.equal(r.status, 200);
    const f = await s.next((x) => received(x) && (x.data.eventIds as string[]).includes(String(r.body!.eventId)), 1000);
    assert.ok(Date.now() - sent < 1000);
    assert.equal(f.data.status, 200);
    assert.equal(f.data.route, 'wake');
    assert.equal(f.data.code, null);
    assert.equal(f.data.path, 'wake');
    assert.equal(JSON.stringify(f.data).includes('feed me'), false, 'ids only, never the payload');
  });

  it('Last-Event-ID resumes without loss: disconnect, send hooks, reconnect', async () => {
    const s = await feed();
    const first = await hg.post('/hooks/wake', { text: 'before the disconnect', mode: 'next-heartbeat' });
    await s.next((x) => received(x) && (x.data.eventIds as string[]).includes(String(first.body!.eventId)));
    const lastId = s.lastId!;
    s.close();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        String((await hg.post('/hooks/wake', { text: `while away ${i}`, mode: 'next-heartbeat' })).body!.eventId),
      );
    const bad = await hg.post('/hooks/wake', { text: 'x' }, { authorization: 'Bearer wrong-token-0123456789' });
    assert.equal(bad.status, 401);
    const again = await feed(lastId);
    await again.next((x) => received(x) && x.data.status === 401);
    const seen = again.frames.filter(received).map((f) => (f.data.eventIds as string[])[0] ?? f.data.code);
    assert.deepEqual(seen, [...ids, 'unauthorized'], 'every request answered while away, in order, the refusal too');
  });

  it("an agent run's state changes and its delivery appear", async () => {
    const s = await feed(undefined, '?types=run,delivery');
    const r = await hg.post('/hooks/agent', {
      message: 'hello feed',
      name: 'Feed',
      channel: 'log',
      wakeMode: 'next-heartbeat',
    });
    assert.equal(r.status, 200);
    const runId = String(r.body!.runId);
    const sent = await s.next(
      (f) => f.event === 'delivery' && f.data.runId === runId && f.data.change === 'sent',
      10_000,
    );
    assert.equal(sent.data.state, 'sent');
    assert.equal(sent.data.channel, 'log');
    const mine = s.frames.filter((f) => f.data.runId === runId);
    assert.deepEqual(
      mine.map((f) => `${f.event}:${f.event === 'run' ? f.data.state : f.data.change}`),
      ['run:queued', 'run:running', 'run:succeeded', 'delivery:queued', 'delivery:sent'],
    );
    const done = mine.find((f) => f.data.state === 'succeeded')!;
    assert.equal(done.data.hookName, 'agent');
    assert.equal(typeof done.data.durationMs, 'number');
    assert.ok(
      mine.every((f) => !JSON.stringify(f.data).includes('hello feed')),
      'never the message or the reply',
    );
  });

  it('/metrics: Prometheus text whose counters match what was sent', async () => {
    const before = parseMetrics(
      await (await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text(),
    );
    const wakes = 4;
    for (let i = 0; i < wakes; i++)
      assert.equal((await hg.post('/hooks/wake', { text: `m${i}`, mode: 'next-heartbeat' })).status, 200);
    for (let i = 0; i < 3; i++)
      assert.equal(
        (await hg.post('/hooks/wake', { text: 'x' }, { authorization: 'Bearer nope-nope-nope-nope' })).status,
        401,
      );
    assert.equal((await hg.post('/hooks/nowhere', { text: 'x' })).status, 404);
    // The feed opens before the run is sent: a run on echo can be delivered before a later subscription starts
    // (seen on CI: no frame in 10 s).
    const s = await feed(undefined, '?types=delivery');
    const r = await hg.post('/hooks/agent', { message: 'count me', channel: 'log', wakeMode: 'next-heartbeat' });
    await s.next((f) => f.data.runId === r.body!.runId && f.data.change === 'sent', 10_000);
    await new Promise((res) => setTimeout(res, 1100)); // past the queue gauges' 1 s cache

    const res = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const m = parseMetrics(await res.text());
    const delta = (name: string, labels: Record<string, string> = {}) =>
      value(m, name, labels) - value(before, name, labels);
    assert.equal(delta('hookgate_hook_requests_total', { route: 'wake', status: '200' }), wakes);
    assert.equal(delta('hookgate_hook_requests_total', { route: 'wake', status: '401' }), 3);
    assert.equal(delta('hookgate_hook_requests_total', { route: 'other', status: '404' }), 1);
    assert.equal(delta('hookgate_hook_requests_total', { route: 'agent', status: '200' }), 1);
    assert.equal(delta('hookgate_auth_failures_total'), 3);
    assert.equal(delta('hookgate_deliveries_total', { channel: 'log', outcome: 'sent' }), 1);
    // The gauge counts what waits; finished runs are history (hookgate_run_duration_seconds counts them).
    assert.equal(value(m, 'hookgate_runs', { state: 'queued' }), 0);
    assert.equal(value(m, 'hookgate_runs', { state: 'running' }), 0);
    assert.equal(sample(m, 'hookgate_runs', { state: 'succeeded' }), undefined);
    assert.ok(
      value(m, 'hookgate_system_events_pending') >= wakes,
      'the wakes wait for the next heartbeat (heartbeat.every off)',
    );
    assert.equal(value(m, 'hookgate_outbox_pending'), 0);
    assert.equal(value(m, 'hookgate_auth_lockouts_active'), 0);
    // One series each (with a `node` label on PostgreSQL, which the parser folds away with the count): the +Inf bucket.
    const count = (name: string) => Number(m.get(name)!.metrics[0]!.buckets?.['+Inf']);
    assert.ok(count('hookgate_store_commit_duration_seconds') > 0, 'the group commits were timed');
    assert.ok(count('hookgate_run_duration_seconds') >= 2);
    assert.equal(m.get('hookgate_hook_request_duration_seconds')!.type, 'HISTOGRAM');
    assert.ok(m.has('process_resident_memory_bytes'), 'default process metrics');
    for (const f of m.values())
      for (const s2 of f.metrics)
        assert.ok(!String(s2.labels?.route ?? '').includes('nowhere'), 'never the raw path as a label');
  });

  it('a heartbeat turn appears (a wake with mode now), with the events it read', async () => {
    const s = await feed(undefined, '?types=heartbeat');
    assert.equal((await hg.post('/hooks/wake', { text: 'beat now', mode: 'now' })).status, 200);
    const f = await s.next((x) => x.event === 'heartbeat', 10_000);
    assert.equal(f.data.outcome, 'ok');
    assert.equal(f.data.sessionKey, 'main');
    assert.ok(Number(f.data.events) >= 1);
  });

  it('hookgate tail --json follows the feed (the token from the config)', async () => {
    // --url: the test's config asks for port 0 (any free port); the token still comes from the config
    const tail = spawn(process.execPath, [CLI, 'tail', '--json', '--config', hg.configFile, '--url', admin], {
      cwd: hg.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Array<Record<string, unknown>> = [];
    const errors: string[] = [];
    createInterface({ input: tail.stdout! }).on('line', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    createInterface({ input: tail.stderr! }).on('line', (l) => errors.push(l));
    try {
      // tail connects live: send until one of ours shows up
      const eventId = await waitFor(
        'a wake seen by tail',
        async () => {
          const r = await hg.post('/hooks/wake', { text: 'tail me', mode: 'next-heartbeat' });
          const id = String(r.body!.eventId);
          await new Promise((res) => setTimeout(res, 200));
          return lines.some((l) => l.type === 'received' && (l.eventIds as string[]).includes(id)) ? id : undefined;
        },
        10_000,
      ).catch((err: Error) => assert.fail(`${err.message}; tail said: ${errors.join(' | ')}`));
      const line = lines.find((l) => (l.eventIds as string[] | undefined)?.includes(eventId))!;
      assert.match(String(line.id), /^[0-9a-f]{8}-\d+$/);
    } finally {
      tail.kill('SIGTERM');
    }
  });
});

const skipPg = await skipWithoutPostgres();

describe('live feed across nodes (PostgreSQL)', { skip: skipPg }, () => {
  let db: TestDatabase;
  const nodes: Hookgate[] = [];
  before(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 2; i++) nodes.push(await startHookgate({ config: CONFIG, database: db }));
  });
  after(async () => {
    for (const n of nodes) await n.cleanup();
    await db?.drop();
  });

  it("node B's feed carries an event accepted on node A, labelled with A's node; each node's /metrics has its node label", async () => {
    const [a, b] = nodes as [Hookgate, Hookgate];
    const s = await openSse(`${adminUrl(b)}/api/v1/events`, { token: ADMIN });
    try {
      // B's first reader asks the other nodes for their events with a notice: A sends from the moment it got it
      // (normally milliseconds; on a loaded machine a wake posted at once can be accepted first). So: post until one
      // of A's wakes shows up on B.
      const ids = new Set<string>();
      const seen = (x: SseFrame) => received(x) && (x.data.eventIds as string[]).some((id) => ids.has(id));
      let f: SseFrame | undefined;
      for (let i = 0; i < 20 && !f; i++) {
        const r = await a.post('/hooks/wake', { text: 'from a', mode: 'next-heartbeat' });
        ids.add(String(r.body!.eventId));
        f = await s.next(seen, 500).catch(() => undefined);
      }
      assert.ok(f, "none of 20 wakes accepted on A reached B's feed");
      const nodeA = String(a.logs.find((l) => typeof l.node === 'string' || typeof l.owner === 'string')?.node ?? '');
      assert.ok(typeof f.data.node === 'string' && f.data.node !== '', 'the origin node is named');
      if (nodeA) assert.equal(f.data.node, nodeA);
      const m = parseMetrics(
        await (await fetch(`${adminUrl(b)}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text(),
      );
      const req = m.get('hookgate_outbox_pending')!.metrics[0]!;
      assert.ok(req.labels?.node, 'a node label on every series');
      assert.notEqual(req.labels?.node, f.data.node, "B labels its own metrics; A's event came from A");
      assert.equal(
        value(m, 'hookgate_hook_requests_total', { route: 'wake', status: '200' }),
        0,
        'B counts only its own requests',
      );
    } finally {
      s.close();
    }
  });
});
