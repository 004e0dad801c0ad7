/**
 * What the platform channels share on top of the one outbound client (src/http): JSON and form requests with the
 * platforms' accept header, and the mapping of an outcome to a SendResult (the status → retryable/permanent rule,
 * Retry-After, the words of a transport failure), the OAuth token source of Google Chat and Teams, and the doctor's
 * check of a failure or a token.
 *
 * Nothing here ever puts a URL, a header value or a request body into an error string: several platforms carry
 * the credential in the URL (Telegram's /bot<token>/, BlueBubbles' ?password=) and bodies carry message text.
 */
import { isRetryableStatus, onePathSegment } from '../http-util.js';
import { parseRetryAfter } from '../retry-after.js';
import { type CheckResult, checkFail, checkOk } from '../check.js';
import { type HttpFailure, type HttpOutcome, type HttpResponse, is2xx, request } from '../http/client.js';
import { type Grant, type TokenSource, TokenCache, asRecord, requestToken, withBearer } from '../http/token.js';
import type { OutboundMessage, SendResult } from './types.js';

/** The ids a channel's warning about one send carries, so its line joins the delivery's (docs/operations.md, Logs). */
export type SentMessage = Pick<OutboundMessage, 'deliveryId' | 'runId'>;

export type { HttpOutcome } from '../http/client.js';
export { asRecord, is2xx };

export type SendFailure = Extract<SendResult, { ok: false }>;

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Per-request budget, connect to last body byte. */
  timeoutMs: number;
  /** The outbox's signal (service stopping). */
  signal?: AbortSignal | undefined;
}

export function postJson(url: string, body: unknown, options: RequestOptions): Promise<HttpOutcome> {
  return call(url, JSON.stringify(body), 'application/json; charset=utf-8', options);
}

/** A GET: the platforms' "who am I" calls (`hookgate doctor`). */
export function getJson(url: string, options: RequestOptions): Promise<HttpOutcome> {
  return call(url, undefined, undefined, options);
}

// Platform answers are small JSON objects: the client's default cap (1 MiB) bounds them; redirects are not followed.
function call(
  url: string,
  body: string | undefined,
  contentType: string | undefined,
  options: RequestOptions,
): Promise<HttpOutcome> {
  const headers = {
    accept: 'application/json',
    ...options.headers,
    ...(contentType ? { 'content-type': contentType } : {}),
  };
  return request(url, { headers, body }, { timeoutMs: options.timeoutMs, signal: options.signal });
}

/** Seconds (possibly fractional, as Telegram's retry_after and Discord's body retry_after are) → ms. */
export function secondsToMs(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.ceil(value * 1000) : undefined;
}

export function failure(
  error: string,
  retryable: boolean,
  extra: { status?: number | undefined; retryAfterMs?: number | undefined } = {},
): SendFailure {
  const out: SendFailure = { ok: false, retryable, error };
  if (extra.status !== undefined) out.status = extra.status;
  if (extra.retryAfterMs !== undefined) out.retryAfterMs = extra.retryAfterMs;
  return out;
}

/**
 * `to` as the one path segment a platform's URL puts it in (`onePathSegment`), or, when the platform's rule refuses
 * it, a failure that is not retried and names the shape expected: a recipient that slipped past the accept-time check
 * never reaches another path of the API.
 */
export function recipientSegment(
  platform: string,
  rule: (to: string) => string | undefined,
  to: string,
): { segment: string } | SendFailure {
  const expected = rule(to);
  const segment = expected === undefined ? onePathSegment(to) : undefined;
  return segment === undefined
    ? failure(`${platform}: \`to\` must be ${expected ?? 'one path segment'}`, false)
    : { segment };
}

/** The generic rule for an HTTP error answer: retryable by status, wait hint from the Retry-After header. */
export function statusFailure(
  platform: string,
  status: number,
  detail: string | undefined,
  headers?: Headers,
): SendFailure {
  const retryable = isRetryableStatus(status);
  const what = detail ? `: ${detail}` : '';
  return failure(`${platform} answered HTTP ${status}${what}`, retryable, {
    status,
    retryAfterMs: retryable ? parseRetryAfter(headers?.get('retry-after')) : undefined,
  });
}

/** No answer at all. Always retryable: the request may not have reached the platform. */
export function transportFailure(platform: string, outcome: HttpFailure): SendFailure {
  switch (outcome.kind) {
    case 'timeout':
      return failure(`${platform} did not answer in time`, true);
    case 'aborted':
      return failure(`${platform} request aborted (service stopping)`, true);
    case 'network':
      return failure(`${platform} unreachable (${outcome.code})`, true);
  }
}

/**
 * A failed "who am I" call as a doctor finding: the same words a send failing the same way logs (the platform's
 * error mapping made them), plus what to change when the platform refused the credentials.
 */
export function checkFromFailure(f: SendFailure, credentialFix: string): CheckResult {
  const refused = f.status === 401 || f.status === 403;
  return checkFail(
    f.error,
    refused ? credentialFix : f.status === undefined ? 'check the base URL and that this host can reach it' : undefined,
  );
}

/** Obtaining an OAuth token is the check of the platforms that use one (Google Chat, MS Teams). */
export async function checkToken(
  source: TokenSource<SendFailure>,
  credentialFix: string,
  what: string,
): Promise<CheckResult> {
  const tok = await source.get();
  if (tok.ok) return checkOk(`obtained an access token (${what})`);
  // A token endpoint refuses bad credentials with 400 invalid_grant / invalid_client as often as with 401.
  const f = tok.failure;
  return f.status === 400 ? checkFail(f.error, credentialFix) : checkFromFailure(f, credentialFix);
}

/**
 * The OAuth token source of a platform (Google Chat's JWT grant, Teams' client credentials): the token endpoint's
 * answer cached until shortly before it expires. 400/401 (invalid_client, invalid_grant, unauthorized_client) are
 * permanent: the credentials are wrong and retrying cannot fix them. 429/5xx/network are retryable.
 */
export function oauthTokens(
  platform: string,
  tokenUrl: string,
  grant: Grant,
  timeoutMs: number,
): TokenSource<SendFailure> {
  return new TokenCache(async () => {
    // A missing expires_in gets a short life: better to ask again than to use a dead token for an hour.
    const answer = await requestToken(tokenUrl, grant, { timeoutMs, defaultLifetimeMs: 5 * 60_000 });
    if (answer.ok) return answer;
    const { outcome } = answer;
    const what = `${platform} token endpoint`;
    if (outcome.kind !== 'response') return { ok: false, failure: transportFailure(what, outcome) };
    if (is2xx(outcome.status))
      return {
        ok: false,
        failure: failure(`${what} answered without an access_token`, true, { status: outcome.status }),
      };
    const detail =
      [answer.error, answer.description && `(${answer.description})`].filter(Boolean).join(' ') || undefined;
    return { ok: false, failure: statusFailure(what, outcome.status, detail, outcome.headers) };
  });
}

/**
 * A 2xx whose body is not the platform's JSON (a proxy rewrote it, a stand-in is sloppy). 2xx means the platform
 * accepted the message; failing it would make the outbox send a duplicate. Logged, counted as sent.
 */
export function acceptedWithoutBody(
  platform: string,
  status: number,
  logger: { warn(obj: object, msg?: string): void },
  message: SentMessage,
): SendResult {
  logger.warn(
    { channel: platform, status, deliveryId: message.deliveryId, runId: message.runId },
    `${platform} answered ${status} without a readable body; counting the message as sent`,
  );
  return { ok: true };
}

/**
 * A 2xx answer means sent: with the platform's message id when `pickId` finds a string in the body (a body that is
 * not JSON still counts, with a warning). Anything else → undefined: the caller maps its platform's errors.
 */
export function sentOn2xx(
  platform: string,
  outcome: HttpResponse,
  logger: { warn(obj: object, msg?: string): void },
  pickId: (json: Record<string, unknown>) => unknown,
  message: SentMessage,
): SendResult | undefined {
  if (!is2xx(outcome.status)) return undefined;
  if (outcome.json === undefined) return acceptedWithoutBody(platform, outcome.status, logger, message);
  const id = pickId(asRecord(outcome.json));
  return typeof id === 'string' ? { ok: true, platformIds: [id] } : { ok: true };
}

/**
 * A JSON POST with a bearer token from `tokens` (Google Chat, Teams): the SendResult when it is already decided (no
 * token, no answer, or a 2xx: sent, with the id `pickId` finds), else the error answer for the platform to word.
 */
export async function postWithToken(
  platform: string,
  tokens: TokenSource<SendFailure>,
  url: string,
  body: unknown,
  options: Omit<RequestOptions, 'headers'>,
  logger: { warn(obj: object, msg?: string): void },
  pickId: (json: Record<string, unknown>) => unknown,
  message: SentMessage,
): Promise<SendResult | HttpResponse> {
  const called = await withBearer(tokens, (token) =>
    postJson(url, body, { ...options, headers: { authorization: `Bearer ${token}` } }),
  );
  if (!called.ok) return called.failure;
  const outcome = called.outcome;
  if (outcome.kind !== 'response') return transportFailure(platform, outcome);
  return sentOn2xx(platform, outcome, logger, pickId, message) ?? outcome;
}
