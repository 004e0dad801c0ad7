/**
 * Whether a `to` can be a recipient on a channel: the one check, used when a request is accepted (400
 * `invalid_channel`), by `hookgate sessions route`, and again by the outbox before every send (a route already in the
 * store, or a `channels.default.to`, that does not fit dead-letters instead of reaching another path of the API).
 *
 * Every channel shares one rule: at most {@link MAX_RECIPIENT_LENGTH} characters, no control characters, never `.` or
 * `..` (a URL parser resolves those as path steps). Each platform adds its own (`Channel.checkRecipient`, beside its
 * sender); `log` and plugins without one take any other text.
 */
import type { Channel } from './types.js';

/** Longer than any platform's id (a Teams conversation id is under 200); bounds what a request can make us store. */
export const MAX_RECIPIENT_LENGTH = 512;

/** Controls, line and bidi controls: never part of a recipient, and a line break in one could forge a log line. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * A phone number in international format as people write it: an optional `+`, 6 to 18 digits, spaces, dashes and
 * brackets between them (`+1 (555) 123-4567`). For platforms that take one as a recipient.
 */
export const PHONE_NUMBER = /^\+?[0-9](?:[ ()-]{0,2}[0-9]){5,17}$/;

/** Answers whether `to` is a recipient of channel `channel`: `undefined` when it is, else why not (for a person). */
export type RecipientCheck = (channel: string, to: string) => string | undefined;

/**
 * Why `to` (trimmed first, as the outbox trims it) cannot be a recipient of channel `name`, whose definition is
 * `channel` (undefined: only the shared rule applies, e.g. `last`, whose platform is known only at delivery); or
 * `undefined` when it can. The message names the expected shape, never the value (it may come from a payload).
 */
export function recipientProblem(
  name: string,
  channel: Pick<Channel, 'checkRecipient'> | undefined,
  raw: string,
): string | undefined {
  const to = raw.trim();
  let expected: string | undefined;
  try {
    const answer: unknown = channel?.checkRecipient?.(to);
    // Only `undefined` accepts: a plugin's rule that answers anything else refuses, named or not.
    if (answer !== undefined)
      expected = typeof answer === 'string' && answer !== '' ? answer : 'a recipient its checkRecipient accepts';
  } catch {
    expected = 'a recipient its checkRecipient accepts (it threw)';
  }
  const shared = to.length > MAX_RECIPIENT_LENGTH || UNSAFE.test(to) || to === '.' || to === '..';
  if (!shared && expected === undefined) return undefined;
  const rule = `one line of at most ${MAX_RECIPIENT_LENGTH} characters, not "." or ".."`;
  return `"to" is not a recipient of channel ${name}: expected ${expected ?? rule}`;
}
