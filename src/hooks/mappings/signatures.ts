/**
 * Verifies signed webhook deliveries for mappings with a `signature` block (instead of the shared hook token).
 *
 * Rules that hold for every scheme:
 * - Only the raw request bytes are signed; we never re-serialise the parsed JSON (whitespace and key order matter).
 * - Digests are compared with `crypto.timingSafeEqual` on equal-length buffers. A presented signature of the wrong
 *   length is compared against the expected digest anyway (and then rejected), so timing never depends on where the
 *   first differing byte is. The only length that could be observed is the digest's, which is public. A secret
 *   sent as it is (`gitlab`, `bearer`) is compared as the SHA-256 digests of both sides (`tokenMatches`).
 * - Several secrets may be configured (rotation): any one of them verifying is enough.
 * - Failure reasons are short, stable strings for logs and metrics. They name headers and never contain a secret,
 *   a digest or payload content.
 * - Timestamped schemes check the signature first and the freshness second, so a stale but authentic delivery logs
 *   "timestamp outside tolerance" while a forgery logs "signature mismatch".
 * - A delivery id is only what the sender documents as stable across its retries; each scheme says where it is.
 *
 * The schemes and their vendors' documentation: docs/mappings-building-blocks.md, "Signatures". Twilio, which signs
 * the URL and the decoded form fields, has its own file (signature-twilio.ts).
 */
import { randomUUID } from 'node:crypto';
import type { SignatureConfig } from '../../config/schema/hooks.js';
import { bearerToken } from '../../http-util.js';
import {
  accept,
  B64_RE,
  base64Digest,
  bodyField,
  bodyString,
  digestEquals,
  fail,
  fresh,
  header,
  hexDigest,
  hmac,
  MAX_DELIVERY_ID,
  optionalId,
  padBase64,
  type SignatureResult,
  type SignedRequest,
  single,
  tokenMatches,
  UNIX_SECONDS_RE,
} from './signature-kit.js';
import { twilioBodyHash, twilioSignature, verifyTwilio } from './signature-twilio.js';

export type { SignatureHeaders, SignatureResult, SignedRequest } from './signature-kit.js';

/**
 * Standard Webhooks keys. `whsec_<base64>` is Standard Webhooks' serialisation: the key is the decoded bytes. A secret
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
  const deliveryId = bodyString(req, 'id');
  return deliveryId ? { ok: true, deliveryId } : { ok: true };
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

/** Whether `presented` is the HMAC-SHA256 of the raw body with one of the secrets. */
function bodySignedBy(cfg: SignatureConfig, req: SignedRequest, presented: Buffer): boolean {
  for (const secret of cfg.secrets) if (digestEquals(hmac(secret, req.rawBody), presented)) return true;
  return false;
}

/** A hex HMAC-SHA256 of the raw body in header `name` (Linear, Sentry): verified, or why not. */
function verifyHexBody(cfg: SignatureConfig, req: SignedRequest, name: string): { reason: string } | undefined {
  const sig = single(req.headers, name);
  if ('reason' in sig) return sig;
  const presented = hexDigest(sig.value);
  if (!presented) return { reason: `malformed header ${name}` };
  return bodySignedBy(cfg, req, presented) ? undefined : { reason: 'signature mismatch' };
}

/**
 * GitLab: `X-Gitlab-Token: <secret token>`, the secret itself; nothing is signed and no timestamp is sent
 * (https://docs.gitlab.com/user/project/integrations/webhooks/, "Secret token"). Delivery id: `X-Gitlab-Event-UUID`,
 * else `Idempotency-Key`. Recent GitLab versions also send `Idempotency-Key`, the same on every retry and resend of a
 * delivery; a request's `Idempotency-Key` header is its idempotency key before any delivery id (hooks/idempotency.ts),
 * so that is the key whenever GitLab sends one.
 */
function verifyGitlab(cfg: SignatureConfig, req: SignedRequest): SignatureResult {
  const token = single(req.headers, 'x-gitlab-token');
  if ('reason' in token) return fail(token.reason);
  if (!tokenMatches(cfg.secrets, token.value)) return fail('token mismatch');
  return accept(optionalId(req.headers, 'x-gitlab-event-uuid') ?? optionalId(req.headers, 'idempotency-key'));
}

/**
 * Linear: `Linear-Signature: <hex HMAC-SHA256(signing secret, body)>`, and the signed body's `webhookTimestamp`
 * (Unix milliseconds) within `toleranceSeconds` of our clock (https://linear.app/developers/webhooks, "Securing
 * webhooks"; Linear's SDK allows 60 s). Delivery id: `Linear-Delivery`.
 */
function verifyLinear(cfg: SignatureConfig, req: SignedRequest, nowMs: number): SignatureResult {
  const bad = verifyHexBody(cfg, req, 'linear-signature');
  if (bad) return fail(bad.reason);
  const ts = bodyField(req, 'webhookTimestamp');
  if (typeof ts !== 'number' || !Number.isSafeInteger(ts) || ts < 0) return fail('no webhookTimestamp in the body');
  if (Math.abs(nowMs - ts) > cfg.toleranceSeconds * 1000) return fail('timestamp outside tolerance');
  return accept(optionalId(req.headers, 'linear-delivery'));
}

/** Unix seconds, possibly with a fraction (Sentry's header is not signed: read leniently, never trusted alone). */
const UNIX_SECONDS_FRACTION_RE = /^\d{1,12}(?:\.\d{1,9})?$/;

/**
 * Sentry (integration platform): `Sentry-Hook-Signature: <hex HMAC-SHA256(client secret, body)>`
 * (https://docs.sentry.io/organization/integrations/integration-platform/webhooks/, "Verifying the signature").
 * Sentry's own examples verify over `JSON.stringify` of the parsed body; the raw bytes as received are what Sentry
 * serialised and signed, so they are verified instead. `Sentry-Hook-Timestamp` (Unix seconds), when sent, must be
 * within `toleranceSeconds`; the signature does not cover it, so it stops only a replay that leaves it as it was.
 * Delivery id: `Request-ID`.
 */
function verifySentry(cfg: SignatureConfig, req: SignedRequest, nowMs: number): SignatureResult {
  const bad = verifyHexBody(cfg, req, 'sentry-hook-signature');
  if (bad) return fail(bad.reason);
  const tsName = 'sentry-hook-timestamp';
  if (header(req.headers, tsName) !== undefined) {
    const ts = single(req.headers, tsName);
    if ('reason' in ts) return fail(ts.reason);
    if (!UNIX_SECONDS_FRACTION_RE.test(ts.value)) return fail(`malformed header ${tsName}`);
    if (!fresh(Math.floor(Number(ts.value)), nowMs, cfg.toleranceSeconds)) return fail('timestamp outside tolerance');
  }
  return accept(optionalId(req.headers, 'request-id'));
}

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256(app client secret, body)>`; no timestamp is signed
 * (https://shopify.dev/docs/apps/build/webhooks/subscribe/https, "Verify the webhook"). Delivery id:
 * `X-Shopify-Webhook-Id`, one per delivery and the same on its retries
 * (https://shopify.dev/docs/apps/build/webhooks/delivery-structure). Not `X-Shopify-Event-Id`: every delivery that
 * one merchant action produces shares it (several topics, several subscriptions), so as a key it would answer the
 * second topic's delivery as a reuse of the first one's.
 */
function verifyShopify(cfg: SignatureConfig, req: SignedRequest): SignatureResult {
  const name = 'x-shopify-hmac-sha256';
  const sig = single(req.headers, name);
  if ('reason' in sig) return fail(sig.reason);
  const presented = base64Digest(sig.value);
  if (!presented) return fail(`malformed header ${name}`);
  if (!bodySignedBy(cfg, req, presented)) return fail('signature mismatch');
  return accept(optionalId(req.headers, 'x-shopify-webhook-id'));
}

/**
 * `Authorization: Bearer <secret>`, for senders that can only set a bearer token (Prometheus Alertmanager's
 * `http_config.authorization`, Grafana's webhook contact point). Nothing is signed: no timestamp, no delivery id. The
 * ingress reads a hook token from the same header; a bearer that is not a listed hook token is left to the path's
 * verifier (mappings/verifier.ts), which brings it here.
 */
function verifyBearer(cfg: SignatureConfig, req: SignedRequest): SignatureResult {
  const name = 'authorization';
  const auth = single(req.headers, name);
  if ('reason' in auth) return fail(auth.reason);
  const token = bearerToken(auth.value);
  if (token === undefined) return fail(`malformed header ${name}`);
  return tokenMatches(cfg.secrets, token) ? { ok: true } : fail('token mismatch');
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
    case 'gitlab':
      return verifyGitlab(cfg, req);
    case 'linear':
      return verifyLinear(cfg, req, nowMs);
    case 'sentry':
      return verifySentry(cfg, req, nowMs);
    case 'shopify':
      return verifyShopify(cfg, req);
    case 'twilio':
      return verifyTwilio(cfg, req);
    case 'bearer':
      return verifyBearer(cfg, req);
    default: {
      const unknown: never = cfg.scheme;
      return fail(`unsupported scheme ${String(unknown)}`);
    }
  }
}

/**
 * The query string (from `?` on; empty for most schemes) a sender of `cfg.scheme` adds to the URL it calls with the
 * JSON body `rawBody`: Twilio's `?bodySHA256=<hex>`. `hookgate send hook --sign` appends it to the request it sends,
 * and `signRequest` signs it.
 */
export function signedQuery(cfg: SignatureConfig, rawBody: Buffer): string {
  return cfg.scheme === 'twilio' ? `?bodySHA256=${twilioBodyHash(rawBody)}` : '';
}

/**
 * The headers a sender of `cfg.scheme` would add to the JSON body `rawBody` at `nowMs`, signed with the first secret,
 * for a request to its path with `signedQuery` as the query string: what `hookgate send hook --sign` presents. It
 * sits next to the verifiers so a change to a scheme changes both (and the tests verify every signed request with
 * `verifySignature`).
 */
export function signRequest(cfg: SignatureConfig, rawBody: Buffer, nowMs: number): Record<string, string> {
  const secret = cfg.secrets[0];
  if (secret === undefined) throw new Error('no secret configured');
  const t = String(Math.floor(nowMs / 1000));
  switch (cfg.scheme) {
    case 'github':
      return {
        'x-hub-signature-256': `sha256=${hmac(secret, rawBody).toString('hex')}`,
        'x-github-delivery': randomUUID(),
      };
    case 'stripe':
      return { 'stripe-signature': `t=${t},v1=${hmac(secret, `${t}.`, rawBody).toString('hex')}` };
    case 'slack':
      return {
        'x-slack-request-timestamp': t,
        'x-slack-signature': `v0=${hmac(secret, `v0:${t}:`, rawBody).toString('hex')}`,
      };
    case 'standard-webhooks': {
      const key = standardWebhooksKeys(secret)[0];
      if (key === undefined) throw new Error('invalid secret');
      const id = `msg_${randomUUID()}`;
      return {
        'webhook-id': id,
        'webhook-timestamp': t,
        'webhook-signature': `v1,${hmac(key, `${id}.${t}.`, rawBody).toString('base64')}`,
      };
    }
    case 'hmac-sha256': {
      const digest = hmac(secret, rawBody).toString(cfg.encoding ?? 'hex');
      return { [cfg.header ?? 'x-signature']: `${cfg.prefix ?? ''}${digest}` };
    }
    case 'gitlab':
      return { 'x-gitlab-token': secret, 'x-gitlab-event-uuid': randomUUID() };
    case 'linear':
      // Linear's timestamp is inside the signed body: only a body that carries a fresh one verifies.
      return { 'linear-signature': hmac(secret, rawBody).toString('hex'), 'linear-delivery': randomUUID() };
    case 'sentry':
      return {
        'sentry-hook-signature': hmac(secret, rawBody).toString('hex'),
        'sentry-hook-timestamp': t,
        'request-id': randomUUID(),
      };
    case 'shopify':
      return {
        'x-shopify-hmac-sha256': hmac(secret, rawBody).toString('base64'),
        'x-shopify-webhook-id': randomUUID(),
      };
    case 'twilio':
      return {
        'x-twilio-signature': twilioSignature(secret, `${cfg.url ?? ''}${signedQuery(cfg, rawBody)}`),
        'i-twilio-idempotency-token': randomUUID(),
      };
    case 'bearer':
      return { authorization: `Bearer ${secret}` };
    default: {
      const unknown: never = cfg.scheme;
      throw new Error(`unsupported scheme ${String(unknown)}`);
    }
  }
}
