/**
 * Refusals this process has seen but no stored record holds yet. Refusals are stored as counts per window, once the
 * window ends (ingress/refusals.ts); until then the live feed's ring buffer (src/feed.ts) is the only place they are,
 * so the admin API reads them from it: a refusal seen live is still listed after a reload. On a shared store the
 * ring holds the other nodes' events too. The ring is bounded: at a high rate it may reach back less far than the
 * current window, and refusals older than its oldest event are listed once their window is stored.
 */
import type { FeedBus, ReceivedFeedEvent } from '../feed.js';
import type { ReceivedRecord } from '../store/pages.js';

/** Refusals in the ring at or after `from` (epoch ms), newest first. */
export function unstoredRefusals(
  bus: FeedBus | undefined,
  from: number,
): Array<{ seq: number; event: ReceivedFeedEvent }> {
  const out: Array<{ seq: number; event: ReceivedFeedEvent }> = [];
  if (!bus) return out;
  for (let seq = bus.last; seq >= bus.oldest; seq--) {
    const e = bus.at(seq);
    if (e?.type === 'received' && e.status >= 400 && e.at >= from) out.push({ seq, event: e });
  }
  return out.sort((a, b) => b.event.at - a.event.at);
}

/** A ring refusal as a received record (`live: true`: from memory, not the store; its id is the feed event's). */
export function liveRecord(bus: FeedBus, seq: number, e: ReceivedFeedEvent): ReceivedRecord & { live: true } {
  return {
    id: `live:${bus.idOf(seq)}`,
    at: e.at,
    method: 'POST',
    path: e.path,
    clientIp: e.clientIp,
    status: e.status,
    code: e.code as ReceivedRecord['code'],
    eventIds: [],
    runIds: [],
    mappingId: null,
    durationMs: e.durationMs,
    ...(e.reqId ? { reqId: e.reqId } : {}),
    live: true,
  };
}
