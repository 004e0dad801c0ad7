/**
 * iMessage through a BlueBubbles server (a Mac running Messages.app):
 * POST {serverUrl}/api/v1/message/text?password=… { chatGuid, tempGuid, message, method }.
 *
 * `to` is a chat guid — `iMessage;-;+15551234567` (a direct chat), `iMessage;+;chat123…` (a group),
 * `SMS;-;+15551234567` (SMS relay) — or a bare address (+15551234567, someone@icloud.com), which becomes the
 * direct iMessage chat `iMessage;-;<address>`. Use a full guid for SMS or groups.
 *
 * BlueBubbles takes the password only in the query string, so the request URL is a secret: it is built here and
 * never logged, and http.ts never puts a URL into an error.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { imessageSchema } from '../config/schema/channels.js';
import { joinUrl } from '../http-util.js';
import { logSafeOptional } from '../text-safe.js';
import { checkFail, checkOk, checkWarn } from '../check.js';
import {
  asRecord,
  checkFromFailure,
  failure,
  getJson,
  postJson,
  statusFailure,
  transportFailure,
  sentOn2xx,
} from './http.js';
import { PHONE_NUMBER } from './recipients.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type IMessageConfig = z.output<typeof imessageSchema>;

/**
 * iMessage publishes no text limit (very long texts do send); this is hookgate's choice. 10,000 characters keeps
 * a chunk readable in one bubble and well inside what AppleScript and the Private API handle without trouble.
 */
export const IMESSAGE_MAX_TEXT = 10_000;

const FIX = 'check password (the BlueBubbles server password) and serverUrl';

/** `iMessage;-;+1555…` / `SMS;+;chat…`: a service, a direct (-) or group (+) marker, an identifier. */
const CHAT_GUID = /^[A-Za-z]+;[-+];.+$/;

/** A bare address becomes the direct iMessage chat with it. */
export function toChatGuid(to: string): string {
  return CHAT_GUID.test(to) ? to : `iMessage;-;${to}`;
}

/** A bare address is a phone number or an Apple ID email. */
const EMAIL = /^[^\s@;]+@[^\s@;]+\.[^\s@;]+$/;

/** `to`: a chat guid, or a bare address that becomes the direct iMessage chat with it. */
export function checkIMessageRecipient(to: string): string | undefined {
  return CHAT_GUID.test(to) || PHONE_NUMBER.test(to) || EMAIL.test(to)
    ? undefined
    : 'a chat guid like iMessage;-;+15551234567, or a phone number or Apple ID email';
}

/**
 * BlueBubbles refuses a second send with a tempGuid that is still in flight ("already queued"), so a stable
 * tempGuid per delivery chunk stops an outbox retry from doubling a message the Mac is still sending.
 */
export function blueBubblesTempGuid(deliveryId: string): string {
  return `temp-hookgate-${createHash('sha256').update(deliveryId).digest('hex').slice(0, 32)}`;
}

export function createIMessageChannel(config: IMessageConfig, ctx: ChannelContext): Channel {
  const auth = `?password=${encodeURIComponent(config.password)}`;
  const url = `${joinUrl(config.serverUrl, 'api/v1/message/text')}${auth}`;
  return {
    id: 'imessage',
    maxTextLength: IMESSAGE_MAX_TEXT,
    checkRecipient: checkIMessageRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const body = {
        chatGuid: toChatGuid(message.to),
        tempGuid: blueBubblesTempGuid(message.deliveryId),
        message: message.text,
        method: config.method,
      };
      const outcome = await postJson(url, body, { timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return transportFailure('imessage', outcome);
      const json = asRecord(outcome.json);
      const sent = sentOn2xx('imessage', outcome, ctx.logger, (j) => asRecord(j.data).guid, message);
      if (sent) return sent;
      // Errors: { status, message, error: { type, message } }. error.message is the specific part.
      const detail = logSafeOptional(asRecord(json.error).message) ?? logSafeOptional(json.message);
      if (outcome.status === 400 && detail && /already queued/i.test(detail)) {
        // An earlier attempt of this very chunk is still being sent by the Mac: wait for it, do not give up.
        return failure('imessage: this message is still being sent by BlueBubbles', true, { status: 400 });
      }
      if (outcome.status === 401) return failure('imessage: BlueBubbles rejected the password', false, { status: 401 });
      // 500 "iMessage Error" covers both a Messages.app hiccup and an unknown chat; retries then dead-lettering
      // is the safe reading of an answer that does not say which.
      return statusFailure('imessage', outcome.status, detail, outcome.headers);
    },
    async check(signal) {
      // GET /api/v1/server/info: { status, message, data: { os_version, server_version, private_api, ... } }.
      const outcome = await getJson(`${joinUrl(config.serverUrl, 'api/v1/server/info')}${auth}`, {
        timeoutMs: config.timeoutMs,
        signal,
      });
      if (outcome.kind !== 'response') return checkFromFailure(transportFailure('imessage', outcome), FIX);
      const data = asRecord(asRecord(outcome.json).data);
      if (outcome.status === 200) {
        const privateApi = data.private_api === true ? 'on' : 'off';
        const warn = config.method === 'private-api' && data.private_api !== true;
        const detail = `BlueBubbles ${logSafeOptional(data.server_version, 20) ?? '?'} on macOS ${logSafeOptional(data.os_version, 20) ?? '?'} (Private API ${privateApi})`;
        return warn
          ? checkWarn(
              detail,
              'method is private-api but the server has the Private API off: enable it, or use apple-script',
            )
          : checkOk(detail);
      }
      if (outcome.status === 401) return checkFail('imessage: BlueBubbles rejected the password', FIX);
      const json = asRecord(outcome.json);
      const detail = logSafeOptional(asRecord(json.error).message) ?? logSafeOptional(json.message);
      return checkFromFailure(statusFailure('imessage', outcome.status, detail, outcome.headers), FIX);
    },
  };
}
