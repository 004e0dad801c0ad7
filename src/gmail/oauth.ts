/**
 * The mailbox's access token: a `refresh_token` grant at Google's token endpoint (`hooks.gmail.tokenUrl`), cached
 * until a minute before it expires, fetched again when the Gmail API says 401. Only one refresh is in flight at a
 * time. Neither the tokens nor the client secret are ever logged or put in an error.
 */
import { GoogleApiError, googleJson } from './http.js';

export interface OAuthCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
}

/** Refresh this long before the token's own expiry. */
const EXPIRY_MARGIN_MS = 60_000;

export class GoogleOAuth {
  private token: { value: string; expiresAt: number } | undefined;
  private refreshing: Promise<string> | undefined;

  constructor(
    private readonly creds: OAuthCredentials,
    private readonly fetchFn: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  /** A valid access token (cached, or refreshed now). */
  accessToken(): Promise<string> {
    if (this.token && this.token.expiresAt - EXPIRY_MARGIN_MS > this.now()) return Promise.resolve(this.token.value);
    return (this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined)));
  }

  /** The API refused the cached token (revoked, or expired early): the next call refreshes. */
  invalidate(): void {
    this.token = undefined;
  }

  private async refresh(): Promise<string> {
    const body = new URLSearchParams({
      grant_type: 'refresh_token',
      client_id: this.creds.clientId,
      client_secret: this.creds.clientSecret,
      refresh_token: this.creds.refreshToken,
    });
    const r = await googleJson<{ access_token?: unknown; expires_in?: unknown }>(
      'Google token endpoint',
      this.creds.tokenUrl,
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body },
      this.fetchFn,
    ).catch((err: unknown) => {
      // 400 / 401: the grant itself is refused (revoked or expired refresh token, wrong client): say so plainly.
      if (err instanceof GoogleApiError && (err.status === 400 || err.status === 401)) {
        throw new GoogleApiError(`Google's token endpoint refused the refresh token${/\(.*\)$/.exec(err.message)?.[0].replace(/^/, ' ') ?? ''}`, err.status);
      }
      throw err;
    });
    if (typeof r.access_token !== 'string' || r.access_token === '') throw new GoogleApiError('Google token endpoint: no access_token in the answer', 502);
    const expiresIn = typeof r.expires_in === 'number' && r.expires_in > 0 ? r.expires_in : 3600;
    this.token = { value: r.access_token, expiresAt: this.now() + expiresIn * 1000 };
    return r.access_token;
  }
}
