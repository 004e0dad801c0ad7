import { BlockList, isIP } from 'node:net';

/** `::ffff:` + two hex groups (the form the URL serialiser gives an IPv4-mapped address). */
const MAPPED_V4_RE = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/**
 * One spelling per client, so one client has one limiter key and one connection count however the socket or a proxy
 * writes its address: IPv4 as is; IPv4-mapped IPv6 (`::ffff:203.0.113.7`, `::ffff:cb00:7107`, any letter case or
 * zero padding) → `203.0.113.7`; every other IPv6 in RFC 5952 form (lower case, leading zeros dropped, the longest
 * run of zero groups compressed: `2001:0DB8:0:0::0:1` → `2001:db8::1`). A zone (`fe80::1%eth0`) is kept after the
 * canonical address; what is not an IP address is only lower-cased.
 */
export function canonicalIp(ip: string | undefined): string {
  if (!ip) return 'unknown';
  // The last answer is kept: a connection's requests, and most of a busy sender's, repeat the address, and `isIP`'s
  // pattern is a few hundred instructions of every request.
  if (ip === last.ip) return last.canonical;
  const canonical = canonicalOf(ip);
  last = { ip, canonical };
  return canonical;
}

let last = { ip: '', canonical: '' };

function canonicalOf(ip: string): string {
  const family = isIP(ip);
  if (family === 4) return ip;
  if (family !== 6) return ip.toLowerCase();
  // The dotted IPv4-mapped form a dual-stack socket reports, without the URL round trip.
  if ((ip.startsWith('::ffff:') || ip.startsWith('::FFFF:')) && isIP(ip.slice(7)) === 4) return ip.slice(7);
  const zone = ip.indexOf('%');
  // The WHATWG URL serialiser writes IPv6 hosts in RFC 5952 form (and IPv4 tails as hex groups).
  const v6 = new URL(`http://[${zone < 0 ? ip : ip.slice(0, zone)}]`).hostname.slice(1, -1);
  const mapped = MAPPED_V4_RE.exec(v6);
  if (mapped) {
    const hi = parseInt(mapped[1]!, 16);
    const lo = parseInt(mapped[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return zone < 0 ? v6 : v6 + ip.slice(zone).toLowerCase();
}

/**
 * The key a client's address is counted under (auth failures, open connections), from a `canonicalIp` result: an
 * IPv4 address is its own bucket; an IPv6 address counts for its /64 (`2001:db8:0:0:…` → `2001:db8::/64`), the
 * smallest block a single site is normally given, so rotating through the 2^64 addresses of one network does not
 * buy fresh buckets. Anything else (`unknown`) is its own bucket.
 */
export function addressBucket(ip: string): string {
  if (ip.indexOf(':') < 0) return ip;
  const zone = ip.indexOf('%');
  const bare = zone < 0 ? ip : ip.slice(0, zone);
  if (isIP(bare) !== 6) return ip;
  const halves = bare.split('::');
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length > 1 && halves[1] ? halves[1].split(':') : [];
  const groups =
    halves.length > 1 ? [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail] : head;
  // The upper four groups followed by zeros: its canonical form always ends in `::`.
  return `${canonicalIp(`${groups.slice(0, 4).join(':')}::`)}/64`;
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

  /** Whether `ip` (a `canonicalIp` result) is one of `gateway.trustedProxies`. */
  isTrustedProxy(ip: string): boolean {
    return this.trusted !== undefined && this.isTrusted(ip);
  }

  private isTrusted(ip: string): boolean {
    const family = isIP(ip);
    if (family === 6) return this.trusted!.check(ip, 'ipv6');
    return family === 4 && (this.trusted!.check(ip, 'ipv4') || this.trusted!.check(`::ffff:${ip}`, 'ipv6'));
  }
}
