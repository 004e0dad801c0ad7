/**
 * The live feed (docs/reference.md#live-feed, `GET /api/v1/events`): the events the ingress and the runtime announce as
 * things happen, and the in-process bus that carries them to the admin listener's SSE clients, `/metrics` and, on a
 * shared store, the other nodes. Ids only, never a payload, a message or a reply (a client reads those through the
 * API).
 *
 * Publishing costs the hot path one small object and a slot in a ring buffer: no store read, no serialization.
 * An event is turned into its SSE frame (JSON) only when a client reads it, once per flush however many read it.
 */
import { randomBytes } from 'node:crypto';
import type { DeliveryStateName, RunState } from './enums.js';

/** A hook request answered: accepted (2xx) or refused (its code). */
export interface ReceivedFeedEvent {
  type: 'received';
  at: number;
  path: string;
  /** Bounded: `wake`, `agent`, a mapping's id, or `other` (the metrics' `route` label). */
  route: string;
  status: number;
  /** Null when accepted; `duplicate` for an idempotent replay. */
  code: string | null;
  clientIp: string;
  eventIds: string[];
  runIds: string[];
  /** Ids left out of `eventIds` + `runIds` (a large fan-out): the feed keeps events small. */
  omittedIds?: number;
  /** From the request's start to its answer. */
  durationMs: number;
  /** The request's id: its log lines' `reqId`, its answer's `x-request-id`, its received record's. */
  reqId?: string;
}

/** A run changed state (queued, running, succeeded, failed, timed_out; queued again on a defer, release or retry). */
export interface RunFeedEvent {
  type: 'run';
  at: number;
  runId: string;
  state: RunState;
  sessionKey: string;
  /** The hook sub-path that produced it. */
  hookName: string;
  /** What to call it: the request's `name`, else its mapping's id, else the hook sub-path. */
  label: string;
  error: string | null;
  /** A finished run: how long its turn took. */
  durationMs?: number;
}

/**
 * What happened to a delivery: `queued` (new, or retried by an operator), `sent`, `retry` (an attempt failed; still
 * pending), `failed` (dead-lettered).
 */
export type DeliveryChange = 'queued' | 'sent' | 'retry' | 'failed';

/** A delivery changed; `state` is what it is now, in the same words as the API's. */
export interface DeliveryFeedEvent {
  type: 'delivery';
  at: number;
  deliveryId: string;
  runId: string | null;
  channel: string;
  state: DeliveryStateName;
  change: DeliveryChange;
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
export const FEED_EVENT_TYPES: readonly FeedEventType[] = ['received', 'run', 'delivery', 'heartbeat'];

/** Where announcements go: the ingress and the runtime see only this (a bus, or nothing in tests). */
export interface FeedSink {
  publish(event: FeedEvent): void;
}

/** Events kept for `Last-Event-ID` resumes (a few seconds at full load, minutes at a usual one). */
export const FEED_CAPACITY = 4096;

/** A subscriber: `origin` is null for this process's own events, else the node that announced it. */
export type FeedListener = (event: FeedEvent, seq: number, origin: string | null) => void;

/** Where a `Last-Event-ID` puts a reader: `next` is the first sequence number to send; `reset` when it cannot resume. */
export type FeedPosition =
  | { kind: 'resume'; next: number }
  | { kind: 'reset'; reason: 'unknown_id' | 'gap'; next: number };

/**
 * The bus: a ring buffer of the last `capacity` events, numbered 1, 2, 3… in this process, and synchronous
 * subscribers. Event ids are `<epoch>-<seq>`: the epoch is random per process, so an id from another node or an
 * earlier run of this one is recognised as such (a reset), never mistaken for a position here.
 */
export class FeedBus implements FeedSink {
  readonly epoch: string;
  private readonly events: (FeedEvent | undefined)[];
  private readonly origins: (string | null)[];
  private readonly listeners = new Set<FeedListener>();
  /** The last sequence number given out (0: none yet). */
  private head = 0;
  /** No resume from before this sequence number (`breakResume`); 0: none. */
  private floor = 0;
  private readerCount = 0;
  private readonly readerListeners = new Set<(readers: number) => void>();

  constructor(
    readonly capacity = FEED_CAPACITY,
    /** This node's id on a shared store: every event's `data` carries its node (`origin` or this). */
    readonly node?: string,
  ) {
    this.epoch = randomBytes(4).toString('hex');
    this.events = new Array(capacity);
    this.origins = new Array(capacity).fill(null);
  }

  /** Announce an event of this process (`origin` null) or re-emit one received from node `origin`. */
  publish(event: FeedEvent, origin: string | null = null): void {
    const seq = ++this.head;
    const slot = seq % this.capacity;
    this.events[slot] = event;
    this.origins[slot] = origin;
    for (const l of this.listeners) {
      try {
        l(event, seq, origin);
      } catch {
        // a subscriber's failure must never reach the request or the run that announced
      }
    }
  }

  subscribe(listener: FeedListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  /**
   * Live-feed streams reading this bus (admin/events.ts adds 1 while it has clients, then -1). The cluster feed asks
   * the other nodes for their events only while some read (admin/feed-cluster.ts).
   */
  addReaders(delta: number): void {
    this.readerCount += delta;
    for (const l of this.readerListeners) l(this.readerCount);
  }

  get readers(): number {
    return this.readerCount;
  }

  onReaders(listener: (readers: number) => void): () => void {
    this.readerListeners.add(listener);
    return () => void this.readerListeners.delete(listener);
  }

  /**
   * Events from now on may not follow on from the buffer (this node stopped receiving the other nodes' events for a
   * while): a reader that last saw an earlier event gets a `gap` reset instead of a resume that silently lacks them.
   */
  breakResume(): void {
    this.floor = this.head + 1;
  }

  /** The last sequence number given out. */
  get last(): number {
    return this.head;
  }

  /** The oldest sequence number still in the buffer. */
  get oldest(): number {
    return Math.max(1, this.head - this.capacity + 1);
  }

  idOf(seq: number): string {
    return `${this.epoch}-${seq}`;
  }

  /** The event `seq`, or undefined once it left the buffer (or before it exists). */
  at(seq: number): FeedEvent | undefined {
    return seq >= this.oldest && seq <= this.head ? this.events[seq % this.capacity] : undefined;
  }

  /**
   * The SSE frame of event `seq` (`id`, `event`, `data` lines). Made when written, not kept: the feed's writer
   * (admin/events.ts) makes each frame once per flush however many clients read it, and a cache of 4,096 strings
   * would only be old-generation garbage for the collector.
   */
  frame(seq: number): string | undefined {
    const event = this.at(seq);
    if (!event) return undefined;
    const node = this.origins[seq % this.capacity] ?? this.node;
    const data =
      event.type === 'received'
        ? receivedJson(event, node)
        : JSON.stringify(node === undefined ? event : { ...event, node });
    return `id: ${this.epoch}-${seq}\nevent: ${event.type}\ndata: ${data}\n\n`;
  }

  /**
   * Where a reader that last saw `lastEventId` continues. Resumes when the id is this process's and every event
   * after it is still buffered; else a reset (an id of another node or an earlier process, a malformed one, or one
   * older than the buffer), and the reader continues with what comes next.
   */
  position(lastEventId: string | undefined): FeedPosition {
    const live = this.head + 1;
    if (lastEventId === undefined || lastEventId === '') return { kind: 'resume', next: live };
    const dash = lastEventId.lastIndexOf('-');
    const seq = dash < 0 ? NaN : Number(lastEventId.slice(dash + 1));
    if (lastEventId.slice(0, dash) !== this.epoch || !Number.isSafeInteger(seq) || seq < 0 || seq > this.head) {
      return { kind: 'reset', reason: 'unknown_id', next: live };
    }
    if (seq + 1 < this.oldest || seq < this.floor) return { kind: 'reset', reason: 'gap', next: live };
    return { kind: 'resume', next: seq + 1 };
  }
}

const str = JSON.stringify as (s: string) => string;
function strings(xs: readonly string[]): string {
  let out = '[';
  for (let i = 0; i < xs.length; i++) out += (i ? ',' : '') + str(xs[i]!);
  return `${out}]`;
}

/**
 * A `received` event's JSON, the same as `JSON.stringify({ ...event, node })` (test/feed.test.ts checks it on random
 * events): one per hook request, so made by hand, which is cheaper than the generic walk of the object.
 */
export function receivedJson(e: ReceivedFeedEvent, node?: string): string {
  return (
    `{"type":"received","at":${num(e.at)},"path":${str(e.path)},"route":${str(e.route)},"status":${num(e.status)},` +
    `"code":${e.code === null ? 'null' : str(e.code)},"clientIp":${str(e.clientIp)},"eventIds":${strings(e.eventIds)},` +
    `"runIds":${strings(e.runIds)}${e.omittedIds === undefined ? '' : `,"omittedIds":${num(e.omittedIds)}`},` +
    `"durationMs":${num(e.durationMs)}${e.reqId === undefined ? '' : `,"reqId":${str(e.reqId)}`}${node === undefined ? '' : `,"node":${str(node)}`}}`
  );
}

/** A number as JSON writes it (NaN and ±Infinity as null). */
const num = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');
