import { addressBucket } from './client-ip.js';

export interface AuthFailureLimits {
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
  maxTrackedClients: number;
}

/** A lockout from another node is kept at most this long, whatever it says (a wrong clock or value cannot lock forever). */
const MAX_EXTERNAL_LOCK_MS = 24 * 3_600_000;

/** A lockout decided by this limiter: the address bucket, until when, and the limits that decided it. */
export type LockListener = (
  bucket: string,
  until: number,
  why: { failures: number; windowSeconds: number; lockoutSeconds: number },
) => void;

interface Entry {
  /** Times of recent failures, oldest first; never longer than maxFailures. */
  failures: number[];
  lockedUntil: number;
}

/**
 * Per-client auth-failure limiter: `maxFailures` failures within `windowSeconds` lock the client for
 * `lockoutSeconds`; while locked, failed attempts are answered 429. A success resets the client.
 * Memory is bounded: at most `maxTrackedClients` entries; the least recently failing unlocked entry is evicted
 * first, and when every entry is locked the oldest lock goes (a flood of fresh addresses can shorten a lockout,
 * but cannot grow memory).
 * Clients are counted by `addressBucket`: an IPv6 client by its /64, so one network cannot rotate addresses to
 * escape a lockout.
 *
 * Several nodes (one shared store): failures are counted per node, in memory only, so a flood of bad tokens is
 * never a flood of writes; the failure that locks a client tells the `onLocked` listeners once (lockout-sync.ts shares it), and
 * `lock` applies a lockout another node decided. Both kinds of lock share the bound above.
 */
export class AuthFailureLimiter {
  private readonly entries = new Map<string, Entry>();
  /** Told when a failure locks a bucket (not for `lock`): once per lockout, never per failure. */
  private readonly lockListeners = new Set<LockListener>();

  constructor(private limits: AuthFailureLimits) {}

  /** Listen to lockouts decided here (lockout-sync.ts shares them, the audit trail records them); returns the remover. */
  onLocked(listener: LockListener): () => void {
    this.lockListeners.add(listener);
    return () => void this.lockListeners.delete(listener);
  }

  setLimits(limits: AuthFailureLimits): void {
    this.limits = limits;
    const now = Date.now();
    while (this.entries.size > limits.maxTrackedClients) this.evictOne(now);
  }

  /** Seconds until the client may try again (≥ 1), or 0 when it is not locked. */
  retryAfter(client: string, now: number): number {
    if (this.entries.size === 0) return 0;
    const e = this.entries.get(addressBucket(client));
    if (!e || e.lockedUntil <= now) return 0;
    return Math.max(1, Math.ceil((e.lockedUntil - now) / 1000));
  }

  /** Record a failure; returns the Retry-After seconds when this failure locked the client, else 0. */
  fail(client: string, now: number): number {
    const { maxFailures, windowSeconds, lockoutSeconds } = this.limits;
    const key = addressBucket(client);
    let e = this.entries.get(key);
    if (e)
      this.entries.delete(key); // re-insert below: Map order = recency of failure
    else {
      e = { failures: [], lockedUntil: 0 };
      this.evictIfFull(now);
    }
    this.entries.set(key, e);
    const windowStart = now - windowSeconds * 1000;
    while (e.failures.length && e.failures[0]! <= windowStart) e.failures.shift();
    e.failures.push(now);
    if (e.failures.length > maxFailures) e.failures.shift();
    if (e.failures.length >= maxFailures) {
      e.lockedUntil = now + lockoutSeconds * 1000;
      e.failures = [];
      for (const l of this.lockListeners)
        l(key, e.lockedUntil, { failures: maxFailures, windowSeconds, lockoutSeconds });
      return lockoutSeconds;
    }
    return 0;
  }

  /**
   * Lock the address bucket `bucket` (as `addressBucket` makes it) until `until`: a lockout decided by another node.
   * A longer lock already here is kept. Returns whether this changed anything.
   */
  lock(bucket: string, until: number, now: number): boolean {
    const lockedUntil = Math.min(until, now + MAX_EXTERNAL_LOCK_MS);
    if (lockedUntil <= now) return false;
    let e = this.entries.get(bucket);
    if (e && e.lockedUntil >= lockedUntil) return false;
    if (e) this.entries.delete(bucket);
    else {
      e = { failures: [], lockedUntil: 0 };
      this.evictIfFull(now);
    }
    e.lockedUntil = lockedUntil;
    this.entries.set(bucket, e);
    return true;
  }

  reset(client: string): void {
    if (this.entries.size) this.entries.delete(addressBucket(client));
  }

  get size(): number {
    return this.entries.size;
  }

  /** Address buckets locked out at `now` (the metrics' gauge: read at scrape time, bounded by maxTrackedClients). */
  lockedCount(now: number): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.lockedUntil > now) n++;
    return n;
  }

  private evictIfFull(now: number): void {
    if (this.entries.size >= this.limits.maxTrackedClients) this.evictOne(now);
  }

  private evictOne(now: number): void {
    for (const [key, e] of this.entries) {
      if (e.lockedUntil <= now) {
        this.entries.delete(key);
        return;
      }
    }
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }
}
