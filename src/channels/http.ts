/**
 * The HTTP mechanics shared by the platform channels: POST with a timeout and the caller's abort signal,
 * a bounded response read, Retry-After parsing, and the status → retryable/permanent rule.
 *
 * Nothing here ever puts a URL, a header value or a request body into an error string: several platforms carry
 * the credential in the URL (Telegram's /bot<token>/, BlueBubbles' ?password=) and bodies carry message text.
 */
import { errorCode, isRetryableStatus, onePathSegment, readCapped } from '../http-util.js';
import { parseRetryAfter } from '../retry-after.js';
import { type CheckResult, checkFail, checkOk } from '../check.js';
import { logSafeOptional } from '../text-safe.js';
import type { SendResult } from './types.js';

export type SendFailure = Extract<SendResult, { ok: false }>;

/** What came back from one request: an HTTP answer, or why there was none. */
export type HttpOutcome =
  | { kind: 'response'; status: number; headers: Headers; text: string; /** undefined when the body is not JSON */ json: unknown }
  | { kind: 'timeout' }
  | { kind: 'aborted' }
  | { kind: 'network'; /** a code like ECONNREFUSED, never a message (messages can contain the URL) */ code: string };

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Per-request budget, connect to last body byte. */
  timeoutMs: number;
  /** The outbox's signal (service stopping). */
  signal?: AbortSignal | undefined;
}

/** Platform answers are small JSON objects; a proxy's HTML error page or a hostile server must not fill memory. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export function postJson(url: string, body: unknown, options: RequestOptions): Promise<HttpOutcome> {
  return request(url, JSON.stringify(body), 'application/json; charset=utf-8', options);
}

/** A GET: the platforms' "who am I" calls (`hookgate doctor`). */
export function getJson(url: string, options: RequestOptions): Promise<HttpOutcome> {
  return request(url, undefined, undefined, options);
}

/** application/x-www-form-urlencoded: the OAuth token endpoints (RFC 6749) take nothing else. */
export function postForm(url: string, form: Record<string, string>, options: RequestOptions): Promise<HttpOutcome> {
  return request(url, new URLSearchParams(form).toString(), 'application/x-www-form-urlencoded', options);
}

async function request(url: string, body: string | undefined, contentType: string | undefined, options: RequestOptions): Promise<HttpOutcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const res = await fetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { accept: 'application/json', ...options.headers, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
      signal,
      // A redirect on an API call is a misconfigured base URL; following it would re-send credentials elsewhere
      // (and turn POST into GET on 301/302). Surface it instead.
      redirect: 'manual',
    });
    const { text } = await readCapped(res.body, MAX_RESPONSE_BYTES);
    return { kind: 'response', status: res.status, headers: res.headers, text, json: parseJson(text) };
  } catch (err) {
    if (options.signal?.aborted) return { kind: 'aborted' };
    if (timeout.aborted) return { kind: 'timeout' };
    return { kind: 'network', code: errorCode(err) ?? 'fetch_failed' };
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
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
export function recipientSegment(platform: string, rule: (to: string) => string | undefined, to: string): { segment: string } | SendFailure {
  const expected = rule(to);
  const segment = expected === undefined ? onePathSegment(to) : undefined;
  return segment === undefined ? failure(`${platform}: \`to\` must be ${expected ?? 'one path segment'}`, false) : { segment };
}

/** The generic rule for an HTTP error answer: retryable by status, wait hint from the Retry-After header. */
export function statusFailure(platform: string, status: number, detail: string | undefined, headers?: Headers): SendFailure {
  const retryable = isRetryableStatus(status);
  const what = detail ? `: ${detail}` : '';
  return failure(`${platform} answered HTTP ${status}${what}`, retryable, {
    status,
    retryAfterMs: retryable ? parseRetryAfter(headers?.get('retry-after')) : undefined,
  });
}

/** No answer at all. Always retryable: the request may not have reached the platform. */
export function transportFailure(platform: string, outcome: Exclude<HttpOutcome, { kind: 'response' }>): SendFailure {
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
  return checkFail(f.error, refused ? credentialFix : f.status === undefined ? 'check the base URL and that this host can reach it' : undefined);
}

/** Obtaining an OAuth token is the check of the platforms that use one (Google Chat, MS Teams). */
export async function checkToken(source: TokenSource, credentialFix: string, what: string): Promise<CheckResult> {
  const tok = await source.get();
  if (tok.ok) return checkOk(`obtained an access token (${what})`);
  // A token endpoint refuses bad credentials with 400 invalid_grant / invalid_client as often as with 401.
  const f = tok.failure;
  return f.status === 400 ? checkFail(f.error, credentialFix) : checkFromFailure(f, credentialFix);
}

/** A plain object view of a parsed JSON body, for reading optional fields without casts at every step. */
export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** An OAuth 2.0 access token (RFC 6749 §5.1) and when to stop using it. */
export type TokenOutcome = { ok: true; token: string; expiresAtMs: number } | { ok: false; failure: SendFailure };

/**
 * POST a token request (form-encoded, RFC 6749 §4.4 client credentials or RFC 7523 JWT bearer) and read the
 * answer. 400/401 (invalid_client, invalid_grant, unauthorized_client) are permanent: the credentials are wrong
 * and retrying cannot fix them. 429/5xx/network are retryable.
 */
export async function requestOAuthToken(
  platform: string,
  tokenUrl: string,
  form: Record<string, string>,
  timeoutMs: number,
  now: () => number = Date.now,
): Promise<TokenOutcome> {
  const outcome = await postForm(tokenUrl, form, { timeoutMs });
  if (outcome.kind !== 'response') return { ok: false, failure: transportFailure(`${platform} token endpoint`, outcome) };
  const body = asRecord(outcome.json);
  const token = body.access_token;
  if (outcome.status === 200 && typeof token === 'string' && token) {
    const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : Number(body.expires_in);
    // A missing expires_in gets a short life: better to ask again than to use a dead token for an hour.
    const lifetimeMs = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : 5 * 60_000;
    return { ok: true, token, expiresAtMs: now() + lifetimeMs };
  }
  const code = logSafeOptional(body.error, 60);
  const desc = logSafeOptional(body.error_description);
  const detail = [code, desc && `(${desc})`].filter(Boolean).join(' ') || undefined;
  if (outcome.status === 200) {
    return { ok: false, failure: failure(`${platform} token endpoint answered without an access_token`, true, { status: 200 }) };
  }
  const f = statusFailure(`${platform} token endpoint`, outcome.status, detail, outcome.headers);
  return { ok: false, failure: f };
}

/**
 * Caches one access token until shortly before it expires; concurrent sends share one in-flight request.
 * The in-flight request is not tied to any caller's abort signal, so one caller stopping does not fail the others.
 */
export class AccessTokenCache {
  private cached: { token: string; expiresAtMs: number } | undefined;
  private inflight: Promise<TokenOutcome> | undefined;

  constructor(
    private readonly fetchToken: () => Promise<TokenOutcome>,
    private readonly now: () => number = Date.now,
    /** Refresh this long before expiry, so a token never expires between get() and the platform reading it. */
    private readonly marginMs = 60_000,
  ) {}

  /** `fresh` is true when this call fetched the token (a 401 with a fresh token is not a stale-cache problem). */
  async get(): Promise<{ ok: true; token: string; fresh: boolean } | { ok: false; failure: SendFailure }> {
    const c = this.cached;
    if (c && this.now() < c.expiresAtMs - this.marginMs) return { ok: true, token: c.token, fresh: false };
    this.inflight ??= this.fetchToken().finally(() => {
      this.inflight = undefined;
    });
    const outcome = await this.inflight;
    if (!outcome.ok) return outcome;
    this.cached = { token: outcome.token, expiresAtMs: outcome.expiresAtMs };
    return { ok: true, token: outcome.token, fresh: true };
  }

  /** The platform rejected this token (revoked, rotated): forget it unless a newer one already replaced it. */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }
}

export const is2xx = (status: number): boolean => status >= 200 && status < 300;

/**
 * A 2xx whose body is not the platform's JSON (a proxy rewrote it, a stand-in is sloppy). 2xx means the platform
 * accepted the message; failing it would make the outbox send a duplicate. Logged, counted as sent.
 */
export function acceptedWithoutBody(platform: string, status: number, logger: { warn(obj: object, msg?: string): void }): SendResult {
  logger.warn({ channel: platform, status }, `${platform} answered ${status} without a readable body; counting the message as sent`);
  return { ok: true };
}

/**
 * A 2xx answer means sent: with the platform's message id when `pickId` finds a string in the body (a body that is
 * not JSON still counts, with a warning). Anything else → undefined: the caller maps its platform's errors.
 */
export function sentOn2xx(
  platform: string,
  outcome: Extract<HttpOutcome, { kind: 'response' }>,
  logger: { warn(obj: object, msg?: string): void },
  pickId: (json: Record<string, unknown>) => unknown,
): SendResult | undefined {
  if (!is2xx(outcome.status)) return undefined;
  if (outcome.json === undefined) return acceptedWithoutBody(platform, outcome.status, logger);
  const id = pickId(asRecord(outcome.json));
  return typeof id === 'string' ? { ok: true, platformIds: [id] } : { ok: true };
}

/** Where a channel gets its bearer token: an AccessTokenCache, or a fixed token from config. */
export interface TokenSource {
  get(): Promise<{ ok: true; token: string; fresh: boolean } | { ok: false; failure: SendFailure }>;
  invalidate(token: string): void;
}

/** A configured token: never refreshed, so a 401 with it is final. */
export function staticToken(token: string): TokenSource {
  return { get: async () => ({ ok: true, token, fresh: true }), invalidate: () => {} };
}

/**
 * Calls the platform with a bearer token. A 401 answered to a *cached* token means it was revoked or rotated
 * early: drop it and try once more with a new one. A 401 to a token fetched just now is the real answer.
 */
export async function callWithToken(
  source: TokenSource,
  call: (token: string) => Promise<HttpOutcome>,
): Promise<{ ok: true; outcome: HttpOutcome } | { ok: false; failure: SendFailure }> {
  for (let attempt = 0; ; attempt++) {
    const tok = await source.get();
    if (!tok.ok) return tok;
    const outcome = await call(tok.token);
    if (outcome.kind === 'response' && outcome.status === 401 && !tok.fresh && attempt === 0) {
      source.invalidate(tok.token);
      continue;
    }
    return { ok: true, outcome };
  }
}
