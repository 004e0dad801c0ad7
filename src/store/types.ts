/**
 * The durable record: one interface (`Store`, the union of the roles at the end of this file), two drivers (SQLite,
 * PostgreSQL), one shared test suite (test/store/contract.ts). All async; both group-commit concurrent callers' writes.
 */

/** The main session of the default agent: where wakes and run summaries go, and whose heartbeat reads them. */
export const MAIN_SESSION_KEY = 'main';

import type {
  ContentSource,
  DeliveryState,
  EventOrigin,
  EventOutcome,
  FinishedRunState,
  RunState,
  SessionMode,
  WakeMode,
} from '../enums.js';
import type { HttpErrorCode } from '../errors.js';
import type { ClusterStore } from './cluster-types.js';
import type { AdminStore } from './pages.js';
import type { GmailStore } from './gmail-types.js';
import type { AuditStore } from './audit-types.js';
import type { ExpiredPruned, RetentionStore } from './retention.js';

export type { AuditEntry, AuditPageQuery, AuditStore } from './audit-types.js';
export type { ExpiredPruned, FinishedWorkPolicy, FinishedWorkPruned, RetentionStore } from './retention.js';
export type { GmailAccountState, GmailFetchCompletion, GmailPush, GmailStatus, GmailStore } from './gmail-types.js';

export type { ContentSource, DeliveryState, EventOrigin, EventOutcome, RunState, SessionMode, WakeMode };

/** A system event of a session (the main session for wakes and run summaries). */
export interface NewSystemEvent {
  id: string;
  sessionKey: string;
  agentId: string;
  text: string;
  /** What produced it: a wake request, a run summary, the CLI. */
  origin: EventOrigin;
  runId?: string | null;
  createdAt: number;
  /**
   * True when the text derives from untrusted input (a mapped wake rendered from a payload or made by a transform, the
   * summary of a hook run): the heartbeat shows it inside the external-content wrapper. Absent: false (trusted).
   */
  untrusted?: boolean;
  /** What produced an untrusted text (the mapping id, the hook run's name), shown outside the wrapper; absent: null. */
  source?: string | null;
}

export interface SystemEvent extends NewSystemEvent {
  consumedAt: number | null;
  untrusted: boolean;
  source: string | null;
}

/** An accepted agent run, with every normalised field of the request. */
export interface NewRun {
  id: string;
  agentId: string;
  sessionKey: string;
  sessionMode: SessionMode;
  name: string;
  message: string;
  wakeMode: WakeMode;
  deliver: boolean;
  channel: string;
  to: string | null;
  /** The channel account to deliver through (`channels.<platform>.accounts.<id>`); null: the default account. */
  accountId: string | null;
  /** Canonical `<provider>/<model>`, or null for the agent's default. */
  model: string | null;
  thinking: string | null;
  timeoutSeconds: number;
  allowUnsafeExternalContent: boolean;
  contentSource: ContentSource;
  /** The hook sub-path that produced it (`agent`, `gmail`, ...). */
  hookPath: string;
  mappingId: string | null;
  createdAt: number;
}

export interface Run extends NewRun {
  state: RunState;
  /** How many times a worker started it (a crash mid-run makes the next start attempt 2, same run id). */
  attempts: number;
  /** Times it was queued again after a transient model failure (not counted in `attempts`). */
  retries: number;
  /** The first of those failures (the retry window runs from it); null when none. */
  retryingSince: number | null;
  /** The node (`hookgate nodes` id) that claimed it last: the one running it, or that ran it; null before a claim. */
  node?: string | null;
  /** A queued run waits until then (a retry's backoff); null: runnable now. */
  nextAttemptAt: number | null;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** Why it failed; on an unfinished run, why it was given back (a stop interrupted it). */
  error: string | null;
  reply: string | null;
  /** Where the reply went: `outbox` (a delivery row), `suppressed:<why>`, `nowhere:no_route`; null until finished. */
  deliveryStatus: string | null;
}

/**
 * A session's route: where its heartbeat replies and `channel: last` replies go, through that account. Set by the
 * operator only (`hookgate sessions route`); nothing a hook request or a delivery does changes it.
 */
export interface SessionRoute {
  channel: string;
  to: string;
  /** null: the channel's default account. */
  accountId: string | null;
}

/** A reply to deliver: one outbox row. */
export interface NewDelivery {
  id: string;
  runId: string | null;
  heartbeatId: string | null;
  sessionKey: string;
  agentId: string;
  hookName: string | null;
  channel: string;
  to: string;
  /** The account of `channel` to send through; null: the default account. One that is gone fails the delivery. */
  accountId: string | null;
  text: string;
  /**
   * The sender named channel and to (else the route was resolved from `last` or `channels.default`). A record only:
   * a delivery never moves any session's route (docs/security.md, "Who decides where replies go").
   */
  explicitRoute: boolean;
  createdAt: number;
}

export interface Delivery extends NewDelivery {
  state: DeliveryState;
  /** Chunks already accepted by the platform: a retry resumes after them, never repeats them. */
  chunksSent: number;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  updatedAt: number;
  deliveredAt: number | null;
}

export interface SessionMessage {
  sessionKey: string;
  agentId: string;
  role: 'user' | 'assistant';
  content: string;
  runId: string | null;
  createdAt: number;
}

/** Everything that finishing a run writes, in one transaction (so a crash either redoes the run or not at all). */
export interface RunOutcome {
  runId: string;
  /** Only the lease holder may finish it; another owner's completion is ignored (returns false). */
  owner: string;
  state: FinishedRunState;
  finishedAt: number;
  error: string | null;
  reply: string | null;
  deliveryStatus: string;
  events: NewSystemEvent[];
  deliveries: NewDelivery[];
  messages: SessionMessage[];
}

/** A heartbeat's turn: its events become consumed together with the delivery of its reply. */
export interface HeartbeatCompletion {
  heartbeatId: string;
  sessionKey: string;
  eventIds: string[];
  consumedAt: number;
  deliveries: NewDelivery[];
  messages: SessionMessage[];
}

export type DeliveryOutcome =
  | { kind: 'delivered'; at: number }
  | { kind: 'retry'; nextAttemptAt: number; error: string }
  | { kind: 'dead'; error: string; at: number };

/**
 * What a received record's `code` says: the refusal's code as the caller saw it, `duplicate` for a replay, or
 * `unmatched` for a signed request that no mapping takes (answered 200, ignored).
 */
export type ReceivedCode = HttpErrorCode | 'duplicate' | 'unmatched';

/** Metadata of one received hook request: never the payload, never a token. */
export interface ReceivedHook {
  at: number;
  method: string;
  path: string;
  clientIp: string;
  status: number;
  /** Null when accepted. */
  code: ReceivedCode | null;
  eventIds: string[];
  runIds: string[];
  mappingId: string | null;
  durationMs: number;
  /**
   * The id of the hook token the request presented (`hooks.tokens[].id`, "default" for `hooks.token`); null or absent
   * when it was authenticated otherwise (a signature, an OIDC token) or not at all. Never the token itself.
   */
  tokenId?: string | null;
  /** The request's id (the `reqId` of its log lines and its answer's `x-request-id`); absent on older records and counts. */
  reqId?: string;
  /** Top-level fields of a direct request that hookgate does not read (at most 20 names); absent when none. */
  unknownFields?: string[];
  /**
   * Present on a count of refusals (`recordRefusals`), not a single request: `count` requests were refused this way
   * in the window of `windowMs` from `at`; `path` is the path class and `clientIp` the address bucket.
   */
  count?: number;
  windowMs?: number;
}

/** Refused requests of one kind in one window: the path class (see ingress/refusals.ts) and the address bucket. */
export interface RefusalCount {
  status: number;
  code: HttpErrorCode | null;
  path: string;
  bucket: string;
  count: number;
}

/** The counts of one window of refusals, stored as one record. */
export interface RefusalWindow {
  /** Start of the window (epoch ms). */
  at: number;
  windowMs: number;
  counts: RefusalCount[];
}

export interface IdempotencyClaim {
  /** Scope of the key: the hook sub-path it was used on. */
  scope: string;
  /** SHA-256 of the key (keys are not stored in clear). */
  keyHash: string;
  /** SHA-256 of the request body: the same key with another body is a conflict, not a duplicate. */
  fingerprint: string;
  expiresAt: number;
  /**
   * Who stored the key (the client's address bucket): each sender keeps at most `maxPerSender` keys, the oldest
   * expiring first when a new one would pass it (`hooks.idempotencyMaxKeys`).
   */
  sender: string;
  maxPerSender: number;
}

/** What a repeated key gets back: the caller's own description of its answer, and the first outcome. */
export interface Replay {
  spec: Record<string, unknown>;
  outcome: AcceptOutcome;
}

/** Everything one request asks for, committed atomically. */
export interface AcceptCommand {
  events: NewSystemEvent[];
  runs: NewRun[];
  idempotency?: IdempotencyClaim;
  /** Opaque description of the answer (plain data): stored with the key, returned to repeats. */
  answerSpec: Record<string, unknown>;
  /** Its `status` is the answer's; event and run ids are filled in by the store. */
  received: ReceivedHook;
}

export interface AcceptOutcome {
  /** Per event of the command, in order: the stored id (the earlier one when coalesced) and the outcome. */
  events: { eventId: string; outcome: EventOutcome }[];
}

export type AcceptResult =
  | { kind: 'accepted'; outcome: AcceptOutcome }
  | { kind: 'duplicate'; replay: Replay; status: number }
  | { kind: 'conflict' };

export interface SessionSummary {
  key: string;
  agentId: string;
  pendingEvents: number;
  runs: number;
  lastActivityAt: number;
  lastChannel: string | null;
  lastTo: string | null;
  lastAccountId: string | null;
}

export interface SessionDetail extends SessionSummary {
  /** The latest turns, oldest first. */
  transcript: SessionMessage[];
  pending: SystemEvent[];
  recentEvents: SystemEvent[];
  recentRuns: Run[];
}

export interface ListRunsQuery {
  state?: RunState;
  sessionKey?: string;
  limit?: number;
}

/*
 * The store by role: each consumer takes the narrowest one, so it sees only what it uses and a driver implements
 * small seams. `Store` is all of them (what a driver implements and `openStore` returns).
 */

/** The ingress (HTTP handler and hooks dispatch): commit what a request asks for, or record its rejection. */
export interface IngressStore extends Pick<GmailStore, 'recordGmailPush'> {
  /**
   * Commit what one request asks for, atomically, together with its idempotency key and received record.
   * A repeated key (same scope and body, not expired) commits nothing new but the received record and returns
   * the first answer's spec and outcome; the same key with another body is a conflict.
   */
  accept(cmd: AcceptCommand): Promise<AcceptResult>;
  /** Record a request that was answered without an accept (a mapping's reply or skip). Batched like accept. */
  recordReceived(rec: ReceivedHook): Promise<void>;
  /**
   * Store one window of refusal counts as one record, then keep only the newest `keepWindows` such records (the
   * oldest go first): refusals cost bounded storage whatever their number.
   */
  recordRefusals(window: RefusalWindow, keepWindows: number): Promise<void>;
  /** A session's route: read when a request names `to` without a channel, to refuse one that has nowhere to go. */
  getRoute(sessionKey: string): Promise<SessionRoute | undefined>;
}

/** One run by id: what an operator looks at, and what a `waitForCompletion` caller is answered from. */
export interface RunLookup {
  getRun(id: string): Promise<Run | undefined>;
}

/**
 * The runtime (run worker, heartbeat, outbox): leases, completions, the sessions' events and transcripts, routes;
 * and a run by id, for the callers that wait for a run to end.
 */
export interface RuntimeStore extends RunLookup {
  /** Claims are round trips (PostgreSQL: work is claimed ahead); false: one write stream in queue order (SQLite). */
  readonly claimRoundTrip: boolean;
  /**
   * Lease up to `limit` runnable runs to `owner`: queued ones, and running ones whose lease expired (their worker
   * died). Only the oldest unfinished run of each session key is runnable, so one session's runs go in order.
   */
  claimRuns(owner: string, now: number, leaseMs: number, limit: number): Promise<Run[]>;
  renewRunLeases(owner: string, ids: string[], until: number): Promise<void>;
  completeRun(c: RunOutcome): Promise<boolean>;
  /**
   * Give leased runs back (a stop): queued again, the attempt not counted, `note` (why) kept in the run's `error`
   * until it finishes (`runs show` prints it as a note while the run is unfinished).
   */
  releaseRuns(owner: string, ids: string[], now: number, note: string): Promise<void>;
  /**
   * Queue a leased run again for `until` after a transient failure (`error` stays visible meanwhile): its retries
   * count up, the start is not counted as an attempt. False when the lease was lost.
   */
  deferRun(d: { runId: string; owner: string; until: number; error: string; now: number }): Promise<boolean>;
  /** Mark a run failed outside a worker (e.g. it crashed the process too often). */
  failRun(id: string, error: string, now: number): Promise<void>;

  pendingEvents(sessionKey: string, limit?: number): Promise<SystemEvent[]>;
  addEvents(events: NewSystemEvent[]): Promise<void>;
  /**
   * Consume `eventIds` (read by `pendingEvents`: the oldest pending events of the session; the heartbeat is their
   * only consumer) with the turn's deliveries and transcript, in one transaction. An event already consumed, or no
   * longer among the oldest pending, is left as it is.
   */
  completeHeartbeat(c: HeartbeatCompletion): Promise<void>;
  sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]>;
  getRoute(sessionKey: string): Promise<SessionRoute | undefined>;
  /** Session keys with pending system events, main session included (a heartbeat serves each). */
  sessionsWithPendingEvents(limit?: number): Promise<string[]>;

  /**
   * Lease up to `limit` route heads: due deliveries with no earlier pending one to the same recipient. With
   * `followers` > 0 a store may also lease, after each head, up to that many of the deliveries queued behind it on
   * its route, in order, as long as each is due and not leased (SQLite and PostgreSQL do). The
   * caller sends them in order and gives back with `releaseDeliveries` those it will not send (an earlier one failed).
   */
  claimDeliveries(owner: string, now: number, leaseMs: number, limit: number, followers?: number): Promise<Delivery[]>;
  /** Give back leased deliveries unsent: lease cleared, the attempt counted by their claim uncounted. */
  releaseDeliveries(owner: string, ids: string[], now: number): Promise<void>;
  deliveryProgress(id: string, owner: string, chunksSent: number, now: number): Promise<void>;
  finishDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<void>;
}

/** What an operator looks at: runs, sessions, received hooks, deliveries. */
export interface ReadStore extends RunLookup {
  listRuns(q?: ListRunsQuery): Promise<Run[]>;
  listSessions(limit?: number): Promise<SessionSummary[]>;
  getSession(key: string): Promise<SessionDetail | undefined>;
  /**
   * Received-hook records and refusal counts (those with `count`; older stores may hold single refusal records too),
   * newest first; `rejected`: only those answered with a status of 400 or more.
   */
  listReceived(limit?: number, filter?: { rejected?: boolean }): Promise<ReceivedHook[]>;
  listDeliveries(q?: { state?: DeliveryState; runId?: string; limit?: number }): Promise<Delivery[]>;
  getDelivery(id: string): Promise<Delivery | undefined>;
}

/** The CLI: read, and repair by hand. */
export interface OperatorStore extends ReadStore {
  /** Put a finished (failed / timed_out / succeeded) run back in the queue. */
  requeueRun(id: string, now: number): Promise<Run | undefined>;
  /** Queue again every failed run that finished at or after `since` (oldest first); their ids. */
  requeueFailedRuns(since: number, now: number): Promise<string[]>;
  /** A dead (or pending) delivery back to pending now, attempts reset. */
  retryDelivery(id: string, now: number): Promise<Delivery | undefined>;
  /** A session's route: what `setRoute` replaces (its audit record's `from`). */
  getRoute(sessionKey: string): Promise<SessionRoute | undefined>;
  /** `accountId` null or omitted: the channel's default account. */
  setRoute(
    sessionKey: string,
    agentId: string,
    channel: string,
    to: string,
    now: number,
    accountId?: string | null,
  ): Promise<void>;
}

/** The service around the rest: take leases back at start, prune, close. */
export interface MaintenanceStore {
  /**
   * Single-writer drivers at start: every leased run and delivery belonged to a process that is gone. Runs go back
   * to the queue (same id), deliveries become claimable again. Returns the number of runs recovered.
   */
  recoverLeases(now: number): Promise<number>;
  /** Delete expired idempotency keys, received records and refusal counts older than `receivedBefore`; abortable. */
  prune(now: number, receivedBefore: number, signal?: AbortSignal): Promise<ExpiredPruned>;
  close(): Promise<void>;
}

// The node registry, notices and cluster seams: ./cluster-types.ts (re-exported here, the one import for consumers).
export { FEED_NOTICE_MAX_BYTES, NODE_LIVE_MS, NODE_REFRESH_MS } from './cluster-types.js';
export type { ClusterNotice, ClusterStore, NodeInfo } from './cluster-types.js';

export interface Store
  extends IngressStore,
    RuntimeStore,
    OperatorStore,
    MaintenanceStore,
    ClusterStore,
    AdminStore,
    GmailStore,
    AuditStore,
    RetentionStore {}
