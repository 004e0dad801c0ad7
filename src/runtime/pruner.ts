import type { Logger } from '../log.js';
import type { AuditStore, MaintenanceStore } from '../store/types.js';
import { errorMessage } from '../text-safe.js';

/** How often expired idempotency keys and old received records are deleted. */
const PRUNE_EVERY_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

/** How long records are kept, in days, read at each prune (a reload applies at the next one). */
export interface Retention {
  received(): number;
  audit(): number;
}

/**
 * Deletes expired idempotency keys, received records older than `retention.received()` days and audit records older
 * than `retention.audit()` days: now, then every ten minutes. A failed prune is logged and tried again at the next
 * tick. Returns the function that stops it.
 */
export function startPruner(
  store: MaintenanceStore & Pick<AuditStore, 'pruneAudit'>,
  logger: Logger,
  retention: Retention,
): () => void {
  const prune = () => {
    const now = Date.now();
    store
      .prune(now, now - retention.received() * DAY_MS)
      .then((n) => (n.idempotency || n.received ? logger.debug(n, 'pruned expired records') : undefined))
      .catch((err) => logger.warn({ err: errorMessage(err) }, 'prune failed'));
    store
      .pruneAudit(now - retention.audit() * DAY_MS)
      .then((audit) => (audit ? logger.debug({ audit }, 'pruned old audit records') : undefined))
      .catch((err) => logger.warn({ err: errorMessage(err) }, 'prune of audit records failed'));
  };
  prune();
  const timer = setInterval(prune, PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
