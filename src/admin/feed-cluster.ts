/**
 * The live feed across the nodes of a shared store (docs/reference.md#cluster-on-postgresql: the feed shows the whole
 * cluster's work). This node's own events go out in batches, one NOTIFY per batch (`publishFeed`, under
 * FEED_NOTICE_MAX_BYTES), at most every FLUSH_MS; the other nodes' `feed` notices are re-emitted on this node's bus
 * with their origin node. On a single-process store (SQLite) nothing is sent: the one process's feed is the whole feed.
 *
 * Events are sent only while some node's feed has readers (docs/admin.md#live-feed): such a node says so every
 * FEED_WATCH_ANNOUNCE_MS (a `feed` notice with `watchMs`), and for FEED_WATCH_GRACE_MS after its last reader left, so
 * a reader reconnecting with Last-Event-ID resumes without missing the other nodes' events. When it stops asking it
 * breaks resumes from before (a `gap` reset). A node that just started asks who reads (FEED_START_SEND_MS).
 * Refusals are always sent: the first page of `/api/v1/received` lists the cluster's not-yet-stored ones.
 *
 * Best-effort, like every notice: events announced while PostgreSQL is unreachable, or past MAX_QUEUED while it is
 * slow, are not sent to the other nodes (they are counted in a warning); the store's records stay complete.
 */
import { type FeedBus, type FeedEvent, receivedJson } from '../feed.js';
import type { Logger } from '../log.js';
import { type ClusterStore, FEED_NOTICE_MAX_BYTES } from '../store/types.js';
import { errorMessage } from '../text-safe.js';

/** How long events gather before they are sent: the delay another node's feed adds, and what batches them. */
export const FEED_FLUSH_MS = 25;
/** Events waiting to be sent at most (a slow or unreachable database must not grow memory). */
const MAX_QUEUED = 4096;
/** The envelope around the events (kind, node id): kept free in every batch. */
const ENVELOPE_BYTES = 300;

/** How often a node whose feed has readers asks the others for their events. */
export const FEED_WATCH_ANNOUNCE_MS = 5_000;
/** How long a node keeps asking after its last reader left: EventSource and `hookgate tail` reconnect within it. */
export const FEED_WATCH_GRACE_MS = 60_000;

/**
 * A node that starts sends for this long, and asks after HELLO_DELAY_MS (once its LISTEN is normally in place) who
 * reads: a node with readers answers by asking at once, rather than at its next announcement.
 */
export const FEED_START_SEND_MS = 1_500;
const HELLO_DELAY_MS = 500;

/** Sent whether or not a feed reads: the admin API's list of recent refusals reads them from every node's buffer. */
const isRefusal = (e: FeedEvent): boolean => e.type === 'received' && e.status >= 400;

export interface ShareFeedOptions {
  flushMs?: number;
  announceMs?: number;
  graceMs?: number;
  now?: () => number;
  helloDelayMs?: number;
}

export type FeedClusterStore = Pick<ClusterStore, 'shared' | 'publishFeed' | 'subscribe'>;

export function shareFeed(
  bus: FeedBus,
  store: FeedClusterStore,
  node: string,
  logger: Logger,
  opts: ShareFeedOptions = {},
): () => void {
  if (!store.shared) return () => {};
  const now = opts.now ?? Date.now;
  const announceMs = opts.announceMs ?? FEED_WATCH_ANNOUNCE_MS;
  /** How long one request holds: three of them, so that one lost notice does not stop the others sending. */
  const holdMs = 3 * announceMs;
  const graceMs = opts.graceMs ?? FEED_WATCH_GRACE_MS;
  /** Until when some other node asked for this node's events. */
  let othersWatchUntil = now() + FEED_START_SEND_MS;
  // watchMs 0: "who reads?" (a request is never 0).
  const hello = setTimeout(
    () => void store.publishFeed(node, [], 0).catch(() => {}),
    opts.helloDelayMs ?? HELLO_DELAY_MS,
  );
  hello.unref();
  const limit = FEED_NOTICE_MAX_BYTES - ENVELOPE_BYTES - Buffer.byteLength(node);
  let queue: { json: string; bytes: number }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let sending = false;
  let lost = 0;
  let failing = false;

  const flush = async () => {
    timer = undefined;
    if (sending) return;
    sending = true;
    try {
      while (queue.length) {
        const batch: string[] = [];
        let bytes = 0;
        while (queue.length && bytes + queue[0]!.bytes + 1 <= limit) {
          const e = queue.shift()!;
          batch.push(e.json);
          bytes += e.bytes + 1;
        }
        try {
          await store.publishFeed(node, batch);
          if (failing) logger.warn({ lost }, 'live feed: sending events to the other nodes works again');
          failing = false;
          lost = 0;
        } catch (err) {
          lost += batch.length + queue.length;
          queue = [];
          if (!failing)
            logger.warn(
              { err: errorMessage(err) },
              "live feed: could not send this node's events to the other nodes; their feeds miss them meanwhile",
            );
          failing = true;
        }
      }
    } finally {
      sending = false;
    }
  };

  // Asking the others for their events while this node's feed has readers, and for graceMs after.
  let asking: NodeJS.Timeout | undefined;
  let lastReadAt = 0;
  const ask = () => void store.publishFeed(node, [], holdMs).catch(() => {}); // a lost request: the next one, or the flush's warning
  const tick = () => {
    if (bus.readers > 0) lastReadAt = now();
    if (now() - lastReadAt < graceMs) return ask();
    clearInterval(asking);
    asking = undefined;
    bus.breakResume(); // the other nodes stop sending: a resume from before would silently lack their events
  };
  const unsubscribeReaders = bus.onReaders((readers) => {
    lastReadAt = now();
    if (readers === 0 || asking) return;
    ask();
    asking = setInterval(tick, announceMs);
    asking.unref();
  });

  const unsubscribeLocal = bus.subscribe((event, _seq, origin) => {
    if (origin !== null) return; // another node's event: it sent it itself
    if (othersWatchUntil <= now() && !isRefusal(event)) return; // nobody reads another node's feed: no NOTIFY, no JSON
    if (queue.length >= MAX_QUEUED) return void lost++;
    const json = event.type === 'received' ? receivedJson(event) : JSON.stringify(event);
    const bytes = Buffer.byteLength(json);
    if (bytes > limit) return void lost++; // cannot happen with the ingress's bounded fields; never a broken NOTIFY
    queue.push({ json, bytes });
    if (!timer && !sending) {
      // While a batch is being sent, new events join the queue that the same flush loop sends next.
      timer = setTimeout(() => void flush(), opts.flushMs ?? FEED_FLUSH_MS);
      timer.unref();
    }
  });
  const unsubscribeNotices = store.subscribe((notice) => {
    if (notice.kind !== 'feed' || notice.node === node) return; // our own NOTIFY comes back to us too
    if (notice.watchMs === 0 && asking) ask();
    else if (notice.watchMs !== undefined) othersWatchUntil = Math.max(othersWatchUntil, now() + notice.watchMs);
    for (const event of notice.events) bus.publish(event, notice.node);
  });
  return () => {
    unsubscribeLocal();
    unsubscribeNotices();
    unsubscribeReaders();
    clearTimeout(hello);
    clearInterval(asking);
    asking = undefined;
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
}
