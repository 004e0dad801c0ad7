/**
 * Telegram through the Bot API: POST {apiBaseUrl}/bot<token>/sendMessage { chat_id, text }.
 * `to` is a chat id (a user, group or supergroup id like 123456789 or -1001234567890) or @channelusername.
 * Text is sent plain (no parse_mode), so agent output can never fail on Markdown/HTML entity parsing.
 */
import type { z } from 'zod';
import type { telegramSchema } from '../config/schema/channels.js';
import { parseRetryAfter } from '../retry-after.js';
import { isRetryableStatus, joinUrl } from '../http-util.js';
import { checkFail, checkOk } from '../check.js';
import { logSafeOptional } from '../text-safe.js';
import {
  acceptedWithoutBody,
  asRecord,
  checkFromFailure,
  failure,
  getJson,
  is2xx,
  postJson,
  secondsToMs,
  transportFailure,
  type SendFailure,
} from './http.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

const FIX = 'check botToken (the token @BotFather gave, 123456789:AA...)';

export type TelegramConfig = z.output<typeof telegramSchema>;

/** sendMessage: "1-4096 characters after entities parsing" (Bot API); we send no entities. */
export const TELEGRAM_MAX_TEXT = 4096;

/** `to`: a chat id (a user's is positive, a group's negative) or a public chat's @username. */
export function checkTelegramRecipient(to: string): string | undefined {
  return /^-?[0-9]{1,20}$|^@[A-Za-z0-9_]{1,64}$/.test(to)
    ? undefined
    : 'a chat id like 123456789 or -1001234567890, or a public @channelusername';
}

export function createTelegramChannel(config: TelegramConfig, ctx: ChannelContext): Channel {
  // The token is part of the path; this URL must never reach a log or an error string.
  const url = joinUrl(config.apiBaseUrl, `bot${config.botToken}/sendMessage`);
  const getMe = joinUrl(config.apiBaseUrl, `bot${config.botToken}/getMe`);
  return {
    id: 'telegram',
    maxTextLength: TELEGRAM_MAX_TEXT,
    checkRecipient: checkTelegramRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const outcome = await postJson(
        url,
        { chat_id: message.to, text: message.text },
        { timeoutMs: config.timeoutMs, signal },
      );
      if (outcome.kind !== 'response') return transportFailure('telegram', outcome);
      const body = asRecord(outcome.json);
      if (is2xx(outcome.status) && body.ok === true) {
        const id = asRecord(body.result).message_id;
        return id === undefined ? { ok: true } : { ok: true, platformIds: [String(id)] };
      }
      if (is2xx(outcome.status) && outcome.json === undefined)
        return acceptedWithoutBody('telegram', outcome.status, ctx.logger, message);
      return telegramFailure(outcome.status, body, outcome.headers);
    },
    async check(signal) {
      // getMe: { ok: true, result: { id, is_bot, username, ... } }.
      const outcome = await getJson(getMe, { timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return checkFromFailure(transportFailure('telegram', outcome), FIX);
      const body = asRecord(outcome.json);
      const me = asRecord(body.result);
      if (is2xx(outcome.status) && body.ok === true) {
        return checkOk(
          `bot @${logSafeOptional(me.username, 64) ?? '?'} (id ${logSafeOptional(String(me.id), 20) ?? '?'})`,
        );
      }
      // Telegram answers a wrong token with 404 on some paths and 401 on others: both mean the token.
      const f = telegramFailure(outcome.status, body, outcome.headers);
      return outcome.status === 404 ? checkFail(f.error, FIX) : checkFromFailure(f, FIX);
    },
  };
}

/**
 * Bot API errors are `{ ok:false, error_code, description, parameters? }` with the HTTP status equal to error_code.
 * 429 carries parameters.retry_after (seconds); the Retry-After header is the fallback there and the wait hint of any
 * other retryable answer (5xx). A group upgraded to a supergroup carries migrate_to_chat_id, which the user must put
 * in config, so it is permanent and named in the error.
 */
function telegramFailure(status: number, body: Record<string, unknown>, headers: Headers): SendFailure {
  const code = typeof body.error_code === 'number' ? body.error_code : status;
  const desc = logSafeOptional(body.description);
  const params = asRecord(body.parameters);
  const what = `telegram error ${code}${desc ? `: ${desc}` : ''}`;
  if (params.migrate_to_chat_id !== undefined) {
    return failure(`${what} (the group is now chat ${String(params.migrate_to_chat_id)}; send there instead)`, false, {
      status,
    });
  }
  const retryAfterHeader = parseRetryAfter(headers.get('retry-after'));
  if (code === 429 || status === 429) {
    return failure(what, true, { status, retryAfterMs: secondsToMs(params.retry_after) ?? retryAfterHeader });
  }
  const retryable = isRetryableStatus(status) || code >= 500;
  // 5xx carry no parameters.retry_after, but Telegram's front end (or a proxy before it) may send a Retry-After.
  return failure(what, retryable, { status, retryAfterMs: retryable ? retryAfterHeader : undefined });
}
