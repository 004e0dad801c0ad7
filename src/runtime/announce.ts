/**
 * The runtime's announcements on the live feed (src/feed.ts): every run state change, every delivery change, every
 * heartbeat turn, each announced once its write committed. Ids and states only (errors are the runtime's own
 * one-line, log-safe texts), never a message or a reply.
 */
import type { DeliveryChange, FeedSink } from '../feed.js';
import { type DeliveryState, deliveryStateName, type RunState } from '../enums.js';
import type { NewDelivery, NewRun } from '../store/types.js';
import { runLabel } from './summary.js';

type RunRef = Pick<NewRun, 'id' | 'sessionKey' | 'hookPath' | 'name' | 'mappingId'>;

export class RuntimeAnnouncer {
  constructor(private readonly feed: FeedSink | undefined) {}

  run(run: RunRef, state: RunState, error: string | null = null, durationMs?: number): void {
    this.feed?.publish({
      type: 'run',
      at: Date.now(),
      runId: run.id,
      state,
      sessionKey: run.sessionKey,
      hookName: run.hookPath,
      label: runLabel(run),
      error,
      ...(durationMs !== undefined ? { durationMs } : {}),
    });
  }

  /** New outbox rows (a finished run's or heartbeat's reply). */
  queued(deliveries: readonly NewDelivery[]): void {
    for (const d of deliveries) this.delivery(d, 'queued', 'pending', 0, null);
  }

  /** `state` is the store's; the feed names it as the API does. */
  delivery(
    d: Pick<NewDelivery, 'id' | 'runId' | 'channel'>,
    change: DeliveryChange,
    state: DeliveryState,
    attempts: number,
    lastError: string | null,
  ): void {
    const event = {
      deliveryId: d.id,
      runId: d.runId,
      channel: d.channel,
      state: deliveryStateName(state),
      change,
      attempts,
      lastError,
    };
    this.feed?.publish({ type: 'delivery', at: Date.now(), ...event });
  }

  heartbeat(sessionKey: string, outcome: 'ok' | 'failed', events: number): void {
    this.feed?.publish({ type: 'heartbeat', at: Date.now(), sessionKey, outcome, events });
  }
}
