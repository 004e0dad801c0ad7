/**
 * Signal through signal-cli-rest-api (bbernhard/signal-cli-rest-api, your own server):
 * POST {apiBaseUrl}/v2/send { message, number, recipients: [to] } → 201 { timestamp }.
 * `to` is a phone number (+15551234567), a Signal username or ACI uuid, or a group as the REST API names it
 * (`group.<id>`, from GET /v1/groups/{number}).
 *
 * The REST API answers every send error with HTTP 400 { error } except rate limiting (429, with challenge tokens).
 * The 400 text is signal-cli's exception message, so transient network trouble between signal-cli and Signal's
 * servers is recognised by its wording; everything else (unregistered user, unknown group, account not
 * registered) is permanent.
 */
import type { z } from 'zod';
import type { signalSchema } from '../config/schema/channels.js';
import { joinUrl } from '../http-util.js';
import { parseRetryAfter } from '../retry-after.js';
import { logSafeOptional } from '../text-safe.js';
import { checkFail, checkOk } from '../check.js';
import {
  acceptedWithoutBody,
  asRecord,
  checkFromFailure,
  failure,
  getJson,
  is2xx,
  postJson,
  statusFailure,
  transportFailure,
} from './http.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type SignalConfig = z.output<typeof signalSchema>;

/**
 * Signal has no hard text limit for the sender: clients (and signal-cli ≥ 0.11.5) send a body over ~2,000
 * characters as a "long text" attachment, shown truncated with "Read more" on some clients and not at all by old
 * linked devices and bridges. 2,000 keeps every chunk an ordinary inline message everywhere.
 */
export const SIGNAL_MAX_TEXT = 2000;

const FIX = 'check apiBaseUrl (your signal-cli-rest-api server) and that it runs';

/** signal-cli messages for failures of the network or of Signal's servers, which a later attempt can survive. */
const TRANSIENT = /timed? ?out|timeout|network|connection|unavailable|temporar|try again|IOException/i;

const UUID = '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}';
/** A number (E.164), an ACI/PNI uuid, a username (`name.42`, optionally `u:`), or `group.<id>` (base64). */
const SIGNAL_RECIPIENT = new RegExp(
  `^(?:\\+[1-9][0-9]{5,14}|(?:PNI:)?${UUID}|(?:u:)?[A-Za-z_][A-Za-z0-9_]{2,31}\\.[0-9]{2,10}|group\\.[A-Za-z0-9+/=_-]{1,256})$`,
);

/** `to`: whom signal-cli-rest-api's `recipients` can name. */
export function checkSignalRecipient(to: string): string | undefined {
  return SIGNAL_RECIPIENT.test(to)
    ? undefined
    : 'a phone number like +15551234567, an account uuid, a username like name.42, or group.<id>';
}

export function createSignalChannel(config: SignalConfig, ctx: ChannelContext): Channel {
  const url = joinUrl(config.apiBaseUrl, 'v2/send');
  return {
    id: 'signal',
    maxTextLength: SIGNAL_MAX_TEXT,
    checkRecipient: checkSignalRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const body = { message: message.text, number: config.number, recipients: [message.to] };
      const outcome = await postJson(url, body, { timeoutMs: config.timeoutMs, signal });
      if (outcome.kind !== 'response') return transportFailure('signal', outcome);
      const json = asRecord(outcome.json);
      if (is2xx(outcome.status)) {
        if (outcome.json === undefined) return acceptedWithoutBody('signal', outcome.status, ctx.logger, message);
        return typeof json.timestamp === 'string' || typeof json.timestamp === 'number'
          ? { ok: true, platformIds: [String(json.timestamp)] }
          : { ok: true };
      }
      const detail = logSafeOptional(json.error);
      if (outcome.status === 429) {
        // Signal's rate limit may need a captcha challenge solved (POST /v1/accounts/{number}/rate-limit-challenge);
        // it also lifts by itself, so retry with backoff and say what to do if it does not.
        return failure('signal rate limited (if it persists, solve the rate-limit challenge via the REST API)', true, {
          status: 429,
          retryAfterMs: parseRetryAfter(outcome.headers.get('retry-after')),
        });
      }
      if (outcome.status === 400 && detail && TRANSIENT.test(detail)) {
        return failure(`signal-cli send failed: ${detail}`, true, { status: 400 });
      }
      return statusFailure('signal', outcome.status, detail, outcome.headers);
    },
    async check(signal) {
      // The REST API has no authentication: "who am I" is the server answering and knowing our number.
      const about = await getJson(joinUrl(config.apiBaseUrl, 'v1/about'), { timeoutMs: config.timeoutMs, signal });
      if (about.kind !== 'response') return checkFromFailure(transportFailure('signal', about), FIX);
      if (!is2xx(about.status))
        return checkFromFailure(
          statusFailure('signal', about.status, logSafeOptional(asRecord(about.json).error), about.headers),
          FIX,
        );
      const info = asRecord(about.json);
      const accounts = await getJson(joinUrl(config.apiBaseUrl, 'v1/accounts'), {
        timeoutMs: config.timeoutMs,
        signal,
      });
      if (accounts.kind !== 'response') return checkFromFailure(transportFailure('signal', accounts), FIX);
      if (!is2xx(accounts.status))
        return checkFromFailure(
          statusFailure('signal', accounts.status, logSafeOptional(asRecord(accounts.json).error), accounts.headers),
          FIX,
        );
      const list = Array.isArray(accounts.json) ? accounts.json : [];
      if (!list.includes(config.number)) {
        return checkFail(
          `signal-cli-rest-api has no account ${config.number} (it has ${list.length})`,
          'register or link the number in signal-cli (POST /v1/register/{number}, or /v1/qrcodelink), or fix `number`',
        );
      }
      return checkOk(
        `signal-cli-rest-api ${logSafeOptional(info.version, 20) ?? '?'} (mode ${logSafeOptional(info.mode, 20) ?? '?'}), ${config.number} registered`,
      );
    },
  };
}
