import { errorMessage, logSafe } from '../text-safe.js';
import { MAIN_SESSION_KEY, type RuntimeDeps } from './env.js';
import { Heartbeat, type HeartbeatOptions, type HeartbeatShared, heartbeatShared } from './heartbeat.js';

/** At most this many sessions are swept per periodic tick or start (the rest wait for the next tick). */
const SWEEP_LIMIT = 1000;

/**
 * One heartbeat per session with pending system events. The main session's beats periodically and on request; a
 * session that a wake named (`sessionKey` on `/hooks/wake`) gets its own heartbeat on request (`mode: now`), and on
 * each periodic tick and at start when it has pending events (`next-heartbeat`, or events left by a restart).
 * An extra session's heartbeat is dropped once it is idle, so memory follows the sessions with work, not every
 * session ever named. Each heartbeat runs one turn at a time and never two at once for its session.
 */
export class Heartbeats {
  readonly main: Heartbeat;
  private readonly others = new Map<string, Heartbeat>();
  private stopping = false;
  private onDeliveryFn: (() => void) | undefined;
  private readonly shared: HeartbeatShared;

  constructor(
    private readonly deps: RuntimeDeps,
    private readonly options: Pick<HeartbeatOptions, 'retryDelayMs'> & { leaseMs?: number } = {},
  ) {
    this.shared = heartbeatShared(deps, options.leaseMs);
    this.main = new Heartbeat(deps, { ...options, shared: this.shared, onPeriodic: () => void this.sweep('interval') });
  }

  /** Start the main heartbeat, and beat every other session that already has pending events (a restart). */
  async start(): Promise<void> {
    await this.main.start();
    await this.sweep('startup');
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
    let keys: string[];
    try {
      keys = await this.deps.store.sessionsWithPendingEvents(SWEEP_LIMIT);
    } catch (err) {
      this.deps.logger.warn({ err: logSafe(errorMessage(err)) }, 'listing sessions with pending events failed; the next tick tries again');
      return;
    }
    for (const key of keys) if (key !== MAIN_SESSION_KEY) this.request(reason, key);
  }

  /** Heartbeat turns under way now. */
  get busy(): number {
    return [this.main, ...this.others.values()].filter((hb) => hb.busy).length;
  }

  stop(): void {
    this.stopping = true;
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
