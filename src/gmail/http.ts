/**
 * How the Gmail push chain calls Google: the one outbound client's Google calls (src/http/google.ts: JSON, a
 * timeout, a GoogleApiError with the status and Google's wait hint) and its retries of what is transient (429,
 * 5xx, no answer). Errors never quote a token or a response body that may hold mail.
 */
import { GoogleApiError } from '../http/errors.js';
import { type RetryPolicy, withRetry } from '../http/retry.js';

// The runtime's fetcher branches on it (a 404: the message or the history is gone).
export { GoogleApiError };
export type { RetryPolicy };

export const GOOGLE_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 1_000, maxDelayMs: 32_000 };

/**
 * `fn` again after a transient GoogleApiError (429, 5xx, no answer): exponential backoff with jitter, at least
 * Google's Retry-After; a permanent error, or the last attempt's, is thrown. `sleep` is replaceable (tests).
 */
export function withGoogleRetry<T>(
  fn: () => Promise<T>,
  policy: RetryPolicy = GOOGLE_RETRY,
  sleep?: (ms: number) => Promise<void>,
): Promise<T> {
  return withRetry(fn, policy, sleep);
}
