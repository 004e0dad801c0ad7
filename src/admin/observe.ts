/**
 * The live feed's bus, the metrics and the feed's cluster bridge of one service, built before the store (which
 * reports its commit timings to the metrics) and attached once the store and the ingress exist.
 */
import { FeedBus } from '../feed.js';
import type { Logger } from '../log.js';
import type { QueueDepths } from '../store/pages.js';
import { type FeedRouteOptions, feedRoutes } from './events.js';
import { type FeedClusterStore, shareFeed } from './feed-cluster.js';
import { HookgateMetrics, type ListenerConnections, metricsRoutes } from './metrics.js';
import type { AdminRoute } from './route.js';

export interface ObservedSources {
  store: FeedClusterStore;
  /** The store's queue figures (AdminStore.queueDepths). */
  depths: () => Promise<QueueDepths>;
  /** Address buckets locked out now (the ingress's limiter). */
  lockouts: () => number;
  /** What each listener's connection caps refused and evicted. */
  connections: () => ListenerConnections;
}

export interface Observability {
  readonly feed: FeedBus;
  readonly metrics: HookgateMetrics;
  /** For OpenStoreOptions.onCommit. */
  onCommit(ms: number): void;
  /** Start reading the sources (scrapes before this see empty queue gauges) and, on a shared store, the cluster feed. */
  attach(sources: ObservedSources): void;
  /** `GET /api/v1/events` and `GET /metrics`, for the admin listener. */
  routes(opts?: FeedRouteOptions): AdminRoute[];
  stop(): void;
}

/**
 * `node`: this node's id when the store is shared (PostgreSQL): feed events and metrics carry it. `replay: false`
 * (no admin listener in this process, and it only starts with the process): no reader can ever resume from the
 * buffer, so it keeps one event, not 4,096. Kept, each event would outlive two young-generation GCs and die in the
 * old space: under load, every event would become old-generation garbage.
 */
export function createObservability(opts: { node?: string; logger: Logger; replay?: boolean }): Observability {
  const feed = new FeedBus(opts.replay === false ? 1 : undefined, opts.node);
  let sources: ObservedSources | undefined;
  let stopSharing = () => {};
  const metrics = new HookgateMetrics({
    bus: feed,
    depths: () => (sources ? sources.depths() : Promise.reject(new Error('not started yet'))),
    lockouts: () => sources?.lockouts() ?? 0,
    connections: () => sources?.connections() ?? {},
    ...(opts.node ? { node: opts.node } : {}),
    logger: opts.logger,
  });
  return {
    feed,
    metrics,
    onCommit: (ms) => metrics.observeCommit(ms),
    attach(s) {
      sources = s;
      if (opts.node) stopSharing = shareFeed(feed, s.store, opts.node, opts.logger);
    },
    routes: (routeOpts = {}) => [...feedRoutes(feed, { logger: opts.logger, ...routeOpts }), ...metricsRoutes(metrics)],
    stop() {
      stopSharing();
      metrics.stop();
    },
  };
}
