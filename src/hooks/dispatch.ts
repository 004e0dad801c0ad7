import { randomUUID } from 'node:crypto';
import { HttpError, StoreError } from '../errors.js';
import type { AcceptCommand, IdempotencyClaim, NewRun, NewSystemEvent, ReceivedHook, Store, StoredAnswer, WakeMode } from '../store/types.js';
import type { HooksContext } from './context.js';

/** The main session of the default agent: where wakes and run summaries go. */
export const MAIN_SESSION_KEY = 'main';

export type HookAction = { kind: 'wake'; text: string; mode: WakeMode } | { kind: 'agent'; run: NewRun };

/** Told about accepted work after the commit, so the runtime can start it without polling. */
export interface RuntimeSignals {
  heartbeatRequested(reason: string): void;
  runsQueued(): void;
}

export interface DispatchRequest {
  actions: HookAction[];
  idempotency: IdempotencyClaim | undefined;
  received: ReceivedHook;
  /** True for a `forEach` fan-out: the answer lists every run id. */
  fanOut?: boolean;
}

export interface DispatchAnswer extends StoredAnswer {
  duplicate?: boolean;
}

/**
 * Commits the actions of one request (before any answer) and builds the answer:
 * wake → `{ ok, mode, eventId, eventOutcome }`, agent → `{ ok, runId }` (status `hooks.agentAcceptedStatus`),
 * fan-out → `{ ok, runId, runIds, dispatched }`. A repeated idempotency key returns the first answer with
 * `duplicate: true`; a store failure is 503, never a 2xx.
 */
export async function dispatch(ctx: HooksContext, store: Store, signals: RuntimeSignals, req: DispatchRequest): Promise<DispatchAnswer> {
  const now = req.received.at;
  const events: NewSystemEvent[] = [];
  const runs: NewRun[] = [];
  for (const a of req.actions) {
    if (a.kind === 'wake') {
      events.push({ id: randomUUID(), sessionKey: MAIN_SESSION_KEY, agentId: ctx.defaultAgentId, text: a.text, origin: 'wake', createdAt: now });
    } else runs.push(a.run);
  }
  const cmd: AcceptCommand = { events, runs, idempotency: req.idempotency, received: req.received };

  let result;
  try {
    result = await store.accept(cmd, (outcome) => buildAnswer(ctx, req, runs, outcome.events));
  } catch (err) {
    if (err instanceof StoreError) throw new HttpError(503, 'unavailable', 'the store is unavailable; nothing was accepted, retry later');
    throw err;
  }
  if (result.kind === 'conflict') {
    throw new HttpError(409, 'idempotency_conflict', 'this idempotency key was already used with a different body on this path; use a new key');
  }
  if (result.kind === 'duplicate') return { ...result.answer, body: { ...result.answer.body, duplicate: true }, duplicate: true };

  for (const a of req.actions) if (a.kind === 'wake' && a.mode === 'now') signals.heartbeatRequested('hook:wake');
  if (runs.length) signals.runsQueued();
  return result.answer;
}

function buildAnswer(
  ctx: HooksContext,
  req: DispatchRequest,
  runs: NewRun[],
  events: { eventId: string; outcome: 'queued' | 'coalesced' }[],
): StoredAnswer {
  const first = req.actions[0];
  if (req.fanOut && req.actions.length > 0) {
    const runIds = runs.map((r) => r.id);
    return {
      status: runs.length ? ctx.config.hooks.agentAcceptedStatus : 200,
      body: { ok: true, runId: runIds[0] ?? null, runIds, eventIds: events.map((e) => e.eventId), dispatched: req.actions.length },
    };
  }
  if (first?.kind === 'wake') {
    const ev = events[0]!;
    return { status: 200, body: { ok: true, mode: first.mode, eventId: ev.eventId, eventOutcome: ev.outcome } };
  }
  if (first?.kind === 'agent') return { status: ctx.config.hooks.agentAcceptedStatus, body: { ok: true, runId: first.run.id } };
  throw new Error('dispatch without actions');
}
