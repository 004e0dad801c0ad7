import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { HooksConfig } from '../config/schema/hooks.js';
import { HttpError } from '../errors.js';
import type { IdempotencyClaim } from '../store/types.js';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

/** `Idempotency-Key` header, else `idempotencyKey` in the body; a verified provider delivery id comes last. */
export function extractIdempotencyKey(
  headers: IncomingHttpHeaders,
  payload: Record<string, unknown>,
  deliveryId?: string,
): string | undefined {
  const h = headers['idempotency-key'] ?? headers['x-openclaw-idempotency-key'];
  const fromHeader = (Array.isArray(h) ? h[0] : h)?.trim();
  let key = fromHeader || undefined;
  if (key === undefined && payload.idempotencyKey !== undefined) {
    if (typeof payload.idempotencyKey !== 'string')
      throw new HttpError(400, 'invalid_payload', 'idempotencyKey must be a string');
    key = payload.idempotencyKey.trim() || undefined;
  }
  key ??= deliveryId;
  // Characters, not UTF-16 units: an emoji is one character of the 256.
  if (key !== undefined && key.length > MAX_IDEMPOTENCY_KEY_LENGTH && [...key].length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new HttpError(
      400,
      'invalid_payload',
      `idempotency key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
    );
  }
  return key;
}

/**
 * The claim of a key. `sender` is who the key counts against for `hooks.idempotencyMaxKeys`: the client's address
 * bucket (IPv6 by /64). Not the credential: the shared token is one credential for every sender, and a mapping's
 * signature secret is usually one per platform, so per-credential caps would let one client evict everyone's keys.
 */
export function idempotencyClaim(
  scope: string,
  key: string,
  rawBody: Buffer | string,
  by: { sender: string; hooks: Pick<HooksConfig, 'idempotencyTtlSeconds' | 'idempotencyMaxKeys'> },
  now: number,
): IdempotencyClaim {
  return {
    scope,
    keyHash: createHash('sha256').update(key).digest('hex'),
    fingerprint: createHash('sha256').update(rawBody).digest('hex'),
    expiresAt: now + by.hooks.idempotencyTtlSeconds * 1000,
    sender: by.sender,
    maxPerSender: by.hooks.idempotencyMaxKeys,
  };
}
