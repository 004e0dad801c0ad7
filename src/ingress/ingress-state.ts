/**
 * What every request of one hook handler shares (handler.ts): its deps, the current generation, the per-kind log
 * and the refusal counts, and the two things every answer does: record the request and announce it on the live feed.
 */
import type { Logger } from 'pino';
import type { FeedSink } from '../feed.js';
import type { CompletionWaiters } from '../hooks/completion.js';
import type { RuntimeSignals } from '../hooks/dispatch.js';
import { createHookRoutes, type HookRoutes } from '../hooks/routes.js';
import type { AuthFailureLimiter } from '../net/limiter.js';
import { RepeatLimitedLog } from '../net/log-repeats.js';
import type { IngressStore } from '../store/types.js';
import { announceReceived } from './announce.js';
import type { IngressContext } from './context.js';
import type { Exchange } from './exchange.js';
import type { IngressPressure } from './pressure.js';
import { RefusalAggregator } from './refusals.js';

export interface HandlerDeps {
  store: IngressStore;
  signals: RuntimeSignals;
  /** Answers `waitForCompletion` requests once their run ends (the runtime's waiters). */
  completions: CompletionWaiters;
  logger: Logger;
  /** Every route under `hooks.path` (default: a fresh set, compiled on its first request). */
  routes?: HookRoutes;
  /** The live feed: every answered request is announced (announce.ts). */
  feed?: FeedSink;
  /** Told of every request and every commit, to tell the runtime when the ingress is saturated (pressure.ts). */
  pressure?: IngressPressure;
  /** `hooks.authFailureLimit`'s counts and lockouts: the process's, kept across reloads (its limits follow the config). */
  limiter: AuthFailureLimiter;
}

/**
 * What every request of one handler shares: the current generation, its deps, the per-kind log, the refusal counts
 * (these outlive a reload, as the limiter does).
 */
export class Ingress {
  readonly routes: HookRoutes;
  /** Per-request failure lines go through here: a flood or a store outage logs one line per kind and a summary. */
  readonly log: RepeatLimitedLog;
  readonly refusals: RefusalAggregator;

  constructor(
    /** The current generation: read once per request, at its start (openExchange). */
    readonly generation: () => IngressContext,
    readonly deps: HandlerDeps,
  ) {
    this.routes = deps.routes ?? createHookRoutes({ logger: deps.logger });
    this.log = new RepeatLimitedLog(deps.logger);
    this.refusals = new RefusalAggregator(generation().config.hooks.refusals, (window) => {
      deps.store
        .recordRefusals(window, generation().config.hooks.refusals.maxStoredWindows)
        .catch((err: unknown) => this.storeFailed('refusal counts', err));
    });
  }

  storeFailed(what: string, err: unknown, reqId?: string): void {
    this.log.warn(
      String((err as { code?: unknown }).code ?? 'store'),
      { err: (err as Error).message, reqId },
      `could not record ${what}`,
    );
  }
}

export function record(h: Ingress, rec: ReturnType<Exchange['received']>): void {
  h.deps.store.recordReceived(rec).catch((err: unknown) => h.storeFailed('a received hook', err, rec.reqId));
}

export function announce(
  h: Ingress,
  x: Exchange,
  status: number,
  code: string | null,
  mappingId: string | null,
  body?: Record<string, unknown>,
): void {
  // Without a feed (admin listener off) nothing is built: this runs for every answered request.
  const feed = h.deps.feed;
  if (feed)
    announceReceived(feed, {
      hooks: x.ctx.config.hooks,
      subPath: x.subPath,
      clientIp: x.clientIp,
      reqId: x.reqId,
      started: x.started,
      at: x.now,
      status,
      code,
      mappingId,
      ...(body ? { body } : {}),
    });
}
