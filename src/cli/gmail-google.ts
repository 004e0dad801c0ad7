/**
 * The Google calls of `hookgate gmail setup` and `stop`, on the operator's machine: an access token (given, or from a
 * service-account key or an `authorized_user` file), the three Pub/Sub admin calls and Gmail's `users.stop`. Plain
 * REST over the one outbound client (src/http); every base URL is the operator's option or config and can point at a
 * local stand-in. Errors say what Google said and what to do about it, and never quote a token.
 */
import { readFileSync } from 'node:fs';
import { CliError } from '../errors.js';
import { type HttpFailure, type HttpResponse, is2xx, originOf, request } from '../http/client.js';
import { GoogleApiError } from '../http/errors.js';
import { googleError } from '../http/google.js';
import {
  type Grant,
  type TokenAnswer,
  asRecord,
  jwtBearer,
  readServiceAccount,
  refreshToken,
  requestToken,
} from '../http/token.js';
import { firstLine, logSafe, safeUrl } from '../text-safe.js';

export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const PUBSUB_URL = 'https://pubsub.googleapis.com';
export const GMAIL_API_URL = 'https://gmail.googleapis.com';
/** The identity Gmail publishes its notifications as: it needs `roles/pubsub.publisher` on the topic. */
export const GMAIL_PUBLISHER = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';
export const PUBLISHER_ROLE = 'roles/pubsub.publisher';
/** The scope a service-account key asks for: Pub/Sub administration, nothing else. */
export const PUBSUB_SCOPE = 'https://www.googleapis.com/auth/pubsub';
const TIMEOUT_MS = 30_000;

/** How `setup` authenticates to Pub/Sub; the first of these that is given wins. */
export interface CredentialSources {
  accessToken?: string;
  credentialsFile?: string;
  tokenUrl?: string;
  env: NodeJS.ProcessEnv;
}

export interface AccessToken {
  token: string;
  /** For people: where it came from (never the token). */
  from: string;
}

/** An access token for the Pub/Sub calls: --access-token, --credentials, $GOOGLE_OAUTH_ACCESS_TOKEN, $GOOGLE_APPLICATION_CREDENTIALS. */
export async function adminAccessToken(src: CredentialSources): Promise<AccessToken> {
  if (src.accessToken?.trim()) return { token: src.accessToken.trim(), from: '--access-token' };
  if (src.credentialsFile) return fromCredentialsFile(src.credentialsFile, '--credentials', src.tokenUrl);
  const envToken = src.env.GOOGLE_OAUTH_ACCESS_TOKEN?.trim();
  if (envToken) return { token: envToken, from: '$GOOGLE_OAUTH_ACCESS_TOKEN' };
  const envFile = src.env.GOOGLE_APPLICATION_CREDENTIALS?.trim();
  if (envFile) return fromCredentialsFile(envFile, '$GOOGLE_APPLICATION_CREDENTIALS', src.tokenUrl);
  throw new CliError(
    'cli_usage',
    [
      'no Google credentials for the Pub/Sub calls. Looked for:',
      '  --access-token (not given)',
      '  --credentials FILE (not given)',
      '  $GOOGLE_OAUTH_ACCESS_TOKEN (not set)',
      '  $GOOGLE_APPLICATION_CREDENTIALS (not set)',
      'e.g. GOOGLE_OAUTH_ACCESS_TOKEN="$(gcloud auth print-access-token)" hookgate gmail setup …, or --print for the gcloud commands',
    ].join('\n'),
  );
}

interface KeyFile {
  type?: string;
  client_email?: string;
  private_key?: string;
  private_key_id?: string;
  token_uri?: string;
  client_id?: string;
  client_secret?: string;
  refresh_token?: string;
}

async function fromCredentialsFile(file: string, from: string, tokenUrl: string | undefined): Promise<AccessToken> {
  let key: KeyFile;
  try {
    key = JSON.parse(readFileSync(file, 'utf8')) as KeyFile;
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? 'not JSON';
    throw new CliError('cli_usage', `${from}: cannot read ${file} as a Google credentials file (${why})`);
  }
  const label = `${from} (${file})`;
  if (key.type === 'service_account' && key.client_email && key.private_key) {
    const url = tokenUrl ?? key.token_uri ?? GOOGLE_TOKEN_URL;
    const account = readServiceAccount(asRecord(key));
    if (typeof account !== 'object')
      throw new CliError('cli_usage', `${label}: private_key is not an RSA key in PKCS#8 PEM form`);
    const token = await tokenGrant(url, jwtBearer(account, PUBSUB_SCOPE), label);
    return { token, from: `${label}, service account ${key.client_email}` };
  }
  if (key.type === 'authorized_user' && key.client_id && key.client_secret && key.refresh_token) {
    const token = await refreshAccessToken(
      {
        tokenUrl: tokenUrl ?? GOOGLE_TOKEN_URL,
        clientId: key.client_id,
        clientSecret: key.client_secret,
        refreshToken: key.refresh_token,
      },
      label,
    );
    return { token, from: `${label}, user credentials` };
  }
  throw new CliError(
    'cli_usage',
    `${label}: not a service-account key (type "service_account" with client_email and private_key) nor user credentials (type "authorized_user"); type is ${JSON.stringify(key.type ?? null)}`,
  );
}

export interface RefreshCredentials {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  refreshToken: string;
}

/** The refresh_token grant: what `stop` (and the service) use for the mailbox's OAuth client. */
export function refreshAccessToken(c: RefreshCredentials, label = 'hooks.gmail.oauth'): Promise<string> {
  return tokenGrant(c.tokenUrl, refreshToken(c), label);
}

async function tokenGrant(url: string, grant: Grant, label: string): Promise<string> {
  const answer: TokenAnswer = await requestToken(url, grant, { timeoutMs: TIMEOUT_MS, defaultLifetimeMs: 3600_000 });
  if (answer.ok) return answer.token;
  const res = answer.outcome;
  if (res.kind !== 'response') throw unreachable(`token endpoint ${safeUrl(url)}`, url, res);
  const error = answer.error ?? `HTTP ${res.status}`;
  const description = answer.description ? `: ${answer.description}` : '';
  throw new CliError(
    'cli_google',
    `${label}: Google's token endpoint refused the ${grant.type === 'refresh_token' ? 'refresh token' : 'signed assertion'} (${error}${description}). ${tokenFix(error, grant.type)}`,
  );
}

function tokenFix(error: string, grant: Grant['type']): string {
  if (error === 'invalid_grant' && grant === 'refresh_token') {
    return 'The refresh token was revoked, has expired (an app in "Testing" gets tokens that expire after 7 days) or belongs to another client: get a new one (docs/gmail.md, step 3).';
  }
  if (error === 'invalid_client') return 'Check the client id and secret (Google Auth Platform → Clients).';
  if (error === 'invalid_grant')
    return 'Check the machine clock, and that the key is not deleted or disabled (IAM → Service accounts → Keys).';
  return 'See docs/gmail.md#errors.';
}

export interface PubSubTarget {
  baseUrl: string;
  token: string;
  project: string;
}

export type StepOutcome = 'created' | 'exists' | 'added' | 'present';

const topicPath = (t: PubSubTarget, topic: string) =>
  `projects/${encodeURIComponent(t.project)}/topics/${encodeURIComponent(topic)}`;
const subscriptionPath = (t: PubSubTarget, sub: string) =>
  `projects/${encodeURIComponent(t.project)}/subscriptions/${encodeURIComponent(sub)}`;

/** `projects.topics.create`: PUT; a topic that already exists (409 ALREADY_EXISTS) is fine. */
export async function createTopic(t: PubSubTarget, topic: string): Promise<StepOutcome> {
  const res = await google(t, 'PUT', topicPath(t, topic), {}, `create topic ${topic}`, [409]);
  return res.status === 409 ? 'exists' : 'created';
}

interface Policy {
  version?: number;
  etag?: string;
  bindings?: Array<{ role: string; members?: string[]; condition?: unknown }>;
}

/**
 * Gmail's publisher gets `roles/pubsub.publisher` on the topic, added to the policy there is (get, add, set with its
 * etag), never replacing it. A concurrent change (409 ABORTED: the etag no longer matches) is retried from the get.
 */
export async function grantPublisher(t: PubSubTarget, topic: string): Promise<StepOutcome> {
  for (let attempt = 1; ; attempt++) {
    const res = await google(
      t,
      'GET',
      `${topicPath(t, topic)}:getIamPolicy`,
      undefined,
      `read the IAM policy of topic ${topic}`,
    );
    const policy = asRecord(res.json) as Policy;
    const bindings = [...(policy.bindings ?? [])];
    const plain = bindings.find((b) => b.role === PUBLISHER_ROLE && !b.condition);
    if (plain?.members?.includes(GMAIL_PUBLISHER)) return 'present';
    if (plain) plain.members = [...(plain.members ?? []), GMAIL_PUBLISHER];
    else bindings.push({ role: PUBLISHER_ROLE, members: [GMAIL_PUBLISHER] });
    const next: Policy = { ...policy, bindings };
    const set = await google(
      t,
      'POST',
      `${topicPath(t, topic)}:setIamPolicy`,
      { policy: next },
      `grant Gmail the publisher role on topic ${topic}`,
      attempt < 3 ? [409] : [],
    );
    if (set.status !== 409) return 'added';
  }
}

export interface PushSubscription {
  name: string;
  topic: string;
  pushEndpoint: string;
  serviceAccountEmail: string;
  audience: string;
}

export interface SubscriptionOutcome {
  outcome: StepOutcome;
  /** For an existing subscription: how its push config differs from the one asked for (empty when it matches). */
  differences: string[];
}

/**
 * `projects.subscriptions.create`: PUT with the push endpoint and the OIDC identity and audience of its tokens. An
 * existing one (409) is read back and compared: a different endpoint or identity is reported, not overwritten.
 */
export async function createPushSubscription(t: PubSubTarget, s: PushSubscription): Promise<SubscriptionOutcome> {
  const body = {
    topic: `projects/${t.project}/topics/${s.topic}`,
    pushConfig: {
      pushEndpoint: s.pushEndpoint,
      oidcToken: { serviceAccountEmail: s.serviceAccountEmail, audience: s.audience },
    },
    ackDeadlineSeconds: 60,
  };
  const res = await google(t, 'PUT', subscriptionPath(t, s.name), body, `create push subscription ${s.name}`, [409]);
  if (res.status !== 409) return { outcome: 'created', differences: [] };
  const got = await google(t, 'GET', subscriptionPath(t, s.name), undefined, `read subscription ${s.name}`);
  const have = asRecord(got.json) as {
    topic?: string;
    pushConfig?: { pushEndpoint?: string; oidcToken?: { serviceAccountEmail?: string; audience?: string } };
  };
  const differences: string[] = [];
  const compare = (what: string, has: string | undefined, wanted: string) => {
    if ((has ?? '') !== wanted)
      differences.push(`${what} is ${JSON.stringify(has ?? null)}, not ${JSON.stringify(wanted)}`);
  };
  compare('topic', have.topic, body.topic);
  compare('push endpoint', have.pushConfig?.pushEndpoint, s.pushEndpoint);
  compare('push identity', have.pushConfig?.oidcToken?.serviceAccountEmail, s.serviceAccountEmail);
  compare('audience', have.pushConfig?.oidcToken?.audience, s.audience);
  return { outcome: 'exists', differences };
}

/** Gmail `users.stop` for the token's own mailbox: no more notifications until the next `users.watch`. */
export async function gmailStop(baseUrl: string, token: string): Promise<void> {
  await google({ baseUrl, token }, 'POST', 'gmail/v1/users/me/stop', undefined, 'stop the Gmail watch', [], 'gmail');
}

async function google(
  t: Pick<PubSubTarget, 'baseUrl' | 'token'>,
  method: string,
  path: string,
  body: unknown,
  what: string,
  allowed: number[] = [],
  api: 'pubsub' | 'gmail' = 'pubsub',
): Promise<HttpResponse> {
  const prefix = api === 'pubsub' ? 'v1/' : '';
  const url = `${t.baseUrl.replace(/\/+$/, '')}/${prefix}${path}`;
  const headers: Record<string, string> = { authorization: `Bearer ${t.token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await request(
    url,
    { method, headers, body: body === undefined ? undefined : JSON.stringify(body) },
    { timeoutMs: TIMEOUT_MS },
  );
  if (res.kind !== 'response') throw unreachable(what, url, res);
  if (is2xx(res.status) || allowed.includes(res.status)) return res;
  const e = googleError(res.json);
  const status = e.status ?? `HTTP ${res.status}`;
  const message = e.message ? `: ${logSafe(firstLine(e.message), 300)}` : '';
  throw new GoogleApiError(
    `${what}: Google answered ${res.status} ${status}${message}. ${apiFix(res.status, e.reason, api)}`,
    res.status,
    undefined,
    e.status,
  );
}

function apiFix(status: number, reason: string | undefined, api: 'pubsub' | 'gmail'): string {
  const service = api === 'pubsub' ? 'pubsub.googleapis.com' : 'gmail.googleapis.com';
  if (status === 401)
    return 'The access token is missing, expired or revoked: get a fresh one (gcloud auth print-access-token lasts an hour).';
  if (reason === 'SERVICE_DISABLED' || reason === 'accessNotConfigured')
    return `Enable the API: gcloud services enable ${service} --project PROJECT.`;
  if (status === 403) {
    return api === 'pubsub'
      ? 'The credentials lack a permission: the caller needs roles/pubsub.admin on the project (and roles/iam.serviceAccountUser on the push service account), or the API is not enabled.'
      : 'The OAuth client lacks the Gmail scope, or the Gmail API is not enabled in its project.';
  }
  if (status === 404)
    return api === 'pubsub'
      ? 'Check the project id (not its name or number) and that the topic exists.'
      : 'Check hooks.gmail.gmailApiBaseUrl.';
  if (status === 400)
    return 'Check the values given: the push endpoint must be https, the service account must exist in the project.';
  return 'See docs/gmail.md#errors.';
}

/** No answer from Google (or the stand-in): `cannot reach <origin> (ECONNREFUSED)`. */
function unreachable(what: string, url: string, failure: HttpFailure): CliError {
  const cause = failure.kind === 'network' ? failure.code : 'TimeoutError';
  return new CliError('cli_unreachable', `${what}: cannot reach ${originOf(url)} (${cause})`);
}
