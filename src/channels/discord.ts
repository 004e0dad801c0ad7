/**
 * Discord through the REST API: POST {apiBaseUrl}/channels/{to}/messages, Authorization: Bot <token>, { content }.
 * `to` is a channel id (a snowflake like 1234567890123456789; for a DM, the DM channel's id).
 *
 * Two deliberate extras in the body:
 * - `nonce` + `enforce_nonce`: Discord drops a second message with the same nonce from the same bot within a few
 *   minutes and returns the first one, so an outbox retry after a lost answer does not post twice.
 * - `allowed_mentions: { parse: [] }`: agent replies often quote external content; "@everyone" in it must not ping
 *   a whole server.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { discordSchema } from '../config/schema/channels.js';
import { parseRetryAfter } from '../retry-after.js';
import { joinUrl } from '../http-util.js';
import { checkOk } from '../check.js';
import { logSafeOptional } from '../text-safe.js';
import {
  asRecord,
  checkFromFailure,
  failure,
  getJson,
  postJson,
  recipientSegment,
  secondsToMs,
  statusFailure,
  transportFailure,
  type SendFailure,
  sentOn2xx,
} from './http.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type DiscordConfig = z.output<typeof discordSchema>;

/** Message content limit for bots (Create Message: "up to 2000 characters"). */
export const DISCORD_MAX_TEXT = 2000;

/** Discord asks bots for `DiscordBot ($url, $version)`; requests without a proper User-Agent may be blocked. */
const USER_AGENT = 'DiscordBot (hookgate, 0.1.0)';

const FIX = 'check botToken (Developer Portal → your application → Bot → Reset Token; without the "Bot " prefix)';

/** A nonce is at most 25 characters; derive it from the delivery id so every retry of one chunk carries the same. */
export function discordNonce(deliveryId: string): string {
  return createHash('sha256').update(deliveryId).digest('base64url').slice(0, 25);
}

/** `to`: a channel id, a snowflake (an unsigned 64-bit number written in decimal: at most 20 digits). */
export function checkDiscordRecipient(to: string): string | undefined {
  return /^[0-9]{1,20}$/.test(to) ? undefined : 'a channel id: a snowflake, digits only, like 1234567890123456789';
}

export function createDiscordChannel(config: DiscordConfig, ctx: ChannelContext): Channel {
  const headers = { authorization: `Bot ${config.botToken}`, 'user-agent': USER_AGENT };
  return {
    id: 'discord',
    maxTextLength: DISCORD_MAX_TEXT,
    checkRecipient: checkDiscordRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const recipient = recipientSegment('discord', checkDiscordRecipient, message.to);
      if (!('segment' in recipient)) return recipient;
      const url = joinUrl(config.apiBaseUrl, `channels/${recipient.segment}/messages`);
      const body = {
        content: message.text,
        nonce: discordNonce(message.deliveryId),
        enforce_nonce: true,
        allowed_mentions: { parse: [] },
      };
      const outcome = await postJson(url, body, { headers, timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return transportFailure('discord', outcome);
      const json = asRecord(outcome.json);
      const sent = sentOn2xx('discord', outcome, ctx.logger, (j) => j.id, message);
      if (sent) return sent;
      if (outcome.status === 429) return rateLimited(json, outcome.headers);
      return statusFailure('discord', outcome.status, errorDetail(json), outcome.headers);
    },
    async check(signal) {
      // GET /users/@me: the bot's user { id, username, bot: true, ... }.
      const outcome = await getJson(joinUrl(config.apiBaseUrl, 'users/@me'), {
        headers,
        timeoutMs: config.timeoutMs,
        signal,
      });
      if (outcome.kind !== 'response') return checkFromFailure(transportFailure('discord', outcome), FIX);
      const json = asRecord(outcome.json);
      if (outcome.status === 200)
        return checkOk(`bot ${logSafeOptional(json.username, 64) ?? '?'} (id ${logSafeOptional(json.id, 24) ?? '?'})`);
      if (outcome.status === 429) return checkFromFailure(rateLimited(json, outcome.headers), FIX);
      return checkFromFailure(statusFailure('discord', outcome.status, errorDetail(json), outcome.headers), FIX);
    },
  };
}

/**
 * 429 body: { message, retry_after: <seconds, float>, global }. The body value is the precise one; the headers
 * (X-RateLimit-Reset-After, float seconds; Retry-After, whole seconds) are fallbacks for proxies that strip bodies.
 */
function rateLimited(body: Record<string, unknown>, headers: Headers): SendFailure {
  const retryAfterMs =
    secondsToMs(body.retry_after) ??
    parseRetryAfter(headers.get('x-ratelimit-reset-after')) ??
    parseRetryAfter(headers.get('retry-after'));
  const scope = body.global === true ? 'global' : (headers.get('x-ratelimit-scope') ?? 'route');
  return failure(`discord rate limited (${logSafeOptional(scope, 20)})`, true, { status: 429, retryAfterMs });
}

/**
 * Error body: { message, code } plus, for 50035 Invalid Form Body, a nested `errors` tree whose leaves are
 * `_errors: [{ code, message }]`. The first leaf names the field, which is what a person needs.
 */
function errorDetail(body: Record<string, unknown>): string | undefined {
  const message = logSafeOptional(body.message, 100);
  if (!message) return undefined;
  const code = typeof body.code === 'number' ? ` (code ${body.code})` : '';
  const leaf = firstFieldError(body.errors, []);
  return `${message}${code}${leaf ? `: ${leaf}` : ''}`;
}

function firstFieldError(node: unknown, path: string[]): string | undefined {
  const rec = asRecord(node);
  const errs = rec._errors;
  if (Array.isArray(errs) && errs.length > 0) {
    const msg = logSafeOptional(asRecord(errs[0]).message, 100);
    return `${path.join('.') || 'body'}: ${msg ?? 'invalid'}`;
  }
  for (const [key, child] of Object.entries(rec)) {
    if (path.length > 5) break;
    const found = firstFieldError(child, [...path, key]);
    if (found) return found;
  }
  return undefined;
}
