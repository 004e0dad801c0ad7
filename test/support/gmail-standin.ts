/**
 * Local stand-ins for Google, for the Gmail push chain's tests: one HTTP server that is Google's JWKS endpoint (RSA
 * keys generated here), its token endpoint (checks the refresh_token grant form) and the Gmail API
 * (`/gmail/v1/users/me/…`: history.list with 404 for a history id older than it keeps, messages.get format full,
 * messages.list, getProfile, watch, stop), plus the OIDC tokens a Pub/Sub push carries, signed by those keys.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

export const OAUTH = {
  clientId: 'client-123.apps.googleusercontent.com',
  clientSecret: 'client-secret-xyz',
  refreshToken: 'refresh-token-abc',
};
export const SERVICE_ACCOUNT = 'gmail-push@proj.iam.gserviceaccount.com';
export const ACCOUNT = 'alice@example.com';

export interface StandinMail {
  id: string;
  from: string;
  subject: string;
  text?: string;
  html?: string;
  labelIds?: string[];
}

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

export interface GoogleStandin {
  url: string;
  jwksUrl: string;
  tokenUrl: string;
  /** Every request, as `METHOD path?query`. */
  calls: string[];
  tokenGrants: number;
  watches: number;
  /** The current history id of the mailbox. */
  historyId: number;
  /** history.list answers 404 for a start below this (Gmail keeps about a week of history). */
  oldestHistoryId: number;
  /** The next N Gmail API calls answer 429 (with Retry-After: 0). */
  fail429: number;
  /** While set, history.list and messages.list wait for it (a fetch in flight at a kill -9). */
  hold: Promise<void> | undefined;
  addMail(mail: StandinMail): number;
  /** A Google-style OIDC token; `forge` signs with a key that is not in the JWKS (same kid). */
  token(claims?: Record<string, unknown>, opts?: { forge?: boolean; expiresIn?: number }): Promise<string>;
  close(): Promise<void>;
}

export async function startGoogleStandin(): Promise<GoogleStandin> {
  const real: KeyPair = await generateKeyPair('RS256', { extractable: true });
  const forged: KeyPair = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(real.publicKey)), kid: 'key-1', alg: 'RS256', use: 'sig' };
  const mails: Array<StandinMail & { historyId: number }> = [];
  const s = {
    calls: [] as string[],
    tokenGrants: 0,
    watches: 0,
    historyId: 1000,
    oldestHistoryId: 0,
    fail429: 0,
    hold: undefined as Promise<void> | undefined,
  } as GoogleStandin;
  const issued = new Set<string>();

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let b = '';
      req.on('data', (c: Buffer) => (b += c.toString()));
      req.on('end', () => resolve(b));
    });
  const full = (m: StandinMail & { historyId: number }) => {
    const part = (mimeType: string, text: string) => ({
      mimeType,
      headers: [{ name: 'Content-Type', value: `${mimeType}; charset="UTF-8"` }],
      body: { size: text.length, data: Buffer.from(text).toString('base64url') },
    });
    const parts = [
      ...(m.text !== undefined ? [part('text/plain', m.text)] : []),
      ...(m.html !== undefined ? [part('text/html', m.html)] : []),
    ];
    return {
      id: m.id,
      threadId: `t-${m.id}`,
      labelIds: m.labelIds ?? ['INBOX'],
      snippet: (m.text ?? '').slice(0, 50),
      historyId: String(m.historyId),
      payload: {
        mimeType: 'multipart/alternative',
        headers: [
          { name: 'From', value: m.from },
          { name: 'To', value: ACCOUNT },
          { name: 'Subject', value: m.subject },
          { name: 'Date', value: 'Wed, 25 Nov 2026 18:00:00 +0000' },
        ],
        parts,
      },
    };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    s.calls.push(`${req.method} ${url.pathname}${url.search}`);
    if (url.pathname === '/jwks') return json(res, 200, { keys: [jwk] });
    if (url.pathname === '/token') {
      const form = new URLSearchParams(await body(req));
      const ok =
        req.method === 'POST' &&
        form.get('grant_type') === 'refresh_token' &&
        form.get('client_id') === OAUTH.clientId &&
        form.get('client_secret') === OAUTH.clientSecret &&
        form.get('refresh_token') === OAUTH.refreshToken;
      if (!ok) return json(res, 400, { error: 'invalid_grant' });
      s.tokenGrants++;
      const token = `access-${s.tokenGrants}`;
      issued.add(token);
      return json(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
    }
    const prefix = '/gmail/v1/users/me/';
    if (!url.pathname.startsWith(prefix)) return json(res, 404, { error: { code: 404, status: 'NOT_FOUND' } });
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !issued.has(auth)) return json(res, 401, { error: { code: 401, status: 'UNAUTHENTICATED' } });
    if (s.fail429 > 0) {
      s.fail429--;
      return json(res, 429, { error: { code: 429, status: 'RESOURCE_EXHAUSTED' } }, { 'retry-after': '0' });
    }
    const path = url.pathname.slice(prefix.length);
    if (path === 'history' || path === 'messages') await s.hold;
    if (path === 'history') {
      const start = Number(url.searchParams.get('startHistoryId'));
      if (url.searchParams.get('historyTypes') !== 'messageAdded')
        return json(res, 400, { error: { code: 400, status: 'INVALID_ARGUMENT' } });
      if (!(start >= s.oldestHistoryId)) return json(res, 404, { error: { code: 404, status: 'NOT_FOUND' } });
      const label = url.searchParams.get('labelId');
      const added = mails.filter((m) => m.historyId > start && (!label || (m.labelIds ?? ['INBOX']).includes(label)));
      return json(res, 200, {
        history: added.map((m) => ({
          id: String(m.historyId),
          messagesAdded: [{ message: { id: m.id, threadId: `t-${m.id}`, labelIds: m.labelIds ?? ['INBOX'] } }],
        })),
        historyId: String(s.historyId),
      });
    }
    if (path === 'messages') {
      const labels = url.searchParams.getAll('labelIds');
      const max = Number(url.searchParams.get('maxResults') ?? 100);
      const list = mails
        .filter((m) => labels.every((l) => (m.labelIds ?? ['INBOX']).includes(l)))
        .reverse()
        .slice(0, max);
      return json(res, 200, {
        messages: list.map((m) => ({ id: m.id, threadId: `t-${m.id}` })),
        resultSizeEstimate: list.length,
      });
    }
    if (path.startsWith('messages/')) {
      const m = mails.find((x) => x.id === decodeURIComponent(path.slice('messages/'.length)));
      if (!m || url.searchParams.get('format') !== 'full')
        return json(res, 404, { error: { code: 404, status: 'NOT_FOUND' } });
      return json(res, 200, full(m));
    }
    if (path === 'profile')
      return json(res, 200, { emailAddress: ACCOUNT, messagesTotal: mails.length, historyId: String(s.historyId) });
    if (path === 'watch' && req.method === 'POST') {
      const b = JSON.parse(await body(req)) as { topicName?: string; labelIds?: string[] };
      if (!b.topicName) return json(res, 400, { error: { code: 400, status: 'INVALID_ARGUMENT' } });
      s.watches++;
      return json(res, 200, { historyId: String(s.historyId), expiration: String(Date.now() + 7 * 86_400_000) });
    }
    if (path === 'stop' && req.method === 'POST') return json(res, 204, {});
    return json(res, 404, { error: { code: 404, status: 'NOT_FOUND' } });
  };

  const server: Server = createServer((req, res) => void handle(req, res).catch(() => json(res, 500, {})));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(s, {
    url,
    jwksUrl: `${url}/jwks`,
    tokenUrl: `${url}/token`,
    addMail(mail: StandinMail) {
      s.historyId += 7;
      mails.push({ ...mail, historyId: s.historyId });
      return s.historyId;
    },
    async token(claims: Record<string, unknown> = {}, opts: { forge?: boolean; expiresIn?: number } = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ email: SERVICE_ACCOUNT, email_verified: true, sub: '1234567890', ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: 'key-1', typ: 'JWT' })
        .setIssuer((claims.iss as string | undefined) ?? 'https://accounts.google.com')
        .setAudience((claims.aud as string | undefined) ?? 'https://hookgate.test/hooks/gmail-push')
        .setIssuedAt(now - 10)
        .setExpirationTime(now + (opts.expiresIn ?? 3600))
        .sign((opts.forge ? forged : real).privateKey);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

/** A Pub/Sub push body carrying Gmail's notification. */
export function pushEnvelope(messageId: string, historyId: number, emailAddress = ACCOUNT): Record<string, unknown> {
  return {
    message: {
      data: Buffer.from(JSON.stringify({ emailAddress, historyId })).toString('base64'),
      messageId,
      message_id: messageId,
      publishTime: new Date().toISOString(),
    },
    subscription: 'projects/proj/subscriptions/gmail-push',
  };
}
