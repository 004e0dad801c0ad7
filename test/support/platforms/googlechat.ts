/**
 * A stand-in for Google's OAuth 2.0 token endpoint (JWT-bearer grant) and the Chat API's spaces.messages.create.
 *
 * POST /token (form): grant_type must be urn:ietf:params:oauth:grant-type:jwt-bearer; the assertion must be an RS256
 * JWT whose signature verifies with the registered service account's public key, with aud = this token URL, the
 * chat.bot scope, and a lifetime of at most an hour that has not ended. Errors as Google's: 400 { error:
 * "invalid_grant" | "unsupported_grant_type", error_description }. Success { access_token, expires_in, token_type }.
 *
 * POST /v1/spaces/{space}/messages: a Bearer token issued here (and not revoked/expired) or a configured static one,
 * else 401 UNAUTHENTICATED; unknown space 404 NOT_FOUND; app not in the space 403 PERMISSION_DENIED; empty or over
 * 4096 characters 400 INVALID_ARGUMENT; a repeated requestId returns the existing message. Errors are
 * { error: { code, message, status } }. Rate limit: 429 RESOURCE_EXHAUSTED; server error: 503 UNAVAILABLE.
 */
import { generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import {
  bearer,
  failureOutcome,
  obj,
  startStandIn,
  type FailureKind,
  type Outcome,
  type Reply,
  type StandIn,
} from './base.js';

export interface GoogleChatMessage {
  space: string;
  text: string;
  name: string;
  requestId: string | null;
}

export interface GoogleChatStandIn extends StandIn<GoogleChatMessage> {
  /** The token endpoint to configure as `tokenUrl`. */
  tokenUrl: string;
  /** How many token requests were made. */
  tokenRequests(): number;
  /** Every token issued so far stops working (as after a key rotation). */
  revokeTokens(): void;
  /** The next n token requests fail with `kind`. */
  failNextToken(n: number, kind: FailureKind): void;
}

export interface GoogleChatStandInOptions {
  serviceAccounts?: Array<{ clientEmail: string; publicKey: KeyObject }>;
  staticTokens?: string[];
  /** Spaces the Chat app is a member of (resource names). */
  spaces?: string[];
  /** Spaces that exist without the app. */
  spacesWithoutApp?: string[];
  /** expires_in of issued tokens. */
  tokenLifetimeS?: number;
}

export const GOOGLECHAT_TEST_SPACE = 'spaces/AAAAhookgate1';

/** A fresh service-account key (the JSON Google hands out) and its public half for the stand-in. */
export function createServiceAccountKey(clientEmail = 'hookgate@hookgate-test.iam.gserviceaccount.com'): {
  key: Record<string, string>;
  publicKey: KeyObject;
} {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    key: {
      type: 'service_account',
      project_id: 'hookgate-test',
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: clientEmail,
      client_id: '100000000000000000001',
      token_uri: 'https://oauth2.googleapis.com/token',
    },
    publicKey,
  };
}

const googleError = (code: number, status: string, message: string): Reply => ({
  status: code,
  body: { error: { code, message, status } },
});
const oauthError = (error: string, description: string): Reply => ({
  status: 400,
  body: { error, error_description: description },
});

export async function startGoogleChat(options: GoogleChatStandInOptions = {}): Promise<GoogleChatStandIn> {
  const accounts = new Map((options.serviceAccounts ?? []).map((a) => [a.clientEmail, a.publicKey]));
  const staticTokens = new Set(options.staticTokens ?? []);
  const spaces = new Set(options.spaces ?? [GOOGLECHAT_TEST_SPACE]);
  const withoutApp = new Set(options.spacesWithoutApp ?? []);
  const lifetimeS = options.tokenLifetimeS ?? 3599;
  const issued = new Map<string, number>(); // token → expiry ms
  const byRequestId = new Map<string, GoogleChatMessage>();
  const tokenFailures: FailureKind[] = [];
  let tokenCount = 0;
  let seq = 1;
  let selfUrl = '';

  const base = await startStandIn<GoogleChatMessage>((req, ctx): Outcome => {
    if (req.path === '/token') {
      if (req.method !== 'POST') return { status: 405, body: 'Method Not Allowed' };
      tokenCount++;
      const failure = tokenFailures.shift();
      if (failure) {
        return failureOutcome(failure, (kind) =>
          kind === 'rate_limit'
            ? { status: 429, body: { error: 'rate_limit_exceeded' } }
            : { status: 503, body: { error: 'backend_error' } },
        );
      }
      return issueToken(obj(req.body));
    }

    const m = /^\/v1\/(spaces\/[^/]+)\/messages$/.exec(req.path);
    if (!m) return googleError(404, 'NOT_FOUND', `The requested URL ${req.path} was not found on this server.`);
    if (req.method !== 'POST') return googleError(405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
    const token = bearer(req.headers);
    const expiry = token ? issued.get(token) : undefined;
    const valid = token !== undefined && (staticTokens.has(token) || (expiry !== undefined && expiry > Date.now()));
    if (!valid) {
      return googleError(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
    }

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? googleError(
              429,
              'RESOURCE_EXHAUSTED',
              "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per project'.",
            )
          : googleError(503, 'UNAVAILABLE', 'The service is currently unavailable.'),
      );
    }

    const space = decodeURIComponent(m[1] ?? '');
    if (withoutApp.has(space)) return googleError(403, 'PERMISSION_DENIED', 'The caller does not have permission');
    if (!spaces.has(space)) return googleError(404, 'NOT_FOUND', 'Requested entity was not found.');
    const text = obj(req.body).text;
    if (typeof text !== 'string' || !text.trim())
      return googleError(400, 'INVALID_ARGUMENT', 'Message cannot be empty.');
    if ([...text].length > 4096)
      return googleError(
        400,
        'INVALID_ARGUMENT',
        'Invalid message text: text exceeds the maximum length of 4096 characters.',
      );

    const requestId = req.query.get('requestId');
    if (requestId) {
      const existing = byRequestId.get(`${space}/${requestId}`);
      if (existing) return { status: 200, body: messageResource(existing) };
    }
    const message: GoogleChatMessage = { space, text, name: `${space}/messages/msg${seq++}.hookgate`, requestId };
    if (requestId) byRequestId.set(`${space}/${requestId}`, message);
    ctx.accept(message);
    return { status: 200, body: messageResource(message) };
  });
  selfUrl = base.url;

  function issueToken(form: Record<string, unknown>): Reply {
    if (form.grant_type !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      return oauthError('unsupported_grant_type', `Invalid grant_type: ${String(form.grant_type ?? '')}`);
    }
    const parts = typeof form.assertion === 'string' ? form.assertion.split('.') : [];
    if (parts.length !== 3) return oauthError('invalid_grant', 'Invalid JWT: token must have three parts.');
    const [h, p, s] = parts as [string, string, string];
    let header: Record<string, unknown>;
    let claims: Record<string, unknown>;
    try {
      header = obj(JSON.parse(Buffer.from(h, 'base64url').toString('utf8')));
      claims = obj(JSON.parse(Buffer.from(p, 'base64url').toString('utf8')));
    } catch {
      return oauthError('invalid_grant', 'Invalid JWT: malformed.');
    }
    if (header.alg !== 'RS256') return oauthError('invalid_grant', 'Invalid JWT: unsupported algorithm.');
    const publicKey = typeof claims.iss === 'string' ? accounts.get(claims.iss) : undefined;
    if (!publicKey) return oauthError('invalid_grant', 'Invalid grant: account not found');
    if (!verify('sha256', Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, 'base64url'))) {
      return oauthError('invalid_grant', 'Invalid JWT Signature.');
    }
    const now = Math.floor(Date.now() / 1000);
    const iat = Number(claims.iat);
    const exp = Number(claims.exp);
    if (claims.aud !== `${selfUrl}/token` || !(exp > now) || !(iat <= now + 60) || exp - iat > 3600) {
      return oauthError(
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.',
      );
    }
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
    if (!scopes.includes('https://www.googleapis.com/auth/chat.bot'))
      return oauthError('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const token = `ya29.${randomBytes(24).toString('base64url')}`;
    issued.set(token, Date.now() + lifetimeS * 1000);
    return { status: 200, body: { access_token: token, expires_in: lifetimeS, token_type: 'Bearer' } };
  }

  return Object.assign(base, {
    tokenUrl: `${base.url}/token`,
    tokenRequests: () => tokenCount,
    revokeTokens: () => issued.clear(),
    failNextToken(n: number, kind: FailureKind) {
      for (let i = 0; i < n; i++) tokenFailures.push(kind);
    },
  });
}

function messageResource(m: GoogleChatMessage): object {
  return {
    name: m.name,
    sender: { name: 'users/app', type: 'BOT' },
    text: m.text,
    space: { name: m.space },
    createTime: new Date().toISOString(),
  };
}
