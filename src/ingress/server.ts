import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Listener {
  readonly url: string;
  readonly port: number;
  /** Open connections, and requests being handled now (for the stop's log line). */
  load(): { connections: number; requests: number };
  /**
   * Stop accepting and close idle keep-alive connections; requests in flight are handled to the end and answered
   * with `Connection: close`. When `deadline` aborts, every connection still open is closed (a client trickling
   * its body cannot hold the stop). Resolves once the server is closed and every handler has settled (a handler
   * whose socket was closed still finishes its commit: what was accepted is in the store before it closes).
   */
  close(deadline?: AbortSignal): Promise<void>;
}

/** The hooks listener: `node:http` on `bind:port`, a malformed request answered 400 and closed. */
export async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  where: { bind: string; port: number },
): Promise<Listener> {
  const sockets = new Set<Socket>();
  const inFlight = new Map<ServerResponse, Promise<void>>();
  let closing = false;
  const server: Server = createServer({ keepAliveTimeout: 5000 }, (req, res) => {
    if (closing) res.shouldKeepAlive = false;
    const done = handler(req, res).finally(() => {
      inFlight.delete(res);
      // The connection this answer leaves idle is not kept for another request.
      if (closing) server.closeIdleConnections();
    });
    inFlight.set(res, done);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
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
    load: () => ({ connections: sockets.size, requests: inFlight.size }),
    async close(deadline) {
      closing = true;
      for (const res of inFlight.keys()) if (!res.headersSent) res.shouldKeepAlive = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const cut = () => server.closeAllConnections();
      if (deadline?.aborted) cut();
      else deadline?.addEventListener('abort', cut, { once: true });
      await closed;
      await Promise.allSettled([...inFlight.values()]);
      deadline?.removeEventListener('abort', cut);
    },
  };
}
