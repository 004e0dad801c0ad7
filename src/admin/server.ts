/**
 * The admin listener (docs/admin.md): its own `node:http` server on `admin.bind:admin.port`, never the hooks port.
 * A small router over every feature's `AdminRoute`s, bearer auth with the admin tokens (constant-time, the hook
 * tokens refused, failures throttled per address: admin/auth-gate.ts), the hooks listener's fair connection caps
 * (net/connections.ts), and one error shape `{ ok: false, error, code }`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Audit } from '../audit.js';
import { AdminError, HookgateError, type ErrorCode } from '../errors.js';
import { isExpired, type TokenSet } from '../ingress/auth.js';
import { sendJson } from '../ingress/respond.js';
import type { Logger } from '../log.js';
import { type ConnectionCounts, ConnectionGuard, nodeCap } from '../net/connections.js';
import { type AdminClientPolicy, AdminAuthGate } from './auth-gate.js';
import type { AdminRoute } from './route.js';

/** What a request's method and path found: a route and its parameters, or why not (404, 405 with `Allow`). */
export type RouteMatch =
  | { kind: 'route'; route: AdminRoute; params: Record<string, string> }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed'; allow: string[] };

interface Compiled {
  route: AdminRoute;
  segments: string[];
}

/** The router: pure, built once from the routes. `:name` segments match one non-empty path segment. */
export function compileRoutes(routes: readonly AdminRoute[]): (method: string, path: string) => RouteMatch {
  const compiled: Compiled[] = routes.map((route) => ({ route, segments: route.path.split('/').slice(1) }));
  return (method, path) => {
    const parts = path.split('/').slice(1);
    const allow = new Set<string>();
    for (const c of compiled) {
      const params = matchSegments(c.segments, parts);
      if (!params) continue;
      if (c.route.method === method) return { kind: 'route', route: c.route, params };
      allow.add(c.route.method);
    }
    return allow.size ? { kind: 'method_not_allowed', allow: [...allow].sort() } : { kind: 'not_found' };
  };
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const part = parts[i]!;
    if (p.startsWith(':')) {
      if (!part) return undefined;
      let value: string;
      try {
        value = decodeURIComponent(part);
      } catch {
        return undefined; // a malformed escape names nothing
      }
      params[p.slice(1)] = value;
    } else if (p !== part) return undefined;
  }
  return params;
}

/** The status of an error a handler threw: by code, never by message. */
export function statusOf(err: unknown): {
  status: number;
  code: ErrorCode;
  message: string;
  headers?: Record<string, string> | undefined;
} {
  if (err instanceof AdminError)
    return { status: err.status, code: err.code, message: err.message, headers: err.headers };
  if (err instanceof HookgateError) {
    switch (err.code) {
      case 'invalid_query':
        return { status: 400, code: err.code, message: err.message };
      case 'not_retryable':
        return { status: 409, code: err.code, message: err.message };
      case 'store_unavailable':
        return { status: 503, code: 'unavailable', message: 'the store is unavailable; try again shortly' };
    }
  }
  return { status: 500, code: 'internal', message: 'internal error' };
}

export function sendAdminError(res: ServerResponse, err: unknown): void {
  const { status, code, message, headers } = statusOf(err);
  if (res.headersSent) return void res.destroy();
  sendJson(res, status, { ok: false, error: message, code }, headers);
}

/**
 * The tokens as the current config has them, ready for constant-time compares: read per request (built once per
 * config generation, src/generation.ts), so a reloaded `admin.token` or `admin.tokens` applies at once.
 */
export interface AdminTokens {
  admin(): TokenSet;
  /** Every token the hooks accept (expired ones too): never accepted here, even if it were also an admin token. */
  hooks(): TokenSet;
}

/**
 * The id of the admin token `presented` is, or undefined: none, a wrong one, an expired one, or one that is also a
 * hook token. Both lists are compared in full whatever matched (ingress/auth.ts, `TokenSet`).
 */
export function adminAuthorizer(
  tokens: AdminTokens,
  now: () => number = Date.now,
): (presented: string | undefined) => string | undefined {
  return (presented) => {
    if (presented === undefined) return undefined;
    const admin = tokens.admin().find(presented);
    const hook = tokens.hooks().find(presented);
    return admin !== undefined && hook === undefined && !isExpired(admin, now()) ? admin.id : undefined;
  };
}

export interface AdminServerOptions {
  bind: string;
  port: number;
  routes: readonly AdminRoute[];
  tokens: AdminTokens;
  logger: Logger;
  /** The trusted proxies and the auth-failure limit of the current config, read per connection and per request. */
  clients: () => AdminClientPolicy;
  /** Where a lockout is recorded (kind `lockout`, detail `listener: "admin"`). */
  audit?: Pick<Audit, 'record'>;
  /** Open connections at most (default ADMIN_MAX_CONNECTIONS), shared fairly between addresses (net/connections.ts). */
  maxConnections?: number;
  /** Open connections from one address at most (default ADMIN_MAX_CONNECTIONS_PER_ADDRESS). */
  maxConnectionsPerAddress?: number;
}

/**
 * The admin listener's own bounds: an operator's browser, a scraper and a few `hookgate tail`s need a handful of
 * connections (the live feed serves at most 64 streams); whoever reaches the port without the token must not be
 * able to hold more, nor hold one open by sending its headers slowly.
 */
export const ADMIN_MAX_CONNECTIONS = 256;
/** A browser opens at most 6 per host; a dashboard, a scraper and a few `hookgate tail`s fit many times over. */
export const ADMIN_MAX_CONNECTIONS_PER_ADDRESS = 32;
const ADMIN_HEADERS_TIMEOUT_MS = 10_000;
const ADMIN_REQUEST_TIMEOUT_MS = 30_000;

export interface AdminListener {
  readonly url: string;
  readonly port: number;
  /** What the connection caps refused and evicted since the start (the metrics). */
  connectionCounts(): Readonly<ConnectionCounts>;
  /** Stop accepting and close every connection at once (long-lived feed streams included). */
  close(): Promise<void>;
}

export async function startAdminServer(opts: AdminServerOptions): Promise<AdminListener> {
  const route = compileRoutes(opts.routes);
  const gate = new AdminAuthGate(adminAuthorizer(opts.tokens), opts.clients, opts.logger, opts.audit);
  const maxConnections = opts.maxConnections ?? ADMIN_MAX_CONNECTIONS;
  const caps = {
    maxConnections,
    maxConnectionsPerAddress: Math.min(
      maxConnections,
      opts.maxConnectionsPerAddress ?? ADMIN_MAX_CONNECTIONS_PER_ADDRESS,
    ),
  };
  const guard = new ConnectionGuard('admin', caps, gate.policy().clientIps, opts.logger);
  gate.onChange((policy) => guard.setLimits(caps, policy.clientIps));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://admin.invalid');
    } catch {
      throw new AdminError(404, 'not_found', 'no such path');
    }
    const found = route(req.method ?? 'GET', url.pathname);
    if (found.kind === 'not_found')
      throw new AdminError(404, 'not_found', `no admin endpoint at ${url.pathname.slice(0, 200)}`);
    if (found.kind === 'method_not_allowed') {
      throw new AdminError(405, 'method_not_allowed', `use ${found.allow.join(' or ')}`, {
        allow: found.allow.join(', '),
      });
    }
    if (found.route.auth !== false) gate.check(req);
    await found.route.handle({ req, res, params: found.params, query: url.searchParams });
  };
  const server = createServer((req, res) => {
    handle(req, res)
      .catch((err: unknown) => {
        const { status, code } = statusOf(err);
        // The code and the class only: a message may quote what a caller sent.
        if (status >= 500)
          opts.logger.warn(
            { code, err: err instanceof Error ? err.name : typeof err, path: req.url?.split('?')[0]?.slice(0, 200) },
            'admin request failed',
          );
        sendAdminError(res, err);
      })
      .finally(() => guard.answered(req.socket));
  });
  server.maxConnections = nodeCap(caps);
  server.on('connection', (socket: Socket) => {
    gate.policy(); // a reload's trusted proxies, before the address is judged
    guard.admit(socket);
  });
  server.on('drop', () => guard.dropped());
  server.headersTimeout = ADMIN_HEADERS_TIMEOUT_MS;
  // The time to receive a request, not to answer it: a live-feed stream stays open as long as its client reads.
  server.requestTimeout = ADMIN_REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    connectionCounts: () => guard.counts,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
