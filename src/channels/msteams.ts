/**
 * Microsoft Teams through the Bot Framework Connector:
 *   1. a token by the client-credentials grant from {tokenUrl} (default
 *      https://login.microsoftonline.com/<tenantId or botframework.com>/oauth2/v2.0/token),
 *      scope https://api.botframework.com/.default, cached until shortly before it expires;
 *   2. POST {serviceUrl}/v3/conversations/{to}/activities { type:"message", text }.
 * `to` is an existing conversation id (`19:…@thread.tacv2` for a channel, `a:1…` for a personal chat): the bot
 * must be installed there. The id, and the serviceUrl of the tenant's region, come from an activity the bot received.
 */
import type { z } from 'zod';
import type { msteamsSchema } from '../config/schema/channels.js';
import { parseRetryAfter } from '../retry-after.js';
import { joinUrl } from '../http-util.js';
import { logSafeOptional } from '../text-safe.js';
import { clientCredentials } from '../http/token.js';
import { asRecord, checkToken, failure, oauthTokens, postWithToken, recipientSegment, statusFailure } from './http.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type MsTeamsConfig = z.output<typeof msteamsSchema>;

/**
 * Teams rejects an activity over about 28 KB (HTTP 413). Text is UTF-8 in a JSON envelope: 8,000 characters is
 * at most ~24 KB even if every character takes 3 bytes (CJK), leaving room for the envelope and JSON escapes.
 */
export const MSTEAMS_MAX_TEXT = 8000;
export const BOTFRAMEWORK_SCOPE = 'https://api.botframework.com/.default';

export function defaultTeamsTokenUrl(tenantId: string | undefined): string {
  return `https://login.microsoftonline.com/${encodeURIComponent(tenantId ?? 'botframework.com')}/oauth2/v2.0/token`;
}

/**
 * `to`: a conversation id, `<kind>:<id>` (`19:…@thread.tacv2`, `a:1…`, `8:orgid:…`); never a `/`, `?`, `#`, `\`,
 * `%` or a space, which no conversation id has and which would change the path it is put in.
 */
export function checkTeamsRecipient(to: string): string | undefined {
  return /^[A-Za-z0-9]+:[^\s/?#\\%]+$/.test(to)
    ? undefined
    : 'a conversation id like 19:…@thread.tacv2 (a channel) or a:1… (a personal chat)';
}

/** Microsoft's guidance for bots: 412, 429, 502 and 504 are transient; retry them with backoff. */
const TRANSIENT_STATUS = new Set([412, 429, 502, 503, 504]);

export function createMsTeamsChannel(config: MsTeamsConfig, ctx: ChannelContext): Channel {
  const tokenUrl = config.tokenUrl ?? defaultTeamsTokenUrl(config.tenantId);
  const tokens = oauthTokens(
    'msteams',
    tokenUrl,
    clientCredentials({ clientId: config.appId, clientSecret: config.appPassword }, BOTFRAMEWORK_SCOPE),
    config.timeoutMs,
  );
  return {
    id: 'msteams',
    maxTextLength: MSTEAMS_MAX_TEXT,
    checkRecipient: checkTeamsRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const recipient = recipientSegment('msteams', checkTeamsRecipient, message.to);
      if (!('segment' in recipient)) return recipient;
      const url = joinUrl(config.serviceUrl, `v3/conversations/${recipient.segment}/activities`);
      const outcome = await postWithToken(
        'msteams',
        tokens,
        url,
        { type: 'message', text: message.text },
        { timeoutMs: config.timeoutMs, signal },
        ctx.logger,
        (j) => j.id,
        message,
      );
      if (!('kind' in outcome)) return outcome;
      const json = asRecord(outcome.json);
      // Connector errors: { error: { code, message } }; the auth layer answers { message }.
      const err = asRecord(json.error);
      const detail =
        [logSafeOptional(err.code, 60), logSafeOptional(err.message) ?? logSafeOptional(json.message)]
          .filter(Boolean)
          .join(': ') || undefined;
      if (TRANSIENT_STATUS.has(outcome.status)) {
        return failure(`msteams answered HTTP ${outcome.status}${detail ? `: ${detail}` : ''}`, true, {
          status: outcome.status,
          retryAfterMs: parseRetryAfter(outcome.headers.get('retry-after')),
        });
      }
      const hint = HINTS[outcome.status];
      return statusFailure(
        'msteams',
        outcome.status,
        [detail, hint && `(${hint})`].filter(Boolean).join(' ') || undefined,
        outcome.headers,
      );
    },
    // The client-credentials grant is the whole credential: the Connector has no "who am I" call for a bot.
    check: () => checkToken(tokens, FIX, 'client credentials of the app'),
  };
}

const FIX = 'check appId, appPassword (a client secret of the app registration; they expire) and tenantId';

const HINTS: Record<number, string> = {
  401: 'the app id/password are not accepted for this bot',
  403: 'the bot is not installed in this conversation',
  404: 'unknown conversation id, or a serviceUrl of another region',
  413: 'message too large for Teams',
};
