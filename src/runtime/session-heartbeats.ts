import { errorMessage, logSafe } from '../text-safe.js';
import { MAIN_SESSION_KEY, type RuntimeDeps } from './env.js';
import { Heartbeat, type HeartbeatOptions, type HeartbeatShared, heartbeatShared } from './heartbeat.js';

/** At most this many sessions are swept per periodic tick or start (the rest wait for the next tick). */
const SWEEP_LIMIT = 1000;
/** A store that cannot be read at start (opened later: a full disk) is looked at again this often. */
const START_RETRY_MS = 1000;

/**
 * One heartbeat per session with pending system events. The main session's beats periodically and on request; a
 * session that a wake named (`sessionKey` on `/hooks/wake`) gets its own heartbeat on request (`mode: now`), and on
 * each periodic tick and at start when it has pending events (`next-heartbeat`, or events left by a restart).
 * An extra session's heartbeat is dropped once it is idle, so memory follows the sessions with work, not every
 * session ever named. Each heartbeat runs one turn at a time and never two at once for its session.
 */
export class SessionHeartbeats {
  readonly main: Heartbeat;
  private readonly others = new Map<string, Heartbeat>();
  private stopping = false;
  private startRetry: NodeJS.Timeout | undefined;
  private onDeliveryFn: (() => void) | undefined;
  private readonly shared: HeartbeatShared;

  constructor(
    private readonly deps: RuntimeDeps,
    private readonly options: Pick<HeartbeatOptions, 'retryDelayMs'> & { leaseMs?: number } = {},
  ) {
    this.shared = heartbeatShared(deps, options.leaseMs);
    this.main = new Heartbeat(deps, { ...options, shared: this.shared, onPeriodic: () => void this.sweep('interval') });
  }

  /**
   * Start the main heartbeat, and beat every session that already has pending events (a restart). While the store
   * cannot be read (not open yet: a full disk at start) this look is retried every second, logged once, so the
   * events left by the restart are beaten once it opens rather than at the next periodic tick.
   */
  start(): Promise<void> {
    return this.lookAtStart(0);
  }

  private async lookAtStart(failures: number): Promise<void> {
    if (this.stopping) return;
    try {
      await this.main.start();
      await this.beatPending('startup');
      if (failures)
        this.deps.logger.info({ failures }, 'the store can be read again: sessions with pending events are beaten');
    } catch (err) {
      if (failures === 0) {
        this.deps.logger.warn(
          { err: logSafe(errorMessage(err)) },
          `looking for pending events at start failed; looked at again every ${START_RETRY_MS / 1000} s`,
        );
      }
      if (this.stopping) return;
      this.startRetry = setTimeout(() => void this.lookAtStart(failures + 1), START_RETRY_MS);
      this.startRetry.unref();
    }
  }

  request(reason: string, sessionKey: string = MAIN_SESSION_KEY): void {
    if (this.stopping) return;
    if (sessionKey === MAIN_SESSION_KEY) return this.main.request(reason);
    let hb = this.others.get(sessionKey);
    if (!hb) {
      const created = new Heartbeat(this.deps, {
        ...this.options,
        sessionKey,
        periodic: false,
        shared: this.shared,
        onIdle: () => {
          if (this.others.get(sessionKey) === created && created.idle) this.others.delete(sessionKey);
        },
      });
      created.onDelivery = () => this.onDeliveryFn?.();
      this.others.set(sessionKey, created);
      hb = created;
    }
    hb.request(reason);
  }

  /** Told when any heartbeat queued a delivery. */
  set onDelivery(fn: (() => void) | undefined) {
    this.onDeliveryFn = fn;
    this.main.onDelivery = fn;
  }

  /** The config changed: `heartbeat.every` may differ. */
  reconfigure(): void {
    this.main.reconfigure();
  }

  /** Sessions (other than main) with heartbeats scheduled or running now. */
  get activeSessions(): string[] {
    return [...this.others.keys()];
  }

  private async sweep(reason: string): Promise<void> {
    try {
      await this.beatPending(reason);
    } catch (err) {
      this.deps.logger.warn(
        { err: logSafe(errorMessage(err)) },
        'listing sessions with pending events failed; the next tick tries again',
      );
    }
  }

  /** Beat every other session with pending events (throws when the store cannot list them). */
  private async beatPending(reason: string): Promise<void> {
    const keys = await this.deps.store.sessionsWithPendingEvents(SWEEP_LIMIT);
    for (const key of keys) if (key !== MAIN_SESSION_KEY) this.request(reason, key);
  }

  /** Heartbeat turns under way now. */
  get busy(): number {
    return [this.main, ...this.others.values()].filter((hb) => hb.busy).length;
  }

  stop(): void {
    this.stopping = true;
    clearTimeout(this.startRetry);
    for (const hb of [this.main, ...this.others.values()]) hb.stop();
  }

  async drain(deadline: AbortSignal): Promise<void> {
    this.stop();
    await Promise.all([this.main, ...this.others.values()].map((hb) => hb.drain(deadline)));
    this.shared.leases.close();
  }

  close(): Promise<void> {
    return this.drain(AbortSignal.abort());
  }
}
