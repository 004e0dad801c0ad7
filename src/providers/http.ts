/**
 * One JSON POST to a model API, with every failure turned into a ProviderError:
 * non-2xx → provider_http (408/429/5xx retryable, Retry-After parsed), network → provider_unreachable,
 * abort → provider_timeout, unparseable 2xx body → provider_bad_response.
 * Messages never carry request text or credentials: reasons from the server are redacted and bounded.
 */
import type { AbortLike } from '../deadline.js';
import { isRetryableStatus } from '../http-util.js';
import { type HttpFailure, type RequestOptions, NO_CODE, agent, is2xx, originOf, request } from '../http/client.js';
import { parseRetryAfter as parseRetryAfterValue } from '../retry-after.js';
import { type CheckResult, checkFail, checkOk, checkWarn } from '../check.js';
import { redactSecrets } from '../text-safe.js';
import { ProviderError } from './types.js';

export interface JsonPost {
  url: string;
  headers: Record<string, string>;
  /** Undefined: a GET (the doctor's "list models" call). */
  body: unknown;
  signal: AbortLike;
  /** Prefix of every error message, e.g. `openai-chat provider "local"`. */
  label: string;
  /** Values that must never appear in an error message (api key, configured header values). */
  secrets: ReadonlyArray<string | undefined>;
  /** Largest accepted 2xx body. */
  maxResponseBytes?: number;
}

export interface JsonReply {
  json: unknown;
  status: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
const MAX_ERROR_BODY_BYTES = 16 * 1024;

/** Socket-level error codes (node + undici) that mean "could not talk to the server"; all worth a retry. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** undici's own idle timeouts (300 s on a default fetch; off with modelDispatcher): the server is up but slow. */
const SLOW_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Model calls may work for minutes before the first byte of the answer (no streaming; a slow local model, a long
 * thinking budget). Node's global fetch gives up after 300 s without response headers or body data, whatever the
 * run's timeout; this dispatcher has no such idle limits. Every call is still bounded: by the run's `timeoutSeconds`
 * and the provider's `requestTimeoutMs`, through the request's abort signal. Made on the first model call (it loads
 * undici: see src/http/client.ts).
 */
let modelDispatcher: Promise<RequestOptions['dispatcher']> | undefined;
const dispatcher = () => (modelDispatcher ??= agent({ headersTimeout: 0, bodyTimeout: 0 }));

export async function postJson(req: JsonPost): Promise<JsonReply> {
  const get = req.body === undefined;
  const limit = req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  // The URL is the provider's configured baseUrl plus the API's path. A redirect is not followed (the client's
  // default): it would replay credentials to another URL; it surfaces as an HTTP error instead.
  const res = await request(
    req.url,
    {
      method: get ? 'GET' : 'POST',
      headers: mergeHeaders(
        req.headers,
        get ? { accept: 'application/json' } : { 'content-type': 'application/json', accept: 'application/json' },
      ),
      body: get ? undefined : JSON.stringify(req.body),
    },
    // Only the start of an error body is read: enough for a reason, never a memory sink.
    {
      signal: req.signal,
      dispatcher: await dispatcher(),
      maxBytes: (status) => (is2xx(status) ? limit : MAX_ERROR_BODY_BYTES),
    },
  );
  if (res.kind !== 'response') throw transportError(req, res);

  if (!is2xx(res.status)) {
    const reason = redactSecrets(errorReason(res.text, res.headers.get('content-type')) || res.statusText, req.secrets);
    const retryable = isRetryableStatus(res.status);
    const retryAfterMs = retryable ? parseRetryAfter(res.headers) : undefined;
    throw new ProviderError('provider_http', `${req.label}: HTTP ${res.status}${reason ? `: ${reason}` : ''}`, {
      retryable,
      status: res.status,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }

  if (res.truncated) throw badResponse(req.label, `the body is larger than ${limit} bytes`);
  try {
    return { json: JSON.parse(res.text) as unknown, status: res.status };
  } catch (err) {
    throw badResponse(req.label, 'the body is not JSON', err);
  }
}

/**
 * `hookgate doctor` for an HTTP model API: GET its model list (`{ data: [...] }` at OpenAI and Anthropic), which
 * costs no tokens, with the key the runs use; the failure read through the same mapping as a run's.
 */
export async function checkModelList(req: Omit<JsonPost, 'body'>, keyFix: string): Promise<CheckResult> {
  // The CLI names the provider already: the label in front of every message would only repeat it.
  const strip = (m: string) => (m.startsWith(`${req.label}: `) ? m.slice(req.label.length + 2) : m);
  try {
    const { json } = await postJson({ ...req, body: undefined });
    const data = json && typeof json === 'object' ? (json as Record<string, unknown>)['data'] : undefined;
    return checkOk(
      `${originOf(req.url)} answers${Array.isArray(data) ? `; ${data.length} model${data.length === 1 ? '' : 's'} listed` : ''}`,
    );
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    if (err.status === 401 || err.status === 403)
      return checkFail(`the API key is refused (${strip(err.message)})`, keyFix);
    // Some OpenAI-compatible servers have no model list: the server answered, which is what can be told.
    if (err.status === 404 || err.status === 405)
      return checkWarn(
        `${originOf(req.url)} answers but has no model list (${strip(err.message)}); the key is not checked`,
      );
    return checkFail(
      strip(err.message),
      err.code === 'provider_unreachable'
        ? 'check baseUrl, and that the server runs and this host can reach it'
        : undefined,
    );
  }
}

/** Configured extra headers plus the provider's own, which win whatever the case of a configured name. */
export function mergeHeaders(
  extra: Record<string, string> | undefined,
  own: Record<string, string>,
): Record<string, string> {
  const ownNames = new Set(Object.keys(own).map((k) => k.toLowerCase()));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(extra ?? {})) if (!ownNames.has(k.toLowerCase())) out[k] = v;
  return { ...out, ...own };
}

export function badResponse(label: string, why: string, cause?: unknown): ProviderError {
  return new ProviderError('provider_bad_response', `${label}: unexpected reply: ${why}`, { retryable: false, cause });
}

function transportError(req: JsonPost, failure: HttpFailure): ProviderError {
  const cause = { kind: failure.kind, ...(failure.kind === 'network' ? { code: failure.code } : {}) };
  if (failure.kind !== 'network') {
    // The retry loop tells a per-attempt timeout from the run's abort; here both are "aborted".
    return new ProviderError('provider_timeout', `${req.label}: request aborted`, { retryable: false, cause });
  }
  const code = failure.code;
  if (SLOW_CODES.has(code)) {
    return new ProviderError('provider_timeout', `${req.label}: the server stopped answering (${code})`, {
      retryable: true,
      cause,
    });
  }
  // A transport failure with an unknown code (or none) counts as unreachable.
  const what = NETWORK_CODES.has(code) ? code : code !== NO_CODE ? `network error ${code}` : 'network error';
  return new ProviderError('provider_unreachable', `${req.label}: cannot reach ${originOf(req.url)} (${what})`, {
    retryable: true,
    cause,
  });
}

/**
 * The server's own words from an error body: `{error:{code|type, message}}` (OpenAI, Anthropic, Ollama),
 * `{error:"..."}`, `{message}` (vLLM), `{detail}` (FastAPI); a short plain-text body; never an HTML page.
 */
export function errorReason(text: string, contentType: string | null): string {
  const trimmed = text.trim();
  if (!trimmed) return '';
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch {
    if (/html/i.test(contentType ?? '') || trimmed.startsWith('<')) return '';
    return trimmed;
  }
  if (!json || typeof json !== 'object') return '';
  const o = json as Record<string, unknown>;
  const err = o['error'];
  if (typeof err === 'string') return err;
  if (err && typeof err === 'object') {
    const e = err as Record<string, unknown>;
    const kind = typeof e['code'] === 'string' ? e['code'] : typeof e['type'] === 'string' ? e['type'] : undefined;
    const message = typeof e['message'] === 'string' ? e['message'] : undefined;
    if (kind && message) return `${kind}: ${message}`;
    if (message || kind) return (message ?? kind) as string;
  }
  if (typeof o['message'] === 'string') return o['message'];
  if (typeof o['detail'] === 'string') return o['detail'];
  return '';
}

/**
 * Milliseconds to wait from `retry-after-ms` (OpenAI/Anthropic extension) or `Retry-After` (seconds or HTTP date).
 * Unparseable values are ignored (the normal backoff applies).
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  return parseRetryAfterValue(headers.get('retry-after'), now);
}
