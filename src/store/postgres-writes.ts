/**
 * The writes of the PostgreSQL driver other than the accept path (postgres-accept.ts): ordinary statements and
 * transactions, safe with many nodes on one database. Claims take rows with `FOR UPDATE SKIP LOCKED` (two nodes never
 * get the same row; neither waits for the other); completions and renewals are fenced by `lease_owner`. A write that
 * makes runs or deliveries claimable now sends its notice in the same transaction (delivered at commit).
 */
import type { PgDb, Query } from './postgres-db.js';
import { PgCompletions } from './postgres-completions.js';
import { deliveryRow, eventRow, messageRow } from './postgres-rows.js';
import { PG } from './postgres-statements.js';
import { refusalsToJson, rowToDelivery, rowToRun, type Row } from './record-encoding.js';
import type {
  Delivery,
  DeliveryOutcome,
  HeartbeatCompletion,
  NewSystemEvent,
  RefusalWindow,
  Run,
  RunOutcome,
} from './types.js';

const RUNS = '{"kind":"runs"}';
const DELIVERIES = '{"kind":"deliveries"}';

/**
 * How often a claim also looks for runs whose lease expired (a dead node's), by the claim's own clock: the claim
 * loops poll at this period anyway, so a dead node's runs wait no longer than a lost notice does, and the claims in
 * between (one per finished run under load) walk the queue only.
 */
export const EXPIRED_SWEEP_MS = 1000;

/**
 * How many queue entries one run claim walks at most (at least twice its limit): the first half from the queue's head
 * (its oldest runs, in order), the rest from where an earlier walk stopped. Runs behind more than that many
 * unclaimable ones (a session's queued runs behind its running one) are reached a half-walk further each claim.
 */
export const RUN_CLAIM_WALK = 256;

/** With its `route` notice in the same transaction: every node forgets the route it kept (postgres-route-cache.ts). */
const UPSERT_ROUTE = `WITH up AS (
    INSERT INTO sessions (key, agent_id, last_channel, last_to, last_account_id, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $6)
    ON CONFLICT (key) DO UPDATE SET last_channel = $3, last_to = $4, last_account_id = $5, updated_at = $6
    RETURNING key)
  SELECT pg_notify($7, json_build_object('kind', 'route', 'key', key)::text) FROM up`;

const REQUEUE_SET = `state = 'queued', updated_at = $1, finished_at = NULL, lease_owner = NULL, lease_until = NULL,
  next_attempt_at = NULL, retries = 0, retrying_since = NULL`;

export class PgWrites {
  /**
   * When a claim next looks for expired leases (by the claims' own clock): a sweep period after the last look, or
   * once the earliest lease this store handed out since may have run out, if that is sooner (tests, whose clocks jump).
   * A clock that went back looks at once.
   */
  private sweepAt = Number.NEGATIVE_INFINITY;
  private leaseEnds = Number.POSITIVE_INFINITY;
  /** Where the next claim's walk goes on after the queue's head (a seq; 0: no further than the head's walk). */
  private walkFrom = 0;
  private readonly completions: PgCompletions;

  constructor(
    private readonly db: PgDb,
    private readonly channel: string,
  ) {
    this.completions = new PgCompletions(db, channel);
  }

  /** See ClusterStore.outboxSpare. */
  outboxSpare(spare: () => number): void {
    this.completions.outboxSpare = spare;
  }

  /** Wait for the runtime's batches in flight (completions, delivery outcomes), then refuse new ones. */
  close(): Promise<void> {
    return this.completions.close();
  }

  private notify(q: Query, payload: string): Promise<unknown> {
    return q(PG.notify, [this.channel, payload]);
  }

  async claimRuns(owner: string, now: number, leaseMs: number, limit: number): Promise<Run[]> {
    if (limit <= 0) return [];
    const sweep = now >= this.sweepAt || now > this.leaseEnds || now < this.sweepAt - EXPIRED_SWEEP_MS;
    if (sweep) {
      this.sweepAt = now + EXPIRED_SWEEP_MS;
      if (now > this.leaseEnds) this.leaseEnds = Number.POSITIVE_INFINITY;
    }
    const walk = Math.max(RUN_CLAIM_WALK, 2 * limit);
    const head = walk / 2;
    const { rows } = await this.db.query(PG.claimRuns, [
      now,
      owner,
      now + leaseMs,
      limit,
      this.walkFrom,
      head,
      walk,
      sweep,
    ]);
    // One row tells how far the walk went; the others (or it too) are the runs leased.
    const walked = (rows[0]?.walked as number | null) ?? 0;
    const runs = rows.filter((r) => r.id !== null);
    const full = runs.length >= limit;
    // Past the head: go on next time from where this walk stopped, unless it found the queue's end (then from the
    // head again). Within the head: the walk came nowhere near the rest of the queue (or found its end there too).
    if (walked > head) this.walkFrom = full || walked >= walk ? (rows[0]?.walked_to as number) : 0;
    else if (!full) this.walkFrom = 0;
    if (runs.length) this.leaseEnds = Math.min(this.leaseEnds, now + leaseMs);
    // Expired leases first (as SQLite hands them out), then the queue, each oldest first.
    const key = (r: Row) => (r.was === 'running' ? 0 : 1);
    return runs.sort((a, b) => key(a) - key(b) || (a.seq as number) - (b.seq as number)).map(rowToRun);
  }

  async renewRunLeases(owner: string, ids: string[], until: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(PG.renewRuns, [until, ids, owner]);
  }

  /** Group-committed with the other completions of the turn (postgres-completions.ts). */
  completeRun(c: RunOutcome): Promise<boolean> {
    return this.completions.completeRun(c);
  }

  /** Events, outbox rows and transcript of a completion; a 'deliveries' notice when there are deliveries. */
  private async insertRest(
    q: Query,
    events: NewSystemEvent[],
    deliveries: unknown[],
    messages: unknown[],
  ): Promise<void> {
    if (events.length) await q(PG.insertEvents, [JSON.stringify(events.map(eventRow))]);
    if (deliveries.length) {
      await q(PG.insertDeliveries, [JSON.stringify(deliveries)]);
      await this.notify(q, DELIVERIES);
    }
    if (messages.length) await q(PG.insertMessages, [JSON.stringify(messages)]);
  }

  /** One statement: the runs back in the queue and, when any was, a 'runs' notice. */
  async releaseRuns(owner: string, ids: string[], now: number, note: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(PG.releaseRuns, [now, note, ids, owner, this.channel]);
  }

  async deferRun(d: { runId: string; owner: string; until: number; error: string; now: number }): Promise<boolean> {
    const { rowCount } = await this.db.query(PG.deferRun, [d.now, d.until, d.error, d.runId, d.owner]);
    return (rowCount ?? 0) > 0;
  }

  async failRun(id: string, error: string, now: number): Promise<void> {
    await this.db.query(PG.failRun, [error, now, id]);
  }

  async addEvents(events: NewSystemEvent[]): Promise<void> {
    if (events.length) await this.db.query(PG.insertEvents, [JSON.stringify(events.map(eventRow))]);
  }

  /** See the SQLite statement `consumeEvents`: only the oldest pending events of the session, those named. */
  completeHeartbeat(c: HeartbeatCompletion): Promise<void> {
    return this.db.tx(async (q) => {
      if (c.eventIds.length) {
        await q(PG.consumeEvents, [c.consumedAt, c.heartbeatId, c.sessionKey, c.eventIds.length, c.eventIds]);
      }
      await this.insertRest(q, [], c.deliveries.map(deliveryRow), c.messages.map(messageRow));
    });
  }

  async setRoute(
    sessionKey: string,
    agentId: string,
    channel: string,
    to: string,
    now: number,
    accountId: string | null = null,
  ): Promise<void> {
    await this.db.query(UPSERT_ROUTE, [sessionKey, agentId, channel, to, accountId, now, this.channel]);
  }

  /** Route heads and, after each, up to `followers` of its route in order (as SQLite's claim; see Store.claimDeliveries). */
  async claimDeliveries(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    followers = 0,
  ): Promise<Delivery[]> {
    if (limit <= 0) return [];
    const { rows } = await this.db.query(PG.claimDeliveries, [
      now,
      owner,
      now + leaseMs,
      limit,
      Math.max(0, followers),
    ]);
    // Heads in the order they are due, each followed by its route's rows in seq order.
    const n = (r: Row, k: string) => r[k] as number;
    return rows
      .sort(
        (a, b) =>
          n(a, 'head_due') - n(b, 'head_due') || n(a, 'head_seq') - n(b, 'head_seq') || n(a, 'seq') - n(b, 'seq'),
      )
      .map(rowToDelivery);
  }

  async releaseDeliveries(owner: string, ids: string[], now: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(PG.releaseDeliveries, [now, ids, owner]);
  }

  async deliveryProgress(id: string, owner: string, chunksSent: number, now: number): Promise<void> {
    await this.db.query(PG.deliveryProgress, [chunksSent, now, id, owner]);
  }

  /** Group-committed with the other outcomes of the turn (postgres-completions.ts). */
  finishDelivery(id: string, owner: string, o: DeliveryOutcome, now: number): Promise<void> {
    return this.completions.finishDelivery(id, owner, o, now);
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
      const { rows } = await q(
        `UPDATE runs SET ${REQUEUE_SET} WHERE id = $2 AND state IN ('failed', 'timed_out', 'succeeded') RETURNING *`,
        [now, id],
      );
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
      await q('INSERT INTO refusal_log (at, window_ms, counts) VALUES ($1, $2, $3)', [
        window.at,
        window.windowMs,
        refusalsToJson(window),
      ]);
      await q(
        'DELETE FROM refusal_log WHERE seq <= (SELECT seq FROM refusal_log ORDER BY seq DESC OFFSET $1 LIMIT 1)',
        [keepWindows],
      );
    });
  }
}
