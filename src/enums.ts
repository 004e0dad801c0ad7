/**
 * The one source of hookgate's closed sets of words. Config schemas (`z.enum`), CLI choices, the store's unions and
 * the normalisers derive from these lists, so a new value is added here once.
 */

/** When a wake (or a finished run's summary) reaches the main agent. */
export const WAKE_MODES = ['now', 'next-heartbeat'] as const;
export type WakeMode = (typeof WAKE_MODES)[number];

/** `isolated`: a fresh session per run; `persistent`: the run continues the session named by its key. */
export const SESSION_MODES = ['isolated', 'persistent'] as const;
export type SessionMode = (typeof SESSION_MODES)[number];

/** Where a run's message came from, which decides its safety wrapper's label. */
export const CONTENT_SOURCES = ['webhook', 'email'] as const;
export type ContentSource = (typeof CONTENT_SOURCES)[number];

export const RUN_STATES = ['queued', 'running', 'succeeded', 'failed', 'timed_out'] as const;
export type RunState = (typeof RUN_STATES)[number];
/** Runs that are work waiting: the queue depths count these alone (the finished ones are history). */
export const OPEN_RUN_STATES = ['queued', 'running'] as const;
export type OpenRunState = (typeof OPEN_RUN_STATES)[number];
/** The states a run ends in (a finished run may be re-queued by hand). */
export const FINISHED_RUN_STATES = ['succeeded', 'failed', 'timed_out'] as const;
export type FinishedRunState = (typeof FINISHED_RUN_STATES)[number];

/** How a held `waitForCompletion` answer reports the run: finished ok, finished with an error, or not yet. */
export const COMPLETION_STATUSES = ['ok', 'error', 'pending'] as const;
export type CompletionStatus = (typeof COMPLETION_STATUSES)[number];
/** What the run's reply was (OpenClaw's words): text to show, only the `HEARTBEAT_OK` acknowledgement, or nothing. */
export const REPLY_DISPOSITIONS = ['visible', 'silent', 'empty'] as const;
export type ReplyDisposition = (typeof REPLY_DISPOSITIONS)[number];

/** The store's words for a delivery's state (its column values). Never shown: everything a user reads says the next. */
export const DELIVERY_STATES = ['pending', 'delivered', 'dead'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/**
 * A delivery's state as the API, the CLI, the live feed, the metrics and the dashboard name it: `pending` (on its way,
 * maybe after failed attempts), `sent`, `failed` (dead-lettered: gave up, or refused for good).
 */
export const DELIVERY_STATE_NAMES = ['pending', 'sent', 'failed'] as const;
export type DeliveryStateName = (typeof DELIVERY_STATE_NAMES)[number];
/** Older spellings still accepted as input (a CLI `--state`, an API query parameter). */
export const DELIVERY_STATE_ALIASES: Readonly<Record<string, DeliveryStateName>> = {
  delivered: 'sent',
  dead: 'failed',
};
const STORED: Record<DeliveryStateName, DeliveryState> = { pending: 'pending', sent: 'delivered', failed: 'dead' };

/** The store's state in the shown words. */
export function deliveryStateName(state: DeliveryState): DeliveryStateName {
  return state === 'delivered' ? 'sent' : state === 'dead' ? 'failed' : 'pending';
}
/** A shown word (or an older alias) → the store's state; undefined for any other word. */
export function storedDeliveryState(word: string): DeliveryState | undefined {
  if (isOneOf(DELIVERY_STATE_NAMES, word)) return STORED[word];
  return Object.hasOwn(DELIVERY_STATE_ALIASES, word) ? STORED[DELIVERY_STATE_ALIASES[word]!] : undefined;
}

/** What produced a system event: a wake request, a run summary, the CLI. */
export const EVENT_ORIGINS = ['wake', 'summary', 'cli'] as const;
export type EventOrigin = (typeof EVENT_ORIGINS)[number];

/** A wake's text equal to the previous pending event is coalesced into it. */
export const EVENT_OUTCOMES = ['queued', 'coalesced'] as const;
export type EventOutcome = (typeof EVENT_OUTCOMES)[number];

/** What one `hookgate doctor` check found: only `fail` makes the doctor exit 1. */
export const CHECK_STATUSES = ['ok', 'warn', 'fail'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

/** A type guard for any of the lists above. */
export function isOneOf<T extends string>(list: readonly T[], value: unknown): value is T {
  return typeof value === 'string' && (list as readonly string[]).includes(value);
}
