/**
 * A store that could not be opened at start for a reason that passes (a full disk), opened later without a restart.
 * Until then every call is refused with a `StoreError` (the ingress answers 503 `unavailable`, the runtime's loops
 * log and poll again), and the open is retried every `retryMs` in the background. Once it opens, the calls go to the
 * real store: nothing is lost but what was refused.
 */
import { StoreError } from '../errors.js';
import { errorMessage } from '../text-safe.js';
import type { StoredBreakdown } from './breakdown.js';
import type { AuditEntry, AuditPageQuery } from './audit-types.js';
import type { GmailFetchCompletion } from './gmail-types.js';
import type { FinishedWorkPolicy, FinishedWorkPruned } from './retention.js';
import type {
  DeliveryPageQuery,
  Page,
  QueueDepths,
  ReceivedPageQuery,
  ReceivedRecord,
  RecentFailures,
  RunPageQuery,
} from './pages.js';
import type {
  AcceptCommand,
  AcceptResult,
  ClusterNotice,
  Delivery,
  DeliveryOutcome,
  DeliveryState,
  GmailPush,
  GmailStatus,
  HeartbeatCompletion,
  ListRunsQuery,
  NewSystemEvent,
  NodeInfo,
  ReceivedHook,
  RefusalWindow,
  Run,
  RunOutcome,
  SessionDetail,
  SessionMessage,
  SessionRoute,
  SessionSummary,
  Store,
  SystemEvent,
} from './types.js';

/** How often a failing open is tried again. */
export const DEFERRED_RETRY_MS = 1000;
/** How often a still failing open is logged again (a changed reason is logged at once). */
const RELOG_MS = 60_000;

export interface DeferredStoreOptions {
  /** Open the real store; throws while it cannot. */
  open: () => Store | Promise<Store>;
  /** Why the open at start failed (the caller decided it may pass): logged as the first error line. */
  firstFailure: string;
  /** What to do about it, added to that line. */
  hint?: string;
  /** The driver's `shared` and `claimRoundTrip` (known without opening it). */
  shared: boolean;
  claimRoundTrip: boolean;
  retryMs?: number;
  onError?: (message: string) => void;
  onWarning?: (message: string) => void;
  now?: () => number;
}

export class DeferredStore implements Store {
  readonly shared: boolean;
  readonly claimRoundTrip: boolean;
  /** Resolves when the real store is open (never, if it is closed first). */
  readonly opened: Promise<void>;
  private real: Store | undefined;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private attempt: Promise<void> | undefined;
  private resolveOpened!: () => void;
  private readonly since: number;
  private attempts = 1;
  private reason: string;
  private loggedAt: number;
  /** Calls that wait for the open instead of failing (see recoverLeases, registerNode). */
  private recoverRequested = false;
  private node: NodeInfo | undefined;
  private readonly listeners = new Map<(notice: ClusterNotice) => void, (() => void) | undefined>();
  private spare: (() => number) | undefined;
  private readonly now: () => number;
  private readonly retryMs: number;

  constructor(private readonly opts: DeferredStoreOptions) {
    this.shared = opts.shared;
    this.claimRoundTrip = opts.claimRoundTrip;
    this.now = opts.now ?? Date.now;
    this.retryMs = opts.retryMs ?? DEFERRED_RETRY_MS;
    this.opened = new Promise((resolve) => (this.resolveOpened = resolve));
    this.since = this.loggedAt = this.now();
    this.reason = opts.firstFailure;
    opts.onError?.(
      `the store cannot be opened: ${opts.firstFailure}${opts.hint ? `; ${opts.hint}` : ''}; hookgate starts anyway and answers every hook request 503 (unavailable) until it can, ` +
        `retrying every ${this.retryMs / 1000} s`,
    );
    this.schedule();
  }

  /** Whether calls reach the real store now. */
  get isOpen(): boolean {
    return this.real !== undefined;
  }

  private notOpen(): StoreError {
    return new StoreError(
      `the store is not open yet (${this.reason}); opening it is retried every ${this.retryMs / 1000} s`,
    );
  }

  /** A call before the real store opened: rejected with why it has not (the ingress answers 503). */
  private refuse(): Promise<never> {
    return Promise.reject(this.notOpen());
  }

  // ——— forwarded to the real store once it is open; refused until then ———
  accept(cmd: AcceptCommand): Promise<AcceptResult> {
    return this.real ? this.real.accept(cmd) : this.refuse();
  }
  recordReceived(rec: ReceivedHook): Promise<void> {
    return this.real ? this.real.recordReceived(rec) : this.refuse();
  }
  recordRefusals(window: RefusalWindow, keepWindows: number): Promise<void> {
    return this.real ? this.real.recordRefusals(window, keepWindows) : this.refuse();
  }
  getRoute(sessionKey: string): Promise<SessionRoute | undefined> {
    return this.real ? this.real.getRoute(sessionKey) : this.refuse();
  }
  getRun(id: string): Promise<Run | undefined> {
    return this.real ? this.real.getRun(id) : this.refuse();
  }
  claimRuns(owner: string, now: number, leaseMs: number, limit: number): Promise<Run[]> {
    return this.real ? this.real.claimRuns(owner, now, leaseMs, limit) : this.refuse();
  }
  renewRunLeases(owner: string, ids: string[], until: number): Promise<void> {
    return this.real ? this.real.renewRunLeases(owner, ids, until) : this.refuse();
  }
  completeRun(c: RunOutcome): Promise<boolean> {
    return this.real ? this.real.completeRun(c) : this.refuse();
  }
  releaseRuns(owner: string, ids: string[], now: number, note: string): Promise<void> {
    return this.real ? this.real.releaseRuns(owner, ids, now, note) : this.refuse();
  }
  deferRun(d: { runId: string; owner: string; until: number; error: string; now: number }): Promise<boolean> {
    return this.real ? this.real.deferRun(d) : this.refuse();
  }
  failRun(id: string, error: string, now: number): Promise<void> {
    return this.real ? this.real.failRun(id, error, now) : this.refuse();
  }
  pendingEvents(sessionKey: string, limit?: number): Promise<SystemEvent[]> {
    return this.real ? this.real.pendingEvents(sessionKey, limit) : this.refuse();
  }
  addEvents(events: NewSystemEvent[]): Promise<void> {
    return this.real ? this.real.addEvents(events) : this.refuse();
  }
  completeHeartbeat(c: HeartbeatCompletion): Promise<void> {
    return this.real ? this.real.completeHeartbeat(c) : this.refuse();
  }
  sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]> {
    return this.real ? this.real.sessionMessages(agentId, sessionKey, limit) : this.refuse();
  }
  sessionsWithPendingEvents(limit?: number): Promise<string[]> {
    return this.real ? this.real.sessionsWithPendingEvents(limit) : this.refuse();
  }
  claimDeliveries(owner: string, now: number, leaseMs: number, limit: number, followers?: number): Promise<Delivery[]> {
    return this.real ? this.real.claimDeliveries(owner, now, leaseMs, limit, followers) : this.refuse();
  }
  releaseDeliveries(owner: string, ids: string[], now: number): Promise<void> {
    return this.real ? this.real.releaseDeliveries(owner, ids, now) : this.refuse();
  }
  deliveryProgress(id: string, owner: string, chunksSent: number, now: number): Promise<void> {
    return this.real ? this.real.deliveryProgress(id, owner, chunksSent, now) : this.refuse();
  }
  finishDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<void> {
    return this.real ? this.real.finishDelivery(id, owner, outcome, now) : this.refuse();
  }
  listRuns(q?: ListRunsQuery): Promise<Run[]> {
    return this.real ? this.real.listRuns(q) : this.refuse();
  }
  listSessions(limit?: number): Promise<SessionSummary[]> {
    return this.real ? this.real.listSessions(limit) : this.refuse();
  }
  getSession(key: string): Promise<SessionDetail | undefined> {
    return this.real ? this.real.getSession(key) : this.refuse();
  }
  listReceived(limit?: number, filter?: { rejected?: boolean }): Promise<ReceivedHook[]> {
    return this.real ? this.real.listReceived(limit, filter) : this.refuse();
  }
  listDeliveries(q?: { state?: DeliveryState; runId?: string; limit?: number }): Promise<Delivery[]> {
    return this.real ? this.real.listDeliveries(q) : this.refuse();
  }
  getDelivery(id: string): Promise<Delivery | undefined> {
    return this.real ? this.real.getDelivery(id) : this.refuse();
  }
  requeueRun(id: string, now: number): Promise<Run | undefined> {
    return this.real ? this.real.requeueRun(id, now) : this.refuse();
  }
  requeueFailedRuns(since: number, now: number): Promise<string[]> {
    return this.real ? this.real.requeueFailedRuns(since, now) : this.refuse();
  }
  retryDelivery(id: string, now: number): Promise<Delivery | undefined> {
    return this.real ? this.real.retryDelivery(id, now) : this.refuse();
  }
  setRoute(
    sessionKey: string,
    agentId: string,
    channel: string,
    to: string,
    now: number,
    accountId?: string | null,
  ): Promise<void> {
    return this.real ? this.real.setRoute(sessionKey, agentId, channel, to, now, accountId) : this.refuse();
  }
  prune(...args: Parameters<Store['prune']>): ReturnType<Store['prune']> {
    return this.real ? this.real.prune(...args) : this.refuse();
  }
  leaseHeartbeat(sessionKey: string, owner: string, now: number, leaseMs: number): Promise<boolean> {
    return this.real ? this.real.leaseHeartbeat(sessionKey, owner, now, leaseMs) : this.refuse();
  }
  releaseHeartbeat(sessionKey: string, owner: string): Promise<void> {
    return this.real ? this.real.releaseHeartbeat(sessionKey, owner) : this.refuse();
  }
  shareLockout(bucket: string, until: number): Promise<void> {
    return this.real ? this.real.shareLockout(bucket, until) : this.refuse();
  }
  activeLockouts(now: number): Promise<{ bucket: string; until: number }[]> {
    return this.real ? this.real.activeLockouts(now) : this.refuse();
  }
  listNodes(): Promise<NodeInfo[]> {
    return this.real ? this.real.listNodes() : this.refuse();
  }
  publishFeed(node: string, events: readonly string[], watchMs?: number): Promise<void> {
    return this.real ? this.real.publishFeed(node, events, watchMs) : this.refuse();
  }
  pageRuns(q: RunPageQuery): Promise<Page<Run>> {
    return this.real ? this.real.pageRuns(q) : this.refuse();
  }
  pageDeliveries(q: DeliveryPageQuery): Promise<Page<Delivery>> {
    return this.real ? this.real.pageDeliveries(q) : this.refuse();
  }
  pageReceived(q: ReceivedPageQuery): Promise<Page<ReceivedRecord>> {
    return this.real ? this.real.pageReceived(q) : this.refuse();
  }
  queueDepths(): Promise<QueueDepths> {
    return this.real ? this.real.queueDepths() : this.refuse();
  }
  failuresSince(since: number): Promise<RecentFailures> {
    return this.real ? this.real.failuresSince(since) : this.refuse();
  }
  breakdownSince(since: number, until: number, bucketMs: number): Promise<StoredBreakdown> {
    return this.real ? this.real.breakdownSince(since, until, bucketMs) : this.refuse();
  }
  refusalsStoredUntil(): Promise<number | null> {
    return this.real ? this.real.refusalsStoredUntil() : this.refuse();
  }
  probeWrite(now: number): Promise<void> {
    return this.real ? this.real.probeWrite(now) : this.refuse();
  }
  recordGmailPush(push: GmailPush): Promise<{ duplicate: boolean }> {
    return this.real ? this.real.recordGmailPush(push) : this.refuse();
  }
  pendingGmailPushes(account?: string, limit?: number): Promise<GmailPush[]> {
    return this.real ? this.real.pendingGmailPushes(account, limit) : this.refuse();
  }
  completeGmailFetch(c: GmailFetchCompletion): Promise<void> {
    return this.real ? this.real.completeGmailFetch(c) : this.refuse();
  }
  recordGmailWatch(w: { account: string; expiration: number; historyId: string; now: number }): Promise<void> {
    return this.real ? this.real.recordGmailWatch(w) : this.refuse();
  }
  recordGmailError(account: string, error: string | null, now: number): Promise<void> {
    return this.real ? this.real.recordGmailError(account, error, now) : this.refuse();
  }
  readGmailStatus(account: string): Promise<GmailStatus | undefined> {
    return this.real ? this.real.readGmailStatus(account) : this.refuse();
  }
  appendAudit(entries: AuditEntry[]): Promise<void> {
    return this.real ? this.real.appendAudit(entries) : this.refuse();
  }
  pageAudit(q: AuditPageQuery): Promise<Page<AuditEntry>> {
    return this.real ? this.real.pageAudit(q) : this.refuse();
  }
  pruneAudit(before: number): Promise<number> {
    return this.real ? this.real.pruneAudit(before) : this.refuse();
  }
  pruneFinished(before: number, policy: FinishedWorkPolicy): Promise<FinishedWorkPruned> {
    return this.real ? this.real.pruneFinished(before, policy) : this.refuse();
  }

  private schedule(): void {
    if (this.closed) return;
    // Unref'd: the listener keeps a serving process alive; a stopping one must not wait for this.
    this.timer = setTimeout(
      () => (this.attempt = this.tryOpen().finally(() => (this.attempt = undefined))),
      this.retryMs,
    );
    this.timer.unref();
  }

  private async tryOpen(): Promise<void> {
    this.attempts++;
    let real: Store;
    try {
      real = await this.opts.open();
    } catch (err) {
      return this.failed(errorMessage(err));
    }
    try {
      // Before any other call reaches it: a run claimed first would be taken back under its new owner.
      if (this.recoverRequested) {
        const runs = await real.recoverLeases(this.now());
        if (runs)
          this.opts.onWarning?.(
            `recovered ${runs} runs left running by a process that ended without giving them back (a crash or kill -9); they run again with the same ids`,
          );
      }
      if (this.node) await real.registerNode(this.node);
    } catch (err) {
      await real.close().catch(() => {});
      return this.failed(errorMessage(err));
    }
    if (this.closed) return void (await real.close());
    this.real = real;
    for (const listener of this.listeners.keys()) this.listeners.set(listener, real.subscribe(listener));
    if (this.spare) real.outboxSpare?.(this.spare);
    const seconds = Math.round((this.now() - this.since) / 1000);
    this.opts.onWarning?.(
      `the store is open after ${seconds} s (${this.attempts} attempts): hook requests are accepted again`,
    );
    // Runs and deliveries became claimable: the same notice another node sends when it makes them so.
    for (const listener of this.listeners.keys()) listener({ kind: 'runs' }), listener({ kind: 'deliveries' });
    this.resolveOpened();
  }

  private failed(reason: string): void {
    const now = this.now();
    if (reason !== this.reason || now - this.loggedAt >= RELOG_MS) {
      this.opts.onError?.(
        `the store still cannot be opened after ${Math.round((now - this.since) / 1000)} s (${this.attempts} attempts): ${reason}; answering 503, retrying every ${this.retryMs / 1000} s`,
      );
      this.loggedAt = now;
    }
    this.reason = reason;
    this.schedule();
  }

  /** Before the open: done when it opens, before anything else reaches the store (resolves 0 now; the count is logged then). */
  recoverLeases(now: number): Promise<number> {
    if (this.real) return this.real.recoverLeases(now);
    this.recoverRequested = true;
    return Promise.resolve(0);
  }

  /** Before the open: the latest registration is written when it opens (the registry is what `hookgate nodes` shows). */
  registerNode(node: NodeInfo): Promise<void> {
    if (this.real) return this.real.registerNode(node);
    this.node = node;
    return Promise.resolve();
  }

  removeNode(id: string): Promise<void> {
    if (this.real) return this.real.removeNode(id);
    if (this.node?.id === id) this.node = undefined;
    return Promise.resolve();
  }

  /** Passed on to the real store once it opens. */
  outboxSpare(spare: () => number): void {
    this.spare = spare;
    this.real?.outboxSpare?.(spare);
  }

  /** Listeners added before the open are subscribed to the real store when it opens. */
  subscribe(listener: (notice: ClusterNotice) => void): () => void {
    this.listeners.set(listener, this.real?.subscribe(listener));
    return () => {
      this.listeners.get(listener)?.();
      this.listeners.delete(listener);
    };
  }

  /** Stop retrying; close the real store if it opened. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.attempt;
    const real = this.real;
    this.real = undefined;
    await real?.close();
  }
}
