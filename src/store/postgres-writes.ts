/**
 * The writes of the PostgreSQL driver other than the accept path (postgres-accept.ts): ordinary statements and
 * transactions, safe with many nodes on one database. Claims take rows with `FOR UPDATE SKIP LOCKED` (two nodes never
 * get the same row; neither waits for the other); completions and renewals are fenced by `lease_owner`. A write that
 * makes runs or deliveries claimable now sends its notice in the same transaction (delivered at commit).
 */
import type { PgDb, Query } from './postgres-db.js';
import { deliveryRow, eventRow, INSERT_DELIVERIES, INSERT_EVENTS, INSERT_MESSAGES, messageRow } from './postgres-rows.js';
import { refusalsToJson, rowToDelivery, rowToRun, type Row } from './record-encoding.js';
import type { Delivery, DeliveryOutcome, HeartbeatCompletion, NewSystemEvent, RefusalWindow, Run, RunOutcome } from './types.js';

const RUNS = '{"kind":"runs"}';
const DELIVERIES = '{"kind":"deliveries"}';

/**
 * Runnable: running with an expired lease (its node died), or queued and due; in both cases the oldest unfinished run
 * of its session. Two index-ordered scans (runs_running, runs_queued), each stopping at the limit: one scan ordered by
 * "expired first, then seq" had to sort every queued run on each claim, a cost that grows with the backlog.
 */
const OLDEST_OF_SESSION = `NOT EXISTS (SELECT 1 FROM runs p WHERE p.session_key = r.session_key AND p.seq < r.seq AND p.state IN ('queued', 'running'))`;
const CLAIM_RUNS = `
  WITH expired AS (
    SELECT r.id, r.state AS was, 0 AS pass, r.seq FROM runs r
    WHERE r.state = 'running' AND r.lease_until < $1 AND ${OLDEST_OF_SESSION}
    ORDER BY r.seq LIMIT $4
    FOR UPDATE OF r SKIP LOCKED),
  due AS (
    SELECT r.id, r.state AS was, 1 AS pass, r.seq FROM runs r
    WHERE r.state = 'queued' AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= $1) AND ${OLDEST_OF_SESSION}
    ORDER BY r.seq LIMIT $4
    FOR UPDATE OF r SKIP LOCKED),
  cand AS (SELECT id, was FROM (SELECT * FROM expired UNION ALL SELECT * FROM due) c ORDER BY pass, seq LIMIT $4)
  UPDATE runs SET state = 'running', lease_owner = $2, lease_until = $3, attempts = attempts + 1, started_at = $1, updated_at = $1,
    node = $2
  FROM cand WHERE runs.id = cand.id RETURNING runs.*, cand.was`;

const CLAIM_DELIVERIES = `
  WITH cand AS (
    SELECT d.id FROM deliveries d
    WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until < $1)
      AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.channel = d.channel AND p.recipient = d.recipient AND p.seq < d.seq AND p.state = 'pending')
    ORDER BY d.next_attempt_at, d.seq LIMIT $4
    FOR UPDATE OF d SKIP LOCKED)
  UPDATE deliveries SET lease_owner = $2, lease_until = $3, attempts = attempts + 1, updated_at = $1
  FROM cand WHERE deliveries.id = cand.id RETURNING deliveries.*`;

const UPSERT_ROUTE = `INSERT INTO sessions (key, agent_id, last_channel, last_to, last_account_id, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $6)
  ON CONFLICT (key) DO UPDATE SET last_channel = $3, last_to = $4, last_account_id = $5, updated_at = $6`;

const REQUEUE_SET = `state = 'queued', updated_at = $1, finished_at = NULL, lease_owner = NULL, lease_until = NULL,
  next_attempt_at = NULL, retries = 0, retrying_since = NULL`;

export class PgWrites {
  constructor(
    private readonly db: PgDb,
    private readonly channel: string,
  ) {}

  private notify(q: Query, payload: string): Promise<unknown> {
    return q('SELECT pg_notify($1, $2)', [this.channel, payload]);
  }

  async claimRuns(owner: string, now: number, leaseMs: number, limit: number): Promise<Run[]> {
    if (limit <= 0) return [];
    const { rows } = await this.db.query(CLAIM_RUNS, [now, owner, now + leaseMs, limit]);
    // Expired leases first (as SQLite hands them out), then the queue, each oldest first.
    const key = (r: Row) => (r.was === 'running' ? 0 : 1);
    return rows.sort((a, b) => key(a) - key(b) || (a.seq as number) - (b.seq as number)).map(rowToRun);
  }

  async renewRunLeases(owner: string, ids: string[], until: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(`UPDATE runs SET lease_until = $1 WHERE id = ANY($2) AND lease_owner = $3 AND state = 'running'`, [until, ids, owner]);
  }

  completeRun(c: RunOutcome): Promise<boolean> {
    return this.db.tx(async (q) => {
      // The session's next run (if one is queued) becomes runnable now: a 'runs' notice, in the same statement.
      const { rowCount } = await q(
        `WITH done AS (
           UPDATE runs SET state = $1, finished_at = $2, updated_at = $2, error = $3, reply = $4, delivery_status = $5,
             lease_owner = NULL, lease_until = NULL
           WHERE id = $6 AND lease_owner = $7 AND state = 'running' RETURNING session_key)
         SELECT (SELECT pg_notify($8, '${RUNS}') FROM runs n WHERE n.session_key = done.session_key AND n.state = 'queued' LIMIT 1) FROM done`,
        [c.state, c.finishedAt, c.error, c.reply, c.deliveryStatus, c.runId, c.owner, this.channel],
      );
      if (!rowCount) return false; // the lease was lost (expired and taken over): the other worker's result counts
      await this.insertRest(q, c.events, c.deliveries.map(deliveryRow), c.messages.map(messageRow));
      return true;
    });
  }

  /** Events, outbox rows and transcript of a completion; a 'deliveries' notice when there are deliveries. */
  private async insertRest(q: Query, events: NewSystemEvent[], deliveries: unknown[], messages: unknown[]): Promise<void> {
    if (events.length) await q(INSERT_EVENTS, [JSON.stringify(events.map(eventRow))]);
    if (deliveries.length) {
      await q(INSERT_DELIVERIES, [JSON.stringify(deliveries)]);
      await this.notify(q, DELIVERIES);
    }
    if (messages.length) await q(INSERT_MESSAGES, [JSON.stringify(messages)]);
  }

  async releaseRuns(owner: string, ids: string[], now: number, note: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.tx(async (q) => {
      const { rowCount } = await q(
        `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0), updated_at = $1,
           error = $2 WHERE id = ANY($3) AND lease_owner = $4 AND state = 'running'`,
        [now, note, ids, owner],
      );
      if (rowCount) await this.notify(q, RUNS);
    });
  }

  async deferRun(d: { runId: string; owner: string; until: number; error: string; now: number }): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = GREATEST(attempts - 1, 0),
         retries = retries + 1, retrying_since = COALESCE(retrying_since, $1), next_attempt_at = $2, error = $3, updated_at = $1
       WHERE id = $4 AND lease_owner = $5 AND state = 'running'`,
      [d.now, d.until, d.error, d.runId, d.owner],
    );
    return (rowCount ?? 0) > 0;
  }

  async failRun(id: string, error: string, now: number): Promise<void> {
    await this.db.query(
      `UPDATE runs SET state = 'failed', error = $1, finished_at = $2, updated_at = $2, lease_owner = NULL, lease_until = NULL,
         delivery_status = 'nowhere:failed_before_run' WHERE id = $3`,
      [error, now, id],
    );
  }

  async addEvents(events: NewSystemEvent[]): Promise<void> {
    if (events.length) await this.db.query(INSERT_EVENTS, [JSON.stringify(events.map(eventRow))]);
  }

  /** See the SQLite statement `consumeEvents`: only the oldest pending events of the session, those named. */
  completeHeartbeat(c: HeartbeatCompletion): Promise<void> {
    return this.db.tx(async (q) => {
      if (c.eventIds.length) {
        await q(
          `UPDATE system_events SET consumed_at = $1, heartbeat_id = $2
           WHERE seq IN (SELECT seq FROM system_events WHERE session_key = $3 AND consumed_at IS NULL ORDER BY seq LIMIT $4)
             AND id = ANY($5)`,
          [c.consumedAt, c.heartbeatId, c.sessionKey, c.eventIds.length, c.eventIds],
        );
      }
      await this.insertRest(q, [], c.deliveries.map(deliveryRow), c.messages.map(messageRow));
    });
  }

  async setRoute(sessionKey: string, agentId: string, channel: string, to: string, now: number, accountId: string | null = null): Promise<void> {
    await this.db.query(UPSERT_ROUTE, [sessionKey, agentId, channel, to, accountId, now]);
  }

  async claimDeliveries(owner: string, now: number, leaseMs: number, limit: number): Promise<Delivery[]> {
    if (limit <= 0) return [];
    const { rows } = await this.db.query(CLAIM_DELIVERIES, [now, owner, now + leaseMs, limit]);
    return rows
      .sort((a, b) => (a.next_attempt_at as number) - (b.next_attempt_at as number) || (a.seq as number) - (b.seq as number))
      .map(rowToDelivery);
  }

  async releaseDeliveries(owner: string, ids: string[], now: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL, attempts = GREATEST(0, attempts - 1), updated_at = $1
       WHERE id = ANY($2) AND lease_owner = $3 AND state = 'pending'`,
      [now, ids, owner],
    );
  }

  async deliveryProgress(id: string, owner: string, chunksSent: number, now: number): Promise<void> {
    await this.db.query('UPDATE deliveries SET chunks_sent = $1, updated_at = $2 WHERE id = $3 AND lease_owner = $4', [chunksSent, now, id, owner]);
  }

  async finishDelivery(id: string, owner: string, o: DeliveryOutcome, now: number): Promise<void> {
    if (o.kind === 'retry') {
      await this.db.query(
        `UPDATE deliveries SET next_attempt_at = $1, last_error = $2, updated_at = $3, lease_owner = NULL, lease_until = NULL
         WHERE id = $4 AND lease_owner = $5`,
        [o.nextAttemptAt, o.error, now, id, owner],
      );
    } else if (o.kind === 'dead') {
      await this.db.query(
        `UPDATE deliveries SET state = 'dead', last_error = $1, updated_at = $2, lease_owner = NULL, lease_until = NULL WHERE id = $3 AND lease_owner = $4`,
        [o.error, now, id, owner],
      );
    } else {
      await this.db.query(
        `UPDATE deliveries SET state = 'delivered', delivered_at = $1, updated_at = $2, lease_owner = NULL, lease_until = NULL, last_error = NULL
         WHERE id = $3 AND lease_owner = $4`,
        [o.at, now, id, owner],
      );
    }
  }

  async retryDelivery(id: string, now: number): Promise<Delivery | undefined> {
    return this.db.tx(async (q) => {
      const { rows } = await q(
        `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = $1, updated_at = $1, lease_owner = NULL, lease_until = NULL
         WHERE id = $2 AND state IN ('dead', 'pending') RETURNING *`,
        [now, id],
      );
      if (rows[0]) await this.notify(q, DELIVERIES);
      return rows[0] && rowToDelivery(rows[0]);
    });
  }

  requeueRun(id: string, now: number): Promise<Run | undefined> {
    return this.db.tx(async (q) => {
      const { rows } = await q(`UPDATE runs SET ${REQUEUE_SET} WHERE id = $2 AND state IN ('failed', 'timed_out', 'succeeded') RETURNING *`, [now, id]);
      if (rows[0]) await this.notify(q, RUNS);
      return rows[0] && rowToRun(rows[0]);
    });
  }

  requeueFailedRuns(since: number, now: number): Promise<string[]> {
    return this.db.tx(async (q) => {
      const { rows } = await q<{ id: string; seq: number }>(
        `UPDATE runs SET ${REQUEUE_SET} WHERE state = 'failed' AND finished_at >= $2 RETURNING id, seq`,
        [now, since],
      );
      if (rows.length) await this.notify(q, RUNS);
      return rows.sort((a, b) => a.seq - b.seq).map((r) => r.id);
    });
  }

  /** One window as one row; then only the newest `keepWindows` rows are kept (seq order is insertion order). */
  recordRefusals(window: RefusalWindow, keepWindows: number): Promise<void> {
    return this.db.tx(async (q) => {
      await q('INSERT INTO refusal_log (at, window_ms, counts) VALUES ($1, $2, $3)', [window.at, window.windowMs, refusalsToJson(window)]);
      await q('DELETE FROM refusal_log WHERE seq <= (SELECT seq FROM refusal_log ORDER BY seq DESC OFFSET $1 LIMIT 1)', [keepWindows]);
    });
  }

  /** Received blocks go whole, when their newest record (`at`) is older than the cut-off; counted by records. */
  prune(now: number, receivedBefore: number): Promise<{ idempotency: number; received: number }> {
    return this.db.tx(async (q) => {
      const idem = await q('DELETE FROM idempotency WHERE expires_at <= $1', [now]);
      const rec = await q<{ n: number }>(
        `WITH d AS (DELETE FROM received_log WHERE at < $1 RETURNING records)
         SELECT COALESCE(SUM(json_array_length(records::json)), 0)::bigint AS n FROM d`,
        [receivedBefore],
      );
      const ref = await q('DELETE FROM refusal_log WHERE at + window_ms <= $1', [receivedBefore]);
      await q('DELETE FROM gmail_pushes WHERE fetched_at IS NOT NULL AND received_at < $1', [receivedBefore]);
      return { idempotency: idem.rowCount ?? 0, received: (rec.rows[0]?.n ?? 0) + (ref.rowCount ?? 0) };
    });
  }
}
