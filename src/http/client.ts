/**
 * The one outbound HTTP client. Every call hookgate makes to another service — the model APIs, the messaging
 * platforms, Google (the Gmail API, the token endpoints, Pub/Sub), the CLI's calls to a running hookgate — is one
 * `request`, which answers with one `HttpOutcome`: the status, headers and body (bounded), or why there was none
 * (`timeout`, `aborted`, or `network` with the system's code, e.g. ECONNREFUSED — never a message).
 *
 * Its concerns compose around that call, each in its own module: timeouts (here, on src/deadline.ts), the response
 * size cap (here), the redirect policy (here: not followed), retries with Retry-After (retry.ts), bearer tokens and
 * their cache (token.ts), and the error family for "the other side said no" (errors.ts).
 *
 * Target URLs come only from the config (a provider's `baseUrl`, a channel's base URL or webhook target, the
 * `hooks.gmail` URLs) or from the operator's own CLI options: never from a request, a payload or an answer. A
 * caller that builds a URL puts request data only into one path segment or a query value (`onePathSegment`).
 *
 * Nothing here puts a URL, a header value or a body into an error or an outcome: several platforms carry the
 * credential in the URL (Telegram's /bot<token>/, BlueBubbles' ?password=) and bodies carry message text.
 */
import type { Agent, Dispatcher } from 'undici';
import { type AbortLike, deadline } from '../deadline.js';
import { errorCode, readCapped } from '../http-util.js';
import { plainRequest } from './plain.js';

/** What came back from one request: an HTTP answer, or why there was none. */
export type HttpOutcome =
  | {
      kind: 'response';
      status: number;
      /** The server's reason phrase (`Not Found`): for a message when the body gives no reason. */
      statusText: string;
      headers: Headers;
      /** The body as UTF-8, at most `maxBytes` of it. */
      text: string;
      /** The body parsed as JSON; undefined when it is not JSON (or empty). */
      json: unknown;
      /** The body was longer than `maxBytes`: `text` is its start, the rest was never read. */
      truncated: boolean;
    }
  | { kind: 'timeout' }
  | { kind: 'aborted' }
  | { kind: 'network' /** a code like ECONNREFUSED, never a message (messages can contain the URL) */; code: string };

export type HttpResponse = Extract<HttpOutcome, { kind: 'response' }>;
export type HttpFailure = Exclude<HttpOutcome, { kind: 'response' }>;

export interface OutboundInit {
  /** GET without a body, POST with one, unless said. */
  method?: string;
  headers?: Record<string, string> | Headers;
  /** Bytes are sent as they are (a signed body). */
  body?: string | Uint8Array | undefined;
}

/** A transport with the shape of `fetch`: undici's (below); a stand-in in tests that script a failure. */
export type Transport = (url: string, init: RequestInit) => Promise<Response>;

export interface RequestOptions {
  /** The budget of the whole call, connect to last body byte. None: only `signal` ends it. */
  timeoutMs?: number | undefined;
  /** The caller's stop (the outbox stopping, a run's deadline): the outcome is then `aborted`. */
  signal?: AbortLike | undefined;
  /**
   * The largest body read, in bytes (default 1 MiB); a function of the status to read less of an error page. 0:
   * the body is not read at all (released at once).
   */
  maxBytes?: number | ((status: number) => number) | undefined;
  /**
   * `manual` (the default): a 3xx is the outcome. A redirect on an API call is a misconfigured URL; following it
   * would re-send the credentials elsewhere and turn a POST into a GET on 301/302. No caller follows today.
   */
  redirect?: 'manual' | 'follow' | undefined;
  /** An undici dispatcher made by `agent()` (the model providers' Agent without idle limits). */
  dispatcher?: Dispatcher | undefined;
  /** Replaces undici's fetch: for tests only. */
  transport?: Transport | undefined;
  /** An `http:` URL goes through Node's `http` module, not `fetch` (plain.ts): a short command's one call. */
  plainHttp?: boolean | undefined;
}

/** Platform answers are small JSON objects; a proxy's HTML error page or a hostile server must not fill memory. */
export const DEFAULT_MAX_BYTES = 1024 * 1024;

/*
 * Both transports are undici. Without a dispatcher: Node's own copy, the global `fetch`, which Node loads on first
 * use. With one: the npm copy's fetch (a dispatcher only takes effect on the fetch of the same undici copy), imported
 * on the first call that needs it, so a process that makes no such call (a config with only the `echo` model) never
 * holds it in memory.
 */
const importUndici = () => import('undici');
let undici: ReturnType<typeof importUndici> | undefined;
const loadUndici = () => (undici ??= importUndici());

/** An undici Agent with the given options, for `RequestOptions.dispatcher` (loads the npm undici). */
export async function agent(options: ConstructorParameters<typeof Agent>[0]): Promise<Dispatcher> {
  const m = await loadUndici();
  return new m.Agent(options);
}

async function transportFor(options: RequestOptions): Promise<Transport> {
  if (options.transport) return options.transport;
  if (options.dispatcher) return (await loadUndici()).fetch as unknown as Transport;
  return globalThis.fetch as Transport;
}

/** The `network` code of a failure that carried no system code. */
export const NO_CODE = 'fetch_failed';

export async function request(url: string, init: OutboundInit, options: RequestOptions = {}): Promise<HttpOutcome> {
  if (options.plainHttp && url.startsWith('http:') && !options.transport && !options.dispatcher) {
    const { maxBytes = DEFAULT_MAX_BYTES } = options;
    return plainRequest(url, init, {
      signal: options.signal,
      timeoutMs: options.timeoutMs,
      maxBytes: typeof maxBytes === 'function' ? maxBytes : () => maxBytes,
    });
  }
  const outer = options.signal;
  const limit = deadline(outer, options.timeoutMs, () => new DOMException('the request timed out', 'TimeoutError'));
  try {
    const transport = await transportFor(options);
    const res = await transport(url, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: init.headers,
      body: init.body,
      signal: limit.signal,
      redirect: options.redirect ?? 'manual',
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    } as RequestInit);
    const max =
      typeof options.maxBytes === 'function' ? options.maxBytes(res.status) : (options.maxBytes ?? DEFAULT_MAX_BYTES);
    if (max === 0) {
      await res.body?.cancel().catch(() => undefined);
      return {
        kind: 'response',
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
        text: '',
        json: undefined,
        truncated: false,
      };
    }
    const { text, truncated } = await readCapped(res.body, max);
    return {
      kind: 'response',
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
      text,
      json: truncated ? undefined : parseJson(text),
      truncated,
    };
  } catch (err) {
    return attemptFailure(err, outer, limit);
  } finally {
    limit.dispose();
  }
}

/** What a failed attempt was: stopped by the caller, out of time, or a network error (its code only). */
export function attemptFailure(err: unknown, outer: AbortLike | undefined, limit: { timedOut: boolean }): HttpFailure {
  if (outer?.aborted) return { kind: 'aborted' };
  if (limit.timedOut) return { kind: 'timeout' };
  return { kind: 'network', code: errorCode(err) ?? NO_CODE };
}

/** application/x-www-form-urlencoded: the OAuth token endpoints (RFC 6749) take nothing else. */
export function formBody(form: Record<string, string>): string {
  return new URLSearchParams(form).toString();
}

export const is2xx = (status: number): boolean => status >= 200 && status < 300;

/** The answer's body as JSON, or undefined when it is empty or not JSON. */
export function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A response whose body is read as it comes (a live feed: `hookgate tail`), or why there was none. The caller reads
 * `body` to its end or cancels it; only `signal` ends it early (a feed has no time limit, nor a size cap).
 */
export async function openStream(
  url: string,
  init: OutboundInit,
  options: { signal?: AbortSignal | undefined } = {},
): Promise<
  { kind: 'stream'; status: number; headers: Headers; body: ReadableStream<Uint8Array> | null } | HttpFailure
> {
  try {
    const res = await globalThis.fetch(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      body: init.body,
      signal: options.signal ?? null,
      redirect: 'manual',
    });
    return { kind: 'stream', status: res.status, headers: res.headers, body: res.body };
  } catch (err) {
    if (options.signal?.aborted) return { kind: 'aborted' };
    return { kind: 'network', code: errorCode(err) ?? NO_CODE };
  }
}

/**
 * `request` in the shape of `fetch`, for a library that takes a fetch of its own (jose's remote key set): the body
 * is read bounded, redirects are not followed, and a failure rejects as fetch's would (a TimeoutError on the
 * caller's timeout signal, an error carrying the system code otherwise).
 */
export function asFetch(
  options: Pick<RequestOptions, 'maxBytes'> = {},
): (url: string, init: { method?: string; headers?: Headers; signal?: AbortSignal }) => Promise<Response> {
  return async (url, init) => {
    const res = await request(
      url,
      { method: init.method, headers: init.headers },
      { signal: init.signal, maxBytes: options.maxBytes },
    );
    if (res.kind === 'response')
      return new Response(res.text === '' ? null : res.text, { status: res.status, headers: res.headers });
    if (res.kind === 'aborted') throw init.signal?.reason ?? new DOMException('the request was aborted', 'AbortError');
    if (res.kind === 'timeout') throw new DOMException('the request timed out', 'TimeoutError');
    throw Object.assign(new Error(`network error (${res.code})`), { code: res.code });
  };
}

/** The origin of a URL, for a message (its path and query may carry credentials); a fixed phrase when it does not parse. */
export function originOf(url: string, fallback = 'the server'): string {
  try {
    return new URL(url).origin;
  } catch {
    return fallback;
  }
}
