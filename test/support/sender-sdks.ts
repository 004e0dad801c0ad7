/**
 * Senders' own SDKs, for the one thing the tests take from each: signing a request the way the sender does. Loaded
 * narrowly: the full packages' type declarations (twilio's and stripe's, some 15 MB) would otherwise be parsed by
 * every build of the test program, and twilio's package entry loads its whole REST client.
 */
import { createRequire } from 'node:module';
import twilioWebhooks from 'twilio/lib/webhooks/webhooks.js';

/** Twilio's request-validation helpers (`getExpectedTwilioSignature`, `validateRequest`, …). */
export const twilio = twilioWebhooks;

interface StripeSdk {
  webhooks: { generateTestHeaderString(opts: { payload: string; secret: string; timestamp?: number }): string };
}

/** Stripe's SDK, typed for its webhook test header only. */
export const Stripe = createRequire(import.meta.url)('stripe') as StripeSdk;
