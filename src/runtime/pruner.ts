import type { Logger } from '../log.js';
import type { AuditStore, MaintenanceStore, RetentionStore } from '../store/types.js';
import { errorMessage } from '../text-safe.js';
import { HISTORY_TURNS as HEARTBEAT_HISTORY } from './heartbeat.js';
import { HISTORY_TURNS as RUN_HISTORY } from './run-worker.js';

/** How often expired idempotency keys and old records are deleted. */
export const PRUNE_EVERY_MS = 10 * 60_000;
const DAY_MS = 86_400_000;
/** The turns of each session kept whatever their age: the most any prompt reads back. */
export const KEEP_SESSION_TURNS = Math.max(RUN_HISTORY, HEARTBEAT_HISTORY);

/** How long records are kept, in days, read at each prune (a reload applies at the next one). */
export interface Retention {
  received(): number;
  audit(): number;
  /** Finished work: runs, their deliveries, consumed events, transcripts (hooks.runRetentionDays). */
  runs(): number;
}

type PrunedStore = MaintenanceStore & Pick<AuditStore, 'pruneAudit'> & RetentionStore;

/**
 * Deletes expired idempotency keys, received records older than `retention.received()` days, audit records older
 * than `retention.audit()` days and finished work older than `retention.runs()` days: now, then every ten minutes.
 * A failed prune is logged and tried again at the next tick. Expired records and finished work are deleted in bounded
 * steps that take long in all on a grown store: a tick that comes while the previous one still deletes starts none
 * of that kind. Returns the function that stops it (a prune under way ends after its current step).
 */
export function startPruner(store: PrunedStore, logger: Logger, retention: Retention): () => void {
  let expiring: Promise<void> | undefined;
  let finishing: Promise<void> | undefined;
  const stopped = new AbortController();
  const prune = () => {
    const now = Date.now();
    expiring ??= store
      .prune(now, now - retention.received() * DAY_MS, stopped.signal)
      .then((n) => (n.idempotency || n.received ? logger.info(n, 'pruned expired records') : undefined))
      .catch((err) => logger.warn({ err: errorMessage(err) }, 'prune failed'))
      .finally(() => (expiring = undefined));
    store
      .pruneAudit(now - retention.audit() * DAY_MS)
      .then((audit) => (audit ? logger.debug({ audit }, 'pruned old audit records') : undefined))
      .catch((err) => logger.warn({ err: errorMessage(err) }, 'prune of audit records failed'));
    if (finishing) return;
    const started = Date.now();
    finishing = store
      .pruneFinished(now - retention.runs() * DAY_MS, { keepMessages: KEEP_SESSION_TURNS, signal: stopped.signal })
      .then((n) =>
        n.runs || n.deliveries || n.events || n.messages
          ? logger.info({ ...n, ms: Date.now() - started }, 'pruned finished work')
          : undefined,
      )
      .catch((err) => logger.warn({ err: errorMessage(err) }, 'prune of finished work failed'))
      .finally(() => (finishing = undefined));
  };
  prune();
  const timer = setInterval(prune, PRUNE_EVERY_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    stopped.abort();
  };
}
