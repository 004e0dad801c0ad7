import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The presented hook token: `Authorization: Bearer <t>` wins, then `x-hookgate-token`, then `x-openclaw-token`
 * (for senders written for OpenClaw). Blank values count as absent.
 */
export function extractToken(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (auth && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ') {
    const t = auth.slice(7).trim();
    if (t) return t;
  }
  for (const name of ['x-hookgate-token', 'x-openclaw-token'] as const) {
    const v = headers[name];
    const t = (Array.isArray(v) ? v[0] : v)?.trim();
    if (t) return t;
  }
  return undefined;
}

/** Constant time, and no length leak: both sides are hashed to 32 bytes first. */
export function tokenMatches(presented: string | undefined, expectedDigest: Buffer | undefined): boolean {
  if (presented === undefined || expectedDigest === undefined) return false;
  return timingSafeEqual(hash('sha256', presented, 'buffer'), expectedDigest);
}
