/**
 * What every signature scheme is made of (signatures.ts, signature-twilio.ts): the request a scheme sees, its
 * result, header lookup that refuses a repeated header, constant-time comparisons, and the freshness rule. The rules
 * they implement are in signatures.ts's header comment.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureHeaders = Record<string, string | string[] | undefined>;

export interface SignedRequest {
  /** The body exactly as received. */
  rawBody: Buffer;
  /** Node-style headers (lower-cased names; other casings are found too). */
  headers: SignatureHeaders;
  /** The parsed body when the caller already has it (Stripe's delivery id is the event `id`). */
  payload?: unknown;
  /**
   * The request target's query string as received, after the `?` (undefined when the target had no `?`): Twilio
   * signs the URL it called, query string included.
   */
  rawQuery?: string | undefined;
}

export type SignatureResult = { ok: true; deliveryId?: string } | { ok: false; reason: string };

/** Longest delivery id we pass on; anything longer is ignored rather than trusted as a dedupe key. */
export const MAX_DELIVERY_ID = 256;
/** Unix seconds, sane length (rejects floats, signs, exponents, and absurd values before any arithmetic). */
export const UNIX_SECONDS_RE = /^\d{1,12}$/;
const HEX_SHA256_RE = /^[0-9a-fA-F]{64}$/;
/** Canonical (padded) base64 of a 32-byte SHA-256 digest: 43 chars + one `=`. */
const B64_SHA256_RE = /^[A-Za-z0-9+/]{43}=$/;
/** Strict base64 for secrets: Buffer.from(…, 'base64') silently skips invalid characters, which could shrink a key. */
export const B64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

export const fail = (reason: string): SignatureResult => ({ ok: false, reason });

/** A verified result, with the delivery id when there is one. */
export const accept = (deliveryId: string | undefined): SignatureResult =>
  deliveryId ? { ok: true, deliveryId } : { ok: true };

/** Looks a header up by lower-case name (Node's form), then case-insensitively for hand-built header objects. */
export function header(headers: SignatureHeaders, name: string): string | string[] | undefined {
  if (Object.hasOwn(headers, name)) return headers[name];
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key];
  return undefined;
}

/** A single, non-empty header value; an array means the header was sent more than once, which we refuse. */
export function single(headers: SignatureHeaders, name: string): { value: string } | { reason: string } {
  const v = header(headers, name);
  if (v === undefined) return { reason: `missing header ${name}` };
  if (Array.isArray(v)) {
    if (v.length === 1 && typeof v[0] === 'string' && v[0].trim() !== '') return { value: v[0].trim() };
    return { reason: v.length === 0 ? `missing header ${name}` : `duplicate header ${name}` };
  }
  const t = v.trim();
  return t === '' ? { reason: `missing header ${name}` } : { value: t };
}

/** A header's single value when it is short enough to be a delivery id, else undefined. */
export function optionalId(headers: SignatureHeaders, name: string): string | undefined {
  const r = single(headers, name);
  return 'value' in r && r.value.length <= MAX_DELIVERY_ID ? r.value : undefined;
}

export function hmac(key: Buffer | string, ...parts: Array<Buffer | string>): Buffer {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Constant-time equality of an expected digest and a presented one of any length. */
export function digestEquals(expected: Buffer, presented: Buffer): boolean {
  if (presented.length !== expected.length) {
    // Same work as a real comparison, then reject: no early exit that a stopwatch could tell apart.
    timingSafeEqual(expected, expected);
    return false;
  }
  return timingSafeEqual(expected, presented);
}

/**
 * Whether a presented token is one of the secrets, for the schemes whose secret is sent as it is (GitLab's
 * `X-Gitlab-Token`, `Authorization: Bearer`): the SHA-256 digests of both are compared in constant time, so the work
 * depends on neither length nor on where they first differ. Every secret is compared (no early exit).
 */
export function tokenMatches(secrets: readonly string[], presented: string): boolean {
  const digest = createHash('sha256').update(presented, 'utf8').digest();
  let found = false;
  for (const secret of secrets)
    if (timingSafeEqual(createHash('sha256').update(secret, 'utf8').digest(), digest)) found = true;
  return found;
}

/** `|now - t| <= tolerance`, in whole seconds like the reference libraries. */
export function fresh(tSeconds: number, nowMs: number, toleranceSeconds: number): boolean {
  const now = Math.floor(nowMs / 1000);
  return Math.abs(now - tSeconds) <= toleranceSeconds;
}

export function hexDigest(s: string): Buffer | undefined {
  return HEX_SHA256_RE.test(s) ? Buffer.from(s, 'hex') : undefined;
}

export function base64Digest(s: string): Buffer | undefined {
  return B64_SHA256_RE.test(s) ? Buffer.from(s, 'base64') : undefined;
}

export function padBase64(s: string): string {
  return s.length % 4 === 0 ? s : s + '='.repeat(4 - (s.length % 4));
}

/** A top-level field of the signed JSON body (parsed here when the caller has not), or undefined. */
export function bodyField(req: SignedRequest, field: string): unknown {
  let payload = req.payload;
  if (payload === undefined) {
    try {
      payload = JSON.parse(req.rawBody.toString('utf8')) as unknown;
    } catch {
      return undefined;
    }
  }
  if (payload === null || typeof payload !== 'object' || !Object.hasOwn(payload, field)) return undefined;
  return (payload as Record<string, unknown>)[field];
}

/** A top-level string field of the signed body, if short enough to be an id. */
export function bodyString(req: SignedRequest, field: string): string | undefined {
  const id = bodyField(req, field);
  return typeof id === 'string' && id !== '' && id.length <= MAX_DELIVERY_ID ? id : undefined;
}
