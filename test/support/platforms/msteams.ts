/**
 * A stand-in for the Microsoft identity platform token endpoint (client credentials) and the Bot Framework
 * Connector's "send to conversation" (POST {serviceUrl}/v3/conversations/{id}/activities).
 *
 * POST /{tenant}/oauth2/v2.0/token (form): tenant must be botframework.com or the configured tenant id;
 * grant_type=client_credentials; client_id known (else 400 unauthorized_client AADSTS700016); client_secret right
 * (else 401 invalid_client AADSTS7000215); scope https://api.botframework.com/.default (else 400 invalid_scope).
 *
 * POST …/v3/conversations/{id}/activities (any serviceUrl prefix, like /amer/): a Bearer token issued here, else
 * 401 { message: "Authorization has been denied for this request." }; type "message"; the conversation known
 * (404 ConversationNotFound) and the bot in it (403 BotNotInConversationRoster); the request at most ~28 KB
 * (413 MessageSizeTooBig). Rate limit: 429 with Retry-After; server error: 502 ServiceError. Success 201 { id }.
 */
import { randomBytes } from 'node:crypto';
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

export const MSTEAMS_TEST_APP_ID = '8a0b3f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
export const MSTEAMS_TEST_APP_PASSWORD = 'Qx8~hookgate.test-client-secret';
export const MSTEAMS_TEST_CONVERSATION = '19:abcdef0123456789@thread.tacv2';
/** Teams' documented activity size limit, approximately 28 KB. */
export const MSTEAMS_MAX_REQUEST_BYTES = 28 * 1024;

export interface MsTeamsMessage {
  conversationId: string;
  text: string;
  id: string;
}

export interface MsTeamsStandIn extends StandIn<MsTeamsMessage> {
  /** Token URL for tenant `tenant` (default botframework.com), to configure as `tokenUrl`. */
  tokenUrl(tenant?: string): string;
  tokenRequests(): number;
  revokeTokens(): void;
  failNextToken(n: number, kind: FailureKind): void;
}

export interface MsTeamsStandInOptions {
  appId?: string;
  appPassword?: string;
  /** Accepted tenants besides botframework.com. */
  tenants?: string[];
  conversations?: string[];
  /** Conversations the bot is not part of. */
  notInRoster?: string[];
  retryAfterS?: number;
}

const aadError = (status: number, error: string, description: string, code: number): Reply => ({
  status,
  body: {
    error,
    error_description: `AADSTS${code}: ${description}`,
    error_codes: [code],
    timestamp: new Date().toISOString(),
  },
});
const connectorError = (status: number, code: string, message: string, headers?: Record<string, string>): Reply => ({
  status,
  body: { error: { code, message } },
  ...(headers ? { headers } : {}),
});

export async function startMsTeams(options: MsTeamsStandInOptions = {}): Promise<MsTeamsStandIn> {
  const appId = options.appId ?? MSTEAMS_TEST_APP_ID;
  const appPassword = options.appPassword ?? MSTEAMS_TEST_APP_PASSWORD;
  const tenants = new Set(['botframework.com', ...(options.tenants ?? [])]);
  const conversations = new Set(options.conversations ?? [MSTEAMS_TEST_CONVERSATION, 'a:1personalChatId']);
  const notInRoster = new Set(options.notInRoster ?? []);
  const retryAfterS = options.retryAfterS ?? 2;
  const issued = new Set<string>();
  const tokenFailures: FailureKind[] = [];
  let tokenCount = 0;
  let seq = 1;

  const base = await startStandIn<MsTeamsMessage>((req, ctx): Outcome => {
    const t = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(req.path);
    if (t) {
      tokenCount++;
      const failure = tokenFailures.shift();
      if (failure) {
        return failureOutcome(failure, (kind) =>
          kind === 'rate_limit'
            ? {
                ...aadError(429, 'temporarily_unavailable', 'Request throttled.', 50196),
                headers: { 'retry-after': '5' },
              }
            : aadError(503, 'temporarily_unavailable', 'The service is temporarily unavailable.', 90033),
        );
      }
      const tenant = decodeURIComponent(t[1] ?? '');
      if (!tenants.has(tenant)) return aadError(400, 'invalid_tenant', `Tenant '${tenant}' not found.`, 90002);
      const form = obj(req.body);
      if (form.grant_type !== 'client_credentials')
        return aadError(400, 'unsupported_grant_type', 'The provided grant_type is not supported.', 70003);
      if (form.client_id !== appId) {
        return aadError(
          400,
          'unauthorized_client',
          `Application with identifier '${String(form.client_id)}' was not found in the directory.`,
          700016,
        );
      }
      if (form.client_secret !== appPassword)
        return aadError(401, 'invalid_client', 'Invalid client secret provided.', 7000215);
      if (form.scope !== 'https://api.botframework.com/.default')
        return aadError(400, 'invalid_scope', 'The provided scope is not valid.', 70011);
      const token = `eyJ0eXAiOiJKV1Qi.${randomBytes(24).toString('base64url')}`;
      issued.add(token);
      return {
        status: 200,
        body: { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: token },
      };
    }

    const m = /\/v3\/conversations\/([^/]+)\/activities$/.exec(req.path);
    if (!m) return { status: 404, body: { message: 'No HTTP resource was found that matches the request URI.' } };
    if (req.method !== 'POST')
      return { status: 405, body: { message: `The requested resource does not support http method '${req.method}'.` } };
    const token = bearer(req.headers);
    if (!token || !issued.has(token))
      return { status: 401, body: { message: 'Authorization has been denied for this request.' } };

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? connectorError(429, 'Throttled', 'Too many requests.', { 'retry-after': String(retryAfterS) })
          : connectorError(502, 'ServiceError', 'Unknown error'),
      );
    }

    if (Buffer.byteLength(req.rawBody) > MSTEAMS_MAX_REQUEST_BYTES)
      return connectorError(413, 'MessageSizeTooBig', 'Message size too large');
    const conversationId = decodeURIComponent(m[1] ?? '');
    if (!conversations.has(conversationId) && !notInRoster.has(conversationId)) {
      return connectorError(404, 'ConversationNotFound', 'Conversation not found.');
    }
    if (notInRoster.has(conversationId))
      return connectorError(403, 'BotNotInConversationRoster', 'The bot is not part of the conversation roster.');
    const body = obj(req.body);
    if (body.type !== 'message') return connectorError(400, 'BadArgument', 'Unknown activity type');
    const text = typeof body.text === 'string' ? body.text : '';
    if (!text.trim()) return connectorError(400, 'BadArgument', 'Activity text cannot be empty');

    const id = `17000000000${String(seq++).padStart(2, '0')}`;
    ctx.accept({ conversationId, text, id });
    return { status: 201, body: { id } };
  });

  return Object.assign(base, {
    tokenUrl: (tenant = 'botframework.com') => `${base.url}/${tenant}/oauth2/v2.0/token`,
    tokenRequests: () => tokenCount,
    revokeTokens: () => issued.clear(),
    failNextToken(n: number, kind: FailureKind) {
      for (let i = 0; i < n; i++) tokenFailures.push(kind);
    },
  });
}
