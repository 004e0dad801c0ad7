/**
 * The live feed across the nodes of a shared store (docs/reference.md#cluster-on-postgresql: the feed shows the whole
 * cluster's work). This node's own events go out in batches, one NOTIFY per batch (`publishFeed`, under
 * FEED_NOTICE_MAX_BYTES), at most every FLUSH_MS; the other nodes' `feed` notices are re-emitted on this node's bus
 * with their origin node. On a single-process store (SQLite) nothing is sent: the one process's feed is the whole feed.
 *
 * Best-effort, like every notice: events announced while PostgreSQL is unreachable, or past MAX_QUEUED while it is
 * slow, are not sent to the other nodes (they are counted in a warning); the store's records stay complete.
 */
import type { FeedBus } from '../feed.js';
import type { Logger } from '../log.js';
import { type ClusterStore, FEED_NOTICE_MAX_BYTES } from '../store/types.js';
import { errorMessage } from '../text-safe.js';

/** How long events gather before they are sent: the delay another node's feed adds, and what batches them. */
export const FEED_FLUSH_MS = 25;
/** Events waiting to be sent at most (a slow or unreachable database must not grow memory). */
const MAX_QUEUED = 4096;
/** The envelope around the events (kind, node id): kept free in every batch. */
const ENVELOPE_BYTES = 300;

export type FeedClusterStore = Pick<ClusterStore, 'shared' | 'publishFeed' | 'subscribe'>;

export function shareFeed(
  bus: FeedBus,
  store: FeedClusterStore,
  node: string,
  logger: Logger,
  opts: { flushMs?: number } = {},
): () => void {
  if (!store.shared) return () => {};
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

  const unsubscribeLocal = bus.subscribe((event, _seq, origin) => {
    if (origin !== null) return; // another node's event: it sent it itself
    if (queue.length >= MAX_QUEUED) return void lost++;
    const json = JSON.stringify(event);
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
    for (const event of notice.events) bus.publish(event, notice.node);
  });
  return () => {
    unsubscribeLocal();
    unsubscribeNotices();
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
}
