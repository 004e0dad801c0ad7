/**
 * The error family of outbound calls (`OutboundError`; `GoogleApiError` for Google's APIs and token endpoint): the
 * other side said no, or never answered. Each carries a stable code (`OutboundErrorCode`), the status (0 when there was no answer) and the other
 * side's wait hint; `transient` is derived from the code. Messages name the call, never a URL's path or query, a
 * token or a body that may hold user data.
 */
import { HookgateError, type OutboundErrorCode } from '../errors.js';
import { isRetryableStatus } from '../http-util.js';
import type { HttpFailure } from './client.js';

export class OutboundError extends HookgateError {
  declare readonly code: OutboundErrorCode;
  constructor(
    code: OutboundErrorCode,
    message: string,
    /** HTTP status; 0 for no answer (network, timeout). */
    readonly status: number,
    /** The other side's `Retry-After` in ms, when it sent one. */
    readonly retryAfterMs?: number,
  ) {
    super(code, message);
  }

  /** Worth trying again later: rate limited, a server error, or no answer. */
  get transient(): boolean {
    return this.code === 'outbound_busy' || this.code === 'outbound_unreachable' || this.code === 'outbound_timeout';
  }
}

/** The code of an answer with this status: busy (408, 429, 5xx) or refused (any other 3xx/4xx). */
export function statusCode(status: number): OutboundErrorCode {
  return isRetryableStatus(status) ? 'outbound_busy' : 'outbound_refused';
}

/** The code of a call that got no answer. */
export function failureCode(failure: HttpFailure): OutboundErrorCode {
  return failure.kind === 'network' ? 'outbound_unreachable' : 'outbound_timeout';
}

/**
 * A Google API or token endpoint failed: `{ error: { code, message, status } }` or `{ error, error_description }`.
 * Status 0 is no answer; `googleStatus` is Google's word for the error (`NOT_FOUND`, `invalid_grant`), when it sent one.
 */
export class GoogleApiError extends OutboundError {
  readonly googleStatus: string | undefined;
  constructor(message: string, status: number, retryAfterMs?: number, googleStatus?: string) {
    super(status === 0 ? 'outbound_unreachable' : statusCode(status), message, status, retryAfterMs);
    this.googleStatus = googleStatus;
  }
}
