import { BlockList, isIP } from 'node:net';

/** `::ffff:1.2.3.4` → `1.2.3.4`, so one client has one key whichever way the socket reports it. */
export function canonicalIp(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const lower = ip.toLowerCase();
  if (lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4) return lower.slice(7);
  return lower;
}

/**
 * The client address: the socket's, unless the socket is a trusted proxy; then the right-most address of
 * X-Forwarded-For that is not itself a trusted proxy (the left part can be forged by the client).
 */
export class ClientIpResolver {
  private readonly trusted: BlockList | undefined;

  constructor(trustedProxies: readonly string[]) {
    if (trustedProxies.length === 0) return;
    this.trusted = new BlockList();
    for (const entry of trustedProxies) {
      const [ip, bits] = entry.split('/') as [string, string | undefined];
      // Keep each entry in its own family (a ::ffff:a.b.c.d/104 block is an IPv6 block); `isTrusted` checks an IPv4
      // client in both forms, so v4 entries and v4-mapped v6 entries both cover it.
      const type = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.trusted.addAddress(ip.toLowerCase(), type);
      else this.trusted.addSubnet(ip.toLowerCase(), Number(bits), type);
    }
  }

  resolve(socketIp: string | undefined, forwardedFor: string | string[] | undefined): string {
    const ip = canonicalIp(socketIp);
    if (!this.trusted || !forwardedFor || !this.isTrusted(ip)) return ip;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = canonicalIp(hops[i]!.trim());
      if (!isIP(hop)) return ip;
      if (!this.isTrusted(hop)) return hop;
    }
    return ip;
  }

  private isTrusted(ip: string): boolean {
    const family = isIP(ip);
    if (family === 6) return this.trusted!.check(ip, 'ipv6');
    return family === 4 && (this.trusted!.check(ip, 'ipv4') || this.trusted!.check(`::ffff:${ip}`, 'ipv6'));
  }
}
