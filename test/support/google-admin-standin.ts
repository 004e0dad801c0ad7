/**
 * A local stand-in for the Google endpoints `hookgate gmail setup / stop` call, checking what Google checks: a Bearer
 * token on every call (401 UNAUTHENTICATED otherwise), JSON bodies of the documented shapes (400 INVALID_ARGUMENT),
 * 409 ALREADY_EXISTS for an existing topic or subscription, 404 for a subscription to a missing topic, the IAM
 * policy's etag (a set with a stale etag is 409 ABORTED), the token endpoint's grants (refresh_token, and a
 * service account's RS256 JWT assertion verified against its public key), and Gmail's `users.stop`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';

export interface Policy {
  version?: number;
  etag?: string;
  bindings?: Array<{ role: string; members: string[] }>;
}

export interface Logged {
  method: string;
  path: string;
  auth: string | undefined;
  body: unknown;
}

export interface GoogleStandin {
  url: string;
  /** Every request, in order. */
  log: Logged[];
  topics: Map<string, { policy: Policy; version: number }>;
  subscriptions: Map<string, Record<string, unknown>>;
  /** Access tokens the API accepts. */
  tokens: Set<string>;
  /** Runs once before the next setIamPolicy is answered (to simulate a concurrent change). */
  beforeNextSet?: () => void;
  /** The service account whose assertions the token endpoint accepts: its email and SPKI PEM. */
  serviceAccount?: { email: string; publicKeyPem: string };
  /** refresh_token grants accepted: refresh token → client id/secret. */
  refreshTokens: Map<string, { clientId: string; clientSecret: string }>;
  stops: string[];
  close(): Promise<void>;
}

const err = (code: number, status: string, message: string) => ({ code, body: { error: { code, message, status } } });

export async function startGoogleStandin(): Promise<GoogleStandin> {
  const s: GoogleStandin = {
    url: '',
    log: [],
    topics: new Map(),
    subscriptions: new Map(),
    tokens: new Set(['test-access-token']),
    refreshTokens: new Map(),
    stops: [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  let issued = 0;

  const etagOf = (version: number) => Buffer.from(`etag-${version}`).toString('base64');

  async function token(req: IncomingMessage, raw: string): Promise<{ code: number; body: unknown }> {
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
      return { code: 400, body: { error: 'invalid_request', error_description: 'form body expected' } };
    const form = new URLSearchParams(raw);
    const grant = form.get('grant_type');
    const ok = () => {
      const t = `issued-${++issued}`;
      s.tokens.add(t);
      return { code: 200, body: { access_token: t, expires_in: 3599, token_type: 'Bearer' } };
    };
    if (grant === 'refresh_token') {
      const known = s.refreshTokens.get(form.get('refresh_token') ?? '');
      if (!known)
        return { code: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } };
      if (known.clientId !== form.get('client_id') || known.clientSecret !== form.get('client_secret'))
        return { code: 401, body: { error: 'invalid_client', error_description: 'Unauthorized' } };
      return ok();
    }
    if (grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      if (!s.serviceAccount)
        return { code: 400, body: { error: 'invalid_grant', error_description: 'no service account' } };
      try {
        const key = await importSPKI(s.serviceAccount.publicKeyPem, 'RS256');
        const { payload, protectedHeader } = await jwtVerify(form.get('assertion') ?? '', key, {
          issuer: s.serviceAccount.email,
          audience: `${s.url}/token`,
          algorithms: ['RS256'],
        });
        if (protectedHeader.typ !== 'JWT') throw new Error('typ');
        if (typeof payload.scope !== 'string' || !payload.scope.includes('https://www.googleapis.com/auth/pubsub'))
          throw new Error('scope');
        if (!payload.exp || !payload.iat || payload.exp - payload.iat > 3600) throw new Error('lifetime');
      } catch (e) {
        return {
          code: 400,
          body: { error: 'invalid_grant', error_description: `Invalid JWT Signature. (${(e as Error).message})` },
        };
      }
      return ok();
    }
    return { code: 400, body: { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${grant}` } };
  }

  function api(method: string, path: string, body: unknown): { code: number; body: unknown } {
    let m: RegExpExecArray | null;
    const obj = (body ?? {}) as Record<string, unknown>;
    if ((m = /^\/v1\/projects\/([^/]+)\/topics\/([^/:]+)$/.exec(path)) && method === 'PUT') {
      const name = `projects/${m[1]}/topics/${m[2]}`;
      if (s.topics.has(name))
        return err(409, 'ALREADY_EXISTS', `Resource already exists in the project (resource=${m[2]}).`);
      s.topics.set(name, { policy: {}, version: 0 });
      return { code: 200, body: { name } };
    }
    if ((m = /^\/v1\/(projects\/[^/]+\/topics\/[^/:]+):getIamPolicy$/.exec(path)) && method === 'GET') {
      const t = s.topics.get(m[1]!);
      if (!t) return err(404, 'NOT_FOUND', 'Resource not found');
      return { code: 200, body: { ...t.policy, etag: etagOf(t.version) } };
    }
    if ((m = /^\/v1\/(projects\/[^/]+\/topics\/[^/:]+):setIamPolicy$/.exec(path)) && method === 'POST') {
      const t = s.topics.get(m[1]!);
      if (!t) return err(404, 'NOT_FOUND', 'Resource not found');
      const policy = obj.policy as Policy | undefined;
      if (!policy || !Array.isArray(policy.bindings)) return err(400, 'INVALID_ARGUMENT', 'policy.bindings expected');
      const hook = s.beforeNextSet;
      s.beforeNextSet = undefined;
      hook?.();
      if (policy.etag !== undefined && policy.etag !== etagOf(t.version))
        return err(409, 'ABORTED', 'There were concurrent policy changes.');
      t.version++;
      t.policy = { version: 1, bindings: policy.bindings };
      return { code: 200, body: { ...t.policy, etag: etagOf(t.version) } };
    }
    if ((m = /^\/v1\/(projects\/([^/]+)\/subscriptions\/[^/:]+)$/.exec(path))) {
      const name = m[1]!;
      if (method === 'GET')
        return s.subscriptions.has(name)
          ? { code: 200, body: s.subscriptions.get(name) }
          : err(404, 'NOT_FOUND', 'Resource not found');
      if (method !== 'PUT') return err(405, 'METHOD', 'no');
      const push = obj.pushConfig as
        | { pushEndpoint?: unknown; oidcToken?: { serviceAccountEmail?: unknown; audience?: unknown } }
        | undefined;
      if (typeof obj.topic !== 'string') return err(400, 'INVALID_ARGUMENT', 'topic expected');
      if (!push || typeof push.pushEndpoint !== 'string' || !push.pushEndpoint.startsWith('https://'))
        return err(400, 'INVALID_ARGUMENT', 'Invalid push endpoint given');
      if (typeof push.oidcToken?.serviceAccountEmail !== 'string')
        return err(400, 'INVALID_ARGUMENT', 'oidcToken.serviceAccountEmail expected');
      if (s.subscriptions.has(name)) return err(409, 'ALREADY_EXISTS', 'Resource already exists in the project.');
      if (!s.topics.has(obj.topic)) return err(404, 'NOT_FOUND', 'Resource not found (resource=topic).');
      const sub = { name, ...obj };
      s.subscriptions.set(name, sub);
      return { code: 200, body: sub };
    }
    if ((m = /^\/gmail\/v1\/users\/([^/]+)\/stop$/.exec(path)) && method === 'POST') {
      s.stops.push(decodeURIComponent(m[1]!));
      return { code: 204, body: undefined };
    }
    return err(404, 'NOT_FOUND', `no route ${method} ${path}`);
  }

  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      void (async () => {
        const path = new URL(req.url ?? '/', 'http://x').pathname;
        let body: unknown;
        const isJson = String(req.headers['content-type'] ?? '').startsWith('application/json');
        if (raw && isJson) {
          try {
            body = JSON.parse(raw);
          } catch {
            body = Symbol.for('invalid');
          }
        }
        s.log.push({
          method: req.method ?? '',
          path,
          auth: req.headers.authorization,
          body: path === '/token' ? Object.fromEntries(new URLSearchParams(raw)) : body,
        });
        let answer: { code: number; body: unknown };
        if (path === '/token' && req.method === 'POST') answer = await token(req, raw);
        else if (
          !/^Bearer .+/.test(req.headers.authorization ?? '') ||
          !s.tokens.has(req.headers.authorization!.slice(7))
        ) {
          answer = err(
            401,
            'UNAUTHENTICATED',
            'Request had invalid authentication credentials. Expected OAuth 2 access token.',
          );
        } else if (raw && !isJson) answer = err(400, 'INVALID_ARGUMENT', 'JSON body expected');
        else if (typeof body === 'symbol') answer = err(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.');
        else answer = api(req.method ?? '', path, body);
        if (answer.body === undefined) {
          res.writeHead(answer.code).end();
        } else {
          res
            .writeHead(answer.code, { 'content-type': 'application/json; charset=UTF-8' })
            .end(JSON.stringify(answer.body));
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return s;
}
