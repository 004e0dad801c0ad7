/**
 * Extension channel `webhook`: POSTs each delivery as JSON to a named target, signed the Standard Webhooks way
 * (https://www.standardwebhooks.com/) so a receiver can verify it with any Standard Webhooks library.
 *
 * `to` is the name of a target under `channels.webhook.targets`. The body is {@link deliveryRecord}; the headers are
 * `webhook-id` (the delivery id: stable across retries, so a receiver can de-duplicate), `webhook-timestamp` (unix
 * seconds of this attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the
 * base64-decoded part of the target's `whsec_` secret).
 */
import { createHmac } from 'node:crypto';
import type { z } from 'zod';
import type { webhookChannelSchema } from '../config/schema/channels.js';
import { type CheckResult, checkFail, checkOk, checkWarn } from '../check.js';
import { isLoopbackHost, isRetryableStatus } from '../http-util.js';
import { type Transport, is2xx, request } from '../http/client.js';
import { logSafe } from '../text-safe.js';
import { parseRetryAfter } from '../retry-after.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';

export type WebhookChannelConfig = z.output<typeof webhookChannelSchema>;

/** The object a `webhook` delivery POSTs and a `log` delivery prints: the same keys in the same order. */
export interface DeliveryRecord {
  runId: string | null;
  sessionKey: string;
  agentId: string;
  hookName: string | null;
  channel: string;
  to: string;
  text: string;
  createdAt: string;
}

export function deliveryRecord(m: OutboundMessage): DeliveryRecord {
  return {
    runId: m.runId,
    sessionKey: m.sessionKey,
    agentId: m.agentId,
    hookName: m.hookName,
    channel: m.channel,
    to: m.to,
    text: m.text,
    createdAt: m.createdAt,
  };
}

/** The signing key of a Standard Webhooks secret: the base64 after `whsec_` (a bare base64 key is accepted too). */
export function webhookSecretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>` — the `webhook-signature` value. */
export function signStandardWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', webhookSecretKey(secret))
    .update(`${id}.${timestampSeconds}.${body}`, 'utf8')
    .digest('base64');
  return `v1,${mac}`;
}

export interface WebhookChannelOptions {
  /** For tests: a stand-in transport (a failure undici cannot be made to produce on this machine). */
  transport?: Transport;
  /** For tests: the clock (ms since the epoch) used for `webhook-timestamp`. */
  now?: () => number;
}

/**
 * No platform limits a webhook body: one reply is one POST. (The outbox still splits above this, so a runaway reply
 * cannot make a body no receiver accepts.)
 */
export const WEBHOOK_MAX_TEXT_LENGTH = 1_000_000;

/** `to`: the name of a configured target (a name from the config, never a URL: the payload picks no host). */
export function webhookRecipientRule(config: WebhookChannelConfig | undefined): (to: string) => string | undefined {
  const names = Object.keys(config?.targets ?? {});
  const expected = `the name of a configured target (channels.webhook.targets: ${names.length ? names.map((k) => `"${logSafe(k, 60)}"`).join(', ') : 'none'})`;
  return (to) => (Object.hasOwn(config?.targets ?? {}, to) ? undefined : expected);
}

export function createWebhookChannel(
  config: WebhookChannelConfig,
  _ctx: ChannelContext,
  options: WebhookChannelOptions = {},
): Channel {
  const now = options.now ?? Date.now;
  const targets = new Map(Object.entries(config.targets));

  const checkRecipient = webhookRecipientRule(config);

  async function send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
    const target = targets.get(message.to);
    if (!target) {
      // The config changed under a queued delivery (a request naming no target is refused when accepted).
      return {
        ok: false,
        retryable: false,
        error: `webhook: \`to\` must be ${checkRecipient(message.to) ?? 'a configured target'}`,
      };
    }
    const body = JSON.stringify(deliveryRecord(message));
    const timestamp = Math.floor(now() / 1000);
    // Headers are case-insensitive: a target's own `User-Agent` replaces ours; the signed ones always win.
    const headers = new Headers({ 'user-agent': 'hookgate' });
    for (const [name, value] of Object.entries(target.headers ?? {})) headers.set(name, value);
    headers.set('content-type', 'application/json');
    headers.set('webhook-id', message.deliveryId);
    headers.set('webhook-timestamp', String(timestamp));
    headers.set('webhook-signature', signStandardWebhook(target.secret, message.deliveryId, timestamp, body));
    const label = `webhook target "${message.to}"`;

    // The target's URL is from the config (`to` only picks its name). Redirects are not followed (the client's
    // default): a 301/302 would turn the POST into a GET and the signature would vouch for nothing. The answer's
    // body is of no use (and may be large): it is not read (maxBytes 0), the connection is released.
    const res = await request(
      target.url,
      { method: 'POST', headers, body },
      { timeoutMs: target.timeoutMs, signal, maxBytes: 0, transport: options.transport },
    );
    if (res.kind === 'timeout')
      return { ok: false, retryable: true, error: `${label}: no answer within ${target.timeoutMs} ms` };
    if (res.kind === 'aborted') return { ok: false, retryable: true, error: `${label}: delivery aborted` };
    if (res.kind === 'network') return { ok: false, retryable: true, error: `${label}: network error (${res.code})` };

    const status = res.status;
    if (is2xx(status)) return { ok: true };
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), now());
    if (status === 410)
      return {
        ok: false,
        retryable: false,
        status,
        error: `${label} answered 410 Gone: the receiver asks not to be sent to any more`,
      };
    // 408 is a timeout on the receiver's side: as transient as our own timeout.
    if (isRetryableStatus(status)) {
      return {
        ok: false,
        retryable: true,
        status,
        error: `${label} answered ${status}`,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      };
    }
    if (status >= 300 && status < 400) {
      return {
        ok: false,
        retryable: false,
        status,
        error: `${label} answered a redirect (${status}); configure the final URL`,
      };
    }
    return { ok: false, retryable: false, status, error: `${label} answered ${status}` };
  }

  return {
    id: 'webhook',
    maxTextLength: WEBHOOK_MAX_TEXT_LENGTH,
    send,
    checkRecipient,
    check: async () => checkTargets(config),
  };
}

/**
 * `hookgate doctor`: no call (a POST would be a delivery the receiver acts on); each target's URL must parse, and a
 * plain-http URL to another host sends the signed reply, agent text and all, readable on the way.
 */
export function checkTargets(config: WebhookChannelConfig): CheckResult {
  const names = Object.keys(config.targets);
  if (names.length === 0)
    return checkWarn(
      'no targets configured: nothing can be sent here',
      'add channels.webhook.targets.<name>: { url, secret }',
    );
  const plain: string[] = [];
  const shown: string[] = [];
  for (const [name, target] of Object.entries(config.targets)) {
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      return checkFail(`target "${logSafe(name, 60)}": the url does not parse`, `fix targets.${logSafe(name, 60)}.url`);
    }
    // The origin only: a path or query may carry a receiver's token.
    shown.push(`${logSafe(name, 60)} → ${url.origin}`);
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) plain.push(logSafe(name, 60));
  }
  const detail = `${names.length} target${names.length > 1 ? 's' : ''}, not called: ${shown.join(', ')}`;
  return plain.length
    ? checkWarn(
        `${detail}; plain http to another host: ${plain.join(', ')}`,
        'use https:// for targets off this machine',
      )
    : checkOk(detail);
}
