import type Database from 'better-sqlite3';
import { FRESH_RUN, INDEXED_RUN } from './fresh-runs.js';
import { indexedRunsOf, ownRunOf } from './own-session.js';
import { rowBySeqReader } from './sqlite-prepared.js';

/** SQL: no run of `r`'s session key is older and still open (claimable* below). */
const NO_OLDER_OPEN_RUN = `NOT EXISTS (SELECT 1 FROM runs p WHERE ${indexedRunsOf('p', 'r.session_key')} AND p.seq < r.seq
                         AND p.state IN ('queued', 'running'))
         AND (r.session_key = 'hook:' || r.id OR NOT EXISTS (SELECT 1 FROM runs o WHERE ${ownRunOf('o', 'r.session_key')}
                         AND o.seq < r.seq AND o.state IN ('queued', 'running')))`;

/**
 * Every statement of the SQLite writer, prepared once per writing connection (the writer thread's, or the store's
 * own with the inline writer). A write op adds its SQL here and uses it through `WriteStatements`.
 */
export function prepareWriteStatements(db: Database.Database) {
  return {
    lastPending: db.prepare(
      'SELECT id, text, untrusted, source FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq DESC LIMIT 1',
    ),
    insertEvent: db.prepare(
      'INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    insertRun: db.prepare(
      `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel,
         recipient, account_id, model, thinking, timeout_seconds, allow_unsafe, content_source, hook_path, mapping_id, created_at, updated_at,
         fresh)
       VALUES (?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
    ),
    getIdem: db.prepare(
      'SELECT fingerprint, status, body, expires_at, sender FROM idempotency WHERE scope = ? AND key_hash = ?',
    ),
    deleteIdem: db.prepare('DELETE FROM idempotency WHERE scope = ? AND key_hash = ?'),
    insertIdem: db.prepare(
      'INSERT INTO idempotency (scope, key_hash, fingerprint, status, body, created_at, expires_at, sender) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    countIdemOf: db.prepare('SELECT COUNT(*) AS n FROM idempotency WHERE sender = ?'),
    dropOldestIdemOf: db.prepare(
      'DELETE FROM idempotency WHERE (scope, key_hash) IN (SELECT scope, key_hash FROM idempotency WHERE sender = ? ORDER BY created_at LIMIT ?)',
    ),
    insertRefusals: db.prepare('INSERT INTO refusal_log (at, window_ms, counts) VALUES (?, ?, ?) RETURNING seq'),
    // Rows are appended in time order: the oldest are the lowest seqs.
    capRefusals: db.prepare('DELETE FROM refusal_log WHERE seq <= ?'),
    insertReceivedBlock: db.prepare('INSERT INTO received_log (at, records) VALUES (?, ?)'),
    requeue: db.prepare(
      `UPDATE runs SET state = 'queued', updated_at = ?, finished_at = NULL, lease_owner = NULL, lease_until = NULL,
         next_attempt_at = NULL, retries = 0, retrying_since = NULL
       WHERE id = ? AND state IN ('failed', 'timed_out', 'succeeded') RETURNING *`,
    ),
    // `runs retry --failed`: every failed run finished since a time, queued again with a fresh retry window. Found
    // by runs_failed_at (its `WHERE` repeated so the planner takes it), which holds fresh runs failed by id as well.
    requeueFailed: db.prepare(
      `UPDATE runs SET state = 'queued', updated_at = @now, finished_at = NULL, lease_owner = NULL, lease_until = NULL,
         next_attempt_at = NULL, retries = 0, retrying_since = NULL
       WHERE state IN ('failed', 'timed_out') AND state = 'failed' AND finished_at >= @since RETURNING id`,
    ),
    // A transient model failure: queued again for later, not counted as an interrupted start (see releaseRun).
    deferRun: db.prepare(
      `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = MAX(attempts - 1, 0),
         retries = retries + 1, retrying_since = COALESCE(retrying_since, @now), next_attempt_at = @until,
         error = @error, updated_at = @now
       WHERE id = @runId AND lease_owner = @owner AND state = 'running'`,
    ),
    // Runnable: queued (and due), or running with an expired lease (its worker died); and in both cases the oldest
    // unfinished run of its session key. Two queries, each walking one state's range of runs_by_state in seq order;
    // then the fresh runs (fresh-runs.ts), which are newer than any indexed one.
    // An older open run of the key is looked for in runs_open_by_session and, unless the run is in its own session
    // (where nothing is older), as the run whose own session the key is (own-session.ts).
    // `LIMIT @limit + 0`, not `LIMIT @limit`: SQLite reads a bare parameter's value when it plans the statement, so
    // every new binding of it threw the plan away and prepared the statement again (about as much work as the
    // claim itself, on every claim); an expression is read only when the statement runs. The same below.
    claimableQueued: db.prepare(
      `SELECT r.seq FROM runs r INDEXED BY runs_by_state
       WHERE r.state = 'queued' AND ${INDEXED_RUN('r')} AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= @now)
         AND ${NO_OLDER_OPEN_RUN}
       ORDER BY r.seq LIMIT @limit + 0`,
    ),
    claimableExpired: db.prepare(
      `SELECT r.seq FROM runs r INDEXED BY runs_by_state WHERE r.state = 'running' AND ${INDEXED_RUN('r')} AND r.lease_until < @now
         AND ${NO_OLDER_OPEN_RUN}
       ORDER BY r.seq LIMIT @limit + 0`,
    ),
    // The oldest fresh runs, each with whether it can run now: queued (a run failed by id before any claim reached it
    // is fresh too), and no older run of its session open.
    freshRuns: db.prepare(
      `SELECT r.seq, r.state = 'queued' AND ${NO_OLDER_OPEN_RUN} AS claimable FROM runs r WHERE ${FRESH_RUN('r')}
       ORDER BY r.seq LIMIT @limit + 0`,
    ),
    // A fresh run that has to wait, or is not queued: into runs_by_state, under its state.
    takeInRun: db.prepare('UPDATE runs SET fresh = NULL WHERE seq = ?'),
    // By rowid, then read back with runBySeq: `RETURNING *` and its row object cost ~4 µs more per lease.
    leaseRun: db.prepare(
      `UPDATE runs SET state = 'running', lease_owner = @owner, lease_until = @until, attempts = attempts + 1,
         started_at = @now, updated_at = @now, node = @owner, fresh = NULL WHERE seq = @seq`,
    ),
    runBySeq: rowBySeqReader(db, 'runs'),
    renewRun: db.prepare(`UPDATE runs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND state = 'running'`),
    finishRun: db.prepare(
      `UPDATE runs SET state = @state, finished_at = @finishedAt, updated_at = @finishedAt, error = @error, reply = @reply,
         delivery_status = @deliveryStatus, lease_owner = NULL, lease_until = NULL
       WHERE id = @runId AND lease_owner = @owner AND state = 'running'`,
    ),
    releaseRun: db.prepare(
      `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = MAX(attempts - 1, 0), updated_at = ?,
         error = ? WHERE id = ? AND lease_owner = ? AND state = 'running'`,
    ),
    upsertNode: db.prepare(
      `INSERT INTO nodes (id, host, pid, version, url, started_at, last_seen_at) VALUES (@id, @host, @pid, @version, @url, @startedAt, @lastSeenAt)
       ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at, url = excluded.url, version = excluded.version`,
    ),
    deleteNode: db.prepare(`DELETE FROM nodes WHERE id = ?`),
    recoverLeases: db.prepare(
      `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, updated_at = ?
       WHERE state = 'running' AND ${INDEXED_RUN('runs')}`,
    ),
    recoverDeliveries: db.prepare(
      `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE state = 'pending' AND lease_owner IS NOT NULL`,
    ),
    failRun: db.prepare(
      `UPDATE runs SET state = 'failed', error = ?, finished_at = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL,
         delivery_status = 'nowhere:failed_before_run' WHERE id = ?`,
    ),
    // Ids have no index of their own. A heartbeat takes the oldest pending events of its session, and only the
    // heartbeat consumes them, so they are still the first ones pending: walk that many in the pending index (not
    // the whole backlog) and consume those listed. Anything not found there stays pending: replayed, never lost.
    consumeEvents: db.prepare(
      `UPDATE system_events SET consumed_at = @consumedAt, heartbeat_id = @heartbeatId
       WHERE seq IN (SELECT seq FROM system_events WHERE session_key = @sessionKey AND consumed_at IS NULL ORDER BY seq LIMIT @n + 0)
         AND id IN (SELECT value FROM json_each(@ids))`,
    ),
    insertMessage: db.prepare(
      'INSERT INTO session_messages (session_key, agent_id, role, content, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    insertDelivery: db.prepare(
      `INSERT INTO deliveries (id, run_id, heartbeat_id, session_key, agent_id, hook_name, channel, recipient, account_id, text,
         explicit_route, state, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
    ),
    upsertRoute: db.prepare(
      `INSERT INTO sessions (key, agent_id, last_channel, last_to, last_account_id, created_at, updated_at)
       VALUES (@key, @agentId, @channel, @to, @accountId, @now, @now)
       ON CONFLICT (key) DO UPDATE SET last_channel = @channel, last_to = @to, last_account_id = @accountId, updated_at = @now`,
    ),
    // Route heads (the first pending delivery of each channel and recipient), one index seek per route: claimDeliveries
    // walks them instead of scanning every pending row for one without an earlier pending row on its route (which cost
    // O(pending) per claim, and a claim follows every completed run).
    firstRouteHead: db.prepare(
      `SELECT id, channel, recipient, seq, next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_pending_by_route
       WHERE state = 'pending' ORDER BY channel, recipient, seq LIMIT 1`,
    ),
    // The next route's head, in two seeks: the next recipient on the same channel, else the first route of a later
    // channel. One row-value seek, `(channel, recipient) > (@channel, @recipient)`, would step over every pending
    // delivery of the current route instead.
    nextRouteHeadSameChannel: db.prepare(
      `SELECT id, channel, recipient, seq, next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_pending_by_route
       WHERE state = 'pending' AND channel = @channel AND recipient > @recipient ORDER BY channel, recipient, seq LIMIT 1`,
    ),
    nextRouteHeadLaterChannel: db.prepare(
      `SELECT id, channel, recipient, seq, next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_pending_by_route
       WHERE state = 'pending' AND channel > @channel ORDER BY channel, recipient, seq LIMIT 1`,
    ),
    /** The pending deliveries after `seq` on one route, in order (claimDeliveries' followers). */
    routeFollowers: db.prepare(
      `SELECT seq, next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_pending_by_route
       WHERE state = 'pending' AND channel = @channel AND recipient = @recipient AND seq > @seq ORDER BY seq LIMIT @limit + 0`,
    ),
    releaseDelivery: db.prepare(
      `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL, attempts = MAX(0, attempts - 1), updated_at = ?
       WHERE id = ? AND lease_owner = ? AND state = 'pending'`,
    ),
    // By rowid, read back with deliveryBySeq (as leaseRun).
    leaseDelivery: db.prepare(
      `UPDATE deliveries SET lease_owner = @owner, lease_until = @until, attempts = attempts + 1, updated_at = @now
       WHERE seq = @seq`,
    ),
    deliveryBySeq: rowBySeqReader(db, 'deliveries'),
    progress: db.prepare('UPDATE deliveries SET chunks_sent = ?, updated_at = ? WHERE id = ? AND lease_owner = ?'),
    delivered: db.prepare(
      `UPDATE deliveries SET state = 'delivered', delivered_at = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL, last_error = NULL
       WHERE id = ? AND lease_owner = ?`,
    ),
    retryLater: db.prepare(
      `UPDATE deliveries SET next_attempt_at = ?, last_error = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL
       WHERE id = ? AND lease_owner = ?`,
    ),
    dead: db.prepare(
      `UPDATE deliveries SET state = 'dead', last_error = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL
       WHERE id = ? AND lease_owner = ?`,
    ),
    retryDelivery: db.prepare(
      `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL
       WHERE id = ? AND state IN ('dead', 'pending') RETURNING *`,
    ),
  };
}

export type WriteStatements = ReturnType<typeof prepareWriteStatements>;
