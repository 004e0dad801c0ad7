/**
 * Google Chat through the Chat API as a Chat app: POST {apiBaseUrl}/v1/{space}/messages?requestId=… { text }.
 * `to` is a space name, `spaces/AAAA…` (a bare `AAAA…` gets the prefix). The app must be a member of the space.
 *
 * Authentication is app authentication: an access token for the `chat.bot` scope obtained from a service-account
 * key with the OAuth 2.0 JWT-bearer grant (RFC 7523: an RS256-signed JWT POSTed to the token endpoint), cached
 * until shortly before it expires. A static `accessToken` can be configured instead (it is never refreshed).
 *
 * `requestId` is derived from the delivery id: the Chat API returns the existing message for a repeated requestId,
 * so an outbox retry after a lost answer does not post twice.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { z } from 'zod';
import type { googlechatSchema } from '../config/schema/channels.js';
import { joinUrl } from '../http-util.js';
import { checkWarn } from '../check.js';
import { logSafeOptional } from '../text-safe.js';
import { jwtBearer, readServiceAccount, staticToken, type ServiceAccount, type TokenSource } from '../http/token.js';
import { asRecord, checkToken, failure, oauthTokens, postWithToken, statusFailure, type SendFailure } from './http.js';
import { ChannelError, type Channel, type ChannelContext, type OutboundMessage, type SendResult } from './types.js';

export type GoogleChatConfig = z.output<typeof googlechatSchema>;

/** Chat message `text` is limited to 4,096 characters (the whole message, cards included, to 32,000 bytes). */
export const GOOGLECHAT_MAX_TEXT = 4096;
export const GOOGLECHAT_SCOPE = 'https://www.googleapis.com/auth/chat.bot';
/** `to`: a space, `spaces/AAAA…` or the bare `AAAA…` (its name is put in the API path, so nothing else passes). */
export function checkGoogleChatRecipient(to: string): string | undefined {
  return toSpaceName(to) === undefined ? 'a space name like spaces/AAAAxxxx' : undefined;
}

export function createGoogleChatChannel(config: GoogleChatConfig, ctx: ChannelContext): Channel {
  const tokens = tokenSource(config, ctx);
  return {
    id: 'googlechat',
    maxTextLength: GOOGLECHAT_MAX_TEXT,
    checkRecipient: checkGoogleChatRecipient,
    async send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
      const space = toSpaceName(message.to);
      if (!space) return failure('googlechat: `to` must be a space name like spaces/AAAAxxxx', false);
      const url = `${joinUrl(config.apiBaseUrl, `v1/${space}/messages`)}?requestId=${requestIdFor(message.deliveryId)}`;
      const outcome = await postWithToken(
        'googlechat',
        tokens,
        url,
        { text: message.text },
        { timeoutMs: config.timeoutMs, signal },
        ctx.logger,
        (j) => j.name,
        message,
      );
      if (!('kind' in outcome)) return outcome;
      // Google API errors: { error: { code, message, status: "NOT_FOUND" | "PERMISSION_DENIED" | ... } }.
      const err = asRecord(asRecord(outcome.json).error);
      const status = logSafeOptional(err.status, 40);
      const detail = [status, logSafeOptional(err.message)].filter(Boolean).join(': ');
      const hint = HINTS[outcome.status];
      return statusFailure(
        'googlechat',
        outcome.status,
        `${detail}${hint ? ` (${hint})` : ''}` || undefined,
        outcome.headers,
      );
    },
    async check() {
      // A configured accessToken is used as it is: only a send can tell whether it still works.
      if (config.accessToken)
        return checkWarn(
          'a static accessToken is configured: not checked (it expires within an hour)',
          'configure serviceAccountFile so hookgate refreshes tokens itself',
        );
      return checkToken(tokens, FIX, 'the JWT grant of the service account');
    },
  };
}

const FIX =
  'check the service-account key (serviceAccountFile / serviceAccount) and that the key is not deleted or disabled';

const HINTS: Record<number, string> = {
  401: 'the access token or service-account key is not accepted',
  403: 'add the Chat app to the space, and check the Chat API is enabled for the project',
  404: 'unknown space, or the Chat app is not a member',
};

/** `spaces/AAAA` or `AAAA` → `spaces/AAAA`; anything else is not a space. */
export function toSpaceName(to: string): string | undefined {
  const m = /^(?:spaces\/)?([A-Za-z0-9_-]+)$/.exec(to);
  return m ? `spaces/${m[1]}` : undefined;
}

/** A stable, URL-safe request id per delivery chunk. */
export function requestIdFor(deliveryId: string): string {
  return `hookgate-${createHash('sha256').update(deliveryId).digest('hex').slice(0, 32)}`;
}

function tokenSource(config: GoogleChatConfig, ctx: ChannelContext): TokenSource<SendFailure> {
  if (config.accessToken) return staticToken(config.accessToken);
  return oauthTokens(
    'googlechat',
    config.tokenUrl,
    jwtBearer(loadServiceAccount(config, ctx), GOOGLECHAT_SCOPE),
    config.timeoutMs,
  );
}

/** Read and check the key at start-up: a missing file or a broken key is a config problem, not a delivery one. */
function loadServiceAccount(config: GoogleChatConfig, ctx: ChannelContext): ServiceAccount {
  let raw: unknown = config.serviceAccount;
  if (config.serviceAccountFile) {
    const file = resolve(ctx.configDir, config.serviceAccountFile);
    try {
      raw = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? 'not valid JSON';
      throw new ChannelError('channel_config', `channels.googlechat.serviceAccountFile: cannot read ${file} (${why})`);
    }
  } else if (typeof raw === 'string') {
    try {
      raw = JSON.parse(raw) as unknown;
    } catch {
      throw new ChannelError('channel_config', 'channels.googlechat.serviceAccount: not valid JSON');
    }
  }
  const where = config.serviceAccountFile
    ? 'channels.googlechat.serviceAccountFile'
    : 'channels.googlechat.serviceAccount';
  const account = readServiceAccount(asRecord(raw));
  if (account === 'fields')
    throw new ChannelError('channel_config', `${where}: needs client_email and private_key (a service-account key)`);
  // Never echo the key material.
  if (account === 'key')
    throw new ChannelError('channel_config', `${where}: private_key is not a readable PEM private key`);
  return account;
}
