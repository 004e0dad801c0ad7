/**
 * The PostgreSQL driver's hot statements, each named: node-postgres prepares a named statement once per pooled
 * connection and afterwards sends only Bind/Execute, so the server parses and plans it once per connection instead
 * of on every call. One home for them: a name maps to exactly one text (a second text under one name would make the
 * server refuse it on a connection that prepared the first). Statements run rarely (pages, migrations, operator
 * commands) stay plain strings where they are.
 *
 * Queue statements and their indexes (postgres-schema.ts; the plans: docs/scale-out.md):
 * - runs are claimed by walking `runs_queued` in seq order, one entry at a time and a bounded number of entries a claim,
 *   each claimed if it is its session's oldest open run (`runs_open_by_session`); runs whose lease expired are looked
 *   for through `runs_running` (lease_until) at most once a sweep period (inside hookgate_claim_runs:
 *   postgres-claim-function.ts);
 * - deliveries are claimed by route: the heads (first pending delivery of each channel and recipient) are walked
 *   route by route through `deliveries_pending_by_route` (one index seek per route, whatever the backlog), then each
 *   head's followers on its route, in seq order, as long as each is due and free.
 */
import { INSERT_DELIVERIES, INSERT_EVENTS, INSERT_MESSAGES } from './postgres-rows.js';

export interface PgStatement {
  readonly name: string;
  readonly text: string;
}

const named = (name: string, text: string): PgStatement => ({ name: `hg_${name}`, text });

/**
 * $1 now, $2 owner, $3 lease until, $4 heads, $5 followers per head. `routes` is a loose index scan: from one route's
 * head to the next route's by a row-value seek on (channel, recipient), one seek per route. One claim at a time per
 * route: a route another claim is taking (its transaction-scoped advisory lock) is skipped, never waited for, so no
 * other claim can hold one of its followers locked and make this one skip it and send the next one first. The
 * followers are locked (SKIP LOCKED) and kept up to the first that is not due or not free, so a route's order holds;
 * a head held locked by another write is not ours (`got_head`). `seq + 0`: a bound on seq alone
 * made the planner walk the primary key from the head on, through every later delivery of every route.
 */
const CLAIM_DELIVERIES = `
  WITH RECURSIVE routes AS (
    (SELECT channel, recipient, seq, next_attempt_at, lease_until FROM deliveries
     WHERE state = 'pending' ORDER BY channel, recipient, seq LIMIT 1)
    UNION ALL
    SELECT n.* FROM routes r, LATERAL (
      SELECT channel, recipient, seq, next_attempt_at, lease_until FROM deliveries
      WHERE state = 'pending' AND (channel, recipient) > (r.channel, r.recipient)
      ORDER BY channel, recipient, seq LIMIT 1) n),
  due AS (
    SELECT channel, recipient, seq, next_attempt_at FROM routes
    WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
    ORDER BY next_attempt_at, seq LIMIT $4),
  heads AS (
    SELECT * FROM due WHERE pg_try_advisory_xact_lock(hashtextextended(recipient, hashtextextended(channel, hashtextextended(current_schema(), 0))))),
  rows AS (
    SELECT f.id, f.tid, f.seq, f.free, h.seq AS head_seq, h.next_attempt_at AS head_due FROM heads h, LATERAL (
      SELECT d.id, d.ctid AS tid, d.seq, d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until < $1) AS free FROM deliveries d
      WHERE d.state = 'pending' AND d.channel = h.channel AND d.recipient = h.recipient AND d.seq + 0 >= h.seq
      ORDER BY d.seq LIMIT $5 + 1
      FOR UPDATE OF d SKIP LOCKED) f),
  cand AS (
    SELECT id, tid, seq, head_seq, head_due, bool_and(free) OVER (PARTITION BY head_seq ORDER BY seq) AS run,
      min(seq) OVER (PARTITION BY head_seq) = head_seq AS got_head
    FROM rows)
  UPDATE deliveries SET lease_owner = $2, lease_until = $3, attempts = attempts + 1, updated_at = $1
  FROM cand WHERE deliveries.ctid = cand.tid AND cand.run AND cand.got_head
  RETURNING deliveries.*, cand.head_seq, cand.head_due`;

/**
 * A batch of run completions in one statement (one transaction, one commit): `$1` a jsonb array of outcomes, each
 * with its events, deliveries and transcript; `$2` the notice channel; `$3` how many deliveries the writing node's
 * outbox takes on itself. Only a completion whose run is still leased to its owner is written, with everything it
 * carries (the fence, as for one run); the rest of it is dropped. One 'runs' notice when a finished run's session
 * has a queued run (runnable now), one 'deliveries' notice when more deliveries were queued than `$3`: per batch, not
 * per run. Answers the indexes (`i`) of the completions written.
 */
const COMPLETE_RUNS = `
  WITH c AS MATERIALIZED (
    SELECT * FROM jsonb_to_recordset($1::jsonb) AS c(i int, run_id text, owner text, state text, finished_at bigint, error text, reply text,
      delivery_status text, events jsonb, deliveries jsonb, messages jsonb)),
  done AS (
    UPDATE runs SET state = c.state, finished_at = c.finished_at, updated_at = c.finished_at, error = c.error, reply = c.reply,
      delivery_status = c.delivery_status, lease_owner = NULL, lease_until = NULL
    FROM c WHERE runs.id = c.run_id AND runs.lease_owner = c.owner AND runs.state = 'running'
    RETURNING c.i, runs.session_key),
  ev AS (
    INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source)
    SELECT e.id, e.session_key, e.agent_id, e.text, e.origin, e.run_id, e.created_at, e.untrusted, e.source
    FROM c JOIN done ON done.i = c.i, jsonb_populate_recordset(NULL::system_events, c.events) WITH ORDINALITY AS e
    ORDER BY c.i, e.ordinality RETURNING 1),
  dl AS (
    INSERT INTO deliveries (id, run_id, heartbeat_id, session_key, agent_id, hook_name, channel, recipient, account_id, text, explicit_route,
      state, next_attempt_at, created_at, updated_at)
    SELECT d.id, d.run_id, d.heartbeat_id, d.session_key, d.agent_id, d.hook_name, d.channel, d.recipient, d.account_id, d.text,
      d.explicit_route, 'pending', d.next_attempt_at, d.created_at, d.created_at
    FROM c JOIN done ON done.i = c.i, jsonb_populate_recordset(NULL::deliveries, c.deliveries) WITH ORDINALITY AS d
    ORDER BY c.i, d.ordinality RETURNING 1),
  msg AS (
    INSERT INTO session_messages (session_key, agent_id, role, content, run_id, created_at)
    SELECT m.session_key, m.agent_id, m.role, m.content, m.run_id, m.created_at
    FROM c JOIN done ON done.i = c.i, jsonb_array_elements(c.messages) WITH ORDINALITY AS e(v, n), jsonb_populate_record(NULL::session_messages, e.v) AS m
    ORDER BY c.i, e.n RETURNING 1)
  SELECT (SELECT coalesce(array_agg(i), '{}') FROM done) AS done,
    (SELECT pg_notify($2, '{"kind":"runs"}') WHERE EXISTS (
      SELECT 1 FROM done JOIN runs n ON n.session_key = done.session_key AND n.state = 'queued')) AS runs_notice,
    (SELECT pg_notify($2, '{"kind":"deliveries"}') WHERE (SELECT count(*) FROM dl) > $3::int) AS deliveries_notice,
    (SELECT count(*) FROM ev) + (SELECT count(*) FROM msg) AS rows`;

/**
 * A batch of delivery outcomes in one statement: `$1` a jsonb array of {id, owner, kind, at, next_attempt_at, error,
 * now}, each fenced by its lease owner as one outcome alone is.
 */
const FINISH_DELIVERIES = `
  UPDATE deliveries d SET
    state = CASE o.kind WHEN 'delivered' THEN 'delivered' WHEN 'dead' THEN 'dead' ELSE d.state END,
    delivered_at = CASE o.kind WHEN 'delivered' THEN o.at ELSE d.delivered_at END,
    next_attempt_at = CASE o.kind WHEN 'retry' THEN o.next_attempt_at ELSE d.next_attempt_at END,
    last_error = CASE o.kind WHEN 'delivered' THEN NULL ELSE o.error END,
    updated_at = o.now, lease_owner = NULL, lease_until = NULL
  FROM jsonb_to_recordset($1::jsonb) AS o(id text, owner text, kind text, at bigint, next_attempt_at bigint, error text, now bigint)
  WHERE d.id = o.id AND d.lease_owner = o.owner`;

export const PG = {
  accept: named('accept_batch', 'SELECT hookgate_accept_batch($1::jsonb, $2::jsonb, $3::jsonb, $4, $5, $6) AS r'),
  // The claim's statements run inside hookgate_claim_runs (postgres-claim-function.ts); `(c.run).*` spreads the run.
  claimRuns: named(
    'claim_runs',
    'SELECT (c.run).*, c.was, c.walked, c.walked_to FROM hookgate_claim_runs($1, $2, $3, $4, $5, $6, $7, $8) c',
  ),
  renewRuns: named(
    'renew_runs',
    `UPDATE runs SET lease_until = $1 WHERE id = ANY($2) AND lease_owner = $3 AND state = 'running'`,
  ),
  completeRuns: named('complete_runs', COMPLETE_RUNS),
  releaseRuns: named(
    'release_runs',
    `WITH r AS (
       UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0), updated_at = $1, error = $2
       WHERE id = ANY($3) AND lease_owner = $4 AND state = 'running' RETURNING 1)
     SELECT pg_notify($5, '{"kind":"runs"}') WHERE EXISTS (SELECT 1 FROM r)`,
  ),
  deferRun: named(
    'defer_run',
    `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0),
       retries = retries + 1, retrying_since = COALESCE(retrying_since, $1), next_attempt_at = $2, error = $3, updated_at = $1
     WHERE id = $4 AND lease_owner = $5 AND state = 'running'`,
  ),
  failRun: named(
    'fail_run',
    `UPDATE runs SET state = 'failed', error = $1, finished_at = $2, updated_at = $2, lease_owner = NULL, lease_until = NULL,
       delivery_status = 'nowhere:failed_before_run' WHERE id = $3`,
  ),
  insertEvents: named('insert_events', INSERT_EVENTS),
  insertDeliveries: named('insert_deliveries', INSERT_DELIVERIES),
  insertMessages: named('insert_messages', INSERT_MESSAGES),
  notify: named('notify', 'SELECT pg_notify($1, $2)'),
  consumeEvents: named(
    'consume_events',
    `UPDATE system_events SET consumed_at = $1, heartbeat_id = $2
     WHERE seq IN (SELECT seq FROM system_events WHERE session_key = $3 AND consumed_at IS NULL ORDER BY seq LIMIT $4)
       AND id = ANY($5)`,
  ),
  claimDeliveries: named('claim_deliveries', CLAIM_DELIVERIES),
  releaseDeliveries: named(
    'release_deliveries',
    `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL, attempts = GREATEST(0, attempts - 1), updated_at = $1
     WHERE id = ANY($2) AND lease_owner = $3 AND state = 'pending'`,
  ),
  deliveryProgress: named(
    'delivery_progress',
    'UPDATE deliveries SET chunks_sent = $1, updated_at = $2 WHERE id = $3 AND lease_owner = $4',
  ),
  finishDeliveries: named('finish_deliveries', FINISH_DELIVERIES),
  getRun: named('get_run', 'SELECT * FROM runs WHERE id = $1'),
  getRoute: named('get_route', 'SELECT last_channel, last_to, last_account_id FROM sessions WHERE key = $1'),
  sessionMessages: named(
    'session_messages',
    'SELECT * FROM (SELECT * FROM session_messages WHERE agent_id = $1 AND session_key = $2 ORDER BY seq DESC LIMIT $3) t ORDER BY seq',
  ),
  pendingEvents: named(
    'pending_events',
    'SELECT * FROM system_events WHERE session_key = $1 AND consumed_at IS NULL ORDER BY seq LIMIT $2',
  ),
  sessionsWithPendingEvents: named(
    'sessions_pending',
    'SELECT DISTINCT session_key FROM system_events WHERE consumed_at IS NULL LIMIT $1',
  ),
  leaseHeartbeat: named(
    'lease_heartbeat',
    `INSERT INTO heartbeat_leases (session_key, owner, until) VALUES ($1, $2, $3)
     ON CONFLICT (session_key) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
     WHERE heartbeat_leases.owner = EXCLUDED.owner OR heartbeat_leases.until <= $4`,
  ),
  releaseHeartbeat: named('release_heartbeat', 'DELETE FROM heartbeat_leases WHERE session_key = $1 AND owner = $2'),
  registerNode: named(
    'register_node',
    `INSERT INTO nodes (id, host, pid, version, url, started_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, url = EXCLUDED.url, version = EXCLUDED.version`,
  ),
} as const satisfies Record<string, PgStatement>;
