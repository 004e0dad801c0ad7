import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Headers that carry the hook token besides `Authorization: Bearer`, in order of preference. */
const TOKEN_HEADERS = ['x-hookgate-token', 'x-openclaw-token'] as const;

/**
 * Every header that can carry a credential: the token's headers, and the other credentials a client or proxy may
 * send. The ingress removes them before the hooks see a request's headers, so no `{{headers.*}}` template and no
 * transform can leak them; an alias added to `TOKEN_HEADERS` is hidden with it.
 */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', ...TOKEN_HEADERS, 'cookie']);

/** `headers` without the credential headers (names compared lower-cased). */
export function withoutCredentials(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADERS.has(name.toLowerCase())) out[name] = value;
  }
  return out;
}

/**
 * The presented hook token: `Authorization: Bearer <t>` wins, then `x-hookgate-token`, then `x-openclaw-token`
 * (for senders written for OpenClaw). Blank values count as absent.
 */
export function extractToken(headers: IncomingHttpHeaders): string | undefined {
  const bearer = extractBearer(headers);
  if (bearer) return bearer;
  for (const name of TOKEN_HEADERS) {
    const v = headers[name];
    const t = (Array.isArray(v) ? v[0] : v)?.trim();
    if (t) return t;
  }
  return undefined;
}

/** `Authorization: Bearer <t>` alone (the admin listener takes no other header); blank counts as absent. */
export function extractBearer(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (auth && auth.length > 7 && auth.slice(0, 7).toLowerCase() === 'bearer ') {
    const t = auth.slice(7).trim();
    if (t) return t;
  }
  return undefined;
}

/** Width of the compare window: tokens are padded to a multiple of this many bytes. */
export const TOKEN_WINDOW_BYTES = 256;

/**
 * The configured hook token, ready for constant-time compares. A presented token is written into a zeroed window as
 * wide as the padded secret and compared with `timingSafeEqual` over the whole window, then the lengths are
 * compared. The work depends on the presented token's length (the sender's own) and on the window's width, never
 * on the secret's bytes; a token up to 256 bytes long shares its window width with every other such token, so its
 * length is not revealed either. This replaced hashing both sides with SHA-256, which cost ~2 µs per request.
 */
export class HookToken {
  private readonly padded: Buffer;
  private readonly window: Buffer;
  private readonly byteLength: number;

  constructor(token: string) {
    const bytes = Buffer.from(token, 'utf8');
    const width = Math.max(1, Math.ceil(bytes.length / TOKEN_WINDOW_BYTES)) * TOKEN_WINDOW_BYTES;
    this.byteLength = bytes.length;
    this.padded = Buffer.alloc(width);
    bytes.copy(this.padded);
    this.window = Buffer.alloc(width); // reused: requests are checked one at a time on the event loop
  }

  matches(presented: string | undefined): boolean {
    if (presented === undefined) return false;
    const window = this.window;
    window.fill(0);
    window.write(presented, 0, 'utf8'); // at most `width` bytes; longer tokens fail on the length below
    const same = timingSafeEqual(window, this.padded);
    return same && Buffer.byteLength(presented, 'utf8') === this.byteLength;
  }
}

/** Whether `presented` is the configured token; with no token configured, nothing matches. */
export function tokenMatches(presented: string | undefined, expected: HookToken | undefined): boolean {
  return expected !== undefined && expected.matches(presented);
}
