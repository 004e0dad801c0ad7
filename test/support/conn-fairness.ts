/**
 * The connection-fairness probe (docs/security.md, "Connection fairness"), shared by the e2e tests and `npm run soak`:
 * a few flooding addresses (127.0.0.x, bound as the client socket's local address; Linux routes all of 127/8 to lo)
 * each open as many connections as the listener lets them keep, half left idle and half with a request's headers
 * half sent, and reopen each one the listener closes; meanwhile a client from a fresh address sends its requests on
 * fresh connections and counts its answers. Bounded: at most `perAddress` sockets per flooding address, and
 * everything is closed when the probe ends.
 */
import { type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface Flood {
  /** Connections of the flood open now. */
  open(): number;
  /** Connections the listener closed so far (refused, evicted or timed out). */
  closedByServer(): number;
  stop(): void;
}

/** Half of a request's headers: enough for the listener to wait for the rest. */
const HALF_HEADERS = 'POST /hooks/wake HTTP/1.1\r\nhost: flood\r\nx-pad: ';

/**
 * From each of `addresses`, `perAddress` connections to `url`, every other one with half a request's headers sent.
 * A connection the listener closes is reopened after `reopenMs` (the attacker reconnects), until `stop()`.
 * Resolves once every first attempt connected or failed.
 */
export async function holdConnections(
  url: string,
  addresses: readonly string[],
  perAddress: number,
  reopenMs = 200,
): Promise<Flood> {
  const { hostname, port } = new URL(url);
  const sockets = new Set<Socket>();
  let stopped = false;
  let closedByServer = 0;
  const timers = new Set<NodeJS.Timeout>();
  const openOne = (localAddress: string, half: boolean): Promise<void> =>
    new Promise((resolve) => {
      const socket = connect({ host: hostname, port: Number(port), localAddress });
      sockets.add(socket);
      socket.on('connect', () => {
        if (half) socket.write(HALF_HEADERS);
        resolve();
      });
      socket.on('error', () => resolve());
      socket.on('close', () => {
        sockets.delete(socket);
        resolve();
        if (stopped) return;
        closedByServer++;
        const t = setTimeout(() => {
          timers.delete(t);
          if (!stopped) void openOne(localAddress, half);
        }, reopenMs);
        timers.add(t);
      });
    });
  const first: Promise<void>[] = [];
  for (const a of addresses) for (let i = 0; i < perAddress; i++) first.push(openOne(a, i % 2 === 1));
  await Promise.all(first);
  return {
    open: () => sockets.size,
    closedByServer: () => closedByServer,
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
  };
}

export interface Attempt {
  /** The HTTP status, or the error's code when no answer came (ECONNRESET, timeout...). */
  outcome: number | string;
  ms: number;
  /** The answer's headers and body, when one came. */
  headers?: IncomingHttpHeaders;
  body?: string;
}

/** One request on a fresh connection from `localAddress`: its status (or why none came) and how long it took. */
export function attempt(
  url: string,
  localAddress: string,
  init: { method?: string; path: string; headers?: Record<string, string>; body?: string },
  timeoutMs = 5000,
): Promise<Attempt> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (outcome: number | string, answer?: Pick<Attempt, 'headers' | 'body'>) =>
      resolve({ outcome, ms: Math.round(performance.now() - started), ...answer });
    const req = httpRequest(
      `${url}${init.path}`,
      { method: init.method ?? 'GET', localAddress, agent: false, headers: init.headers ?? {}, timeout: timeoutMs },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => done(res.statusCode!, { headers: res.headers, body }));
        res.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'error'));
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    req.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'error'));
    req.end(init.body);
  });
}

/** `n` attempts one after the other (each on its own connection). */
export async function attempts(n: number, one: () => Promise<Attempt>): Promise<Attempt[]> {
  const out: Attempt[] = [];
  for (let i = 0; i < n; i++) out.push(await one());
  return out;
}

/** `127.0.0.<first>` … `127.0.0.<first + n - 1>`. */
export const loopbackAddresses = (first: number, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `127.0.0.${first + i}`);

export interface FairnessResult {
  answered: number;
  refused: number;
  /** Slowest answer, ms. */
  maxMs: number;
  outcomes: Attempt[];
  /** Flood connections open when the client began. */
  held: number;
}

/**
 * The whole probe against a hookgate's hooks listener: `addresses` flooding addresses holding `perAddress`
 * connections each, then `requests` wakes with `token` from `client`; the flood is stopped before it returns.
 */
export async function fairnessProbe(opts: {
  url: string;
  token: string;
  addresses: readonly string[];
  perAddress: number;
  client: string;
  requests: number;
  timeoutMs?: number;
}): Promise<FairnessResult> {
  const flood = await holdConnections(opts.url, opts.addresses, opts.perAddress);
  try {
    const held = flood.open();
    const body = JSON.stringify({ text: 'fairness probe', mode: 'next-heartbeat' });
    const outcomes = await attempts(opts.requests, () =>
      attempt(
        opts.url,
        opts.client,
        {
          method: 'POST',
          path: '/hooks/wake',
          headers: { authorization: `Bearer ${opts.token}`, 'content-type': 'application/json' },
          body,
        },
        opts.timeoutMs,
      ),
    );
    const answered = outcomes.filter((o) => o.outcome === 200).length;
    return {
      answered,
      refused: outcomes.length - answered,
      maxMs: Math.max(0, ...outcomes.map((o) => o.ms)),
      outcomes,
      held,
    };
  } finally {
    flood.stop();
  }
}
