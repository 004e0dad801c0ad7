import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { RawConfig } from '../config/schema/index.js';
import type { HttpErrorCode } from '../errors.js';
import type { ClientIpResolver } from '../net/client-ip.js';
import { ConnectionGuard, type ConnectionCounts, nodeCap } from '../net/connections.js';

export type ConnectionLimits = RawConfig['gateway']['limits'];

export interface Listener {
  readonly url: string;
  readonly port: number;
  /** Open connections, and requests being handled now (for the stop's log line). */
  load(): { connections: number; requests: number };
  /** Whether it accepts connections (false once its stop began): the admin listener's `/readyz` `ingress` check. */
  listening(): boolean;
  /** What the connection caps refused and evicted since the start (the metrics). */
  connectionCounts(): Readonly<ConnectionCounts>;
  /** A reload's `gateway.limits` and client addresses (the header-time check interval stays as started). */
  setLimits(limits: ConnectionLimits, clientIps: ClientIpResolver): void;
  /**
   * Stop accepting and close idle keep-alive connections; requests in flight are handled to the end and answered
   * with `Connection: close`. When `deadline` aborts, every connection still open is closed (a client trickling
   * its body cannot hold the stop). Resolves once the server is closed and every handler has settled (a handler
   * whose socket was closed still finishes its commit: what was accepted is in the store before it closes).
   */
  close(deadline?: AbortSignal): Promise<void>;
}

export interface ListenOptions {
  bind: string;
  port: number;
  /** The config generation's client addresses (`gateway.trustedProxies`). */
  clientIps: ClientIpResolver;
  limits: ConnectionLimits;
}

/** Node's answer to a request not received within the header or request time (its own default would be 400 here). */
const TIMEOUT_ANSWER = answer(408, 'Request Timeout', 'request_timeout', 'request not received in time');
const MALFORMED_ANSWER = 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n';

function answer(status: number, reason: string, code: HttpErrorCode, error: string): string {
  const body = JSON.stringify({ ok: false, error, code });
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

function applyLimits(server: Server, limits: ConnectionLimits): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = nodeCap(limits);
}

/**
 * The hooks listener: `node:http` on `bind:port` under `gateway.limits` (header and request time, keep-alive time, a
 * total and a per-address connection cap, shared fairly: net/connections.ts); a request not received in time is answered 408, a malformed one 400, and
 * the connection closed. `Expect: 100-continue` is not answered here: the handler invites the body
 * (`res.writeContinue()`) once the request may send it (body.ts `readBody`).
 */
export async function listen(
  /** Handles a request and calls `ended` once when its handling is over (handler.ts). */
  handler: (req: IncomingMessage, res: ServerResponse, ended: () => void) => void,
  where: ListenOptions,
  logger?: Logger,
): Promise<Listener> {
  const sockets = new Set<Socket>();
  // Requests being handled: a count, not a Map of them. A Map's table, rehashed as entries come and go, stays linked
  // from the tables it replaced; once one of those is in the old generation, every finished request it had held
  // stays reachable until a full collection, so the GC promotes far more of what each request allocates.
  let active = 0;
  let allSettled: (() => void) | undefined;
  let closing = false;
  const guard = new ConnectionGuard('hooks', where.limits, where.clientIps, logger);
  const settled = (socket: Socket) => {
    // Answered: the connection is the last of its address to give way to a new one (its client may send again at once).
    guard.answered(socket);
    active--;
    if (!closing) return;
    // The connection this answer leaves idle is not kept for another request.
    server.closeIdleConnections();
    if (active === 0) allSettled?.();
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (closing) res.shouldKeepAlive = false;
    active++;
    // Told by a callback, not a promise: a promise per request (and its microtask) only to learn that it ended.
    handler(req, res, () => settled(req.socket));
  };
  const server: Server = createServer(
    {
      // Node checks the header and request times on this interval (default 30 s, which would stretch a 10 s limit to 40).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(where.limits.headersTimeoutMs / 4))),
    },
    onRequest,
  );
  applyLimits(server, where.limits);
  server.on('checkContinue', onRequest);
  server.on('connection', (socket: Socket) => {
    if (!guard.admit(socket)) return;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('drop', () => guard.dropped());
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // Not when an answer has started on this connection: a second one would corrupt it.
    const started =
      (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (!socket.writable || started) return void socket.destroy();
    socket.end(err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? TIMEOUT_ANSWER : MALFORMED_ANSWER);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(where.port, where.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    load: () => ({ connections: sockets.size, requests: active }),
    listening: () => server.listening && !closing,
    connectionCounts: () => guard.counts,
    setLimits(limits, clientIps) {
      applyLimits(server, limits);
      guard.setLimits(limits, clientIps);
    },
    async close(deadline) {
      closing = true;
      // A request being handled is answered with `Connection: close` (its response is its socket's current message).
      for (const socket of sockets) {
        const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
        if (res && !res.headersSent) res.shouldKeepAlive = false;
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const cut = () => server.closeAllConnections();
      if (deadline?.aborted) cut();
      else deadline?.addEventListener('abort', cut, { once: true });
      await closed;
      if (active > 0) await new Promise<void>((resolve) => (allSettled = resolve));
      deadline?.removeEventListener('abort', cut);
    },
  };
}
