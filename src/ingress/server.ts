import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Listener {
  readonly url: string;
  readonly port: number;
  /** Stop accepting, close idle keep-alive connections, resolve when the in-flight requests are answered. */
  close(): Promise<void>;
}

/** The hooks listener: `node:http` on `bind:port`, a malformed request answered 400 and closed. */
export async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  where: { bind: string; port: number },
): Promise<Listener> {
  const server: Server = createServer({ keepAliveTimeout: 5000 }, (req, res) => void handler(req, res));
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
