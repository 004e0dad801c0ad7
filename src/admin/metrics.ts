/**
 * `GET /metrics` (docs/reference.md#metrics): Prometheus text from prom-client, on a registry of hookgate's own (never
 * the global one, so an embedding program's metrics and ours do not mix), with prom-client's default process metrics.
 *
 * The counters and histograms are fed by the live feed's bus (this process's own events only: on PostgreSQL every
 * node counts its own work and Prometheus sums the nodes), plus the store's commit timings; the hot path pays an
 * in-memory increment. The queue gauges are read at scrape time with `queueDepths()` from the shared store (so they
 * are cluster-wide), at most once a second however often it is scraped.
 */
import client, { type Counter, type Histogram } from 'prom-client';
import type { FeedBus, FeedEvent } from '../feed.js';
import type { Logger } from '../log.js';
import { OPEN_RUN_STATES } from '../enums.js';
import type { ConnectionCounts } from '../net/connections.js';
import type { QueueDepths } from '../store/pages.js';
import { errorMessage } from '../text-safe.js';
import { KeyedCounter, KeyedHistogram } from './fast-metrics.js';
import type { AdminRoute } from './route.js';

/** Queue depths are read from the store at most this often (a scrape in between gets the cached figures). */
export const DEPTHS_CACHE_MS = 1000;

export interface MetricsOptions {
  bus: FeedBus;
  /** The store's queue figures (AdminStore.queueDepths): cluster-wide on a shared store. */
  depths: () => Promise<QueueDepths>;
  /** Address buckets locked out now (the ingress's limiter; on PostgreSQL it holds every node's lockouts). */
  lockouts: () => number;
  /** What each listener's connection caps refused and evicted since the start (net/connections.ts). */
  connections: () => ListenerConnections;
  /** This node's id on a shared store: every series gets a `node` label. */
  node?: string;
  logger?: Logger;
  now?: () => number;
}

/** The connection counts by listener; the admin listener's only when it runs. */
export type ListenerConnections = {
  hooks?: Readonly<ConnectionCounts> | undefined;
  admin?: Readonly<ConnectionCounts> | undefined;
};

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUN_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** Delivery changes counted as outcomes (a delivery being queued is not one). */
const DELIVERY_OUTCOMES = { sent: 'sent', retry: 'retry', failed: 'failed' } as const;

export class HookgateMetrics {
  readonly registry = new client.Registry();
  private readonly requests: KeyedCounter;
  private readonly requestSeconds: KeyedHistogram;
  private readonly commitSeconds: Histogram;
  private readonly runSeconds: Histogram;
  private readonly deliveries: Counter<'channel' | 'outcome'>;
  private readonly heartbeats: Counter<'outcome'>;
  private readonly authFailures: Counter;
  private readonly unmatched: Counter<'path'>;
  /** Label children by key: a labelled increment without prom-client's per-call label hashing. */
  private readonly children = new Map<string, { inc(): void } | { observe(v: number): void }>();
  private readonly unsubscribe: () => void;
  private depthsCache: { at: number; value: Promise<QueueDepths | undefined> } | undefined;

  constructor(private readonly opts: MetricsOptions) {
    const registers = [this.registry];
    if (opts.node) this.registry.setDefaultLabels({ node: opts.node });
    client.collectDefaultMetrics({ register: this.registry });
    this.requests = new KeyedCounter({
      name: 'hookgate_hook_requests_total',
      help: 'Hook requests answered, by route (wake, agent, mapping id, other) and HTTP status.',
      labelNames: ['route', 'status'],
      registry: this.registry,
    });
    this.requestSeconds = new KeyedHistogram(
      'hookgate_hook_request_duration_seconds',
      'Time from a hook request to its answer, by route.',
      LATENCY_BUCKETS,
      this.registry,
    );
    this.commitSeconds = new client.Histogram({
      name: 'hookgate_store_commit_duration_seconds',
      help: 'Time of one group commit of the store (a batch of accepted hooks).',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.runSeconds = new client.Histogram({
      name: 'hookgate_run_duration_seconds',
      help: 'Time of an agent run from its start to its end (succeeded, failed or timed out).',
      buckets: RUN_BUCKETS,
      registers,
    });
    this.deliveries = new client.Counter({
      name: 'hookgate_deliveries_total',
      help: 'Delivery attempts by channel and outcome: sent, retry (failed, tried again later), failed (dead-lettered).',
      labelNames: ['channel', 'outcome'],
      registers,
    });
    this.heartbeats = new client.Counter({
      name: 'hookgate_heartbeats_total',
      help: 'Heartbeat turns by outcome (ok, failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.authFailures = new client.Counter({
      name: 'hookgate_auth_failures_total',
      help: 'Hook requests refused 401 (a missing or wrong token or signature).',
      registers,
    });
    this.unmatched = new client.Counter({
      name: 'hookgate_hooks_unmatched_total',
      help: 'Signed hook requests that no mapping takes (answered 200, ignored), by mapped path (other: a path no mapping names).',
      labelNames: ['path'],
      registers,
    });
    const depths = () => this.depths();
    new client.Gauge({
      name: 'hookgate_runs',
      help: 'Runs queued and running now (cluster-wide); finished runs are counted by hookgate_run_duration_seconds.',
      labelNames: ['state'],
      registers,
      async collect() {
        const d = await depths();
        if (d) for (const state of OPEN_RUN_STATES) this.set({ state }, d.runs[state]);
      },
    });
    new client.Gauge({
      name: 'hookgate_outbox_pending',
      help: 'Deliveries not sent yet, including those waiting for a retry (cluster-wide).',
      registers,
      async collect() {
        const d = await depths();
        if (d) this.set(d.outboxPending);
      },
    });
    new client.Gauge({
      name: 'hookgate_system_events_pending',
      help: 'System events waiting for a heartbeat, all sessions (cluster-wide).',
      registers,
      async collect() {
        const d = await depths();
        if (d) this.set(d.systemEventsPending);
      },
    });
    new client.Gauge({
      name: 'hookgate_auth_lockouts_active',
      help: 'Client addresses locked out now after too many failed authentications.',
      registers,
      collect() {
        this.set(opts.lockouts());
      },
    });
    connectionCounter(
      registers,
      opts.connections,
      'hookgate_connections_evicted_total',
      'state',
      { idle: 'evictedIdle', unfinished: 'evictedUnfinished' },
      'Idle connections closed to admit a new one at the connection caps, by listener and state (idle: between two requests; unfinished: request headers incomplete).',
    );
    connectionCounter(
      registers,
      opts.connections,
      'hookgate_connections_refused_total',
      'cap',
      { per_address: 'refusedPerAddress', total: 'refusedTotal' },
      'New connections closed unread because every connection they could replace was busy, by listener and cap (per_address, total).',
    );
    this.unsubscribe = opts.bus.subscribe((event, _seq, origin) => {
      if (origin === null) this.count(event);
    });
  }

  /** One group commit of the store took `ms` (both drivers time it: OpenStoreOptions.onCommit). */
  observeCommit(ms: number): void {
    this.commitSeconds.observe(ms / 1000);
  }

  /** The exposition text (and its content type). */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  stop(): void {
    this.unsubscribe();
  }

  private count(e: FeedEvent): void {
    switch (e.type) {
      case 'received': {
        const { route, status } = e;
        this.requests.inc(`${route} ${status}`, () => ({ route, status: String(status) }));
        this.requestSeconds.observe(route, () => ({ route }), e.durationMs / 1000);
        if (status === 401) this.authFailures.inc();
        else if (e.code === 'unmatched') this.countUnmatched(e);
        return;
      }
      case 'run':
        if (e.durationMs !== undefined) this.runSeconds.observe(e.durationMs / 1000);
        return;
      case 'delivery': {
        if (e.change === 'queued') return;
        const outcome = DELIVERY_OUTCOMES[e.change];
        (
          this.child(`o ${e.channel} ${outcome}`, () => this.deliveries.labels(e.channel, outcome)) as { inc(): void }
        ).inc();
        return;
      }
      case 'heartbeat':
        this.heartbeats.labels(e.outcome).inc();
    }
  }

  /**
   * An unmatched request has no mapping id, so its `route` is the first mapping (or preset) whose path is exactly its
   * sub-path, else `other` (announce.ts `routeLabel`): the path is a label value only where the config names it.
   */
  private countUnmatched(e: Extract<FeedEvent, { type: 'received' }>): void {
    const path = e.route === 'other' ? 'other' : e.path;
    (this.child(`u ${path}`, () => this.unmatched.labels(path)) as { inc(): void }).inc();
  }

  /** Label values are bounded (routes come from the config, statuses and outcomes are closed lists, channels configured). */
  private child<T extends { inc(): void } | { observe(v: number): void }>(key: string, make: () => T): T {
    let c = this.children.get(key);
    if (!c) this.children.set(key, (c = make()));
    return c as T;
  }

  /** The store's figures, cached for DEPTHS_CACHE_MS; a failed read keeps the gauges' last values (and is logged). */
  private depths(): Promise<QueueDepths | undefined> {
    const now = (this.opts.now ?? Date.now)();
    if (this.depthsCache && now - this.depthsCache.at < DEPTHS_CACHE_MS) return this.depthsCache.value;
    const value = this.opts.depths().catch((err: unknown) => {
      this.opts.logger?.warn(
        { err: errorMessage(err) },
        'metrics: the queue gauges could not be read from the store; they keep their last values',
      );
      return undefined;
    });
    this.depthsCache = { at: now, value };
    return value;
  }
}

/** A counter of the listeners' connection counts (read at scrape time), one series per listener and `label` value. */
function connectionCounter(
  registers: client.Registry[],
  read: () => ListenerConnections,
  name: string,
  label: string,
  series: Record<string, keyof ConnectionCounts>,
  help: string,
): void {
  new client.Counter({
    name,
    help,
    registers,
    labelNames: ['listener', label],
    collect() {
      this.reset();
      for (const [listener, counts] of Object.entries(read())) {
        if (counts)
          for (const [value, key] of Object.entries(series)) this.inc({ listener, [label]: value }, counts[key]);
      }
    },
  });
}

/** `GET /metrics`, admin token required. */
export function metricsRoutes(metrics: HookgateMetrics): AdminRoute[] {
  return [
    {
      method: 'GET',
      path: '/metrics',
      async handle({ res }) {
        const { contentType, body } = await metrics.text();
        res.writeHead(200, {
          'content-type': contentType,
          'content-length': Buffer.byteLength(body),
          'cache-control': 'no-store',
        });
        res.end(body);
      },
    },
  ];
}
