/**
 * `allowFrom` address lists: IPv4 and IPv6 CIDRs (or single addresses), checked against a client address without
 * allocating. node:net's BlockList would do the matching, but its `check` builds a SocketAddress per call, and this
 * runs on every request to a limited route; the entries are parsed once per config generation instead and a client
 * address is parsed into a scratch buffer. An IPv4 client matches an IPv4 entry and an IPv4-mapped IPv6 entry
 * (`::ffff:10.0.0.0/104`); an IPv4-mapped IPv6 client (`::ffff:10.1.2.3`) matches an IPv4 entry.
 */
import { isIP } from 'node:net';

interface V6Rule {
  readonly groups: Uint16Array;
  readonly bits: number;
}

/** Why `entry` is not an address or CIDR, or undefined when it is one (config validation, by key path). */
export function cidrProblem(entry: string): string | undefined {
  const slash = entry.indexOf('/');
  const addr = slash < 0 ? entry : entry.slice(0, slash);
  const family = addr.includes('%') ? 0 : isIP(addr);
  const example = 'an IP address or a CIDR block, e.g. 203.0.113.0/24 or 2001:db8::/32';
  if (family === 0) return `"${entry}" is not ${example}`;
  if (slash < 0) return undefined;
  const bits = entry.slice(slash + 1);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max)
    return `"${entry}": the prefix length after / must be 0 to ${max} for an IPv${family} address`;
  return undefined;
}

/** A compiled `allowFrom`: `contains` is allocation-free. Entries must have passed `cidrProblem`. */
export class AddressList {
  /** IPv4 rules as [network, mask] pairs (unsigned 32-bit). */
  private readonly v4: number[] = [];
  private readonly v6: V6Rule[] = [];

  constructor(entries: readonly string[]) {
    for (const raw of entries) {
      const entry = raw.trim();
      const slash = entry.indexOf('/');
      const addr = slash < 0 ? entry : entry.slice(0, slash);
      if (isIP(addr) === 4) {
        const bits = slash < 0 ? 32 : Number(entry.slice(slash + 1));
        const mask = maskOf(bits);
        this.v4.push((parseV4(addr, 0, addr.length) & mask) >>> 0, mask);
      } else {
        const groups = new Uint16Array(8);
        if (!parseV6(addr.toLowerCase(), addr.length, groups)) throw new Error(`not an IPv6 address: ${addr}`);
        this.v6.push({ groups, bits: slash < 0 ? 128 : Number(entry.slice(slash + 1)) });
      }
    }
  }

  /** Whether the client address (as `canonicalIp` writes it; a zone is ignored) is in the list. */
  contains(ip: string): boolean {
    let end = ip.indexOf('%');
    if (end < 0) end = ip.length;
    if (ip.indexOf(':') < 0) {
      const v4 = parseV4(ip, 0, end);
      return v4 >= 0 && this.containsV4(v4);
    }
    if (!parseV6(ip, end, SCRATCH)) return false;
    if (this.containsV6(SCRATCH)) return true;
    // ::ffff:a.b.c.d written as IPv6 (canonicalIp already turns it into IPv4; other spellings may not)
    const g = SCRATCH;
    if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
      return this.containsV4(((g[6]! << 16) | g[7]!) >>> 0);
    }
    return false;
  }

  private containsV4(ip: number): boolean {
    const rules = this.v4;
    for (let i = 0; i < rules.length; i += 2) if ((ip & rules[i + 1]!) >>> 0 === rules[i]) return true;
    if (this.v6.length === 0) return false;
    // The IPv4-mapped IPv6 form, for `::ffff:…/n` entries.
    const g = SCRATCH;
    g.fill(0, 0, 5);
    g[5] = 0xffff;
    g[6] = ip >>> 16;
    g[7] = ip & 0xffff;
    return this.containsV6(g);
  }

  private containsV6(g: Uint16Array): boolean {
    for (const rule of this.v6) if (inV6(g, rule)) return true;
    return false;
  }
}

const SCRATCH = new Uint16Array(8);
const HEAD = new Uint16Array(8);
const TAIL = new Uint16Array(8);

function maskOf(bits: number): number {
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

function inV6(g: Uint16Array, rule: V6Rule): boolean {
  let bits = rule.bits;
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((g[i]! & mask) !== (rule.groups[i]! & mask)) return false;
  }
  return true;
}

/** Dotted IPv4 in s[start, end) as an unsigned 32-bit number, or -1. */
export function parseV4(s: string, start: number, end: number): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + part;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** IPv6 (with `::` and an IPv4 tail allowed) in s[0, end) into `out` (8 groups); false when it is not one. */
export function parseV6(s: string, end: number, out: Uint16Array): boolean {
  let head = 0;
  let tail = 0;
  let compressed = false;
  let i = 0;
  if (end === 0) return false;
  if (s.charCodeAt(0) === 58) {
    if (end < 2 || s.charCodeAt(1) !== 58) return false;
    compressed = true;
    i = 2;
  }
  while (i < end) {
    let j = i;
    let v = 0;
    while (j < end && j - i < 4) {
      const h = hexValue(s.charCodeAt(j));
      if (h < 0) break;
      v = v * 16 + h;
      j++;
    }
    if (j < end && s.charCodeAt(j) === 46) {
      // An IPv4 tail: the last two groups.
      const v4 = parseV4(s, i, end);
      if (v4 < 0 || head + tail + 2 > 8) return false;
      if (compressed) {
        TAIL[tail++] = v4 >>> 16;
        TAIL[tail++] = v4 & 0xffff;
      } else {
        HEAD[head++] = v4 >>> 16;
        HEAD[head++] = v4 & 0xffff;
      }
      break;
    }
    if (j === i || head + tail >= 8) return false;
    if (compressed) TAIL[tail++] = v;
    else HEAD[head++] = v;
    if (j === end) break;
    if (s.charCodeAt(j) !== 58) return false;
    j++;
    if (j < end && s.charCodeAt(j) === 58) {
      if (compressed) return false;
      compressed = true;
      j++;
    } else if (j === end) return false;
    i = j;
  }
  if (compressed ? head + tail > 7 : head + tail !== 8) return false;
  out.fill(0);
  for (let k = 0; k < head; k++) out[k] = HEAD[k]!;
  for (let k = 0; k < tail; k++) out[8 - tail + k] = TAIL[k]!;
  return true;
}
