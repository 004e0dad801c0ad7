/**
 * Exponential backoff with jitter: the one formula behind every retry wait in hookgate — the model providers' retry
 * loop, the outbox and the heartbeat. Each caller adds its own rule for a server's wait hint on top.
 */

export interface Backoff {
  /** The delay before the 2nd attempt; doubled each time. */
  baseDelayMs: number;
  /** Cap of the exponential delay (jitter only ever shortens it). */
  maxDelayMs: number;
}

/**
 * The delay before attempt `n + 1`, after `n` failed attempts: a random wait between half and all of
 * `min(maxDelayMs, baseDelayMs × 2^(n−1))`.
 */
export function backoffMs(n: number, policy: Backoff, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (n - 1));
  // "Equal jitter": at least half the exponential delay, so retries of many callers spread out but never bunch at 0.
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
