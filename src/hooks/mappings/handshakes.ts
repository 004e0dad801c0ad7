/**
 * Handshakes: requests a sender makes to check an endpoint rather than to deliver an event. They are answered once
 * the sender's signature verifies, whatever the mapping's `match` says, and queue nothing:
 * - Slack Events API `url_verification` (`{"type":"url_verification","challenge":"…"}`): Slack saves the Request URL
 *   only when the challenge is echoed → `200 {"challenge":"…"}`.
 * - GitHub `ping` (`X-GitHub-Event: ping`, sent when a webhook is created) → `200 {"ok":true,"ping":true}`.
 */
import type { SignatureConfig } from '../../config/schema/hooks.js';

export interface Handshake {
  /** The signature scheme whose verification authenticates it. */
  scheme: SignatureConfig['scheme'];
  answer: Record<string, unknown>;
}

/** Slack's challenges are short tokens; anything longer is not echoed. */
const MAX_CHALLENGE = 1024;

export function handshakeOf(
  payload: Record<string, unknown>,
  headers: Readonly<Record<string, string>>,
): Handshake | undefined {
  if (Object.hasOwn(headers, 'x-github-event') && headers['x-github-event']!.trim() === 'ping') {
    return { scheme: 'github', answer: { ok: true, ping: true } };
  }
  if (Object.hasOwn(payload, 'type') && payload.type === 'url_verification' && Object.hasOwn(payload, 'challenge')) {
    const challenge = payload.challenge;
    if (typeof challenge === 'string' && challenge !== '' && challenge.length <= MAX_CHALLENGE)
      return { scheme: 'slack', answer: { challenge } };
  }
  return undefined;
}
