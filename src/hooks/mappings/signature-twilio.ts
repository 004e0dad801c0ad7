/**
 * Twilio's request signature (https://www.twilio.com/docs/usage/security), verified as Twilio's own Node library
 * does (`twilio.validateRequest` / `validateRequestWithBody`, twilio 6.x `lib/webhooks/webhooks.js`), so that the
 * two agree on every request (test/hooks/mappings/signatures-twilio.test.ts checks it both ways):
 *
 * - `X-Twilio-Signature: <base64 HMAC-SHA1(auth token, data)>`. `data` is the URL Twilio called, query string
 *   included, then for a form body (`application/x-www-form-urlencoded`) every field sorted by name, each as
 *   name + value with no separator. A name sent more than once contributes each distinct value once, the values
 *   sorted (what Twilio's libraries sign: `Array.from(new Set(values)).sort()`), not in the order sent.
 * - A JSON body is not in `data`: Twilio adds `bodySHA256=<hex SHA-256 of the body>` to the URL's query string,
 *   which the signature covers, and the body must hash to it.
 * - The URL is the one Twilio was configured with (`signature.url`; behind a proxy hookgate cannot know it) plus
 *   the request's own query string. Like the library, the URL is tried as written with and without its scheme's
 *   default port (`:443` / `:80`), then as `new URL()` normalises it (percent-encoding), with and without the
 *   port, and with its query string re-encoded by Node's `querystring` (back ends that signed an escaped form).
 * - `X-Twilio-Webhooks-Signature-Settings: key=…,algorithm=HMAC_SHA256` (webhooks signed with a SharedKey) selects
 *   HMAC-SHA256; absent, empty or `HMAC_SHA1`, it is HMAC-SHA1. Any other algorithm is refused.
 * - Delivery id: `I-Twilio-Idempotency-Token` (the same on Twilio's retries; not covered by the signature). No
 *   timestamp is signed.
 */
import { createHash, createHmac } from 'node:crypto';
import { parse as parseQueryString, stringify as stringifyQueryString } from 'node:querystring';
import type { SignatureConfig } from '../../config/schema/hooks.js';
import { formFields, isFormContentType } from '../../form-body.js';
import {
  accept,
  digestEquals,
  fail,
  header,
  optionalId,
  type SignatureResult,
  type SignedRequest,
  single,
} from './signature-kit.js';

const SIGNATURE = 'x-twilio-signature';
const SETTINGS = 'x-twilio-webhooks-signature-settings';
const BODY_HASH = 'bodySHA256';
const HEX_SHA256_LOWER_RE = /^[0-9a-f]{64}$/;

export type TwilioHash = 'sha1' | 'sha256';

export function verifyTwilio(cfg: SignatureConfig, req: SignedRequest): SignatureResult {
  const sig = single(req.headers, SIGNATURE);
  if ('reason' in sig) return fail(sig.reason);
  const hash = signatureHash(req);
  if (typeof hash !== 'string') return fail(hash.reason);
  const query = new URLSearchParams(req.rawQuery ?? '');
  const bodyHashes = query.getAll(BODY_HASH);
  if (bodyHashes.length > 1) return fail(`duplicate query parameter ${BODY_HASH}`);
  let fields: ReadonlyArray<[string, string]> = [];
  if (bodyHashes.length === 0) {
    const contentType = header(req.headers, 'content-type');
    if (isFormContentType(typeof contentType === 'string' ? contentType : undefined)) fields = formFields(req.rawBody);
    // Neither a form nor hashed into the URL: the signature would not cover the body.
    else if (req.rawBody.length > 0) return fail(`body not signed: not a form, and no ${BODY_HASH} query parameter`);
  }
  const presented = Buffer.from(sig.value, 'utf8');
  const params = signedParams(fields);
  const urls = candidateUrls(`${cfg.url ?? ''}${req.rawQuery === undefined ? '' : `?${req.rawQuery}`}`);
  let ok = false;
  for (const secret of cfg.secrets) {
    // Every candidate URL is tried (no short-circuit inside one secret), as for Stripe's v1 entries.
    for (const url of urls)
      if (digestEquals(Buffer.from(sign(hash, secret, url + params), 'utf8'), presented)) ok = true;
    if (ok) break;
  }
  if (!ok) return fail('signature mismatch');
  if (bodyHashes.length === 1 && !bodyHashMatches(bodyHashes[0]!, req.rawBody))
    return fail(`body does not match ${BODY_HASH}`);
  return accept(optionalId(req.headers, 'i-twilio-idempotency-token'));
}

/**
 * The signature Twilio sends for a request to `url` (query string included) with these form fields (none for a
 * JSON body, whose hash is then in `url`): what `hookgate send hook --sign` presents, and the tests' signer.
 */
export function twilioSignature(
  secret: string,
  url: string,
  fields: ReadonlyArray<[string, string]> = [],
  hash: TwilioHash = 'sha1',
): string {
  return sign(hash, secret, url + signedParams(fields));
}

/** The `bodySHA256` query parameter Twilio adds to the URL for a JSON body: the hex SHA-256 of the raw body. */
export function twilioBodyHash(rawBody: Buffer): string {
  return createHash('sha256').update(rawBody).digest('hex');
}

function sign(hash: TwilioHash, secret: string, data: string): string {
  return createHmac(hash, secret).update(Buffer.from(data, 'utf8')).digest('base64');
}

/** The library compares the hex string as sent with its own lower-case hex (`validateBody`): the same here. */
function bodyHashMatches(presented: string, rawBody: Buffer): boolean {
  return (
    HEX_SHA256_LOWER_RE.test(presented) &&
    digestEquals(Buffer.from(twilioBodyHash(rawBody), 'hex'), Buffer.from(presented, 'hex'))
  );
}

/** The hash the settings header names (`getSignatureAlgorithm`): HMAC_SHA1 unless it says `algorithm=HMAC_SHA256`. */
function signatureHash(req: SignedRequest): TwilioHash | { reason: string } {
  const raw = header(req.headers, SETTINGS);
  if (raw === undefined || raw === '') return 'sha1';
  const settings = single(req.headers, SETTINGS);
  if ('reason' in settings) return settings.reason.startsWith('missing') ? 'sha1' : { reason: settings.reason };
  let algorithm = '';
  for (const part of settings.value.split(',')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === 'algorithm' && part.slice(eq + 1).trim() !== '') {
      algorithm = part
        .slice(eq + 1)
        .trim()
        .toUpperCase();
      break;
    }
  }
  if (algorithm === '' || algorithm === 'HMAC_SHA1') return 'sha1';
  if (algorithm === 'HMAC_SHA256') return 'sha256';
  return { reason: `unsupported algorithm in header ${SETTINGS}` };
}

/**
 * The form fields as Twilio's libraries sign them: names sorted (JavaScript's default sort, as the Node library),
 * each name followed by each of its distinct values, sorted.
 */
function signedParams(fields: ReadonlyArray<[string, string]>): string {
  if (fields.length === 0) return '';
  const byName = new Map<string, Set<string>>();
  for (const [name, value] of fields) {
    const values = byName.get(name);
    if (values) values.add(value);
    else byName.set(name, new Set([value]));
  }
  let out = '';
  for (const name of [...byName.keys()].sort()) for (const value of [...byName.get(name)!].sort()) out += name + value;
  return out;
}

/** The URLs the library tries for one request, in its order, without repeats (`validateRequest`). */
function candidateUrls(url: string): string[] {
  const urls = new Set([removePort(url), addPort(url)]);
  let normalized: string | undefined;
  try {
    normalized = new URL(url).toString();
  } catch {
    // the configured URL is checked when the config loads; a query string that breaks it leaves the URL as written
  }
  if (normalized !== undefined) {
    for (const u of [removePort(normalized), addPort(normalized)]) urls.add(u);
    for (const u of [removePort(normalized), addPort(normalized)]) urls.add(withLegacyQueryString(u));
  }
  return [...urls];
}

/** A URL's parts without normalising it (so the path and query keep the characters Twilio signed); null without `scheme://`. */
function splitUrl(url: string): { scheme: string; userInfo: string; host: string; port: string; rest: string } | null {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(url);
  if (!match) return null;
  const [prefix, scheme, authority] = match as unknown as [string, string, string];
  const userInfoEnd = authority.lastIndexOf('@');
  const hostAndPort = authority.slice(userInfoEnd + 1);
  // A colon starts the port only after the closing bracket of an IPv6 literal.
  const portStart = hostAndPort.indexOf(':', hostAndPort.lastIndexOf(']') + 1);
  return {
    scheme,
    userInfo: authority.slice(0, userInfoEnd + 1),
    host: portStart === -1 ? hostAndPort : hostAndPort.slice(0, portStart),
    port: portStart === -1 ? '' : hostAndPort.slice(portStart),
    rest: url.slice(prefix.length),
  };
}

/** The URL with its scheme's default port when it names none (`https` → `:443`, else `:80`). */
function addPort(url: string): string {
  const p = splitUrl(url);
  if (!p || p.port) return url;
  return p.scheme + p.userInfo + p.host + (p.scheme.toLowerCase() === 'https://' ? ':443' : ':80') + p.rest;
}

/** The URL without its port, whatever it is. */
function removePort(url: string): string {
  const p = splitUrl(url);
  return p ? p.scheme + p.userInfo + p.host + p.rest : url;
}

/** The URL with its query string re-encoded the way Node's legacy `querystring` module writes it. */
function withLegacyQueryString(url: string): string {
  const q = url.indexOf('?');
  if (q === -1 || q === url.length - 1) return url;
  return `${url.slice(0, q)}?${stringifyQueryString(parseQueryString(url.slice(q + 1)))}`;
}
