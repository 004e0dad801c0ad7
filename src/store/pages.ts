/**
 * What the admin listener reads (docs/reference.md#admin-endpoints): cursor-paged lists, newest first, and the figures
 * of the queues. A cursor is opaque to callers (the driver encodes the last row's sort key); a bad one is the caller's
 * error.
 */
import type { DeliveryState, OpenRunState, RunState } from '../enums.js';
import type { StoredBreakdown } from './breakdown.js';
import type { Delivery, ReceivedHook, Run } from './types.js';

export interface Page<T> {
  items: T[];
  /** Pass back as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

export interface PageQuery {
  /** 1..200. */
  limit: number;
  cursor?: string;
}

export interface RunPageQuery extends PageQuery {
  state?: RunState;
  sessionKey?: string;
}

export interface DeliveryPageQuery extends PageQuery {
  state?: DeliveryState;
  channel?: string;
}

export interface ReceivedPageQuery extends PageQuery {
  /**
   * `accepted`: status < 400; `rejected`: status ≥ 400 (refusal counts included). A filtered page looks at a bounded
   * number of stored blocks (RECEIVED_BLOCKS_PER_PAGE): it may hold fewer than `limit` records, even none, with a
   * `nextCursor` to go on from where it stopped; only a null `nextCursor` says the list ended.
   */
  outcome?: 'accepted' | 'rejected';
  /** Records whose path is exactly this (a hook sub-path, `/hooks/wake`). */
  path?: string;
}

/** A received record with the id it is paged by. */
export interface ReceivedRecord extends ReceivedHook {
  id: string;
}

/**
 * How much work waits, read in one cheap query (metrics gauges, `hookgate status`, the dashboard's headline). Only
 * what waits is counted, never the history: each count walks an index as small as its queue, however old the store.
 */
export interface QueueDepths {
  runs: Record<OpenRunState, number>;
  /** Deliveries not yet sent (pending, including those waiting for a retry). */
  outboxPending: number;
  /** System events not yet consumed by a heartbeat, all sessions. */
  systemEventsPending: number;
}

/** Failures since a time (`hookgate status`, the dashboard's "failures in the last hour"). */
export interface RecentFailures {
  runsFailed: number;
  deliveriesDead: number;
  refused: number;
}

/** Thrown (as a HookgateError with code `invalid_query`) for a cursor this driver did not make. */
export interface AdminStore {
  pageRuns(q: RunPageQuery): Promise<Page<Run>>;
  pageDeliveries(q: DeliveryPageQuery): Promise<Page<Delivery>>;
  pageReceived(q: ReceivedPageQuery): Promise<Page<ReceivedRecord>>;
  queueDepths(): Promise<QueueDepths>;
  failuresSince(since: number): Promise<RecentFailures>;
  /** Requests, refusals and failures from `since` to `until`, counted per bucket of `bucketMs` and per path, code, channel, hook. */
  breakdownSince(since: number, until: number, bucketMs: number): Promise<StoredBreakdown>;
  /** The end of the newest stored window of refusal counts; null when none is stored. */
  refusalsStoredUntil(): Promise<number | null>;
  /** A small write that proves the store commits (`/readyz`); throws when it cannot. */
  probeWrite(now: number): Promise<void>;
}
