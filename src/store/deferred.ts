/**
 * A store that could not be opened at start for a reason that passes (a full disk), opened later without a restart.
 * Until then every call is refused with a `StoreError` (the ingress answers 503 `unavailable`, the runtime's loops
 * log and poll again), and the open is retried every `retryMs` in the background. Once it opens, the calls go to the
 * real store: nothing is lost but what was refused.
 */
import { StoreError } from '../errors.js';
import { errorMessage } from '../text-safe.js';
import type { ClusterNotice, NodeInfo, Store } from './types.js';

/** Every method of `Store` handled by forwarding (or refusing while not open); the others are the class's own. */
const FORWARDED = [
  'accept', 'recordReceived', 'recordRefusals', 'getRoute', 'getRun',
  'claimRuns', 'renewRunLeases', 'completeRun', 'releaseRuns', 'deferRun', 'failRun',
  'pendingEvents', 'addEvents', 'completeHeartbeat', 'sessionMessages', 'sessionsWithPendingEvents',
  'claimDeliveries', 'releaseDeliveries', 'deliveryProgress', 'finishDelivery',
  'listRuns', 'listSessions', 'getSession', 'listReceived', 'listDeliveries', 'getDelivery',
  'requeueRun', 'requeueFailedRuns', 'retryDelivery', 'setRoute', 'prune',
  'leaseHeartbeat', 'releaseHeartbeat', 'shareLockout', 'activeLockouts', 'listNodes', 'publishFeed',
  'pageRuns', 'pageDeliveries', 'pageReceived', 'queueDepths', 'failuresSince', 'probeWrite',
  'recordGmailPush', 'pendingGmailPushes', 'completeGmailFetch', 'recordGmailWatch', 'recordGmailError', 'readGmailStatus',
  'appendAudit', 'pageAudit', 'pruneAudit',
] as const satisfies readonly (keyof Store)[];
type Forwarded = Pick<Store, (typeof FORWARDED)[number]>;

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
  /** The driver's `shared` (known without opening it). */
  shared: boolean;
  retryMs?: number;
  onError?: (message: string) => void;
  onWarning?: (message: string) => void;
  now?: () => number;
}

// Declaration merging: the static block below installs these on the prototype; `implements Store` checks them all.
export interface DeferredStore extends Forwarded {}

export class DeferredStore implements Store {
  static {
    for (const name of FORWARDED) {
      Object.defineProperty(DeferredStore.prototype, name, {
        value: function (this: DeferredStore, ...args: unknown[]) {
          const real = this.real as unknown as Record<string, (...a: unknown[]) => Promise<unknown>> | undefined;
          return real ? real[name]!(...args) : Promise.reject(this.notOpen());
        },
        writable: true,
        configurable: true,
      });
    }
  }

  readonly shared: boolean;
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
  private readonly now: () => number;
  private readonly retryMs: number;

  constructor(private readonly opts: DeferredStoreOptions) {
    this.shared = opts.shared;
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
    return new StoreError(`the store is not open yet (${this.reason}); opening it is retried every ${this.retryMs / 1000} s`);
  }

  private schedule(): void {
    if (this.closed) return;
    // Unref'd: the listener keeps a serving process alive; a stopping one must not wait for this.
    this.timer = setTimeout(() => (this.attempt = this.tryOpen().finally(() => (this.attempt = undefined))), this.retryMs);
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
        if (runs) this.opts.onWarning?.(`recovered ${runs} runs left running by a process that ended without giving them back (a crash or kill -9); they run again with the same ids`);
      }
      if (this.node) await real.registerNode(this.node);
    } catch (err) {
      await real.close().catch(() => {});
      return this.failed(errorMessage(err));
    }
    if (this.closed) return void (await real.close());
    this.real = real;
    for (const listener of this.listeners.keys()) this.listeners.set(listener, real.subscribe(listener));
    const seconds = Math.round((this.now() - this.since) / 1000);
    this.opts.onWarning?.(`the store is open after ${seconds} s (${this.attempts} attempts): hook requests are accepted again`);
    // Runs and deliveries became claimable: the same notice another node sends when it makes them so.
    for (const listener of this.listeners.keys()) (listener({ kind: 'runs' }), listener({ kind: 'deliveries' }));
    this.resolveOpened();
  }

  private failed(reason: string): void {
    const now = this.now();
    if (reason !== this.reason || now - this.loggedAt >= RELOG_MS) {
      this.opts.onError?.(`the store still cannot be opened after ${Math.round((now - this.since) / 1000)} s (${this.attempts} attempts): ${reason}; answering 503, retrying every ${this.retryMs / 1000} s`);
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
