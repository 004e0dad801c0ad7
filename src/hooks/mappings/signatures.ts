/**
 * Verifies signed webhook deliveries for mappings with a `signature` block (instead of the shared hook token).
 *
 * Rules that hold for every scheme:
 * - Only the raw request bytes are signed; we never re-serialise the parsed JSON (whitespace and key order matter).
 * - Digests are compared with `crypto.timingSafeEqual` on equal-length buffers. A presented signature of the wrong
 *   length is compared against the expected digest anyway (and then rejected), so timing never depends on where the
 *   first differing byte is. The only length that could be observed is the digest length (32 bytes), which is public.
 * - Several secrets may be configured (rotation): any one of them verifying is enough.
 * - Failure reasons are short, stable strings for logs and metrics. They name headers and never contain a secret,
 *   a digest or payload content.
 * - Timestamped schemes check the signature first and the freshness second, so a stale but authentic delivery logs
 *   "timestamp outside tolerance" while a forgery logs "signature mismatch".
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { SignatureConfig } from '../../config/schema/hooks.js';

export type SignatureHeaders = Record<string, string | string[] | undefined>;

export interface SignedRequest {
  /** The body exactly as received. */
  rawBody: Buffer;
  /** Node-style headers (lower-cased names; other casings are found too). */
  headers: SignatureHeaders;
  /** The parsed body when the caller already has it (Stripe's delivery id is the event `id`). */
  payload?: unknown;
}

export type SignatureResult = { ok: true; deliveryId?: string } | { ok: false; reason: string };

/** Longest delivery id we pass on; anything longer is ignored rather than trusted as a dedupe key. */
const MAX_DELIVERY_ID = 256;
/** Unix seconds, sane length (rejects floats, signs, exponents, and absurd values before any arithmetic). */
const UNIX_SECONDS_RE = /^\d{1,12}$/;
const HEX_SHA256_RE = /^[0-9a-fA-F]{64}$/;
/** Canonical (padded) base64 of a 32-byte SHA-256 digest: 43 chars + one `=`. */
const B64_SHA256_RE = /^[A-Za-z0-9+/]{43}=$/;
/** Strict base64 for secrets: Buffer.from(…, 'base64') silently skips invalid characters, which could shrink a key. */
const B64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

const fail = (reason: string): SignatureResult => ({ ok: false, reason });

/** Looks a header up by lower-case name (Node's form), then case-insensitively for hand-built header objects. */
function header(headers: SignatureHeaders, name: string): string | string[] | undefined {
  if (Object.hasOwn(headers, name)) return headers[name];
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key];
  return undefined;
}

/** A single, non-empty header value; an array means the header was sent more than once, which we refuse. */
function single(headers: SignatureHeaders, name: string): { value: string } | { reason: string } {
  const v = header(headers, name);
  if (v === undefined) return { reason: `missing header ${name}` };
  if (Array.isArray(v)) {
    if (v.length === 1 && typeof v[0] === 'string' && v[0].trim() !== '') return { value: v[0].trim() };
    return { reason: v.length === 0 ? `missing header ${name}` : `duplicate header ${name}` };
  }
  const t = v.trim();
  return t === '' ? { reason: `missing header ${name}` } : { value: t };
}

function optionalId(headers: SignatureHeaders, name: string): string | undefined {
  const r = single(headers, name);
  return 'value' in r && r.value.length <= MAX_DELIVERY_ID ? r.value : undefined;
}

function hmac(key: Buffer | string, ...parts: Array<Buffer | string>): Buffer {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Constant-time equality of an expected digest and a presented one of any length. */
function digestEquals(expected: Buffer, presented: Buffer): boolean {
  if (presented.length !== expected.length) {
    // Same work as a real comparison, then reject: no early exit that a stopwatch could tell apart.
    timingSafeEqual(expected, expected);
    return false;
  }
  return timingSafeEqual(expected, presented);
}

/** `|now - t| <= tolerance`, in whole seconds like the reference libraries. */
function fresh(tSeconds: number, nowMs: number, toleranceSeconds: number): boolean {
  const now = Math.floor(nowMs / 1000);
  return Math.abs(now - tSeconds) <= toleranceSeconds;
}

function hexDigest(s: string): Buffer | undefined {
  return HEX_SHA256_RE.test(s) ? Buffer.from(s, 'hex') : undefined;
}

function base64Digest(s: string): Buffer | undefined {
  return B64_SHA256_RE.test(s) ? Buffer.from(s, 'base64') : undefined;
}

/**
 * Standard Webhooks keys. `whsec_<base64>` is the spec's serialisation: the key is the decoded bytes. A secret
 * without the prefix is accepted in two readings, both tried: base64-decoded (what the reference `standardwebhooks`
 * library does with an unprefixed secret) and, failing that, its raw UTF-8 bytes (senders that HMAC with the
 * secret string as-is). Invalid `whsec_` values yield no key, so they can never verify anything.
 */
export function standardWebhooksKeys(secret: string): Buffer[] {
  if (secret.startsWith('whsec_')) {
    const b64 = secret.slice('whsec_'.length);
    return b64 !== '' && B64_RE.test(b64) ? [Buffer.from(b64, 'base64')] : [];
  }
  const keys: Buffer[] = [];
  if (B64_RE.test(secret)) {
    const decoded = Buffer.from(secret, 'base64');
    if (decoded.length > 0) keys.push(decoded);
  }
  keys.push(Buffer.from(secret, 'utf8'));
  return keys;
}

// ---------------------------------------------------------------------------------------------------------------
// Schemes
// ---------------------------------------------------------------------------------------------------------------

/** GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`; id `X-GitHub-Delivery`. No timestamp. */
function verifyGithub(cfg: SignatureConfig, req: SignedRequest): SignatureResult {
  const name = 'x-hub-signature-256';
  const sig = single(req.headers, name);
  if ('reason' in sig) return fail(sig.reason);
  if (!sig.value.startsWith('sha256=')) return fail(`malformed header ${name}`);
  const presented = hexDigest(sig.value.slice('sha256='.length));
  if (!presented) return fail(`malformed header ${name}`);
  for (const secret of cfg.secrets) {
    if (digestEquals(hmac(secret, req.rawBody), presented)) {
      const deliveryId = optionalId(req.headers, 'x-github-delivery');
      return deliveryId ? { ok: true, deliveryId } : { ok: true };
    }
  }
  return fail('signature mismatch');
}

/**
 * Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]`, each v1 an HMAC-SHA256 of `"<t>.<body>"` keyed
 * with the endpoint secret string (`whsec_…` used as-is, not decoded). Stripe itself sends several v1 entries while
 * an endpoint secret is being rolled. Delivery id: the event `id` (`evt_…`) of the signed body.
 */
function verifyStripe(cfg: SignatureConfig, req: SignedRequest, nowMs: number): SignatureResult {
  const name = 'stripe-signature';
  const sig = single(req.headers, name);
  if ('reason' in sig) return fail(sig.reason);
  let t: string | undefined;
  const v1: Buffer[] = [];
  for (const item of sig.value.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) return fail(`malformed header ${name}`);
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      if (t !== undefined || !UNIX_SECONDS_RE.test(value)) return fail(`malformed header ${name}`);
      t = value;
    } else if (key === 'v1') {
      const d = hexDigest(value);
      if (!d) return fail(`malformed header ${name}`);
      v1.push(d);
    }
    // other schemes (v0 = test-mode legacy) are ignored, as Stripe's libraries do
  }
  if (t === undefined) return fail(`malformed header ${name}`);
  if (v1.length === 0) return fail('no v1 signature');
  let verified = false;
  for (const secret of cfg.secrets) {
    const expected = hmac(secret, `${t}.`, req.rawBody);
    // Compare against every entry (no short-circuit inside one secret): the position of a match is not observable.
    for (const d of v1) if (digestEquals(expected, d)) verified = true;
    if (verified) break;
  }
  if (!verified) return fail('signature mismatch');
  if (!fresh(Number(t), nowMs, cfg.toleranceSeconds)) return fail('timestamp outside tolerance');
  const deliveryId = stripeEventId(req);
  return deliveryId ? { ok: true, deliveryId } : { ok: true };
}

function stripeEventId(req: SignedRequest): string | undefined {
  return bodyString(req, 'id');
}

/** A top-level string field of the signed body (parsed here when the caller has not), if short enough to be an id. */
function bodyString(req: SignedRequest, field: string): string | undefined {
  let payload = req.payload;
  if (payload === undefined) {
    try {
      payload = JSON.parse(req.rawBody.toString('utf8')) as unknown;
    } catch {
      return undefined;
    }
  }
  if (payload === null || typeof payload !== 'object' || !Object.hasOwn(payload, field)) return undefined;
  const id = (payload as Record<string, unknown>)[field];
  return typeof id === 'string' && id !== '' && id.length <= MAX_DELIVERY_ID ? id : undefined;
}

/**
 * Slack: `X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret, "v0:<ts>:<body>")>` with
 * `X-Slack-Request-Timestamp: <ts>`. Slack sends no delivery id header; its retries carry `X-Slack-Retry-Num` /
 * `X-Slack-Retry-Reason` and the same event, whose Events API `event_id` (in the signed body) is the delivery id.
 */
function verifySlack(cfg: SignatureConfig, req: SignedRequest, nowMs: number): SignatureResult {
  const sigName = 'x-slack-signature';
  const tsName = 'x-slack-request-timestamp';
  const sig = single(req.headers, sigName);
  if ('reason' in sig) return fail(sig.reason);
  const ts = single(req.headers, tsName);
  if ('reason' in ts) return fail(ts.reason);
  if (!UNIX_SECONDS_RE.test(ts.value)) return fail(`malformed header ${tsName}`);
  if (!sig.value.startsWith('v0=')) return fail(`malformed header ${sigName}`);
  const presented = hexDigest(sig.value.slice('v0='.length));
  if (!presented) return fail(`malformed header ${sigName}`);
  let verified = false;
  for (const secret of cfg.secrets) {
    if (digestEquals(hmac(secret, `v0:${ts.value}:`, req.rawBody), presented)) {
      verified = true;
      break;
    }
  }
  if (!verified) return fail('signature mismatch');
  if (!fresh(Number(ts.value), nowMs, cfg.toleranceSeconds)) return fail('timestamp outside tolerance');
  const deliveryId = bodyString(req, 'event_id');
  return deliveryId ? { ok: true, deliveryId } : { ok: true };
}

/**
 * Standard Webhooks: `webhook-signature` is a space-separated list of `<version>,<base64>`; `v1` = HMAC-SHA256 of
 * `"<webhook-id>.<webhook-timestamp>.<body>"`. Other versions (`v1a` = ed25519) are skipped. Svix-branded senders
 * send the same scheme as `svix-id` / `svix-timestamp` / `svix-signature`; that family is read when no
 * `webhook-signature` header is present (as Svix's own libraries do). The delivery id is covered by the signature,
 * so it is a trustworthy replay key.
 */
function verifyStandardWebhooks(cfg: SignatureConfig, req: SignedRequest, nowMs: number): SignatureResult {
  const family =
    header(req.headers, 'webhook-signature') === undefined && header(req.headers, 'svix-signature') !== undefined
      ? 'svix'
      : 'webhook';
  const id = single(req.headers, `${family}-id`);
  if ('reason' in id) return fail(id.reason);
  const ts = single(req.headers, `${family}-timestamp`);
  if ('reason' in ts) return fail(ts.reason);
  const sig = single(req.headers, `${family}-signature`);
  if ('reason' in sig) return fail(sig.reason);
  if (!UNIX_SECONDS_RE.test(ts.value)) return fail(`malformed header ${family}-timestamp`);
  const presented: Buffer[] = [];
  for (const entry of sig.value.split(' ')) {
    if (entry === '') continue;
    const comma = entry.indexOf(',');
    if (comma <= 0) return fail(`malformed header ${family}-signature`);
    if (entry.slice(0, comma) !== 'v1') continue;
    // A v1 entry that is not a 32-byte base64 digest can never match; keep scanning the others (a sender may
    // list signatures we cannot parse next to one we can).
    const d = base64Digest(entry.slice(comma + 1));
    if (d) presented.push(d);
  }
  if (presented.length === 0) return fail('no v1 signature');
  let verified = false;
  let anyKey = false;
  for (const secret of cfg.secrets) {
    for (const key of standardWebhooksKeys(secret)) {
      anyKey = true;
      const expected = hmac(key, `${id.value}.${ts.value}.`, req.rawBody);
      for (const d of presented) if (digestEquals(expected, d)) verified = true;
    }
    if (verified) break;
  }
  if (!anyKey) return fail('invalid secret');
  if (!verified) return fail('signature mismatch');
  if (!fresh(Number(ts.value), nowMs, cfg.toleranceSeconds)) return fail('timestamp outside tolerance');
  return id.value.length <= MAX_DELIVERY_ID ? { ok: true, deliveryId: id.value } : { ok: true };
}

/**
 * Generic HMAC-SHA256 of the raw body: `<cfg.header ?? x-signature>: [<cfg.prefix>]<digest>` with the digest in
 * `cfg.encoding ?? hex`. No timestamp (like GitHub); a delivery id is taken from an `Idempotency-Key` header when the
 * sender sends one (it is not covered by the signature).
 */
function verifyGenericHmac(cfg: SignatureConfig, req: SignedRequest): SignatureResult {
  const name = (cfg.header ?? 'x-signature').toLowerCase();
  const sig = single(req.headers, name);
  if ('reason' in sig) return fail(sig.reason);
  let value = sig.value;
  const prefix = cfg.prefix ?? '';
  if (prefix !== '') {
    if (!value.startsWith(prefix)) return fail(`malformed header ${name}`);
    value = value.slice(prefix.length);
  }
  const encoding = cfg.encoding ?? 'hex';
  // Unpadded base64 and base64url are common in the wild; normalise both to padded standard base64.
  const presented =
    encoding === 'hex' ? hexDigest(value) : base64Digest(padBase64(value.replace(/-/g, '+').replace(/_/g, '/')));
  if (!presented) return fail(`malformed header ${name}`);
  for (const secret of cfg.secrets) {
    if (digestEquals(hmac(secret, req.rawBody), presented)) {
      const deliveryId = optionalId(req.headers, 'idempotency-key');
      return deliveryId ? { ok: true, deliveryId } : { ok: true };
    }
  }
  return fail('signature mismatch');
}

function padBase64(s: string): string {
  return s.length % 4 === 0 ? s : s + '='.repeat(4 - (s.length % 4));
}

/**
 * Verifies `req` against the mapping's signature config at time `nowMs` (ms since epoch; injected for tests).
 * Pure apart from hashing: no I/O, no clock, never throws for any header/body input.
 */
export function verifySignature(cfg: SignatureConfig, req: SignedRequest, nowMs: number): SignatureResult {
  if (cfg.secrets.length === 0) return fail('no secret configured');
  switch (cfg.scheme) {
    case 'github':
      return verifyGithub(cfg, req);
    case 'stripe':
      return verifyStripe(cfg, req, nowMs);
    case 'slack':
      return verifySlack(cfg, req, nowMs);
    case 'standard-webhooks':
      return verifyStandardWebhooks(cfg, req, nowMs);
    case 'hmac-sha256':
      return verifyGenericHmac(cfg, req);
    default: {
      const unknown: never = cfg.scheme;
      return fail(`unsupported scheme ${String(unknown)}`);
    }
  }
}

/**
 * The headers a sender of `cfg.scheme` would add to `rawBody` at `nowMs`, signed with the first secret: what
 * `hookgate send hook --sign` presents. It sits next to the verifiers so a change to a scheme changes both (and the
 * tests verify every signed request with `verifySignature`).
 */
export function signRequest(cfg: SignatureConfig, rawBody: Buffer, nowMs: number): Record<string, string> {
  const secret = cfg.secrets[0];
  if (secret === undefined) throw new Error('no secret configured');
  const t = String(Math.floor(nowMs / 1000));
  switch (cfg.scheme) {
    case 'github':
      return { 'x-hub-signature-256': `sha256=${hmac(secret, rawBody).toString('hex')}`, 'x-github-delivery': randomUUID() };
    case 'stripe':
      return { 'stripe-signature': `t=${t},v1=${hmac(secret, `${t}.`, rawBody).toString('hex')}` };
    case 'slack':
      return { 'x-slack-request-timestamp': t, 'x-slack-signature': `v0=${hmac(secret, `v0:${t}:`, rawBody).toString('hex')}` };
    case 'standard-webhooks': {
      const key = standardWebhooksKeys(secret)[0];
      if (key === undefined) throw new Error('invalid secret');
      const id = `msg_${randomUUID()}`;
      return { 'webhook-id': id, 'webhook-timestamp': t, 'webhook-signature': `v1,${hmac(key, `${id}.${t}.`, rawBody).toString('base64')}` };
    }
    case 'hmac-sha256': {
      const digest = hmac(secret, rawBody).toString(cfg.encoding ?? 'hex');
      return { [cfg.header ?? 'x-signature']: `${cfg.prefix ?? ''}${digest}` };
    }
    default: {
      const unknown: never = cfg.scheme;
      throw new Error(`unsupported scheme ${String(unknown)}`);
    }
  }
}
