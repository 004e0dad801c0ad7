import type { Logger } from '../log.js';
import type { MaintenanceStore } from '../store/types.js';
import { errorMessage } from '../text-safe.js';

/** How often expired idempotency keys and old received records are deleted. */
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Deletes expired idempotency keys and received records older than `receivedRetentionDays()` days: now, then every
 * ten minutes. A failed prune is logged and tried again at the next tick. Returns the function that stops it.
 */
export function startPruner(store: MaintenanceStore, logger: Logger, receivedRetentionDays: () => number): () => void {
  const prune = () => {
    const now = Date.now();
    store
      .prune(now, now - receivedRetentionDays() * 86_400_000)
      .then((n) => (n.idempotency || n.received ? logger.debug(n, 'pruned expired records') : undefined))
      .catch((err) => logger.warn({ err: errorMessage(err) }, 'prune failed'));
  };
  prune();
  const timer = setInterval(prune, PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
