import type { Logger } from '../log.js';
import { errorMessage } from '../text-safe.js';

/** While claims keep failing (a store that is not open, a full disk), the failure is logged again this often. */
const FAILURE_RELOG_MS = 60_000;

export interface ClaimLoopOptions<T extends { id: string }> {
  /** For log lines: "runs", "deliveries". */
  label: string;
  logger: Logger;
  /** How many items may be worked on at once (read each time: it follows config reloads). */
  limit: () => number;
  /** Lease up to `n` items from the store. */
  claim: (n: number) => Promise<T[]>;
  /** Work one item; `signal` aborts when the loop closes and the grace period ran out. */
  work: (item: T, signal: AbortSignal) => Promise<void>;
  /** Also look for work this often (expired leases, retries that came due). */
  pollMs: number;
}

/**
 * The loop shared by the run worker and the outbox: when told there may be work (or every `pollMs`), claim as many
 * items as there are free slots and work them concurrently; one claim at a time; on close, stop claiming and give
 * the items in hand a grace period before aborting them.
 */
export class ClaimLoop<T extends { id: string }> {
  private readonly inHand = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private claiming = false;
  /** The claim under way, so a stop can wait for what it brings in (leased before the stop: it is worked). */
  private filling: Promise<void> | undefined;
  private again = false;
  private stopping = false;
  /** Claims failing in a row: logged at the first and then once a minute, not at every poll. */
  private failing: { count: number; loggedAt: number } | undefined;
  private readonly poll: NodeJS.Timeout;

  constructor(private readonly opts: ClaimLoopOptions<T>) {
    this.poll = setInterval(() => this.notify(), opts.pollMs);
    this.poll.unref();
  }

  get size(): number {
    return this.inHand.size;
  }

  ids(): string[] {
    return [...this.inHand.keys()];
  }

  notify(): void {
    if (this.stopping) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = true;
    this.filling = this.fill().finally(() => {
      this.claiming = false;
      this.filling = undefined;
      if (this.again) {
        this.again = false;
        this.notify();
      }
    });
  }

  private async fill(): Promise<void> {
    while (!this.stopping) {
      const free = this.opts.limit() - this.inHand.size;
      if (free <= 0) return;
      let items: T[];
      try {
        items = await this.opts.claim(free);
      } catch (err) {
        this.claimFailed(err);
        return;
      }
      if (this.failing) {
        this.opts.logger.info({ failures: this.failing.count }, `claiming ${this.opts.label} works again`);
        this.failing = undefined;
      }
      if (items.length === 0) return;
      for (const item of items) this.start(item);
    }
  }

  private claimFailed(err: unknown): void {
    const now = Date.now();
    const f = (this.failing ??= { count: 0, loggedAt: 0 });
    f.count++;
    if (f.count > 1 && now - f.loggedAt < FAILURE_RELOG_MS) return;
    f.loggedAt = now;
    const fields = { err: errorMessage(err), ...(f.count > 1 ? { failures: f.count } : {}) };
    this.opts.logger.error(fields, f.count > 1 ? `claiming ${this.opts.label} still fails` : `claiming ${this.opts.label} failed`);
  }

  private start(item: T): void {
    const abort = new AbortController();
    const done = this.opts
      .work(item, abort.signal)
      .catch((err) => this.opts.logger.error({ id: item.id, err: errorMessage(err) }, `working on ${this.opts.label} failed`))
      .finally(() => {
        this.inHand.delete(item.id);
        this.notify();
      });
    this.inHand.set(item.id, { abort, done });
  }

  /** Claim nothing more, from now on (the first thing a stop does). */
  stop(): void {
    this.stopping = true;
    clearInterval(this.poll);
  }

  /** Stop, and wait for the items in hand; when `deadline` aborts, abort those still working. */
  async drain(deadline: AbortSignal): Promise<void> {
    this.stop();
    await this.filling;
    const abortAll = () => {
      for (const { abort } of this.inHand.values()) abort.abort();
    };
    if (deadline.aborted) abortAll();
    else deadline.addEventListener('abort', abortAll, { once: true });
    await Promise.allSettled([...this.inHand.values()].map((h) => h.done));
    deadline.removeEventListener('abort', abortAll);
  }

  close(graceMs: number): Promise<void> {
    return drainWithin(graceMs, (deadline) => this.drain(deadline));
  }
}

/**
 * `drain` with a deadline that aborts after `graceMs`. Its timer keeps the process alive until then, unlike
 * `AbortSignal.timeout` (unref'd: a process waiting only on it would exit with the drain unfinished).
 */
export async function drainWithin(graceMs: number, drain: (deadline: AbortSignal) => Promise<void>): Promise<void> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), graceMs);
  try {
    await drain(deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}
