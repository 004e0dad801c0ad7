/**
 * The one way hookgate calls Google (the Gmail API, the token endpoint): JSON over fetch with a timeout, and an
 * error that carries the status and Google's wait hint, so callers decide what is transient (429, 5xx, network)
 * and what is not. Errors never quote a token or a response body that may hold mail: only the status and Google's
 * error code and message.
 */
import { backoffMs } from '../backoff.js';
import { parseRetryAfter } from '../retry-after.js';
import { logSafe } from '../text-safe.js';

export class GoogleApiError extends Error {
  constructor(
    message: string,
    /** HTTP status; 0 for a network failure or a timeout. */
    readonly status: number,
    /** Google's `Retry-After` in ms, when it sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'GoogleApiError';
  }
  /** Worth trying again later: rate limited, a server error, or no answer. */
  get transient(): boolean {
    return this.status === 0 || this.status === 429 || this.status === 408 || this.status >= 500;
  }
}

export const GOOGLE_TIMEOUT_MS = 30_000;

/** `fetch` answered with JSON, or a GoogleApiError. `what` names the call in the error (never a secret). */
export async function googleJson<T>(what: string, url: string, init: RequestInit, fetchFn: typeof fetch = fetch): Promise<T> {
  let res: Response;
  try {
    res = await fetchFn(url, { ...init, signal: AbortSignal.timeout(GOOGLE_TIMEOUT_MS) });
  } catch (err) {
    throw new GoogleApiError(`${what}: no answer (${(err as Error).name === 'TimeoutError' ? 'timeout' : 'network error'})`, 0);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) {
    const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
    throw new GoogleApiError(`${what}: HTTP ${res.status}${googleCode(text)}`, res.status, retryAfter);
  }
  try {
    return (text === '' ? {} : JSON.parse(text)) as T;
  } catch {
    throw new GoogleApiError(`${what}: the answer is not JSON`, 502);
  }
}

/**
 * ` (NOT_FOUND: Requested entity was not found.)` / ` (invalid_grant: Token has been expired or revoked.)`: Google's
 * error code and its short message (what an operator needs to fix a watch or a grant), cut and made log-safe.
 * Google's error messages describe the request, not mail content.
 */
function googleCode(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown; error_description?: unknown };
    const e = parsed.error;
    const obj = typeof e === 'object' && e !== null ? (e as { status?: unknown; message?: unknown }) : undefined;
    const code = typeof e === 'string' ? e : obj?.status;
    const detail = typeof e === 'string' ? parsed.error_description : obj?.message;
    if (typeof code !== 'string' || !/^[A-Za-z_]{1,40}$/.test(code)) return '';
    return typeof detail === 'string' && detail.trim() ? ` (${code}: ${logSafe(detail, 160)})` : ` (${code})`;
  } catch {
    return '';
  }
}

export interface RetryPolicy {
  /** Attempts in all (the first included). */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const GOOGLE_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 1_000, maxDelayMs: 32_000 };

/**
 * `fn` again after a transient GoogleApiError (429, 5xx, no answer): exponential backoff with jitter, at least
 * Google's Retry-After; a permanent error, or the last attempt's, is thrown. `sleep` is replaceable (tests).
 */
export async function withGoogleRetry<T>(
  fn: () => Promise<T>,
  policy: RetryPolicy = GOOGLE_RETRY,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof GoogleApiError) || !err.transient || attempt >= policy.attempts) throw err;
      await sleep(Math.min(policy.maxDelayMs * 2, Math.max(err.retryAfterMs ?? 0, backoffMs(attempt, policy))));
    }
  }
}
