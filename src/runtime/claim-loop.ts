import { performance } from 'node:perf_hooks';
import { Abort } from '../deadline.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../text-safe.js';
import { OutageLog } from './outage.js';

export interface ClaimLoopOptions<T extends { id: string }> {
  /** For log lines: "runs", "deliveries". */
  label: string;
  logger: Logger;
  /** The field naming an item in a failure line besides `id` (`runId`, `deliveryId`): found like the item's other lines. */
  idField?: string;
  /** How many items may be worked on at once (read each time: it follows config reloads). */
  limit: () => number;
  /** Lease up to `n` items from the store. */
  claim: (n: number) => Promise<T[]>;
  /** Work one item; `abort` aborts when the loop closes and the grace period ran out, or with `abort(id, reason)`. */
  work: (item: T, abort: Abort) => Promise<void>;
  /**
   * Also look for work this often: expired leases, retries that came due, and on a shared store the work another
   * node queued whose notice was lost (notices are best-effort; this poll is what makes them optional).
   */
  pollMs: number;
  /**
   * Whether the ingress is saturated (ingress/pressure.ts). While it is, the loop claims at most once per
   * `YIELD_GAP_MS`, at most `YIELD_CLAIM` items: the work in hand goes on, the backlog waits in the store.
   */
  ingressBusy?: () => boolean;
  /** While the ingress is busy: claim at most once per `gapMs`, at most `items` items (tests lengthen the gap). */
  yieldTo?: { gapMs: number; items: number };
  /**
   * When an item ends: `always` claim again (the default: finishing an item may itself make work claimable, such as
   * a session's next run), or `if-expected`: only when there may be work the loop has not claimed yet — a claim came
   * back full, a notify found no free slot, or `expect()` was called — since a claim then would come back empty. A
   * function: `if-expected`, and also when it says the item that ended may have made work claimable.
   */
  claimAfterWork?: 'always' | 'if-expected' | ((item: T) => boolean);
  /**
   * How many items more than `limit` may be claimed and held, not started yet: a slot that frees starts the next one
   * at once instead of waiting for a claim, and under a backlog claims come in batches of at least half of this, not
   * one per item that ends. For a store whose claims are round trips (PostgreSQL). 0 (the default): claim only for
   * free slots.
   */
  ahead?: () => number;
  /** Items claimed ahead and not started when the loop stops: give them back (their leases are the caller's). */
  giveBack?: (items: T[]) => Promise<void>;
  /** An item claimed ahead whose lease was lost before it started: dropped, never worked. */
  dropped?: (item: T) => void;
}

/**
 * While the ingress is saturated a loop claims once per 25 ms, at most 2 items: the run worker and the outbox then
 * take a bounded share of the core and the accepts the rest. The gap is short so that the loop is back at full
 * speed soon after a burst ends (a longer gap with more items per claim gives the same share but loses more time
 * per burst).
 */
export const YIELD_GAP_MS = 25;
export const YIELD_CLAIM = 2;

/**
 * The loop shared by the run worker and the outbox: when told there may be work (or every `pollMs`), claim as many
 * items as there are free slots and work them concurrently (again while claims come back full; a short one took all
 * there was); one claim at a time; on close, stop claiming and give
 * the items in hand a grace period before aborting them. When claiming fails (the store is unreachable) the loop
 * pauses with backoff (1 s doubling to 30 s): notices and polls meanwhile wait for the retry, so an outage neither
 * spins nor floods the log (one line when it starts, one when claiming works again).
 */
export class ClaimLoop<T extends { id: string }> {
  private readonly inHand = new Map<string, { abort: Abort; done: Promise<void> }>();
  /** Claimed ahead (`ahead`), oldest first: started as slots free. */
  private readonly waiting: T[] = [];
  /** Giving back what was claimed ahead when the loop stopped (`drain` waits for it). */
  private givingBack: Promise<void> | undefined;
  private claiming = false;
  /** The claim under way, so a stop can wait for what it brings in (leased before the stop: it is worked). */
  private filling: Promise<void> | undefined;
  private again = false;
  private stopping = false;
  private readonly poll: NodeJS.Timeout;
  private readonly outage: OutageLog;
  /** Set while paused (after a failed claim, or yielding to a saturated ingress): the claim that ends the pause. */
  private resume: NodeJS.Timeout | undefined;
  private lastClaimAt = -Infinity;
  /** There may be work not claimed yet (see `claimAfterWork`). */
  private expected = false;

  constructor(private readonly opts: ClaimLoopOptions<T>) {
    this.poll = setInterval(() => this.notify(), opts.pollMs);
    this.poll.unref();
    this.outage = new OutageLog(opts.logger, `claiming ${opts.label}`);
  }

  get size(): number {
    return this.inHand.size;
  }

  /**
   * How many more items the loop would claim now: its free slots, at most what it claims at a time while the
   * ingress is saturated, none once it stops.
   */
  get spare(): number {
    if (this.stopping) return 0;
    const free = Math.max(0, this.opts.limit() - this.inHand.size);
    return this.opts.ingressBusy?.() ? Math.min(free, (this.opts.yieldTo ?? { items: YIELD_CLAIM }).items) : free;
  }

  ids(): string[] {
    return [...this.inHand.keys()];
  }

  /** There is work that an item ending should claim (with `claimAfterWork: 'if-expected'`). */
  expect(): void {
    this.expected = true;
  }

  /** Abort one item in hand (its lease was lost): its `work` sees `abort.reason`; one not started is dropped. */
  abort(id: string, reason: Error): void {
    const at = this.waiting.findIndex((item) => item.id === id);
    if (at !== -1) this.opts.dropped?.(this.waiting.splice(at, 1)[0]!);
    this.inHand.get(id)?.abort.abort(reason);
  }

  notify(): void {
    if (this.stopping || this.resume) return;
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
      this.startWaiting();
      const limit = this.opts.limit();
      const ahead = Math.max(0, this.opts.ahead?.() ?? 0);
      let free = limit + ahead - this.inHand.size - this.waiting.length;
      // Every slot busy: claim ahead only once half of what may be held ahead is gone (one batch, not one per item).
      if (free <= 0 || (this.inHand.size >= limit && free < Math.ceil(ahead / 2))) {
        this.expected = true; // told of work with no slot for it: the next item to end claims it
        return;
      }
      if (this.opts.ingressBusy?.()) {
        const { gapMs, items } = this.opts.yieldTo ?? { gapMs: YIELD_GAP_MS, items: YIELD_CLAIM };
        const wait = this.lastClaimAt + gapMs - performance.now();
        if (wait > 0) return this.pause(Math.ceil(wait));
        free = Math.min(free, items);
      }
      this.lastClaimAt = performance.now();
      this.expected = false;
      let items: T[];
      try {
        items = await this.opts.claim(free);
      } catch (err) {
        this.pause(this.outage.failed(err));
        return;
      }
      this.outage.succeeded();
      this.waiting.push(...items);
      // Even when a stop came meanwhile: what a claim brings into free slots is worked (leased before the stop).
      this.startWaiting(true);
      if (this.stopping) this.giveBackWaiting();
      // A short claim took all there was: claiming again at once would come back empty (work queued since comes
      // with a notify, which claims again). A full one may have left more: claim again while slots are free.
      if (items.length < free) return;
      this.expected = true;
    }
  }

  private pause(ms: number): void {
    if (this.stopping) return;
    this.again = false;
    this.resume = setTimeout(() => {
      this.resume = undefined;
      this.notify();
    }, ms);
    this.resume.unref();
  }

  private failed(item: T, err: unknown): void {
    const idField = this.opts.idField;
    const fields =
      idField === undefined
        ? { id: item.id, err: errorMessage(err) }
        : { id: item.id, [idField]: item.id, err: errorMessage(err) };
    this.opts.logger.error(fields, `working on ${this.opts.label} failed`);
  }

  /** Start what was claimed, while slots are free; once stopping, only `claimed` (`stop` gives the rest back). */
  private startWaiting(claimed = false): void {
    const limit = this.opts.limit();
    while ((claimed || !this.stopping) && this.inHand.size < limit && this.waiting.length)
      this.start(this.waiting.shift()!);
  }

  private start(item: T): void {
    const abort = new Abort();
    const done = this.opts
      .work(item, abort)
      .catch((err) => this.failed(item, err))
      .finally(() => {
        this.inHand.delete(item.id);
        this.startWaiting();
        if (this.expected || this.claimsAfter(item)) this.notify();
      });
    this.inHand.set(item.id, { abort, done });
  }

  private claimsAfter(item: T): boolean {
    const after = this.opts.claimAfterWork ?? 'always';
    return after === 'always' || (typeof after === 'function' && after(item));
  }

  /** Claim nothing more, from now on (the first thing a stop does). */
  stop(): void {
    this.stopping = true;
    clearInterval(this.poll);
    clearTimeout(this.resume);
    this.giveBackWaiting();
  }

  /** Hand back what was claimed ahead and not started (again once a claim under way at the stop brought more). */
  private giveBackWaiting(): void {
    const items = this.waiting.splice(0);
    if (!items.length || !this.opts.giveBack) return;
    const before = this.givingBack;
    const giving = this.opts
      .giveBack(items)
      .catch((err) =>
        this.opts.logger.warn(
          { err: errorMessage(err), items: items.length },
          `could not give back claimed ${this.opts.label}; their leases lapse instead`,
        ),
      );
    this.givingBack = before ? Promise.all([before, giving]).then(() => undefined) : giving;
  }

  /** Stop, and wait for the items in hand; when `deadline` aborts, abort those still working. */
  async drain(deadline: AbortSignal): Promise<void> {
    this.stop();
    await this.filling;
    this.giveBackWaiting();
    await this.givingBack;
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
