import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { addressBucket, canonicalIp, type ClientIpResolver } from './client-ip.js';
import { RepeatLimitedLog } from './log-repeats.js';

/** A listener's connection caps (`gateway.limits` for the hooks listener, constants for the admin listener). */
export interface ConnectionCaps {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/** What the caps did since the start (the metrics read these at scrape time). */
export interface ConnectionCounts {
  /** New connections closed unread: their address held its share, none of it idle. */
  refusedPerAddress: number;
  /** New connections closed unread: every connection was busy answering a request. */
  refusedTotal: number;
  /** Keep-alive connections closed between two requests to admit a new one. */
  evictedIdle: number;
  /** Connections closed before their request's headers were complete, to admit a new one. */
  evictedUnfinished: number;
}

/** Above this share of `maxConnections` the listener is under pressure and an address gets its fair share at most. */
const PRESSURE = 0.5;

/**
 * Node's own cap (`server.maxConnections`), one over ours: Node drops a connection at its cap before the guard sees
 * it, so it must leave the guard the one connection it needs to decide whom to evict. The guard closes the evicted or
 * refused socket in the same turn (Node uncounts it at once), so Node's count never stays above ours.
 */
export const nodeCap = (caps: ConnectionCaps): number => caps.maxConnections + 1;

type WithMessage = Socket & { _httpMessage?: unknown };

/**
 * Whether a request is being answered on `socket` (Node assigns the response to the socket until it is finished), or
 * an answer is still being flushed to it.
 */
const busy = (socket: Socket): boolean => (socket as WithMessage)._httpMessage != null || socket.writableLength > 0;

/**
 * The connection caps of one listener (docs/security.md, "Connection fairness"). Open sockets are counted per
 * `addressBucket` of the socket's address (an IPv6 client per /64), least recently used first. A new connection is
 * admitted, or closed at once before a byte of it is read (no answer: a client that sent no request could not read
 * one):
 *
 * - An address holds at most `maxConnectionsPerAddress`; once the listener is above half of `maxConnections`, at
 *   most its fair share, `maxConnections / (addresses holding connections + 1)`: the `+ 1` keeps one share free for
 *   an address that holds none, and the last share of the slots is only for such addresses. An address at its cap
 *   replaces its own idle connection unused the longest; it is refused only when all of its connections are busy.
 * - At the total cap (or the reserved share), the address holding the most connections gives way, among the new
 *   one's own and those holding more than it: its idle connection unused the longest is closed (a keep-alive
 *   connection between two requests, or one whose request headers are not complete). A connection answering a
 *   request is never closed, so its request is answered.
 *
 * Trusted proxies are exempt from the per-address caps (every client behind one shares its address) and may take
 * from any address at the total cap; their idle connections give way like anyone's. Memory: one entry per open
 * connection, at most `maxConnections`.
 */
export class ConnectionGuard {
  /** Address bucket → its open sockets (each with its last use on it: `LAST_USED`). */
  private readonly buckets = new Map<string, Set<Socket>>();
  private open = 0;
  private seq = 0;
  /** The current config generation's (trusted proxies are exempt from the per-address cap). */
  private clientIps: ClientIpResolver;
  private readonly log: RepeatLimitedLog | undefined;
  private readonly done: ConnectionCounts = {
    refusedPerAddress: 0,
    refusedTotal: 0,
    evictedIdle: 0,
    evictedUnfinished: 0,
  };

  constructor(
    /** The listener's name in log lines and metrics. */
    private readonly listener: 'hooks' | 'admin',
    private caps: ConnectionCaps,
    clientIps: ClientIpResolver,
    logger?: Logger,
  ) {
    this.clientIps = clientIps;
    this.log = logger && new RepeatLimitedLog(logger);
  }

  setLimits(caps: ConnectionCaps, clientIps: ClientIpResolver): void {
    this.caps = caps;
    this.clientIps = clientIps;
  }

  /** Counts `socket` (uncounted when it closes), closing another to make room if needed; or closes it: false then. */
  admit(socket: Socket): boolean {
    const ip = canonicalIp(socket.remoteAddress);
    const exempt = this.clientIps.isTrustedProxy(ip);
    const key = addressBucket(ip);
    const held = this.buckets.get(key);
    const mine = held?.size ?? 0;
    const cap = this.caps.maxConnections;
    let room = cap;
    if (!exempt) {
      let limit = this.caps.maxConnectionsPerAddress;
      if (this.open >= cap * PRESSURE) {
        const share = Math.max(1, Math.floor(cap / (this.buckets.size + (mine === 0 ? 1 : 0) + 1)));
        limit = Math.min(limit, share);
        if (mine > 0) room = cap - share;
      }
      if (mine >= limit) {
        // At its cap: it may only replace one of its own (an exchange, so the total is unchanged).
        if (!held || !this.evictFrom(key, held)) return this.refuse(socket, 'refusedPerAddress', key);
        return this.track(socket, key);
      }
    }
    if (this.open >= room && !this.evictFor(key, mine, exempt)) return this.refuse(socket, 'refusedTotal', key);
    return this.track(socket, key);
  }

  /**
   * A request was answered on `socket`: it becomes the most recently used connection of its address, the last of
   * them to give way. Its client has just read an answer and is the likeliest to send again at once; closing it then
   * would reset that next request (a keep-alive connection that was held long, say by a slow store, is the oldest by
   * admission, so ordering by admission alone picked exactly it). The one chosen is the one idle the longest.
   */
  answered(socket: Socket): void {
    (socket as Counted)[LAST_USED] = this.seq++;
  }

  /** A connection Node dropped at its own cap (its `drop` event): the guard did not see it. */
  dropped(): void {
    this.done.refusedTotal++;
    this.log?.warn(
      'connection_total',
      { listener: this.listener },
      `${this.listener} listener: connection refused, every connection busy`,
    );
  }

  /** Since the start. */
  get counts(): Readonly<ConnectionCounts> {
    return this.done;
  }

  /** Open connections the guard counts. */
  get size(): number {
    return this.open;
  }

  /** Addresses holding at least one counted connection. */
  get addresses(): number {
    return this.buckets.size;
  }

  private track(socket: Socket, key: string): true {
    let held = this.buckets.get(key);
    if (!held) this.buckets.set(key, (held = new Set()));
    held.add(socket);
    (socket as Counted)[LAST_USED] = this.seq++;
    this.open++;
    socket.once('close', () => this.forget(key, socket));
    return true;
  }

  private forget(key: string, socket: Socket): void {
    const held = this.buckets.get(key);
    if (!held?.delete(socket)) return;
    this.open--;
    if (held.size === 0) this.buckets.delete(key);
  }

  /**
   * Close the least recently used idle connection of the address holding the most: the newcomer's own, or another's
   * holding more than the newcomer (`mine`) does; a trusted proxy may take from any address.
   */
  private evictFor(key: string, mine: number, exempt: boolean): boolean {
    let victim: { key: string; held: Set<Socket>; socket: Socket; seq: number } | undefined;
    for (const [k, held] of this.buckets) {
      if ((k !== key && !exempt && held.size <= mine) || (victim && held.size < victim.held.size)) continue;
      const lru = idleLongest(held);
      if (!lru) continue;
      if (!victim || held.size > victim.held.size || lru[1] < victim.seq)
        victim = { key: k, held, socket: lru[0], seq: lru[1] };
    }
    if (!victim) return false;
    this.evict(victim.key, victim.socket);
    return true;
  }

  private evictFrom(key: string, held: Set<Socket>): boolean {
    const lru = idleLongest(held);
    if (!lru) return false;
    this.evict(key, lru[0]);
    return true;
  }

  private evict(key: string, socket: Socket): void {
    // Answered at least once: a keep-alive connection between requests; else its request never got complete.
    const state = socket.bytesWritten > 0 ? 'idle' : 'unfinished';
    this.forget(key, socket);
    socket.destroy();
    this.done[state === 'idle' ? 'evictedIdle' : 'evictedUnfinished']++;
    this.log?.warn(
      'connection_evicted',
      { listener: this.listener, client: key, state },
      `${this.listener} listener: an idle connection was closed to admit a new one (connection caps reached)`,
    );
  }

  private refuse(socket: Socket, why: 'refusedPerAddress' | 'refusedTotal', key: string): false {
    socket.destroy();
    this.done[why]++;
    if (why === 'refusedTotal')
      this.log?.warn(
        'connection_total',
        { listener: this.listener, client: key },
        `${this.listener} listener: connection refused, every connection busy`,
      );
    else
      this.log?.warn(
        'connection_per_address',
        { listener: this.listener, client: key },
        `${this.listener} listener: connection refused, its address holds its share of connections, all busy`,
      );
    return false;
  }
}

/**
 * When a counted socket was last used (admitted, or a request answered on it), in one sequence across addresses. On
 * the socket itself: `answered` runs once per request, and a property store is the cheapest record of it; the scan
 * for the oldest happens only at a cap.
 */
const LAST_USED = Symbol('hookgate.lastUsed');
type Counted = Socket & { [LAST_USED]: number };

/** The least recently used connection of `held` not answering a request (and not closed yet), with its number. */
function idleLongest(held: Set<Socket>): [Socket, number] | undefined {
  let oldest: [Socket, number] | undefined;
  for (const socket of held) {
    const used = (socket as Counted)[LAST_USED];
    if (!busy(socket) && !socket.destroyed && (oldest === undefined || used < oldest[1])) oldest = [socket, used];
  }
  return oldest;
}
