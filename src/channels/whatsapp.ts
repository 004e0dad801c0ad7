/**
 * WhatsApp through the Cloud API: POST {apiBaseUrl}/{apiVersion}/{phoneNumberId}/messages, Bearer token,
 * { messaging_product:"whatsapp", recipient_type:"individual", to, type:"text", text:{ body } }.
 * `to` is the customer's phone number in international format (+15551234567 or 15551234567).
 *
 * A 200 means Meta accepted the message, not that it was delivered: free-form text outside the 24-hour customer
 * service window, for example, is accepted and then fails asynchronously (error 131047 in a status webhook).
 */
import type { z } from 'zod';
import type { whatsappSchema } from '../config/schema/channels.js';
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
  transportFailure,
  type SendFailure,
} from './http.js';
import { PHONE_NUMBER } from './recipients.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type WhatsAppConfig = z.output<typeof whatsappSchema>;

/** text.body: "Maximum 4096 characters". */
export const WHATSAPP_MAX_TEXT = 4096;

const FIX =
  'check accessToken (a System User token with whatsapp_business_messaging; temporary tokens expire after 24 h)';

/**
 * Graph error codes meaning "slow down": 4 (application request limit), 80007 (WABA rate limit),
 * 130429 (throughput), 131056 (business/consumer pair rate limit), 131048 (spam rate limit).
 * Meta sends them with HTTP 400 as often as 429, so the code decides, not the status.
 */
const RATE_LIMIT_CODES = new Set([4, 80007, 130429, 131056, 131048]);
/** Meta-side trouble: 1 unknown, 2 service unavailable, 131000 something went wrong, 131016 service overloaded, 133004 server unavailable. */
const TRANSIENT_CODES = new Set([1, 2, 131000, 131016, 133004]);

/** `to`: a phone number in international format; spaces, dashes and brackets are allowed (Meta strips them). */
export function checkWhatsAppRecipient(to: string): string | undefined {
  return PHONE_NUMBER.test(to) ? undefined : 'a phone number in international format, like +15551234567';
}

export function createWhatsAppChannel(config: WhatsAppConfig, ctx: ChannelContext): Channel {
  const phoneNumber = joinUrl(config.apiBaseUrl, `${config.apiVersion}/${encodeURIComponent(config.phoneNumberId)}`);
  const url = `${phoneNumber}/messages`;
  const headers = { authorization: `Bearer ${config.accessToken}` };
  return {
    id: 'whatsapp',
    maxTextLength: WHATSAPP_MAX_TEXT,
    checkRecipient: checkWhatsAppRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const body = {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: message.to,
        type: 'text',
        text: { body: message.text },
      };
      const outcome = await postJson(url, body, { headers, timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return transportFailure('whatsapp', outcome);
      const json = asRecord(outcome.json);
      if (is2xx(outcome.status)) {
        if (outcome.json === undefined) return acceptedWithoutBody('whatsapp', outcome.status, ctx.logger, message);
        const ids = (Array.isArray(json.messages) ? json.messages : [])
          .map((m) => asRecord(m).id)
          .filter((id): id is string => typeof id === 'string');
        return ids.length ? { ok: true, platformIds: ids } : { ok: true };
      }
      return graphFailure(outcome.status, asRecord(json.error), outcome.headers);
    },
    async check(signal) {
      // GET /{version}/{phone-number-id}: { verified_name, display_phone_number, id, quality_rating }.
      const outcome = await getJson(phoneNumber, { headers, timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return checkFromFailure(transportFailure('whatsapp', outcome), FIX);
      const json = asRecord(outcome.json);
      if (is2xx(outcome.status)) {
        return checkOk(
          `phone number ${logSafeOptional(json.display_phone_number, 40) ?? config.phoneNumberId} (${logSafeOptional(json.verified_name, 80) ?? 'no verified name'})`,
        );
      }
      const error = asRecord(json.error);
      const f = graphFailure(outcome.status, error, outcome.headers);
      // Graph refuses a token with 190 (HTTP 400 or 401) and an unknown phone number id with 100/33.
      if (error.code === 190) return checkFail(f.error, FIX);
      if (error.code === 100)
        return checkFail(
          f.error,
          'check phoneNumberId (WhatsApp Manager → Phone numbers: the Phone number ID, not the number)',
        );
      return checkFromFailure(f, FIX);
    },
  };
}

/** Graph errors: { error: { message, type, code, error_subcode?, error_data?: { details }, fbtrace_id } }. */
function graphFailure(status: number, error: Record<string, unknown>, headers: Headers): SendFailure {
  const code = typeof error.code === 'number' ? error.code : undefined;
  const message = logSafeOptional(error.message, 160);
  const details = logSafeOptional(asRecord(error.error_data).details, 160);
  const text = `whatsapp answered HTTP ${status}${code !== undefined ? ` code ${code}` : ''}${message ? `: ${message}` : ''}${
    details && details !== message ? ` (${details})` : ''
  }`;
  const retryAfterMs = parseRetryAfter(headers.get('retry-after'));
  if (code !== undefined && RATE_LIMIT_CODES.has(code)) return failure(text, true, { status, retryAfterMs });
  if (code !== undefined && TRANSIENT_CODES.has(code)) return failure(text, true, { status, retryAfterMs });
  if (code === 190) return failure(`${text} (the access token is invalid or expired)`, false, { status });
  return failure(text, isRetryableStatus(status), {
    status,
    retryAfterMs: isRetryableStatus(status) ? retryAfterMs : undefined,
  });
}
