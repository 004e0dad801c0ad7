/**
 * A stand-in for the Discord REST API v10, Create Message (POST /channels/{channel.id}/messages).
 * Checks what Discord checks: the route and method, `Authorization: Bot <token>`, the channel known and visible,
 * content non-empty and at most 2000 characters, nonce at most 25 characters, and with enforce_nonce a repeated
 * nonce returns the first message instead of creating another. Errors are { message, code } (50035 with a nested
 * `errors` tree); 429 is { message, retry_after (float seconds), global } plus Retry-After / X-RateLimit-* headers.
 */
import { failureOutcome, obj, startStandIn, type Outcome, type Reply, type StandIn } from './base.js';

export const DISCORD_TEST_TOKEN = 'MTAxMjM0NTY3ODkwMTIzNDU2Nw.GhOoKg.hookgate-test-token-value';

export interface DiscordMessage {
  channelId: string;
  content: string;
  id: string;
  nonce: string | undefined;
  allowedMentions: unknown;
}

export interface DiscordStandInOptions {
  token?: string;
  channels?: string[];
  /** Channels the bot cannot see (403 Missing Access). */
  noAccess?: string[];
  /** retry_after of the rate-limit answer, seconds (float). */
  retryAfterS?: number;
}

const discordError = (status: number, message: string, code: number, errors?: object): Reply => ({
  status,
  body: { message, code, ...(errors ? { errors } : {}) },
});

const formError = (field: string, code: string, message: string): Reply =>
  discordError(400, 'Invalid Form Body', 50035, { [field]: { _errors: [{ code, message }] } });

export async function startDiscord(options: DiscordStandInOptions = {}): Promise<StandIn<DiscordMessage>> {
  const token = options.token ?? DISCORD_TEST_TOKEN;
  const channels = new Set(options.channels ?? ['1100000000000000001', '1100000000000000002']);
  const noAccess = new Set(options.noAccess ?? []);
  const retryAfterS = options.retryAfterS ?? 1.234;
  const byNonce = new Map<string, DiscordMessage>();
  let seq = 1;

  return startStandIn<DiscordMessage>((req, ctx): Outcome => {
    if (req.path === '/users/@me' || req.path === '/users/%40me') {
      if (req.method !== 'GET') return discordError(405, '405: Method Not Allowed', 0);
      if (req.headers.authorization !== `Bot ${token}`) return discordError(401, '401: Unauthorized', 0);
      return {
        status: 200,
        body: {
          id: '1000',
          username: 'hookgate-test',
          discriminator: '0',
          global_name: null,
          avatar: null,
          bot: true,
          verified: true,
          flags: 0,
        },
      };
    }
    const m = /^\/channels\/([^/]+)\/messages$/.exec(req.path);
    if (!m) return discordError(404, '404: Not Found', 0);
    if (req.method !== 'POST') return discordError(405, '405: Method Not Allowed', 0);
    if (req.headers.authorization !== `Bot ${token}`) return discordError(401, '401: Unauthorized', 0);

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? {
              status: 429,
              headers: {
                'retry-after': String(Math.ceil(retryAfterS)),
                'x-ratelimit-reset-after': retryAfterS.toFixed(3),
                'x-ratelimit-scope': 'user',
              },
              body: { message: 'You are being rate limited.', retry_after: retryAfterS, global: false },
            }
          : discordError(500, '500: Internal Server Error', 0),
      );
    }

    const channelId = decodeURIComponent(m[1] ?? '');
    if (!/^\d{17,20}$/.test(channelId))
      return formError('channel_id', 'NUMBER_TYPE_COERCE', `Value "${channelId}" is not snowflake.`);
    if (noAccess.has(channelId)) return discordError(403, 'Missing Access', 50001);
    if (!channels.has(channelId)) return discordError(404, 'Unknown Channel', 10003);

    const body = obj(req.body);
    const content = typeof body.content === 'string' ? body.content : '';
    const nonce = body.nonce === undefined ? undefined : String(body.nonce);
    if (nonce !== undefined && nonce.length > 25)
      return formError('nonce', 'BASE_TYPE_MAX_LENGTH', 'Must be 25 or fewer in length.');
    if (!content) return discordError(400, 'Cannot send an empty message', 50006);
    // Discord counts characters (code points), not UTF-16 units.
    if ([...content].length > 2000)
      return formError('content', 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.');

    if (nonce !== undefined && body.enforce_nonce === true) {
      const existing = byNonce.get(`${channelId}/${nonce}`);
      if (existing) return { status: 200, body: messageObject(existing) };
    }
    const message: DiscordMessage = {
      channelId,
      content,
      id: String(1200000000000000000n + BigInt(seq++)),
      nonce,
      allowedMentions: body.allowed_mentions,
    };
    if (nonce !== undefined) byNonce.set(`${channelId}/${nonce}`, message);
    ctx.accept(message);
    return { status: 200, body: messageObject(message) };
  });
}

function messageObject(m: DiscordMessage): object {
  return {
    id: m.id,
    channel_id: m.channelId,
    content: m.content,
    nonce: m.nonce,
    type: 0,
    author: { id: '1000', bot: true },
  };
}
