/**
 * The one retry loop of every model provider: per-attempt timeout, exponential backoff with jitter, `Retry-After`
 * honoured, and an immediate stop when the run's signal aborts.
 */
import { backoffMs } from '../backoff.js';
import { type AbortLike, deadline, whenAborted } from '../deadline.js';
import { ProviderError } from './types.js';

export interface RetryPolicy {
  /** Total attempts, the first included (config `maxAttempts`). */
  maxAttempts: number;
  /** Timeout of one attempt (config `requestTimeoutMs`); none when undefined. */
  requestTimeoutMs?: number | undefined;
  /** Backoff before the 2nd attempt; doubled each time. */
  baseDelayMs?: number;
  /** Cap of one computed backoff. */
  maxDelayMs?: number;
  /**
   * A server asking to wait longer than this is not waited for: the error is thrown at once (it still carries
   * `retryAfterMs`), since sleeping that long would only burn the run's own timeout.
   */
  maxRetryAfterMs?: number;
  /**
   * Whether a timed-out attempt (`requestTimeoutMs`) may be retried. True for HTTP calls; false for a command agent,
   * whose half-finished run may already have had side effects.
   */
  retryAttemptTimeout?: boolean;
  /** For tests: a source of randomness in [0, 1). */
  random?: () => number;
}

/** What a provider factory accepts besides its config. */
export interface ProviderOptions {
  /** Overrides of the backoff (tests use tiny delays); maxAttempts and requestTimeoutMs come from the config. */
  retry?: Partial<Omit<RetryPolicy, 'maxAttempts' | 'requestTimeoutMs'>>;
}

/** The policy of one provider: its config's `maxAttempts` and `requestTimeoutMs`, plus any overrides. */
export function policyOf(
  config: { maxAttempts: number; requestTimeoutMs?: number | undefined },
  options: ProviderOptions = {},
): RetryPolicy {
  return { ...options.retry, maxAttempts: config.maxAttempts, requestTimeoutMs: config.requestTimeoutMs };
}

export const DEFAULT_BASE_DELAY_MS = 500;
export const DEFAULT_MAX_DELAY_MS = 10_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/** One attempt: `signal` aborts on the run's signal or on the attempt's timeout. */
export type Attempt<T> = (signal: AbortLike, attempt: number) => Promise<T>;

/** The error thrown when the run's signal aborted (run timeout or shutdown). */
export function abortedError(label: string, cause?: unknown): ProviderError {
  return new ProviderError('provider_timeout', `${label}: aborted (run timeout or shutdown)`, {
    retryable: false,
    cause,
  });
}

/**
 * Runs `attempt` until it succeeds, fails with a non-retryable error, attempts run out, or `signal` aborts.
 * Any error that is not a ProviderError is treated as a bug and thrown unchanged, without retry.
 */
export async function withRetry<T>(
  label: string,
  policy: RetryPolicy,
  signal: AbortLike,
  attempt: Attempt<T>,
): Promise<T> {
  const maxAttempts = Math.max(1, Math.floor(policy.maxAttempts));
  const random = policy.random ?? Math.random;
  for (let n = 1; ; n++) {
    if (signal.aborted) throw abortedError(label, signal.reason);
    let error: unknown;
    try {
      return await runAttempt(label, policy, signal, n, attempt);
    } catch (err) {
      error = err;
    }
    // The run's abort wins over whatever the attempt reported (a reset socket, a killed child...).
    if (signal.aborted) throw abortedError(label, signal.reason);
    if (!(error instanceof ProviderError) || !error.retryable || n >= maxAttempts) throw error;
    const wait = retryWaitMs(n, error.retryAfterMs, policy, random);
    if (wait === undefined) throw error;
    await sleep(wait, signal, label);
  }
}

/**
 * The delay before attempt `n + 1`: the server's `Retry-After` exactly, else the shared backoff. Undefined when the
 * server asked for more than we are willing to wait (`maxRetryAfterMs`).
 */
export function retryWaitMs(
  n: number,
  retryAfterMs: number | undefined,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs' | 'maxRetryAfterMs'>,
  random: () => number = Math.random,
): number | undefined {
  if (retryAfterMs !== undefined) {
    return retryAfterMs > (policy.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS)
      ? undefined
      : Math.max(0, retryAfterMs);
  }
  const backoff = {
    baseDelayMs: policy.baseDelayMs ?? DEFAULT_BASE_DELAY_MS,
    maxDelayMs: policy.maxDelayMs ?? DEFAULT_MAX_DELAY_MS,
  };
  return backoffMs(n, backoff, random);
}

async function runAttempt<T>(
  label: string,
  policy: RetryPolicy,
  outer: AbortLike,
  n: number,
  attempt: Attempt<T>,
): Promise<T> {
  const timeoutMs = policy.requestTimeoutMs;
  // Its own deadline (not AbortSignal.any), so its listener on the run's long-lived abort is removed every time.
  const attemptDeadline = deadline(outer, timeoutMs, () => new Error('attempt timeout'));
  try {
    return await attempt(attemptDeadline, n);
  } catch (err) {
    if (attemptDeadline.timedOut && !outer.aborted) {
      throw new ProviderError('provider_timeout', `${label}: no answer within requestTimeoutMs (${timeoutMs} ms)`, {
        retryable: policy.retryAttemptTimeout ?? true,
        cause: err,
      });
    }
    throw err;
  } finally {
    attemptDeadline.dispose();
  }
}

/** Waits `ms`, or throws provider_timeout as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortLike, label: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortedError(label, signal.reason));
    const timer = setTimeout(() => {
      release();
      resolve();
    }, ms);
    const release = whenAborted(signal, () => {
      clearTimeout(timer);
      reject(abortedError(label, signal.reason));
    });
  });
}
