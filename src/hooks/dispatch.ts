import { newId } from '../ids.js';
import { HttpError, StoreError, storeUnavailable } from '../errors.js';
import {
  type AcceptOutcome,
  type AcceptResult,
  type IdempotencyClaim,
  MAIN_SESSION_KEY,
  type NewRun,
  type NewSystemEvent,
  type ReceivedHook,
  type IngressStore,
  type SessionRoute,
  type WakeMode,
} from '../store/types.js';
import { type CompletionWait, waitBoundMs } from './completion.js';
import type { HooksContext } from './context.js';

/**
 * A wake names the session its event goes to (the main session unless a request or mapping chose another). A mapped
 * wake's text derives from the payload (`untrusted`, unless the mapping allows unsafe content) and names its mapping
 * (`source`); a direct `/hooks/wake` is a token holder's own text: trusted, no source.
 */
export type HookAction =
  | { kind: 'wake'; text: string; mode: WakeMode; sessionKey: string; untrusted?: boolean; source?: string }
  | { kind: 'agent'; run: NewRun };

/** Told about accepted work after the commit, so the runtime can start it without polling. */
export interface RuntimeSignals {
  /** A heartbeat of `sessionKey` (the main session when omitted) should run soon. */
  heartbeatRequested(reason: string, sessionKey?: string): void;
  /**
   * Runs are being accepted: their accept is queued to the store, not committed yet. True when the runtime was told
   * here, on a store whose writes commit in the order they are queued (SQLite): its claim, queued behind the accept,
   * finds the runs, and shares the accept's commit when it is queued in the same turn. `runsQueued` then need not
   * claim again.
   */
  runsAccepting?(): boolean;
  /**
   * Runs were committed as queued (`runs`: the runtime announces each on the live feed). `claimed`: `runsAccepting`
   * answered true for them, so the worker was told already.
   */
  runsQueued(runs?: readonly NewRun[], claimed?: boolean): void;
  /** A Gmail push of `account` was committed (not a duplicate): its fetch should start now. */
  gmailPushed?(account: string): void;
}

export interface DispatchRequest {
  actions: HookAction[];
  idempotency: IdempotencyClaim | undefined;
  /** The request's received record, made for this call: dispatch sets its `status` to the answer's. */
  received: ReceivedHook;
  /** True for a `forEach` fan-out: the answer lists every run id. */
  fanOut?: boolean;
  /** Fan-out items over `hooks.maxFanOut` that were not dispatched: reported as `dropped` in the answer. */
  dropped?: number;
  /** `waitForCompletion` (direct `/agent` only): hold the answer until the run ends; absent on every other request. */
  wait?: CompletionWait;
}

export interface DispatchAnswer {
  status: number;
  body: Record<string, unknown>;
  duplicate?: boolean;
  /**
   * `body` as JSON, ASCII only, when it was rendered here (a wake's or one run's answer: closed words and ids), so
   * the answer is written without a JSON.stringify of it: every accepted request's path.
   */
  json?: string;
}

/**
 * What the answer will be, as plain data: stored with an idempotency key so a repeat gets the same answer.
 * Event ids and outcomes come from the commit and are merged in by `renderAnswer`.
 */
type AnswerSpec =
  | { kind: 'wake'; status: number; mode: WakeMode }
  | { kind: 'agent'; status: number; runId: string }
  | { kind: 'fanout'; status: number; runIds: string[]; dispatched: number; dropped?: number };

/**
 * Commits the actions of one request (before any answer) and builds the answer:
 * wake → `{ ok, mode, eventId, eventOutcome }`, agent → `{ ok, runId }` (status `hooks.agentAcceptedStatus`),
 * fan-out → `{ ok, runId, runIds, dispatched }` (+ `dropped` when items were over the cap). A repeated idempotency key returns the first answer with
 * `duplicate: true`; a store failure is 503, never a 2xx. With `wait`, the committed answer is held for the run's
 * end (a replay waits for the first run) and becomes 200 with `completion`; the stored answer stays the plain one.
 */
export function dispatch(
  ctx: HooksContext,
  store: IngressStore,
  signals: RuntimeSignals,
  req: DispatchRequest,
): Promise<DispatchAnswer> {
  const now = req.received.at;
  const events: NewSystemEvent[] = [];
  const runs: NewRun[] = [];
  for (const a of req.actions) {
    if (a.kind === 'wake') {
      const ev: NewSystemEvent = {
        id: newId(),
        sessionKey: a.sessionKey,
        agentId: ctx.defaultAgentId,
        text: a.text,
        origin: 'wake',
        createdAt: now,
      };
      if (a.untrusted) {
        ev.untrusted = true;
        ev.source = a.source ?? null;
      }
      events.push(ev);
    } else runs.push(a.run);
  }
  // Waits only when a run needs the main session's route: the usual request spends no promise on it.
  if (needsImplicitChannel(ctx, runs)) {
    return requireImplicitChannel(ctx, store).then(() => commit(ctx, store, signals, req, events, runs));
  }
  return commit(ctx, store, signals, req, events, runs);
}

/**
 * The actions committed in one accept, then answered. Chained with `then`, not an async function: an async
 * function's suspended frame is kept for every request while its batch commits.
 */
function commit(
  ctx: HooksContext,
  store: IngressStore,
  signals: RuntimeSignals,
  req: DispatchRequest,
  events: NewSystemEvent[],
  runs: NewRun[],
): Promise<DispatchAnswer> {
  const spec = answerSpec(ctx, req, runs);
  // The caller's record, made for this request: its status is the answer's (not copied, a wake's hot path).
  const received = req.received;
  received.status = req.wait ? 200 : spec.status;
  const accepted = store.accept({ events, runs, idempotency: req.idempotency, answerSpec: spec, received });
  const claimed = runs.length > 0 && signals.runsAccepting?.() === true;
  return accepted.then((result) => answer(ctx, signals, req, spec, runs, result, claimed), storeFailure);
}

const storeFailure = (err: unknown): never => {
  throw err instanceof StoreError ? storeUnavailable() : err;
};

/** The committed request's answer: the first answer again for a repeated key (409 for another body), else this one. */
function answer(
  ctx: HooksContext,
  signals: RuntimeSignals,
  req: DispatchRequest,
  spec: AnswerSpec,
  runs: NewRun[],
  result: AcceptResult,
  claimed: boolean,
): DispatchAnswer | Promise<DispatchAnswer> {
  if (result.kind === 'conflict') {
    throw new HttpError(
      409,
      'idempotency_conflict',
      'this idempotency key was already used with a different body on this path; use a new key',
    );
  }
  if (result.kind === 'duplicate') {
    const first = renderAnswer(result.replay.spec as AnswerSpec, result.replay.outcome);
    const replayed = { status: first.status, body: { ...first.body, duplicate: true }, duplicate: true };
    return req.wait ? holdForCompletion(ctx, req, req.wait, replayed) : replayed;
  }

  for (const a of req.actions)
    if (a.kind === 'wake' && a.mode === 'now') signals.heartbeatRequested('hook:wake', a.sessionKey);
  if (runs.length) signals.runsQueued(runs, claimed);
  const rendered = renderAnswer(spec, result.outcome);
  return req.wait ? holdForCompletion(ctx, req, req.wait, rendered) : rendered;
}

/**
 * The committed answer of one agent run, held until the run ends: always 200 (the answer reports the outcome, so
 * `agentAcceptedStatus` does not apply), bounded by the run's timeout (this request's: a replay's body is the same).
 */
async function holdForCompletion(
  ctx: HooksContext,
  req: DispatchRequest,
  wait: CompletionWait,
  answer: DispatchAnswer,
): Promise<DispatchAnswer> {
  const first = req.actions[0];
  const runId = answer.body.runId;
  if (first?.kind !== 'agent' || typeof runId !== 'string') return answer;
  const completion = await wait.completions.wait(runId, waitBoundMs(ctx, first.run.timeoutSeconds), wait.signal);
  const held: DispatchAnswer = { status: 200, body: { ...answer.body, completion } }; // not the plain answer's `json`
  if (answer.duplicate) held.duplicate = true;
  return held;
}

/**
 * A run that names `to` without a channel (`last`) is delivered on the main session's last channel, else on
 * `channels.default`'s. With neither it would be accepted and then delivered nowhere: refuse it now instead. Read
 * only for such runs (and only without `channels.default`), so the usual request pays nothing.
 */
function needsImplicitChannel(ctx: HooksContext, runs: NewRun[]): boolean {
  if (runs.length === 0 || ctx.config.channels.default) return false;
  return runs.some((r) => r.deliver && r.channel === 'last' && r.to !== null);
}

async function requireImplicitChannel(ctx: HooksContext, store: IngressStore): Promise<void> {
  let route: SessionRoute | undefined;
  try {
    route = await store.getRoute(MAIN_SESSION_KEY);
  } catch {
    throw storeUnavailable();
  }
  if (route) return;
  throw new HttpError(
    400,
    'invalid_channel',
    `"to" was sent without "channel": the main session has no route (set by hookgate sessions route main) and channels.default is not set; send channel too (one of: ${[...ctx.channelIds].join(', ')})`,
  );
}

function answerSpec(ctx: HooksContext, req: DispatchRequest, runs: NewRun[]): AnswerSpec {
  const accepted = ctx.config.hooks.agentAcceptedStatus;
  const first = req.actions[0];
  if (!first) throw new Error('dispatch without actions');
  if (req.fanOut) {
    const spec: AnswerSpec = {
      kind: 'fanout',
      status: runs.length ? accepted : 200,
      runIds: runs.map((r) => r.id),
      dispatched: req.actions.length,
    };
    if (req.dropped && req.dropped > 0) spec.dropped = req.dropped;
    return spec;
  }
  if (first.kind === 'wake') return { kind: 'wake', status: 200, mode: first.mode };
  return { kind: 'agent', status: accepted, runId: first.run.id };
}

function renderAnswer(spec: AnswerSpec, outcome: AcceptOutcome): DispatchAnswer {
  switch (spec.kind) {
    case 'wake': {
      const ev = outcome.events[0]!;
      const answer: DispatchAnswer = {
        status: spec.status,
        body: { ok: true, mode: spec.mode, eventId: ev.eventId, eventOutcome: ev.outcome },
      };
      // The mode and the outcome are closed words. A queued event's id is the one made above (newId: hex digits
      // and dashes); a coalesced one comes from the store, so it is checked.
      if (ev.outcome === 'queued' || plainAscii(ev.eventId))
        answer.json = `{"ok":true,"mode":"${spec.mode}","eventId":"${ev.eventId}","eventOutcome":"${ev.outcome}"}`;
      return answer;
    }
    case 'agent': {
      // The run's id was made for this request (hooks/policy.ts, newId: hex digits and dashes).
      return {
        status: spec.status,
        body: { ok: true, runId: spec.runId },
        json: `{"ok":true,"runId":"${spec.runId}"}`,
      };
    }
    case 'fanout':
      return {
        status: spec.status,
        body: {
          ok: true,
          runId: spec.runIds[0] ?? null,
          runIds: spec.runIds,
          eventIds: outcome.events.map((e) => e.eventId),
          dispatched: spec.dispatched,
          ...(spec.dropped ? { dropped: spec.dropped } : {}),
        },
      };
  }
}

/** Printable ASCII without a quote or a backslash: JSON.stringify writes such a string as it is, in quotes. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const plainAscii = (s: string): boolean => PLAIN_ASCII.test(s);
