import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { DEFAULT_TOKEN_ID as DEFAULT_ID } from '../config/schema/tokens.js';
import { bearerToken } from '../http-util.js';

/** Headers that carry the hook token besides `Authorization: Bearer`, in order of preference. */
const TOKEN_HEADERS = ['x-hookgate-token', 'x-openclaw-token'] as const;

/**
 * Every header that can carry a credential: the token's headers, the other credentials a client or proxy may send,
 * and `x-gitlab-token`, which carries a `gitlab` signature's secret itself (a `bearer` one is in `authorization`).
 * The ingress removes them before the hooks see a request's headers, so no `{{headers.*}}` template and no transform
 * can leak them; an alias added to `TOKEN_HEADERS` is hidden with it. Signature verifiers see the raw headers.
 */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  ...TOKEN_HEADERS,
  'cookie',
  'x-gitlab-token',
]);

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
  return bearerToken(headers.authorization);
}

/**
 * Width of the compare window: tokens are padded to a multiple of this many bytes. 64 covers the usual secrets (a
 * 32-byte random value in hex or base64) in one width; the compare's cost grows with the width.
 */
export const TOKEN_WINDOW_BYTES = 64;

/** One configured token, as a match names it: its id (for records and logs) and its expiry (epoch ms). */
export interface ListedToken {
  readonly id: string;
  readonly notAfter: number | undefined;
}

interface Padded extends ListedToken {
  readonly padded: Buffer;
  readonly byteLength: number;
}

/** Whether a matched token is past its `notAfter` (refused like a wrong token). */
export const isExpired = (t: ListedToken, now: number): boolean => t.notAfter !== undefined && now >= t.notAfter;

/**
 * The configured tokens of a listener, ready for constant-time compares; built once per config generation. A
 * presented token is written once into a zeroed window as wide as the widest padded secret, and that window is
 * compared with `timingSafeEqual` against EVERY secret (all padded to the same width), then the lengths are
 * compared; the loop never stops at a match. The work depends on the presented token's length (the sender's own),
 * the window's width and the number of tokens, never on the secrets' bytes nor on which one matched; tokens up to
 * 64 bytes long share one window width, so their lengths are not revealed either (longer ones only their multiple
 * of 64). No allocation and no hashing per request.
 */
export class TokenSet {
  private readonly entries: readonly Padded[];
  private readonly window: Buffer;
  /** How many bytes of the window the last presented token wrote (zeros past them). */
  private dirty = 0;

  constructor(tokens: ReadonlyArray<{ id: string; token: string; notAfter?: number | undefined }>) {
    const bytes = tokens.map((t) => Buffer.from(t.token, 'utf8'));
    const widest = bytes.reduce((w, b) => Math.max(w, b.length), 0);
    const width = Math.max(1, Math.ceil(widest / TOKEN_WINDOW_BYTES)) * TOKEN_WINDOW_BYTES;
    this.entries = tokens.map((t, i) => {
      const padded = Buffer.alloc(width);
      bytes[i]!.copy(padded);
      return { id: t.id, notAfter: t.notAfter, padded, byteLength: bytes[i]!.length };
    });
    this.window = Buffer.alloc(width); // reused: requests are checked one at a time on the event loop
  }

  get size(): number {
    return this.entries.length;
  }

  /** The listed token that `presented` is, expired or not (the caller decides: `isExpired`); undefined if none. */
  find(presented: string | undefined): ListedToken | undefined {
    if (presented === undefined || this.entries.length === 0) return undefined;
    const window = this.window;
    // At most `width` bytes are written (whole characters only, so a cut token leaves at most 3 bytes unwritten);
    // longer tokens fail on the length below. Only what follows the written bytes needs zeroing, and a token that
    // ends more than 3 bytes short of the window was written whole: its length needs no second pass over it. Both
    // depend on the presented tokens alone (this one and the last), never on a secret.
    const written = window.write(presented, 0, 'utf8');
    // Zeroed only where the last token's bytes lie past this one's: the rest of the window already is.
    if (written < this.dirty) window.fill(0, written, this.dirty);
    this.dirty = written;
    const length = written < window.length - 3 ? written : Buffer.byteLength(presented, 'utf8');
    let found: Padded | undefined;
    for (const e of this.entries) {
      // Every entry is compared, whatever matched before: the secrets are distinct (config check), so one at most.
      const same = timingSafeEqual(window, e.padded);
      if (same && length === e.byteLength) found = e;
    }
    return found;
  }

  /** The id of the unexpired token `presented` is, or undefined (none, a wrong one, or an expired one). */
  accept(presented: string | undefined, now: number): string | undefined {
    const t = this.find(presented);
    return t === undefined || isExpired(t, now) ? undefined : t.id;
  }
}

/** A listener's tokens from its config section: `token` (id `DEFAULT_TOKEN_ID`, "default") first, then `tokens` in order. */
export function tokenSetOf(section: {
  token?: string | undefined;
  tokens?: ReadonlyArray<{ id: string; token: string; notAfter?: number | undefined }> | undefined;
}): TokenSet {
  return new TokenSet([
    ...(section.token ? [{ id: DEFAULT_ID, token: section.token }] : []),
    ...(section.tokens ?? []),
  ]);
}
