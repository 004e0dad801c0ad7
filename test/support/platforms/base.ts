/**
 * The common machinery of the platform stand-ins: a node:http server on 127.0.0.1:<random port> that records every
 * request, lets a test queue failures, and hands each request to the platform's handler, which answers what the
 * real API answers. Reusable by end-to-end tests: start one, point the channel's apiBaseUrl/serverUrl at `url`,
 * read `received`.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Failures a test can queue with failNext(n, kind):
 * - rate_limit: the platform's own rate-limit answer (status, body and headers as the real API sends them)
 * - server_error: the platform's 5xx answer
 * - disconnect: the connection is dropped without an answer (network error on the client)
 * - hang: no answer at all (the client's timeout must fire)
 */
export type FailureKind = 'rate_limit' | 'server_error' | 'disconnect' | 'hang';

export interface RecordedRequest {
  method: string;
  /** Path without the query string, still percent-encoded (decode segments after splitting). */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** Parsed JSON or form body; undefined when it is neither. */
  body: unknown;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface StandIn<M> {
  /** Base URL to configure as the channel's apiBaseUrl / serverUrl. */
  url: string;
  /** Messages the platform accepted: what the recipient would see, in order. */
  received: M[];
  /** Every request, accepted or not. */
  requests: RecordedRequest[];
  /**
   * The next n message sends fail with `kind` (token requests are not affected). `headers` are added to the
   * platform's failure answer, e.g. `{ 'retry-after': '3' }` as a proxy or the platform's front end may send it.
   */
  failNext(n: number, kind: FailureKind, headers?: Record<string, string>): void;
  /** Failures queued by failNext that no message send has taken yet. */
  pendingFailures(): number;
  /** Resolves once `count` messages were accepted (for end-to-end tests that deliver asynchronously). */
  waitForMessages(count: number, timeoutMs?: number): Promise<M[]>;
  close(): Promise<void>;
}

export interface HandlerContext<M> {
  /** Record an accepted message. */
  accept(message: M): void;
  /** A queued failure for this message send, if any: return `handle(kind)`'s reply, or drop/hang the connection. */
  takeFailure(): FailureKind | undefined;
}

/** What the handler decides: a reply, or one of the connection-level failures. */
export type Outcome = Reply | 'disconnect' | 'hang';

export async function startStandIn<M>(
  handle: (req: RecordedRequest, ctx: HandlerContext<M>) => Outcome,
): Promise<StandIn<M>> {
  const received: M[] = [];
  const requests: RecordedRequest[] = [];
  const failures: Array<{ kind: FailureKind; headers: Record<string, string> | undefined }> = [];
  // The failure the request being handled took (handlers run synchronously, one request at a time).
  let taken: (typeof failures)[number] | undefined;
  const waiters: Array<{ count: number; resolve: (m: M[]) => void }> = [];

  const ctx: HandlerContext<M> = {
    accept(message) {
      received.push(message);
      for (const w of [...waiters]) {
        if (received.length >= w.count) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve([...received]);
        }
      }
    },
    takeFailure: () => {
      taken = failures.shift();
      return taken?.kind;
    },
  };

  /** The headers queued with the failure this request took, added to the platform's answer. */
  const withTakenHeaders = (outcome: Outcome): Outcome =>
    taken?.headers && typeof outcome === 'object'
      ? { ...outcome, headers: { ...outcome.headers, ...taken.headers } }
      : outcome;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const u = new URL(req.url ?? '/', 'http://stand-in');
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        rawBody,
        body: parseBody(req.headers['content-type'], rawBody),
      };
      requests.push(recorded);
      let outcome: Outcome;
      taken = undefined;
      try {
        outcome = handle(recorded, ctx);
      } catch (err) {
        outcome = { status: 500, body: { standInError: String(err) } };
      }
      outcome = withTakenHeaders(outcome);
      if (outcome === 'hang') return;
      if (outcome === 'disconnect') {
        req.socket.destroy();
        return;
      }
      send(res, outcome);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    received,
    requests,
    failNext(n, kind, headers) {
      for (let i = 0; i < n; i++) failures.push({ kind, headers });
    },
    pendingFailures: () => failures.length,
    waitForMessages(count, timeoutMs = 5000) {
      if (received.length >= count) return Promise.resolve([...received]);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`stand-in: ${received.length} of ${count} messages after ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseBody(contentType: string | undefined, raw: string): unknown {
  if (!raw) return undefined;
  if (contentType?.startsWith('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(raw));
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, reply: Reply): void {
  const headers: Record<string, string> = { ...reply.headers };
  let payload = '';
  if (reply.body !== undefined) {
    payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    headers['content-type'] ??= typeof reply.body === 'string' ? 'text/plain' : 'application/json';
  }
  res.writeHead(reply.status, headers);
  res.end(payload);
}

/** A JSON object view of a request body, for the field checks every platform makes. */
export function obj(body: unknown): Record<string, unknown> {
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

/** Resolve the failure a handler took into its outcome: connection-level kinds pass through. */
export function failureOutcome(
  kind: FailureKind,
  platformReply: (kind: 'rate_limit' | 'server_error') => Reply,
): Outcome {
  return kind === 'disconnect' || kind === 'hang' ? kind : platformReply(kind);
}

/** The bearer token of an Authorization header, or undefined. */
export function bearer(headers: IncomingHttpHeaders): string | undefined {
  const m = /^Bearer (.+)$/.exec(headers.authorization ?? '');
  return m?.[1];
}
