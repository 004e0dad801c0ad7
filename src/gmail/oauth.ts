/**
 * The mailbox's access token: the refresh_token grant at Google's token endpoint (`hooks.gmail.tokenUrl`), cached
 * by the one token cache until a minute before it expires, fetched again when the Gmail API says 401. Only one
 * refresh is in flight at a time. Neither the tokens nor the client secret are ever logged or put in an error.
 */
import type { Transport } from '../http/client.js';
import { GoogleApiError } from '../http/errors.js';
import { GOOGLE_TIMEOUT_MS, googleError, googleErrorSuffix, googleStatusError } from '../http/google.js';
import { type TokenFetched, TokenCache, refreshToken, requestToken } from '../http/token.js';

export interface OAuthCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
}

const WHAT = 'Google token endpoint';

export class GoogleOAuth {
  private readonly tokens: TokenCache<GoogleApiError>;
  private last: string | undefined;

  constructor(
    private readonly creds: OAuthCredentials,
    private readonly transport?: Transport,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = new TokenCache(() => this.refresh(), now);
  }

  /** A valid access token (cached, or refreshed now). */
  async accessToken(): Promise<string> {
    const got = await this.tokens.get();
    if (!got.ok) throw got.failure;
    this.last = got.token;
    return got.token;
  }

  /** The API refused the cached token (revoked, or expired early): the next call refreshes. */
  invalidate(): void {
    if (this.last !== undefined) this.tokens.invalidate(this.last);
  }

  private async refresh(): Promise<TokenFetched<GoogleApiError>> {
    const answer = await requestToken(this.creds.tokenUrl, refreshToken(this.creds), {
      timeoutMs: GOOGLE_TIMEOUT_MS,
      transport: this.transport,
      defaultLifetimeMs: 3600_000,
      now: this.now,
    });
    if (answer.ok) return answer;
    const res = answer.outcome;
    if (res.kind !== 'response')
      return {
        ok: false,
        failure: new GoogleApiError(`${WHAT}: no answer (${res.kind === 'network' ? 'network error' : 'timeout'})`, 0),
      };
    // 400 / 401: the grant itself is refused (revoked or expired refresh token, wrong client): say so plainly.
    if (res.status === 400 || res.status === 401) {
      return {
        ok: false,
        failure: new GoogleApiError(
          `Google's token endpoint refused the refresh token${googleErrorSuffix(res.json)}`,
          res.status,
          undefined,
          googleError(res.json).status,
        ),
      };
    }
    if (res.status < 200 || res.status > 299) return { ok: false, failure: googleStatusError(WHAT, res) };
    return { ok: false, failure: new GoogleApiError(`${WHAT}: no access_token in the answer`, 502) };
  }
}
