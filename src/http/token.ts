/**
 * Bearer tokens for outbound calls: the three OAuth 2.0 grants hookgate uses, one token request, and one cache.
 *
 * - `jwtBearer(serviceAccount, scope)`: a Google service account's RS256-signed assertion (RFC 7523) — Google Chat,
 *   `hookgate gmail setup --credentials`;
 * - `refreshToken(client)`: the refresh_token grant — the Gmail mailbox, `authorized_user` credentials;
 * - `clientCredentials(client, scope)`: the client-credentials grant (RFC 6749 section 4.4) — Microsoft Teams.
 *
 * Neither the tokens, the secrets nor the key are ever logged or put in an error.
 */
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { logSafeOptional } from '../text-safe.js';
import { type HttpOutcome, type RequestOptions, formBody, request } from './client.js';

/** A service-account key, read and checked (the private key parsed) once. */
export interface ServiceAccount {
  clientEmail: string;
  privateKey: KeyObject;
  keyId: string | undefined;
}

/**
 * A parsed key file's `client_email`, `private_key` and `private_key_id` as a ServiceAccount, or what is wrong with
 * it: `fields` (not a service-account key) or `key` (the private key is not a readable PEM private key).
 */
export function readServiceAccount(key: Record<string, unknown>): ServiceAccount | 'fields' | 'key' {
  if (typeof key.client_email !== 'string' || typeof key.private_key !== 'string') return 'fields';
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key.private_key);
  } catch {
    return 'key';
  }
  if (privateKey.asymmetricKeyType !== 'rsa') return 'key';
  return {
    clientEmail: key.client_email,
    privateKey,
    keyId: typeof key.private_key_id === 'string' ? key.private_key_id : undefined,
  };
}

/** The longest assertion lifetime Google accepts. */
const JWT_LIFETIME_S = 3600;
const b64url = (s: string): string => Buffer.from(s, 'utf8').toString('base64url');

/** RFC 7523 section 2.1 assertion: iss = the service account, aud = the token endpoint, RS256, valid one hour. */
export function signAssertion(account: ServiceAccount, scope: string, audience: string, nowS: number): string {
  const header = { alg: 'RS256', typ: 'JWT', ...(account.keyId ? { kid: account.keyId } : {}) };
  const claims = { iss: account.clientEmail, scope, aud: audience, iat: nowS, exp: nowS + JWT_LIFETIME_S };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${input}.${sign('sha256', Buffer.from(input), account.privateKey).toString('base64url')}`;
}

/** An OAuth 2.0 grant: the form POSTed to the token endpoint. */
export interface Grant {
  type: 'jwt-bearer' | 'refresh_token' | 'client_credentials';
  form(tokenUrl: string, nowS: number): Record<string, string>;
}

export function jwtBearer(account: ServiceAccount, scope: string): Grant {
  return {
    type: 'jwt-bearer',
    form: (tokenUrl, nowS) => ({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: signAssertion(account, scope, tokenUrl, nowS),
    }),
  };
}

export interface OAuthClient {
  clientId: string;
  clientSecret: string;
}

export function refreshToken(client: OAuthClient & { refreshToken: string }): Grant {
  return {
    type: 'refresh_token',
    form: () => ({
      grant_type: 'refresh_token',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      refresh_token: client.refreshToken,
    }),
  };
}

export function clientCredentials(client: OAuthClient, scope: string): Grant {
  return {
    type: 'client_credentials',
    form: () => ({
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
      scope,
    }),
  };
}

/**
 * A token endpoint's answer: the access token and when to stop using it, or the outcome that carried none (no
 * answer, an error status, a 2xx without `access_token`) with the endpoint's `error` and `error_description`,
 * made log-safe, for the caller to word.
 */
export type TokenAnswer =
  | { ok: true; token: string; expiresAtMs: number }
  | { ok: false; outcome: HttpOutcome; error: string | undefined; description: string | undefined };

export interface TokenRequestOptions extends Pick<RequestOptions, 'timeoutMs' | 'transport'> {
  /** The life of a token whose answer has no `expires_in`. */
  defaultLifetimeMs: number;
  now?: () => number;
}

export async function requestToken(tokenUrl: string, grant: Grant, options: TokenRequestOptions): Promise<TokenAnswer> {
  const now = options.now ?? Date.now;
  const outcome = await request(
    tokenUrl,
    {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: formBody(grant.form(tokenUrl, Math.floor(Date.now() / 1000))),
    },
    { timeoutMs: options.timeoutMs, transport: options.transport },
  );
  const body = outcome.kind === 'response' ? asRecord(outcome.json) : {};
  const token = body.access_token;
  if (
    outcome.kind === 'response' &&
    outcome.status >= 200 &&
    outcome.status < 300 &&
    typeof token === 'string' &&
    token
  ) {
    const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : Number(body.expires_in);
    const lifetimeMs = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : options.defaultLifetimeMs;
    return { ok: true, token, expiresAtMs: now() + lifetimeMs };
  }
  return {
    ok: false,
    outcome,
    error: logSafeOptional(body.error, 60),
    description: logSafeOptional(body.error_description),
  };
}

/** A plain object view of a parsed JSON body, for reading optional fields without casts at every step. */
export function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** A token, or why there is none (`F`: the caller's failure type). `fresh`: this call fetched it. */
export type TokenGot<F> = { ok: true; token: string; fresh: boolean } | { ok: false; failure: F };
export type TokenFetched<F> = { ok: true; token: string; expiresAtMs: number } | { ok: false; failure: F };

/** Where a caller gets its bearer token: a TokenCache, or a fixed token from config. */
export interface TokenSource<F> {
  get(): Promise<TokenGot<F>>;
  invalidate(token: string): void;
}

/**
 * Caches one access token until shortly before it expires; concurrent callers share one in-flight request.
 * The in-flight request is not tied to any caller's abort signal, so one caller stopping does not fail the others.
 * A failure is not cached.
 */
export class TokenCache<F> implements TokenSource<F> {
  private cached: { token: string; expiresAtMs: number } | undefined;
  private inflight: Promise<TokenFetched<F>> | undefined;

  constructor(
    private readonly fetchToken: () => Promise<TokenFetched<F>>,
    private readonly now: () => number = Date.now,
    /** Refresh this long before expiry, so a token never expires between get() and the other side reading it. */
    private readonly marginMs = 60_000,
  ) {}

  async get(): Promise<TokenGot<F>> {
    const c = this.cached;
    if (c && this.now() < c.expiresAtMs - this.marginMs) return { ok: true, token: c.token, fresh: false };
    this.inflight ??= this.fetchToken().finally(() => {
      this.inflight = undefined;
    });
    const got = await this.inflight;
    if (!got.ok) return got;
    this.cached = { token: got.token, expiresAtMs: got.expiresAtMs };
    return { ok: true, token: got.token, fresh: true };
  }

  /** The other side rejected this token (revoked, rotated): forget it unless a newer one already replaced it. */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }
}

/** A configured token: never refreshed, so a 401 with it is final. */
export function staticToken<F>(token: string): TokenSource<F> {
  return { get: async () => ({ ok: true, token, fresh: true }), invalidate: () => {} };
}

/**
 * Calls with a bearer token. A 401 answered to a *cached* token means it was revoked or rotated early: drop it and
 * try once more with a new one. A 401 to a token fetched just now is the real answer.
 */
export async function withBearer<F>(
  source: TokenSource<F>,
  call: (token: string) => Promise<HttpOutcome>,
): Promise<{ ok: true; outcome: HttpOutcome } | { ok: false; failure: F }> {
  for (let attempt = 0; ; attempt++) {
    const tok = await source.get();
    if (!tok.ok) return tok;
    const outcome = await call(tok.token);
    if (outcome.kind === 'response' && outcome.status === 401 && !tok.fresh && attempt === 0) {
      source.invalidate(tok.token);
      continue;
    }
    return { ok: true, outcome };
  }
}
