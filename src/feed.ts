/**
 * The live feed's events (CONTRACT.md §7, `GET /api/v1/events`): what the ingress and the runtime announce as it
 * happens, for the admin listener's SSE clients, `hookgate tail` and the dashboard. Ids only, never a payload, a
 * message or a reply (a client reads those through the API). On a shared store every node's events reach every
 * node's feed.
 */
import type { DeliveryState, RunState } from './enums.js';

/** A hook request answered: accepted (2xx) or refused (its code). */
export interface ReceivedFeedEvent {
  type: 'received';
  at: number;
  path: string;
  status: number;
  /** Null when accepted; `duplicate` for an idempotent replay. */
  code: string | null;
  clientIp: string;
  eventIds: string[];
  runIds: string[];
}

/** A run changed state (queued, running, succeeded, failed, timed_out; queued again on a retry). */
export interface RunFeedEvent {
  type: 'run';
  at: number;
  runId: string;
  state: RunState;
  sessionKey: string;
  /** The hook sub-path that produced it. */
  hookName: string;
  error: string | null;
}

/** A delivery was queued, sent, failed an attempt (still pending) or dead-lettered. */
export interface DeliveryFeedEvent {
  type: 'delivery';
  at: number;
  deliveryId: string;
  runId: string | null;
  channel: string;
  state: DeliveryState;
  attempts: number;
  lastError: string | null;
}

/** A heartbeat turn of a session ended. */
export interface HeartbeatFeedEvent {
  type: 'heartbeat';
  at: number;
  sessionKey: string;
  /** `ok`: the turn ran (its reply delivered or acknowledged); `failed`: the model or the store failed. */
  outcome: 'ok' | 'failed';
  events: number;
}

export type FeedEvent = ReceivedFeedEvent | RunFeedEvent | DeliveryFeedEvent | HeartbeatFeedEvent;
export type FeedEventType = FeedEvent['type'];
