/**
 * A token bucket (`rateLimit: { perMinute, burst }`): holds up to `burst` tokens, starts full, refills `perMinute`
 * per minute continuously; each accepted request takes one. Two numbers of state, no timer, no allocation: the
 * refill is computed from the time passed when the bucket is next asked. `now` is passed in (tests inject the clock).
 */
export interface RateLimit {
  perMinute: number;
  burst: number;
}

export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly perMs: number;

  constructor(
    readonly limit: Readonly<RateLimit>,
    now: number,
  ) {
    this.tokens = limit.burst;
    this.last = now;
    this.perMs = limit.perMinute / 60_000;
  }

  /** Take a token: 0 when taken, else the whole seconds (≥ 1) until one is there (the `Retry-After`). */
  take(now: number): number {
    const wait = this.peek(now);
    if (wait === 0) this.tokens -= 1;
    return wait;
  }

  /** Like `take`, without taking: whether a request could be accepted now. */
  peek(now: number): number {
    this.refill(now);
    if (this.tokens >= 1) return 0;
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perMs / 1000));
  }

  /** Tokens there now (tests, metrics). */
  available(now: number): number {
    this.refill(now);
    return this.tokens;
  }

  private refill(now: number): void {
    // A clock that went back refills nothing (and does not drain either).
    if (now <= this.last) return;
    this.tokens = Math.min(this.limit.burst, this.tokens + (now - this.last) * this.perMs);
    this.last = now;
  }
}
