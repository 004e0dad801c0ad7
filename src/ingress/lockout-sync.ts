import type { Logger } from 'pino';
import type { ClusterStore } from '../store/types.js';
import type { AuthFailureLimiter } from '../net/limiter.js';
import { RepeatLimitedLog } from '../net/log-repeats.js';

/** How often a node re-reads the running lockouts of the cluster: what catches a lockout whose notice was lost. */
export const LOCKOUT_SYNC_MS = 5_000;

/** The part of the store the ingress needs to share lockouts: narrow on purpose (the ingress never sees the driver). */
export type LockoutStore = Pick<ClusterStore, 'shared' | 'shareLockout' | 'activeLockouts' | 'subscribe'>;

/**
 * Auth-failure lockouts across the nodes of a shared store. Failures stay counted per node in memory (net/limiter.ts);
 * the failure that locks a client is shared once (`shareLockout`: one write per lockout, fire-and-forget), and each
 * node applies the others' lockouts from their `lockout` notices at once, and from `activeLockouts` at start and
 * every `LOCKOUT_SYNC_MS` (a lost notice). So a client locked out on one node is refused with 429 by every node
 * within about a second. On a single-process store (SQLite) this does nothing: the one limiter is the cluster.
 * Returns the function that stops it.
 */
export function shareLockouts(
  limiter: AuthFailureLimiter,
  store: LockoutStore,
  logger: Logger,
  opts: { syncMs?: number } = {},
): () => void {
  if (!store.shared) return () => {};
  const log = new RepeatLimitedLog(logger);
  const failed = (what: string) => (err: unknown) =>
    log.warn(String((err as { code?: unknown } | null)?.code ?? 'store'), { err: (err as Error)?.message }, what);

  const stopListening = limiter.onLocked((bucket, until) => {
    store
      .shareLockout(bucket, until)
      .catch(failed('could not share a lockout with the other nodes; they lock the client out when it fails there'));
  });
  const unsubscribe = store.subscribe((notice) => {
    if (notice.kind === 'lockout') limiter.lock(notice.bucket, notice.until, Date.now());
  });
  let syncing = false;
  const sync = () => {
    if (syncing) return;
    syncing = true;
    const now = Date.now();
    store
      .activeLockouts(now)
      .then((list) => {
        for (const l of list) limiter.lock(l.bucket, l.until, now);
      }, failed("could not read the other nodes' lockouts; retrying"))
      .finally(() => (syncing = false));
  };
  sync();
  const timer = setInterval(sync, opts.syncMs ?? LOCKOUT_SYNC_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    unsubscribe();
    stopListening();
  };
}
