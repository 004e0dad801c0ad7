import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { RawConfig } from '../config/schema/index.js';
import { addressBucket, canonicalIp, ClientIpResolver } from './client-ip.js';

export type ConnectionLimits = RawConfig['gateway']['limits'];

/** At most one log line per this many ms about refused connections (a flood must not flood the log). */
const REFUSAL_LOG_MS = 10_000;

/**
 * The per-address connection cap (`gateway.limits.maxConnectionsPerAddress`): open sockets are counted per
 * `addressBucket` of the socket's address (an IPv6 client per /64); a connection over the cap is closed at once,
 * before a byte of it is read: no answer is written (a client that never sends a request could not read one), which
 * costs the server nothing and is what `maxConnections` does too. Trusted proxies are exempt (every client behind one
 * shares its address); `maxConnections` still bounds them. Memory: one entry per address with an open connection.
 */
export class ConnectionGuard {
  private readonly open = new Map<string, number>();
  private perAddress: number;
  private proxies: ClientIpResolver;
  private readonly refused = { perAddress: 0, total: 0, loggedAt: -Infinity };

  constructor(limits: ConnectionLimits, trustedProxies: readonly string[], private readonly logger?: Logger) {
    this.perAddress = limits.maxConnectionsPerAddress;
    this.proxies = new ClientIpResolver(trustedProxies);
  }

  setLimits(limits: ConnectionLimits, trustedProxies: readonly string[]): void {
    this.perAddress = limits.maxConnectionsPerAddress;
    this.proxies = new ClientIpResolver(trustedProxies);
  }

  /** Counts `socket` (uncounted when it closes), or destroys it when its address is at the cap; false then. */
  admit(socket: Socket): boolean {
    const ip = canonicalIp(socket.remoteAddress);
    if (this.proxies.isTrustedProxy(ip)) return true;
    const key = addressBucket(ip);
    const n = this.open.get(key) ?? 0;
    if (n >= this.perAddress) {
      socket.destroy();
      this.noteRefused('perAddress', key);
      return false;
    }
    this.open.set(key, n + 1);
    socket.once('close', () => {
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    });
    return true;
  }

  /** A connection the server dropped at `maxConnections` (its `drop` event). */
  dropped(): void {
    this.noteRefused('total');
  }

  /** Addresses holding at least one counted connection (for tests). */
  get addresses(): number {
    return this.open.size;
  }

  private noteRefused(cap: 'perAddress' | 'total', bucket?: string): void {
    const r = this.refused;
    r[cap]++;
    const now = Date.now();
    if (now - r.loggedAt < REFUSAL_LOG_MS) return;
    this.logger?.warn(
      { perAddressCap: r.perAddress, totalCap: r.total, ...(bucket ? { client: bucket } : {}) },
      'connections refused at the connection caps (gateway.limits); counts since the last such line',
    );
    r.perAddress = 0;
    r.total = 0;
    r.loggedAt = now;
  }
}
