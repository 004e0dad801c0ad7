import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HookgateMetrics, metricsRoutes } from '../../src/admin/metrics.js';
import { FeedBus, type FeedEvent } from '../../src/feed.js';
import { validateConfig } from '../../src/config/load.js';
import { announceReceived } from '../../src/ingress/announce.js';
import type { QueueDepths } from '../../src/store/pages.js';
import { parseMetrics, sample, value } from '../support/prometheus.js';
import { TOKEN } from '../support/token.js';

const depthsOf = (n: number): QueueDepths => ({
  runs: { queued: n, running: 2 },
  outboxPending: 3,
  systemEventsPending: 4,
});
const received = (route: string, status: number, code: string | null = null): FeedEvent => ({
  type: 'received',
  at: 1,
  path: route,
  route,
  status,
  code,
  clientIp: '127.0.0.1',
  eventIds: [],
  runIds: [],
  durationMs: 12,
});

function setup(opts: { node?: string } = {}) {
  const bus = new FeedBus(64);
  let reads = 0;
  let now = 0;
  const metrics = new HookgateMetrics({
    bus,
    depths: async () => depthsOf(++reads),
    lockouts: () => 2,
    connections: () => ({ hooks: { refusedPerAddress: 3, refusedTotal: 1, evictedIdle: 4, evictedUnfinished: 5 } }),
    now: () => now,
    ...opts,
  });
  return { bus, metrics, reads: () => reads, tick: (ms: number) => (now += ms) };
}

describe('metrics (GET /metrics)', () => {
  it('counts this process’s announced work under the names and labels of docs/reference.md#metrics', async () => {
    const { bus, metrics } = setup();
    bus.publish(received('wake', 200));
    bus.publish(received('wake', 200));
    bus.publish(received('github', 202));
    bus.publish(received('other', 401, 'unauthorized'));
    bus.publish(received('other', 429, 'rate_limited'));
    bus.publish({
      type: 'run',
      at: 1,
      runId: 'r',
      state: 'succeeded',
      sessionKey: 'k',
      hookName: 'agent',
      label: 'agent',
      error: null,
      durationMs: 1500,
    });
    bus.publish({
      type: 'delivery',
      at: 1,
      deliveryId: 'd',
      runId: 'r',
      channel: 'telegram',
      state: 'pending',
      change: 'queued',
      attempts: 0,
      lastError: null,
    });
    bus.publish({
      type: 'delivery',
      at: 1,
      deliveryId: 'd',
      runId: 'r',
      channel: 'telegram',
      state: 'pending',
      change: 'retry',
      attempts: 1,
      lastError: 'x',
    });
    bus.publish({
      type: 'delivery',
      at: 1,
      deliveryId: 'd',
      runId: 'r',
      channel: 'telegram',
      state: 'sent',
      change: 'sent',
      attempts: 2,
      lastError: null,
    });
    bus.publish({
      type: 'delivery',
      at: 1,
      deliveryId: 'e',
      runId: null,
      channel: 'slack',
      state: 'failed',
      change: 'failed',
      attempts: 5,
      lastError: 'x',
    });
    bus.publish({ type: 'heartbeat', at: 1, sessionKey: 'k', outcome: 'ok', events: 2 });
    bus.publish({ type: 'heartbeat', at: 1, sessionKey: 'k', outcome: 'failed', events: 2 });
    bus.publish(received('wake', 200), 'another-node'); // counted by its own node, not here
    metrics.observeCommit(3);

    const m = parseMetrics((await metrics.text()).body);
    assert.equal(value(m, 'hookgate_hook_requests_total', { route: 'wake', status: '200' }), 2);
    assert.equal(value(m, 'hookgate_hook_requests_total', { route: 'github', status: '202' }), 1);
    assert.equal(value(m, 'hookgate_hook_requests_total', { route: 'other', status: '401' }), 1);
    assert.equal(value(m, 'hookgate_auth_failures_total'), 1, '401 only: a 429 is a lockout, not another failure');
    // The parser folds a labelled histogram's series into one set of buckets (its prom2json shape): check the family.
    assert.equal(m.get('hookgate_hook_request_duration_seconds')!.type, 'HISTOGRAM');
    assert.ok(sample(m, 'hookgate_hook_request_duration_seconds')!.buckets?.['+Inf']);
    assert.equal(Number(sample(m, 'hookgate_run_duration_seconds')!.sum), 1.5);
    assert.equal(Number(sample(m, 'hookgate_store_commit_duration_seconds')!.count), 1);
    assert.equal(value(m, 'hookgate_deliveries_total', { channel: 'telegram', outcome: 'sent' }), 1);
    assert.equal(value(m, 'hookgate_deliveries_total', { channel: 'telegram', outcome: 'retry' }), 1);
    assert.equal(value(m, 'hookgate_deliveries_total', { channel: 'slack', outcome: 'failed' }), 1);
    assert.equal(
      sample(m, 'hookgate_deliveries_total', { channel: 'telegram', outcome: 'failed' }),
      undefined,
      'a retry is not a failure',
    );
    assert.equal(
      sample(m, 'hookgate_deliveries_total', { outcome: 'queued' }),
      undefined,
      'being queued is not an outcome',
    );
    assert.equal(value(m, 'hookgate_heartbeats_total', { outcome: 'ok' }), 1);
    assert.equal(value(m, 'hookgate_heartbeats_total', { outcome: 'failed' }), 1);
    assert.equal(value(m, 'hookgate_runs', { state: 'queued' }), 1);
    assert.equal(value(m, 'hookgate_runs', { state: 'running' }), 2);
    assert.equal(sample(m, 'hookgate_runs', { state: 'failed' }), undefined, 'finished runs are history, not a gauge');
    assert.equal(value(m, 'hookgate_outbox_pending'), 3);
    assert.equal(value(m, 'hookgate_system_events_pending'), 4);
    assert.equal(value(m, 'hookgate_auth_lockouts_active'), 2);
    assert.equal(value(m, 'hookgate_connections_evicted_total', { listener: 'hooks', state: 'idle' }), 4);
    assert.equal(value(m, 'hookgate_connections_evicted_total', { listener: 'hooks', state: 'unfinished' }), 5);
    assert.equal(value(m, 'hookgate_connections_refused_total', { listener: 'hooks', cap: 'per_address' }), 3);
    assert.equal(value(m, 'hookgate_connections_refused_total', { listener: 'hooks', cap: 'total' }), 1);
    assert.equal(
      sample(m, 'hookgate_connections_evicted_total', { listener: 'admin' }),
      undefined,
      'no admin listener, no admin series',
    );
    assert.ok(
      m.has('process_cpu_user_seconds_total') && m.has('nodejs_eventloop_lag_seconds'),
      'prom-client’s default process metrics',
    );
    metrics.stop();
  });

  it('counts signed requests no mapping takes by their mapped path; a path no mapping or preset names is other', async () => {
    const { bus, metrics } = setup();
    const signature = { scheme: 'github', secret: 'gh-secret-for-tests' };
    const { hooks } = validateConfig(
      {
        hooks: {
          enabled: true,
          token: TOKEN,
          presets: ['gmail'],
          mappings: [
            {
              id: 'gh-prs',
              match: { path: 'github', headers: { 'x-github-event': 'pull_request' } },
              messageTemplate: 'm',
              signature,
            },
            // No match.path: every path is signature-capable, so a stranger's paths could be unmatched too.
            { id: 'anywhere', match: { source: 'ci' }, messageTemplate: 'm', signature },
          ],
        },
      },
      undefined,
      process.cwd(),
      { env: {} },
    );
    const announce = (subPath: string, code: string | null = 'unmatched') =>
      announceReceived(bus, {
        hooks,
        subPath,
        clientIp: '127.0.0.1',
        reqId: 'r',
        started: 0,
        at: 1,
        status: 200,
        code,
        mappingId: null,
      });
    announce('github');
    announce('github');
    announce('gmail');
    for (let i = 0; i < 3; i++) announce(`probe-${i}`);
    announce('github', null); // accepted: not unmatched
    const m = parseMetrics((await metrics.text()).body);
    assert.equal(value(m, 'hookgate_hooks_unmatched_total', { path: 'github' }), 2);
    assert.equal(value(m, 'hookgate_hooks_unmatched_total', { path: 'gmail' }), 1);
    assert.equal(value(m, 'hookgate_hooks_unmatched_total', { path: 'other' }), 3);
    assert.deepEqual(
      m
        .get('hookgate_hooks_unmatched_total')!
        .metrics.map((x) => x.labels?.path)
        .sort(),
      ['github', 'gmail', 'other'],
    );
    assert.equal(value(m, 'hookgate_auth_failures_total'), 0, 'not an auth failure');
    metrics.stop();
  });

  it('reads the queue figures at most once a second, however often it is scraped', async () => {
    const { metrics, reads, tick } = setup();
    await metrics.text();
    await metrics.text();
    assert.equal(reads(), 1);
    tick(1000);
    const m = parseMetrics((await metrics.text()).body);
    assert.equal(reads(), 2);
    assert.equal(value(m, 'hookgate_runs', { state: 'queued' }), 2);
    metrics.stop();
  });

  it('its own registry (not prom-client’s global one); on a shared store every series carries the node', async () => {
    const { metrics } = setup({ node: 'host:1:abc' });
    const { contentType, body } = await metrics.text();
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
    const m = parseMetrics(body);
    assert.equal(sample(m, 'hookgate_outbox_pending')!.labels?.node, 'host:1:abc');
    assert.equal(sample(m, 'process_cpu_user_seconds_total')!.labels?.node, 'host:1:abc');
    const client = await import('prom-client');
    assert.equal(await client.register.getSingleMetric('hookgate_hook_requests_total'), undefined);
    const [route] = metricsRoutes(metrics);
    assert.equal(route!.path, '/metrics');
    assert.notEqual(route!.auth, false, 'admin token required');
    metrics.stop();
  });

  it('a store that cannot answer keeps the gauges at their last values; the scrape still answers', async () => {
    const bus = new FeedBus(4);
    let fail = false;
    let now = 0;
    const metrics = new HookgateMetrics({
      bus,
      depths: async () => (fail ? Promise.reject(new Error('down')) : depthsOf(5)),
      lockouts: () => 0,
      connections: () => ({}),
      now: () => now,
    });
    await metrics.text();
    fail = true;
    now += 2000;
    const m = parseMetrics((await metrics.text()).body);
    assert.equal(value(m, 'hookgate_runs', { state: 'queued' }), 5);
    metrics.stop();
  });
});
