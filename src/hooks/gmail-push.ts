/**
 * The Gmail push receiver: `POST {hooks.path}/{hooks.gmail.pushPath}`, the endpoint of the Pub/Sub push
 * subscription (docs/gmail.md, "How it works"). It is authenticated by the push's OIDC token, not the hook token:
 * `Authorization: Bearer <JWT>` signed RS256 by one of Google's keys (the JWKS at `hooks.gmail.jwksUrl`, cached,
 * fetched again for an unknown `kid`), `iss` Google's, `aud` = `hooks.gmail.audience`, `email` =
 * `hooks.gmail.serviceAccountEmail` with `email_verified`, `exp` in the future (60 s of clock skew). The body is
 * Pub/Sub's envelope `{ message: { data, messageId, … }, subscription }` whose `data` is base64 of Gmail's
 * `{ emailAddress, historyId }`; the ingress commits it (GmailStore.recordGmailPush) before it answers.
 */
import type * as Jose from 'jose';
import type { IncomingHttpHeaders } from 'node:http';
import type { GmailConfig } from '../config/schema/gmail.js';
import { HttpError } from '../errors.js';
import { asFetch } from '../http/client.js';
import { logSafe } from '../text-safe.js';
import type { GmailPush } from '../store/types.js';

export const GOOGLE_ISSUERS = ['accounts.google.com', 'https://accounts.google.com'];
/** Clock skew allowed on `exp` / `iat` / `nbf`. */
export const OIDC_CLOCK_TOLERANCE_SECONDS = 60;
/** At most one JWKS fetch per this interval for tokens naming an unknown `kid` (a forger cannot make us hammer Google). */
const JWKS_COOLDOWN_MS = 5_000;
/** Google rotates its keys over days; they are fetched again at least this often. */
const JWKS_MAX_AGE_MS = 60 * 60_000;

type Jwks = ReturnType<typeof Jose.createRemoteJWKSet>;
const jwksByUrl = new Map<string, Jwks>();

/**
 * jose is loaded on the first push, not at start: a process without Gmail (most) never holds its modules in
 * memory.
 */
let jose: Promise<typeof Jose> | undefined;
const loadJose = () => (jose ??= import('jose'));

/** One cached key set per JWKS URL, kept across config reloads. */
function jwksFor({ createRemoteJWKSet, customFetch }: typeof Jose, url: string): Jwks {
  let jwks = jwksByUrl.get(url);
  if (!jwks) {
    // The key set is fetched through the one outbound client; its URL is the config's `hooks.gmail.jwksUrl`.
    jwks = createRemoteJWKSet(new URL(url), {
      cooldownDuration: JWKS_COOLDOWN_MS,
      cacheMaxAge: JWKS_MAX_AGE_MS,
      timeoutDuration: 5_000,
      [customFetch]: asFetch(),
    });
    jwksByUrl.set(url, jwks);
  }
  return jwks;
}

export type OidcCheck = { ok: true } | { ok: false; reason: string };

/** The OIDC check of one push. Never throws; `reason` names the failed check (never the token). */
export async function verifyPushToken(
  headers: IncomingHttpHeaders,
  gmail: Pick<GmailConfig, 'audience' | 'serviceAccountEmail' | 'jwksUrl'>,
  now: number,
): Promise<OidcCheck> {
  const auth = headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  if (!m) return { ok: false, reason: 'no Bearer OIDC token' };
  if (!gmail.audience || !gmail.serviceAccountEmail)
    return { ok: false, reason: 'hooks.gmail.audience / serviceAccountEmail not configured' };
  const lib = await loadJose();
  try {
    const { payload } = await lib.jwtVerify(m[1]!, jwksFor(lib, gmail.jwksUrl), {
      algorithms: ['RS256'],
      issuer: GOOGLE_ISSUERS,
      audience: gmail.audience,
      clockTolerance: OIDC_CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ['exp', 'email'],
      currentDate: new Date(now),
    });
    if (payload.email !== gmail.serviceAccountEmail)
      return { ok: false, reason: 'OIDC token email is not hooks.gmail.serviceAccountEmail' };
    if (payload.email_verified !== true && payload.email_verified !== 'true')
      return { ok: false, reason: 'OIDC token email is not verified' };
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: `OIDC token rejected: ${describeJoseError(lib.errors, err)}` };
  }
}

function describeJoseError(joseErrors: typeof Jose.errors, err: unknown): string {
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `${err.code} (${err.claim})`;
  if (err instanceof joseErrors.JOSEError) return err.code;
  // Not jose's own: the key set could not be fetched (the network, a timeout). Its name alone (`TypeError`) says
  // nothing; the system's code and the cause's message say what to fix (DNS, a firewall, a proxy).
  const e = (err ?? {}) as {
    name?: unknown;
    message?: unknown;
    code?: unknown;
    cause?: { code?: unknown; message?: unknown };
  };
  const name = typeof e.name === 'string' ? e.name : 'error';
  const code = [e.code, e.cause?.code].find((c): c is string => typeof c === 'string');
  const message =
    typeof e.cause?.message === 'string' ? e.cause.message : typeof e.message === 'string' ? e.message : '';
  return `cannot fetch the JWKS (hooks.gmail.jwksUrl): ${name}${code ? ` ${code}` : ''}${message ? `: ${logSafe(message, 200)}` : ''}`;
}

/** Gmail's notification, decoded from a Pub/Sub push envelope; null when the envelope is not one. */
export function decodePushEnvelope(payload: Record<string, unknown>): Omit<GmailPush, 'receivedAt'> {
  const message = payload.message;
  const bad = (why: string) =>
    new HttpError(400, 'invalid_payload', `not a Pub/Sub push of a Gmail notification: ${why}`);
  if (typeof message !== 'object' || message === null) throw bad('no message');
  const msg = message as Record<string, unknown>;
  const messageId = msg.messageId ?? msg.message_id;
  if (typeof messageId !== 'string' || messageId === '' || messageId.length > 200) throw bad('no message.messageId');
  if (typeof msg.data !== 'string') throw bad('no message.data');
  let data: unknown;
  try {
    data = JSON.parse(Buffer.from(msg.data, 'base64').toString('utf8'));
  } catch {
    throw bad('message.data is not base64 of JSON');
  }
  const d = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const historyId = typeof d.historyId === 'number' ? String(d.historyId) : d.historyId;
  if (typeof d.emailAddress !== 'string' || d.emailAddress === '') throw bad('no emailAddress');
  if (typeof historyId !== 'string' || !/^\d{1,20}$/.test(historyId)) throw bad('no historyId');
  return { messageId, account: d.emailAddress, historyId: historyId.replace(/^0+(?=\d)/, '') };
}
