/**
 * Google's JSON APIs (Gmail, Pub/Sub) and its token endpoint, over the one client: an answer as JSON, or a
 * GoogleApiError with the status, Google's word for the error and its wait hint. Errors never quote a token or a
 * body that may hold mail: only the status and Google's error code and message.
 */
import { logSafe } from '../text-safe.js';
import { parseRetryAfter } from '../retry-after.js';
import { type HttpResponse, type OutboundInit, type Transport, is2xx, request } from './client.js';
import { GoogleApiError } from './errors.js';
import { asRecord } from './token.js';

export const GOOGLE_TIMEOUT_MS = 30_000;
/** A message in `format=full` carries its body parts inline: Gmail's limit is 25 MB before base64. */
const GOOGLE_MAX_BYTES = 64 * 1024 * 1024;

/** Google's error body: `{ error: { code, message, status, details } }` (APIs) or `{ error, error_description }` (OAuth). */
export interface GoogleErrorBody {
  /** `NOT_FOUND`, `PERMISSION_DENIED`, `invalid_grant`… when it has the shape of such a word. */
  status: string | undefined;
  message: string | undefined;
  /** The first `details[].reason` (`SERVICE_DISABLED`…). */
  reason: string | undefined;
}

export function googleError(json: unknown): GoogleErrorBody {
  const body = asRecord(json);
  const e = body.error;
  const obj = asRecord(e);
  const code = typeof e === 'string' ? e : obj.status;
  const message = typeof e === 'string' ? body.error_description : obj.message;
  const details = Array.isArray(obj.details) ? obj.details.map(asRecord) : [];
  const reason = details.find((d) => typeof d.reason === 'string')?.reason as string | undefined;
  return {
    status: typeof code === 'string' && /^[A-Za-z_]{1,40}$/.test(code) ? code : undefined,
    message: typeof message === 'string' && message.trim() ? message : undefined,
    reason,
  };
}

/**
 * ` (NOT_FOUND: Requested entity was not found.)` / ` (invalid_grant: Token has been expired or revoked.)`: Google's
 * error code and its short message (what an operator needs to fix a watch or a grant), cut and made log-safe.
 * Google's error messages describe the request, not mail content.
 */
export function googleErrorSuffix(json: unknown): string {
  const e = googleError(json);
  if (!e.status) return '';
  return e.message ? ` (${e.status}: ${logSafe(e.message, 160)})` : ` (${e.status})`;
}

/** A failed answer as a GoogleApiError: `what: HTTP 404 (NOT_FOUND: …)`, with Google's Retry-After. */
export function googleStatusError(what: string, res: HttpResponse): GoogleApiError {
  return new GoogleApiError(
    `${what}: HTTP ${res.status}${googleErrorSuffix(res.json)}`,
    res.status,
    parseRetryAfter(res.headers.get('retry-after')),
    googleError(res.json).status,
  );
}

/** The answer as JSON, or a GoogleApiError. `what` names the call in the error (never a secret). */
export async function googleJson<T>(what: string, url: string, init: OutboundInit, transport?: Transport): Promise<T> {
  const res = await request(url, init, { timeoutMs: GOOGLE_TIMEOUT_MS, maxBytes: GOOGLE_MAX_BYTES, transport });
  if (res.kind !== 'response')
    throw new GoogleApiError(`${what}: no answer (${res.kind === 'network' ? 'network error' : 'timeout'})`, 0);
  if (!is2xx(res.status)) throw googleStatusError(what, res);
  if (res.text === '') return {} as T;
  if (res.json === undefined) throw new GoogleApiError(`${what}: the answer is not JSON`, 502);
  return res.json as T;
}
