/**
 * The admin REST API (docs/admin.md, docs/reference.md#admin-endpoints): runs, sessions, deliveries, received records,
 * and the two repairs (retry a failed run, retry a dead delivery). Reads go to the store (the whole cluster's work on
 * PostgreSQL); a repair commits, then wakes this node's runtime so the work runs at once (other nodes learn of it from
 * the store's notice).
 */
import type { Audit } from '../audit.js';
import { deliveryStateName } from '../enums.js';
import { AdminError } from '../errors.js';
import { sendJson } from '../ingress/respond.js';
import type { Delivery, Run, SessionDetail, SessionMessage, SessionSummary, Store, SystemEvent } from '../store/types.js';
import { parseDeliveriesQuery, parseOverviewQuery, parseReceivedQuery, parseRunsQuery, parseSessionsQuery } from './query.js';
import type { AdminRoute } from './route.js';

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
}

/** The window of `failures` in `GET /api/v1/overview` (the dashboard's and `hookgate status`'s "last hour"). */
const FAILURE_WINDOW_MS = 3_600_000;

/** Turns of a run's transcript shown with the run (its session's latest, those of this run). */
const RUN_TRANSCRIPT_TURNS = 40;

/** A run in a list: the fields docs/reference.md#admin-endpoints lists, times in epoch milliseconds. */
export function runSummary(r: Run) {
  return {
    id: r.id, state: r.state, sessionKey: r.sessionKey, agentId: r.agentId, hookName: r.hookPath, model: r.model, attempts: r.attempts,
    createdAt: r.createdAt, startedAt: r.startedAt, finishedAt: r.finishedAt, error: r.error,
  };
}

export function deliveryView(d: Delivery) {
  return {
    id: d.id, runId: d.runId, channel: d.channel, to: d.to, state: deliveryStateName(d.state), attempts: d.attempts, lastError: d.lastError,
    nextAttemptAt: d.state === 'pending' ? d.nextAttemptAt : null, createdAt: d.createdAt, deliveredAt: d.deliveredAt,
  };
}

const turn = (m: SessionMessage) => ({ role: m.role, content: m.content, runId: m.runId, createdAt: m.createdAt });
const eventView = (e: SystemEvent) => ({
  id: e.id, text: e.text, origin: e.origin, runId: e.runId ?? null, createdAt: e.createdAt, untrusted: e.untrusted, source: e.source,
});

function sessionView(s: SessionSummary) {
  return {
    key: s.key, agentId: s.agentId, pendingEvents: s.pendingEvents, runs: s.runs, lastActivityAt: s.lastActivityAt,
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

export function apiRoutes(deps: ApiDeps): AdminRoute[] {
  const { store, signals, audit } = deps;
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
        if (!run) throw notFound(`run ${params.id}`);
        const [messages, deliveries] = await Promise.all([
          store.sessionMessages(run.agentId, run.sessionKey, RUN_TRANSCRIPT_TURNS),
          store.listDeliveries({ runId: run.id, limit: 50 }),
        ]);
        sendJson(res, 200, {
          ...runSummary(run),
          name: run.name, message: run.message, reply: run.reply, deliveryStatus: run.deliveryStatus, channel: run.channel, to: run.to,
          wakeMode: run.wakeMode, deliver: run.deliver, nextAttemptAt: run.nextAttemptAt, retries: run.retries,
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
        if (!run) throw notFound(`run ${params.id}`);
        if (run.state !== 'failed' && run.state !== 'timed_out') {
          throw new AdminError(409, 'not_retryable', `run ${run.id} is ${run.state}: only a failed or timed_out run can be retried`);
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
          throw new AdminError(409, 'not_retryable', `delivery ${delivery.id} is ${deliveryStateName(delivery.state)}: only a failed (dead-lettered) delivery can be retried`);
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
        const [queues, failures] = await Promise.all([store.queueDepths(), store.failuresSince(since)]);
        sendJson(res, 200, { queues, failures, since });
      },
    },
    {
      method: 'GET',
      path: '/api/v1/received',
      async handle({ res, query }) {
        const page = await store.pageReceived(parseReceivedQuery(query));
        // `tokenId` always present: the hook token's id when one authenticated the request, else null.
        sendJson(res, 200, { items: page.items.map((r) => ({ ...r, tokenId: r.tokenId ?? null })), nextCursor: page.nextCursor });
      },
    },
  ];
}
