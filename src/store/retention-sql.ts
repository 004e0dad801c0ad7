/**
 * The statements of a retention step (retention.ts), the same for both drivers but for their placeholders: `p` gives
 * the driver's spelling of `before` (the cut-off), `after` and `last` (the window's seq range, `after` exclusive),
 * `keep` (transcript turns kept per session) and `limit` (the window's size). Every statement is bounded by the
 * window's seq range, read on the primary key; the per-row checks are index lookups (deliveries_by_run,
 * session_messages_by_key, the runs' unique id): test/store/sqlite-retention.test.ts checks the plans.
 */
import { FINISHED_RUN_STATES } from '../enums.js';
import { RETENTION_KINDS, type RetentionKind } from './retention.js';

export type Param = 'before' | 'after' | 'last' | 'keep' | 'limit';

const TABLES: Readonly<Record<RetentionKind, string>> = {
  messages: 'session_messages',
  runs: 'runs',
  events: 'system_events',
  deliveries: 'deliveries',
};
const FINAL_RUN = `(${FINISHED_RUN_STATES.map((s) => `'${s}'`).join(', ')})`;

/**
 * The window: how many rows, the last seq and the oldest creation time among the `limit` rows after `after`. Every
 * step starts here, so this is where a kind that is not one (its table name is written into the SQL) is refused.
 */
export function windowSql(kind: RetentionKind, p: (name: Param) => string): string {
  if (!RETENTION_KINDS.includes(kind)) throw new Error(`no retention of ${String(kind)}`);
  return `SELECT COUNT(*) AS n, MAX(seq) AS last, MIN(created_at) AS oldest
    FROM (SELECT seq, created_at FROM ${TABLES[kind]} WHERE seq > ${p('after')} ORDER BY seq LIMIT ${p('limit')}) w`;
}

/** The window's runs that may go: finished before the cut-off, no delivery of theirs still pending. */
export function finishedRunsWhere(p: (name: Param) => string): string {
  return `r.seq > ${p('after')} AND r.seq <= ${p('last')} AND r.state IN ${FINAL_RUN} AND r.finished_at < ${p('before')}
    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.run_id = r.id AND d.state = 'pending')`;
}

/** Deleting the window's consumed events, heartbeat deliveries, or transcript turns (runs: see finishedRunsWhere). */
export function deleteSql(kind: Exclude<RetentionKind, 'runs'>, p: (name: Param) => string): string {
  const range = `seq > ${p('after')} AND seq <= ${p('last')}`;
  if (kind === 'events')
    return `DELETE FROM system_events WHERE ${range} AND consumed_at IS NOT NULL AND consumed_at < ${p('before')}`;
  // A run's deliveries go with the run; these are a heartbeat's (run_id NULL), once sent or failed.
  if (kind === 'deliveries')
    return `DELETE FROM deliveries WHERE ${range} AND run_id IS NULL AND state IN ('delivered', 'dead')
      AND updated_at < ${p('before')}`;
  // A turn older than the cut-off goes when no prompt can read it again: its session holds `keep` newer turns (a
  // prompt reads at most that many), or it is an isolated run's turn and its session is idle past the cut-off (an
  // isolated run never reads history). The newest turns of persistent and main sessions stay, however old.
  const same = 'n.agent_id = m.agent_id AND n.session_key = m.session_key';
  return `DELETE FROM session_messages WHERE seq IN (
    SELECT m.seq FROM session_messages m WHERE m.seq > ${p('after')} AND m.seq <= ${p('last')} AND m.created_at < ${p('before')}
      AND ((SELECT COUNT(*) FROM (SELECT 1 FROM session_messages n WHERE ${same} AND n.seq > m.seq LIMIT ${p('keep')}) k) >= ${p('keep')}
        OR (EXISTS (SELECT 1 FROM runs r WHERE r.id = m.run_id AND r.session_mode = 'isolated')
          AND (SELECT n.created_at FROM session_messages n WHERE ${same} ORDER BY n.seq DESC LIMIT 1) < ${p('before')})))`;
}
