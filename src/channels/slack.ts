/**
 * Slack through the Web API: POST {apiBaseUrl}/chat.postMessage, Authorization: Bearer xoxb-..., { channel, text }.
 * `to` is a conversation id (C..., G..., D...) — or a user id (U...), which posts in the app's DM with that user.
 *
 * Slack answers HTTP 200 for almost every outcome and reports errors as { ok:false, error:"<code>" }; only rate
 * limiting uses HTTP 429 with Retry-After.
 */
import type { z } from 'zod';
import type { slackSchema } from '../config/schema/channels.js';
import { parseRetryAfter } from '../retry-after.js';
import { joinUrl } from '../http-util.js';
import { checkFail, checkOk } from '../check.js';
import { logSafeOptional } from '../text-safe.js';
import {
  acceptedWithoutBody,
  asRecord,
  checkFromFailure,
  failure,
  is2xx,
  postJson,
  statusFailure,
  transportFailure,
  type SendFailure,
} from './http.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type SlackConfig = z.output<typeof slackSchema>;

/**
 * Slack truncates text after 40,000 characters (msg_too_long beyond that) but recommends at most 4,000 per
 * message: longer messages are collapsed behind "Show more" and mrkdwn rendering degrades. Splitting at 4,000 keeps
 * every chunk fully rendered, at the cost of more messages for very long replies.
 */
export const SLACK_MAX_TEXT = 4000;

/** Error codes that describe Slack's state, not the request: the same request may succeed later. */
const RETRYABLE_ERRORS = new Set([
  'ratelimited',
  'rate_limited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
  'team_added_to_org',
]);

/**
 * `to`: a conversation or user id (upper-case letters and digits, C… G… D… U… W…), or a channel by name (`#general`,
 * the `#` optional): Slack's channel names are lower-case letters (any script), digits, `-`, `_` and `.`.
 */
export function checkSlackRecipient(to: string): string | undefined {
  return /^[A-Z][A-Z0-9]{1,31}$|^#?[\p{Ll}\p{Lo}\p{N}_-][\p{Ll}\p{Lo}\p{N}\p{M}._-]{0,79}$/u.test(to)
    ? undefined
    : 'a conversation id (C…, G…, D…), a user id (U…, W…) or a channel name like #general';
}

export function createSlackChannel(config: SlackConfig, ctx: ChannelContext): Channel {
  const url = joinUrl(config.apiBaseUrl, 'chat.postMessage');
  const authTest = joinUrl(config.apiBaseUrl, 'auth.test');
  const headers = { authorization: `Bearer ${config.botToken}` };
  return {
    id: 'slack',
    maxTextLength: SLACK_MAX_TEXT,
    checkRecipient: checkSlackRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const outcome = await postJson(
        url,
        { channel: message.to, text: message.text },
        { headers, timeoutMs: config.timeoutMs, signal },
      );
      if (outcome.kind !== 'response') return transportFailure('slack', outcome);
      const body = asRecord(outcome.json);
      if (outcome.status === 429) {
        return failure('slack rate limited', true, {
          status: 429,
          retryAfterMs: parseRetryAfter(outcome.headers.get('retry-after')),
        });
      }
      if (!is2xx(outcome.status))
        return statusFailure('slack', outcome.status, logSafeOptional(body.error), outcome.headers);
      if (body.ok === true) return typeof body.ts === 'string' ? { ok: true, platformIds: [body.ts] } : { ok: true };
      if (outcome.json === undefined) return acceptedWithoutBody('slack', outcome.status, ctx.logger, message);
      return slackFailure(outcome.status, body, outcome.headers);
    },
    async check(signal) {
      // auth.test: { ok: true, team, user, user_id, ... } or, like every method, HTTP 200 { ok: false, error }.
      const outcome = await postJson(authTest, {}, { headers, timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return checkFromFailure(transportFailure('slack', outcome), FIX);
      const body = asRecord(outcome.json);
      if (is2xx(outcome.status) && body.ok === true) {
        return checkOk(
          `bot ${logSafeOptional(body.user, 64) ?? logSafeOptional(body.user_id, 64) ?? '?'} in workspace ${logSafeOptional(body.team, 80) ?? '?'}`,
        );
      }
      if (!is2xx(outcome.status))
        return checkFromFailure(
          statusFailure('slack', outcome.status, logSafeOptional(body.error), outcome.headers),
          FIX,
        );
      const code = logSafeOptional(body.error, 80);
      const f = slackFailure(outcome.status, body, outcome.headers);
      return checkFail(f.error, code && AUTH_ERRORS.has(code) ? FIX : undefined);
    },
  };
}

const FIX = 'check botToken (the Bot User OAuth Token, xoxb-...; reinstall the app if it was revoked)';
/** auth.test's answers that are about the token (HTTP 200 like every Slack error). */
const AUTH_ERRORS = new Set(['not_authed', 'invalid_auth', 'token_revoked', 'token_expired', 'account_inactive']);

function slackFailure(status: number, body: Record<string, unknown>, headers: Headers): SendFailure {
  const code = logSafeOptional(body.error, 80) ?? 'unknown_error';
  const hint = HINTS[code];
  const error = `slack error ${code}${hint ? ` (${hint})` : ''}`;
  if (RETRYABLE_ERRORS.has(code))
    return failure(error, true, { status, retryAfterMs: parseRetryAfter(headers.get('retry-after')) });
  return failure(error, false, { status });
}

/** What a person should change for the common permanent errors. */
const HINTS: Record<string, string> = {
  not_authed: 'no token was sent',
  invalid_auth: 'the bot token is wrong',
  token_revoked: 'the bot token was revoked; reinstall the app',
  account_inactive: 'the app was uninstalled or the workspace deactivated',
  channel_not_found: 'unknown conversation id, or the bot cannot see it',
  not_in_channel: 'invite the bot to the channel (/invite @bot)',
  is_archived: 'the channel is archived',
  missing_scope: 'the app needs the chat:write scope',
  msg_too_long: 'text over 40,000 characters',
  no_text: 'empty text',
};
