import { type AbortLike, whenAborted } from '../deadline.js';
import { HookgateError } from '../errors.js';
import type { Logger } from '../log.js';
import { OutageLog } from './outage.js';

/**
 * The reason a piece of work was aborted because its lease could not be kept: the store did not renew it in time
 * (unreachable) or another owner holds it now. Work aborted with it must not be completed: another node may be
 * doing it (or will, once the lease has lapsed), so finishing it here would do it twice.
 */
export class LeaseLostError extends HookgateError {
  declare readonly code: 'lease_lost';
  constructor(message: string) {
    super('lease_lost', message);
  }
}

/** Whether `signal` was aborted because a lease was lost (as opposed to a stop or a timeout). */
export function leaseLost(signal: AbortLike): boolean {
  return signal.aborted && signal.reason instanceof LeaseLostError;
}

export interface LeaseKeeperOptions {
  /** For log lines: "run leases", "heartbeat lease". */
  label: string;
  logger: Logger;
  leaseMs: number;
  /**
   * Extend the leases of `ids` until `until`. Resolves to the ids the store refused (another owner holds them), or
   * nothing when it does not say; rejects when the store could not be asked.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a store's renewal that reports nothing returns Promise<void>
  renew: (ids: string[], until: number) => Promise<string[] | void>;
  now?: () => number;
}

/**
 * Keeps the leases of the work in hand alive: renews them every third of the lease, in one call, and aborts the
 * work whose lease it cannot keep. A lease refused by the store is lost at once; a lease the store could not renew
 * (unreachable) is given up when less than one renewal period of it is left — with the defaults, after two failed
 * renewals, with a third of the lease to spare, so the work here has stopped before any other node can claim it
 * (that margin also absorbs clock differences between nodes, which compare `until` with their own clocks).
 */
export class LeaseKeeper {
  private readonly held = new Map<string, { until: number; abort: (err: LeaseLostError) => void }>();
  private readonly timer: NodeJS.Timeout;
  private renewing = false;
  private readonly outage: OutageLog;
  private readonly now: () => number;
  readonly periodMs: number;

  constructor(private readonly opts: LeaseKeeperOptions) {
    this.now = opts.now ?? Date.now;
    this.periodMs = opts.leaseMs / 3;
    this.outage = new OutageLog(opts.logger, `renewing ${opts.label}`, this.now);
    this.timer = setInterval(() => void this.tick(), this.periodMs);
    this.timer.unref();
  }

  /** Keep `id`'s lease (leased until `until`); `abort` is called once if it is lost. */
  hold(id: string, until: number, abort: (err: LeaseLostError) => void): void {
    this.held.set(id, { until, abort });
  }

  release(id: string): void {
    this.held.delete(id);
  }

  get size(): number {
    return this.held.size;
  }

  get leaseMs(): number {
    return this.opts.leaseMs;
  }

  /** Renew every lease held, then give up those that cannot be kept (exported for tests: the timer calls it). */
  async tick(): Promise<void> {
    // One renewal at a time: a store that hangs does not pile up calls; the leases are still checked below.
    if (this.renewing || this.held.size === 0) return this.expire();
    this.renewing = true;
    const ids = [...this.held.keys()];
    const until = this.now() + this.opts.leaseMs;
    try {
      const refused = (await this.opts.renew(ids, until)) ?? [];
      this.outage.succeeded();
      const lost = new Set(refused);
      for (const id of ids) {
        const h = this.held.get(id);
        if (!h) continue;
        if (lost.has(id)) this.lose(id, `the ${this.opts.label} of ${id} is held by another owner now`);
        else h.until = until;
      }
    } catch (err) {
      this.outage.failed(err, { held: ids.length });
    } finally {
      this.renewing = false;
    }
    this.expire();
  }

  private expire(): void {
    const now = this.now();
    for (const [id, h] of this.held) {
      if (h.until - now <= this.periodMs)
        this.lose(id, `the ${this.opts.label} of ${id} could not be renewed before it ran out (store unreachable)`);
    }
  }

  private lose(id: string, why: string): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    h.abort(new LeaseLostError(why));
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/** A store failure that may pass (the store is unreachable), as opposed to a bug or a refused write. */
export function storeUnavailable(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'store_unavailable';
}

/**
 * `write` (a completion), tried again with backoff while the store is unavailable and the work still holds its
 * lease: a store that is down for a few seconds when a turn ends does not cost the turn (the lease keeper gives the
 * lease up, and aborts `signal`, if the outage outlasts it). Rejects with the last error once `signal` aborts.
 */
export async function writeWhileLeased<T>(
  signal: AbortLike,
  write: () => Promise<T>,
  backoff: (n: number) => number,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await write();
    } catch (err) {
      if (signal.aborted || !storeUnavailable(err)) throw err;
      const ok = await new Promise<boolean>((resolve) => {
        const done = (v: boolean) => {
          clearTimeout(t);
          release();
          resolve(v);
        };
        const t = setTimeout(() => done(true), backoff(n));
        const release = whenAborted(signal, () => done(false));
      });
      if (!ok) throw err;
    }
  }
}
