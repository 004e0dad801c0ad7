/**
 * Retrying a call that failed for a reason that may pass: exponential backoff with jitter (src/backoff.ts), and at
 * least the other side's `Retry-After`. The model providers have their own loop (src/providers/retry.ts: a run's
 * deadline and per-attempt timeouts); the outbox retries deliveries across restarts. This is for a call made again
 * in place, like the Gmail API's.
 */
import { type Backoff, backoffMs } from '../backoff.js';
import { OutboundError } from './errors.js';

export interface RetryPolicy extends Backoff {
  /** Attempts in all (the first included). */
  attempts: number;
}

const sleepFor = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The wait before attempt `n + 1`: the backoff, or the other side's hint when longer, never over twice the cap
 * (a hint of an hour is not waited for in place).
 */
export function retryWaitMs(n: number, policy: Backoff, retryAfterMs: number | undefined): number {
  return Math.min(policy.maxDelayMs * 2, Math.max(retryAfterMs ?? 0, backoffMs(n, policy)));
}

/**
 * `fn` again after a transient OutboundError (429, 5xx, no answer); a permanent error, or the last attempt's, is
 * thrown. `sleep` is replaceable (tests).
 */
export async function withRetry<T>(
  fn: () => Promise<T>,
  policy: RetryPolicy,
  sleep: (ms: number) => Promise<void> = sleepFor,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof OutboundError) || !err.transient || attempt >= policy.attempts) throw err;
      await sleep(retryWaitMs(attempt, policy, err.retryAfterMs));
    }
  }
}
