/**
 * The admin REST API (docs/admin.md, docs/reference.md#admin-endpoints): runs, sessions, deliveries, received records,
 * and the two repairs (retry a failed run, retry a dead delivery). Reads go to the store (the whole cluster's work on
 * PostgreSQL); a repair commits, then wakes this node's runtime so the work runs at once (other nodes learn of it from
 * the store's notice).
 */
import type { Audit } from '../audit.js';
import { deliveryStateName } from '../enums.js';
import type { FeedBus } from '../feed.js';
import { AdminError } from '../errors.js';
import { sendJson } from '../ingress/respond.js';
import type { ReceivedRecord } from '../store/pages.js';
import type {
  Delivery,
  Run,
  SessionDetail,
  SessionMessage,
  SessionSummary,
  Store,
  SystemEvent,
} from '../store/types.js';
import {
  parseBreakdownQuery,
  parseDeliveriesQuery,
  parseOverviewQuery,
  parseReceivedQuery,
  parseRunsQuery,
  parseSessionsQuery,
} from './query.js';
import type { AdminRoute } from './route.js';
import { runLabel } from '../runtime/summary.js';
import { liveRecord, unstoredRefusals } from './recent.js';

/**
 * What a repair wakes: this node's run worker and outbox (a no-op once the app stops). The runs and deliveries
 * passed are announced on the live feed as queued again.
 */
export interface AdminSignals {
  runsQueued(runs?: readonly Run[]): void;
  deliveriesQueued(deliveries?: readonly Delivery[]): void;
}

export interface ApiDeps {
  store: Store;
  signals: AdminSignals;
  /** Where repairs are recorded (actor "admin"); none in tests that do not look. */
  audit?: Pick<Audit, 'record'>;
  now?: () => number;
  /** The live feed's ring: refusals not stored yet are read from it (recent.ts). */
  feed?: FeedBus;
}

/** The window of `failures` in `GET /api/v1/overview` (the dashboard's and `hookgate status`'s "last hour"). */
const FAILURE_WINDOW_MS = 3_600_000;
/** The buckets of `GET /api/v1/breakdown`: one a minute, the window of refusal counts by default. */
const BREAKDOWN_BUCKET_MS = 60_000;

/** Turns of a run's transcript shown with the run (its session's latest, those of this run). */
const RUN_TRANSCRIPT_TURNS = 40;

/** A run in a list: the fields docs/reference.md#admin-endpoints lists, times in epoch milliseconds. */
export function runSummary(r: Run) {
  return {
    id: r.id,
    state: r.state,
    label: runLabel(r),
    name: r.name,
    mappingId: r.mappingId,
    sessionKey: r.sessionKey,
    agentId: r.agentId,
    hookName: r.hookPath,
    model: r.model,
    attempts: r.attempts,
    createdAt: r.createdAt,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    error: r.error,
  };
}

export function deliveryView(d: Delivery) {
  return {
    id: d.id,
    runId: d.runId,
    channel: d.channel,
    to: d.to,
    state: deliveryStateName(d.state),
    attempts: d.attempts,
    lastError: d.lastError,
    nextAttemptAt: d.state === 'pending' ? d.nextAttemptAt : null,
    createdAt: d.createdAt,
    deliveredAt: d.deliveredAt,
  };
}

const turn = (m: SessionMessage) => ({ role: m.role, content: m.content, runId: m.runId, createdAt: m.createdAt });
const eventView = (e: SystemEvent) => ({
  id: e.id,
  text: e.text,
  origin: e.origin,
  runId: e.runId ?? null,
  createdAt: e.createdAt,
  untrusted: e.untrusted,
  source: e.source,
});

function sessionView(s: SessionSummary) {
  return {
    key: s.key,
    agentId: s.agentId,
    pendingEvents: s.pendingEvents,
    runs: s.runs,
    lastActivityAt: s.lastActivityAt,
    lastRoute: s.lastChannel ? { channel: s.lastChannel, to: s.lastTo, accountId: s.lastAccountId } : null,
  };
}

function sessionDetailView(s: SessionDetail) {
  return {
    ...sessionView(s),
    pending: s.pending.map(eventView),
    transcript: s.transcript.map(turn),
    recentRuns: s.recentRuns.map(runSummary),
  };
}

function notFound(what: string): AdminError {
  return new AdminError(404, 'not_found', `no ${what}`);
}

/** A run id the store does not know: finished runs are deleted after hooks.runRetentionDays, so it may have been one. */
function runNotFound(id: string): AdminError {
  return new AdminError(
    404,
    'run_pruned_or_unknown',
    `no run ${id}: never accepted here, or finished longer ago than hooks.runRetentionDays and pruned`,
  );
}

export function apiRoutes(deps: ApiDeps): AdminRoute[] {
  const { store, signals, audit, feed } = deps;
  /** Refusals newer than the newest stored window of counts, from the feed's ring (newest first). */
  const unstored = async (from: number) =>
    unstoredRefusals(feed, Math.max(from, (await store.refusalsStoredUntil()) ?? 0));
  const now = deps.now ?? Date.now;
  return [
    {
      method: 'GET',
      path: '/api/v1/runs',
      async handle({ res, query }) {
        const page = await store.pageRuns(parseRunsQuery(query));
        sendJson(res, 200, { items: page.items.map(runSummary), nextCursor: page.nextCursor });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/runs/:id',
      async handle({ res, params }) {
        const run = await store.getRun(params.id!);
        if (!run) throw runNotFound(params.id!);
        const [messages, deliveries] = await Promise.all([
          store.sessionMessages(run.agentId, run.sessionKey, RUN_TRANSCRIPT_TURNS),
          store.listDeliveries({ runId: run.id, limit: 50 }),
        ]);
        sendJson(res, 200, {
          ...runSummary(run),
          message: run.message,
          reply: run.reply,
          deliveryStatus: run.deliveryStatus,
          channel: run.channel,
          to: run.to,
          wakeMode: run.wakeMode,
          deliver: run.deliver,
          nextAttemptAt: run.nextAttemptAt,
          retries: run.retries,
          transcript: messages.filter((m) => m.runId === run.id).map(turn),
          deliveries: deliveries.map(deliveryView),
        });
      },
    },
    {
      method: 'POST',
      path: '/api/v1/runs/:id/retry',
      async handle({ res, params }) {
        const run = await store.getRun(params.id!);
        if (!run) throw runNotFound(params.id!);
        if (run.state !== 'failed' && run.state !== 'timed_out') {
          throw new AdminError(
            409,
            'not_retryable',
            `run ${run.id} is ${run.state}: only a failed or timed_out run can be retried`,
          );
        }
        const queued = await store.requeueRun(run.id, now());
        // Another retry (or the CLI) got there first: it is queued already, which is what was asked.
        if (!queued) throw new AdminError(409, 'not_retryable', `run ${run.id} is no longer failed`);
        audit?.record('admin.retry', 'admin', { runId: run.id, from: run.state });
        signals.runsQueued([queued]);
        sendJson(res, 200, { ok: true, runId: run.id });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/sessions',
      async handle({ res, query }) {
        const { limit } = parseSessionsQuery(query);
        const sessions = await store.listSessions(limit);
        sendJson(res, 200, { items: sessions.map(sessionView), nextCursor: null });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/sessions/:key',
      async handle({ res, params }) {
        const session = await store.getSession(params.key!);
        if (!session) throw notFound(`session ${params.key}`);
        sendJson(res, 200, sessionDetailView(session));
      },
    },
    {
      method: 'GET',
      path: '/api/v1/deliveries',
      async handle({ res, query }) {
        const page = await store.pageDeliveries(parseDeliveriesQuery(query));
        sendJson(res, 200, { items: page.items.map(deliveryView), nextCursor: page.nextCursor });
      },
    },
    {
      method: 'POST',
      path: '/api/v1/deliveries/:id/retry',
      async handle({ res, params }) {
        const delivery = await store.getDelivery(params.id!);
        if (!delivery) throw notFound(`delivery ${params.id}`);
        if (delivery.state !== 'dead') {
          throw new AdminError(
            409,
            'not_retryable',
            `delivery ${delivery.id} is ${deliveryStateName(delivery.state)}: only a failed (dead-lettered) delivery can be retried`,
          );
        }
        const queued = await store.retryDelivery(delivery.id, now());
        if (!queued) throw notFound(`delivery ${params.id}`);
        audit?.record('admin.retry', 'admin', { deliveryId: delivery.id, from: 'failed' });
        signals.deliveriesQueued([queued]);
        sendJson(res, 200, { ok: true, deliveryId: delivery.id });
      },
    },
    {
      // The dashboard's headline: one queue-depth query and one failure count, instead of a page of every list.
      method: 'GET',
      path: '/api/v1/overview',
      async handle({ res, query }) {
        parseOverviewQuery(query);
        const since = now() - FAILURE_WINDOW_MS;
        const [queues, failures, live] = await Promise.all([
          store.queueDepths(),
          store.failuresSince(since),
          unstored(since),
        ]);
        sendJson(res, 200, { queues, failures: { ...failures, refused: failures.refused + live.length }, since });
      },
    },
    {
      // The last hour broken down for the dashboard's chart and tables (docs/admin.md, "Breakdown of the last hour").
      method: 'GET',
      path: '/api/v1/breakdown',
      async handle({ res, query }) {
        parseBreakdownQuery(query);
        const until = Math.ceil((now() + 1) / BREAKDOWN_BUCKET_MS) * BREAKDOWN_BUCKET_MS;
        const since = until - FAILURE_WINDOW_MS;
        const stored = await store.breakdownSince(since, until, BREAKDOWN_BUCKET_MS);
        for (const { event } of unstoredRefusals(feed, Math.max(since, stored.refusalsStoredUntil ?? 0)))
          stored.requests.add(event);
        const runs = new Map<string, number>();
        for (const r of stored.runs) {
          const label = runLabel({ name: r.name, mappingId: r.mappingId, hookPath: r.hookPath });
          runs.set(label, (runs.get(label) ?? 0) + r.failed);
        }
        sendJson(res, 200, {
          since,
          until,
          bucketMs: BREAKDOWN_BUCKET_MS,
          ...stored.requests.result(),
          byChannel: stored.channels,
          runs: [...runs].map(([label, failed]) => ({ label, failed })).sort((a, b) => b.failed - a.failed),
        });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/received',
      async handle({ res, query }) {
        const q = parseReceivedQuery(query);
        const page = await store.pageReceived(q);
        // `tokenId` always present: the hook token's id when one authenticated the request, else null.
        const items: Array<ReceivedRecord & { live?: true }> = page.items.map((r) => ({
          ...r,
          tokenId: r.tokenId ?? null,
        }));
        // The first page also lists the refusals not stored yet (at most `limit` more), merged newest first.
        if (q.cursor === undefined && q.outcome !== 'accepted' && feed) {
          const live = (await unstored(0))
            .filter(({ event }) => q.path === undefined || event.path === q.path)
            .slice(0, q.limit);
          items.push(...live.map(({ seq, event }) => ({ ...liveRecord(feed, seq, event), tokenId: null })));
          items.sort((a, b) => b.at - a.at);
        }
        sendJson(res, 200, { items, nextCursor: page.nextCursor });
      },
    },
  ];
}
