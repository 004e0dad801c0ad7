import type Database from 'better-sqlite3';
import { type ReceivedTuple, receivedToTuple, type Row, rowToDelivery, rowToRun } from './sqlite-rows.js';
import type {
  AcceptCommand,
  AcceptOutcome,
  AcceptResult,
  DeliveryOutcome,
  HeartbeatCompletion,
  NewDelivery,
  NewRun,
  NewSystemEvent,
  ReceivedHook,
  Replay,
  RunCompletion,
  SessionMessage,
} from './types.js';

/** A write the SQLite writer performs. Plain data: it crosses to the writer thread by structured clone. */
export type WriteOp =
  | { op: 'accept'; cmd: AcceptCommand }
  | { op: 'received'; rec: ReceivedHook }
  | { op: 'requeue'; id: string; now: number }
  | { op: 'prune'; now: number; receivedBefore: number }
  | { op: 'claimRuns'; owner: string; now: number; leaseMs: number; limit: number }
  | { op: 'renewRunLeases'; owner: string; ids: string[]; until: number }
  | { op: 'completeRun'; c: RunCompletion }
  | { op: 'releaseRuns'; owner: string; ids: string[]; now: number }
  | { op: 'recoverLeases'; now: number }
  | { op: 'failRun'; id: string; error: string; now: number }
  | { op: 'addEvents'; events: NewSystemEvent[] }
  | { op: 'completeHeartbeat'; c: HeartbeatCompletion }
  | { op: 'setRoute'; sessionKey: string; agentId: string; channel: string; to: string; now: number }
  | { op: 'claimDeliveries'; owner: string; now: number; leaseMs: number; limit: number }
  | { op: 'deliveryProgress'; id: string; owner: string; chunksSent: number; now: number }
  | { op: 'finishDelivery'; id: string; owner: string; outcome: DeliveryOutcome; now: number }
  | { op: 'retryDelivery'; id: string; now: number };

export type WriteResult = { ok: true; value: unknown } | { ok: false; error: string };


/**
 * Every write of the SQLite store, synchronous, on one connection. `runBatch` commits a whole batch in one
 * transaction; if one op throws, the batch is rolled back and each op retried alone, so one bad op can neither
 * take the others down nor leave half of itself behind.
 */
export class SqliteWriter {
  private readonly stmt;
  private readonly batchTxn: (ops: WriteOp[]) => unknown[];
  /**
   * The last pending event of each session (for coalescing), so accepting a wake needs no lookup. Valid because
   * this writer is the only one: every insert and every consume goes through it; a rolled-back batch clears it.
   */
  private readonly lastPending = new Map<string, { id: string; text: string } | null>();
  /** Received-hook records of the current transaction, stored together at its end as one `received_log` block. */
  private receivedRows: ReceivedTuple[] = [];

  constructor(private readonly db: Database.Database) {
    this.stmt = {
      lastPending: db.prepare('SELECT id, text FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq DESC LIMIT 1'),
      insertEvent: db.prepare(
        'INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      insertRun: db.prepare(
        `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel,
           recipient, model, thinking, timeout_seconds, allow_unsafe, content_source, hook_path, mapping_id, created_at, updated_at)
         VALUES (?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      getIdem: db.prepare('SELECT fingerprint, status, body, expires_at FROM idempotency WHERE scope = ? AND key_hash = ?'),
      deleteIdem: db.prepare('DELETE FROM idempotency WHERE scope = ? AND key_hash = ?'),
      insertIdem: db.prepare(
        'INSERT INTO idempotency (scope, key_hash, fingerprint, status, body, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      insertReceivedBlock: db.prepare('INSERT INTO received_log (at, records) VALUES (?, ?)'),
      requeue: db.prepare(
        `UPDATE runs SET state = 'queued', updated_at = ?, finished_at = NULL, lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND state IN ('failed', 'timed_out', 'succeeded')`,
      ),
      // Runnable: queued (and due), or running with an expired lease (its worker died); and in both cases the oldest
      // unfinished run of its session key. Two queries so each walks a small partial index in order.
      claimableQueued: db.prepare(
        `SELECT r.id FROM runs r INDEXED BY runs_queued
         WHERE r.state = 'queued' AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= @now)
           AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.session_key = r.session_key AND p.seq < r.seq
                           AND p.state IN ('queued', 'running'))
         ORDER BY r.seq LIMIT @limit`,
      ),
      claimableExpired: db.prepare(
        `SELECT r.id FROM runs r WHERE r.state = 'running' AND r.lease_until < @now
           AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.session_key = r.session_key AND p.seq < r.seq
                           AND p.state IN ('queued', 'running'))
         ORDER BY r.seq LIMIT @limit`,
      ),
      leaseRun: db.prepare(
        `UPDATE runs SET state = 'running', lease_owner = @owner, lease_until = @until, attempts = attempts + 1,
           started_at = @now, updated_at = @now WHERE id = @id RETURNING *`,
      ),
      renewRun: db.prepare(`UPDATE runs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND state = 'running'`),
      finishRun: db.prepare(
        `UPDATE runs SET state = @state, finished_at = @finishedAt, updated_at = @finishedAt, error = @error, reply = @reply,
           delivery_status = @deliveryStatus, lease_owner = NULL, lease_until = NULL
         WHERE id = @runId AND lease_owner = @owner AND state = 'running'`,
      ),
      releaseRun: db.prepare(
        `UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, attempts = MAX(attempts - 1, 0), updated_at = ?
         WHERE id = ? AND lease_owner = ? AND state = 'running'`,
      ),
      recoverLeases: db.prepare(`UPDATE runs SET state = 'queued', lease_owner = NULL, lease_until = NULL, updated_at = ? WHERE state = 'running'`),
      recoverDeliveries: db.prepare(`UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE state = 'pending' AND lease_owner IS NOT NULL`),
      failRun: db.prepare(
        `UPDATE runs SET state = 'failed', error = ?, finished_at = ?, updated_at = ?, lease_owner = NULL, lease_until = NULL,
           delivery_status = 'nowhere:failed_before_run' WHERE id = ?`,
      ),
      // Ids have no index of their own. A heartbeat takes the oldest pending events of its session, and only the
      // heartbeat consumes them, so they are still the first ones pending: walk that many in the pending index (not
      // the whole backlog) and consume those listed. Anything not found there stays pending: replayed, never lost.
      consumeEvents: db.prepare(
        `UPDATE system_events SET consumed_at = @consumedAt, heartbeat_id = @heartbeatId
         WHERE seq IN (SELECT seq FROM system_events WHERE session_key = @sessionKey AND consumed_at IS NULL ORDER BY seq LIMIT @n)
           AND id IN (SELECT value FROM json_each(@ids))`,
      ),
      insertMessage: db.prepare(
        'INSERT INTO session_messages (session_key, agent_id, role, content, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      insertDelivery: db.prepare(
        `INSERT INTO deliveries (id, run_id, heartbeat_id, session_key, agent_id, hook_name, channel, recipient, text, explicit_route,
           state, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`,
      ),
      upsertRoute: db.prepare(
        `INSERT INTO sessions (key, agent_id, last_channel, last_to, created_at, updated_at) VALUES (@key, @agentId, @channel, @to, @now, @now)
         ON CONFLICT (key) DO UPDATE SET last_channel = @channel, last_to = @to, updated_at = @now`,
      ),
      claimableDeliveries: db.prepare(
        `SELECT d.id FROM deliveries d INDEXED BY deliveries_pending
         WHERE d.state = 'pending' AND d.next_attempt_at <= @now AND (d.lease_until IS NULL OR d.lease_until < @now)
           AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.channel = d.channel AND p.recipient = d.recipient
                           AND p.seq < d.seq AND p.state = 'pending')
         ORDER BY d.next_attempt_at, d.seq LIMIT @limit`,
      ),
      leaseDelivery: db.prepare(
        `UPDATE deliveries SET lease_owner = @owner, lease_until = @until, attempts = attempts + 1, updated_at = @now
         WHERE id = @id RETURNING *`,
      ),
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
      pruneIdem: db.prepare('DELETE FROM idempotency WHERE expires_at <= ?'),
      receivedBounds: db.prepare('SELECT MIN(seq) AS lo, MAX(seq) AS hi FROM received_log'),
      receivedAtOrAfter: db.prepare('SELECT seq, at FROM received_log WHERE seq >= ? ORDER BY seq LIMIT 1'),
      receivedCountBefore: db.prepare('SELECT COALESCE(SUM(json_array_length(records)), 0) AS n FROM received_log WHERE seq < ?'),
      pruneReceived: db.prepare('DELETE FROM received_log WHERE seq < ?'),
    };
    this.batchTxn = db.transaction((ops: WriteOp[]) => {
      const values = ops.map((op) => this.execute(op));
      this.flushReceived();
      return values;
    });
  }

  runBatch(ops: WriteOp[]): WriteResult[] {
    try {
      return this.batchTxn(ops).map((value) => ({ ok: true, value }));
    } catch {
      this.lastPending.clear();
      this.receivedRows = [];
      // Isolate the failing op: each one alone, in its own transaction.
      return ops.map((op) => {
        try {
          return {
            ok: true,
            value: this.db.transaction(() => {
              const value = this.execute(op);
              this.flushReceived();
              return value;
            })(),
          };
        } catch (err) {
          this.lastPending.clear();
          this.receivedRows = [];
          return { ok: false, error: (err as Error).message };
        }
      });
    }
  }

  execute(op: WriteOp): unknown {
    switch (op.op) {
      case 'accept':
        return this.accept(op.cmd);
      case 'received':
        this.insertReceived(op.rec);
        return undefined;
      case 'requeue':
        return this.stmt.requeue.run(op.now, op.id).changes > 0;
      case 'prune':
        return {
          idempotency: this.stmt.pruneIdem.run(op.now).changes,
          received: this.pruneReceived(op.receivedBefore),
        };
      case 'claimRuns': {
        const expired = this.stmt.claimableExpired.all({ now: op.now, limit: op.limit }) as Array<{ id: string }>;
        const queued = expired.length < op.limit ? (this.stmt.claimableQueued.all({ now: op.now, limit: op.limit - expired.length }) as Array<{ id: string }>) : [];
        return [...expired, ...queued].map(({ id }) => rowToRun(this.stmt.leaseRun.get({ id, owner: op.owner, until: op.now + op.leaseMs, now: op.now }) as Row));
      }
      case 'renewRunLeases':
        for (const id of op.ids) this.stmt.renewRun.run(op.until, id, op.owner);
        return undefined;
      case 'completeRun':
        return this.completeRun(op.c);
      case 'releaseRuns':
        for (const id of op.ids) this.stmt.releaseRun.run(op.now, id, op.owner);
        return undefined;
      case 'recoverLeases':
        this.stmt.recoverDeliveries.run();
        return this.stmt.recoverLeases.run(op.now).changes;
      case 'failRun':
        this.stmt.failRun.run(op.error, op.now, op.now, op.id);
        return undefined;
      case 'addEvents':
        for (const ev of op.events) this.insertEvent(ev);
        return undefined;
      case 'completeHeartbeat': {
        const c = op.c;
        if (c.eventIds.length) {
          this.stmt.consumeEvents.run({
            consumedAt: c.consumedAt, heartbeatId: c.heartbeatId, sessionKey: c.sessionKey, n: c.eventIds.length, ids: JSON.stringify(c.eventIds),
          });
        }
        this.lastPending.delete(c.sessionKey);
        for (const d of c.deliveries) this.insertDelivery(d);
        for (const m of c.messages) this.insertMessage(m);
        return undefined;
      }
      case 'setRoute':
        this.stmt.upsertRoute.run({ key: op.sessionKey, agentId: op.agentId, channel: op.channel, to: op.to, now: op.now });
        return undefined;
      case 'claimDeliveries': {
        const ids = this.stmt.claimableDeliveries.all({ now: op.now, limit: op.limit }) as Array<{ id: string }>;
        return ids.map(({ id }) => rowToDelivery(this.stmt.leaseDelivery.get({ id, owner: op.owner, until: op.now + op.leaseMs, now: op.now }) as Row));
      }
      case 'deliveryProgress':
        this.stmt.progress.run(op.chunksSent, op.now, op.id, op.owner);
        return undefined;
      case 'finishDelivery': {
        const o = op.outcome;
        if (o.kind === 'delivered') {
          const changed = this.stmt.delivered.run(o.at, op.now, op.id, op.owner).changes;
          if (changed && o.route) {
            const r = o.route;
            this.stmt.upsertRoute.run({ key: r.sessionKey, agentId: r.agentId, channel: r.channel, to: r.to, now: op.now });
          }
        } else if (o.kind === 'retry') this.stmt.retryLater.run(o.nextAttemptAt, o.error, op.now, op.id, op.owner);
        else this.stmt.dead.run(o.error, op.now, op.id, op.owner);
        return undefined;
      }
      case 'retryDelivery': {
        const row = this.stmt.retryDelivery.get(op.now, op.now, op.id) as Row | undefined;
        return row ? rowToDelivery(row) : undefined;
      }
    }
  }

  /**
   * Delete received records older than `before`, by whole blocks (a block goes when its newest record is older).
   * Blocks are appended in time order, so the first one to keep is found by binary search over seq (no index on
   * `at` to maintain on every insert). Returns the number of records deleted.
   */
  private pruneReceived(before: number): number {
    const { lo, hi } = this.stmt.receivedBounds.get() as { lo: number | null; hi: number | null };
    if (lo === null || hi === null) return 0;
    let low = lo;
    let high = hi + 1; // first seq whose row is at or after `before`
    while (low < high) {
      const mid = Math.floor((low + high) / 2);
      const row = this.stmt.receivedAtOrAfter.get(mid) as { seq: number; at: number } | undefined;
      if (row && row.at < before) low = row.seq + 1;
      else high = mid;
    }
    if (low <= lo) return 0;
    const { n } = this.stmt.receivedCountBefore.get(low) as { n: number };
    this.stmt.pruneReceived.run(low);
    return n;
  }

  private completeRun(c: RunCompletion): boolean {
    const changed = this.stmt.finishRun.run({
      state: c.state,
      finishedAt: c.finishedAt,
      error: c.error,
      reply: c.reply,
      deliveryStatus: c.deliveryStatus,
      runId: c.runId,
      owner: c.owner,
    }).changes;
    if (!changed) return false; // the lease was lost (expired and taken over): the other worker's result counts
    for (const ev of c.events) this.insertEvent(ev);
    for (const d of c.deliveries) this.insertDelivery(d);
    for (const m of c.messages) this.insertMessage(m);
    return true;
  }

  private insertEvent(ev: NewSystemEvent): void {
    this.stmt.insertEvent.run(ev.id, ev.sessionKey, ev.agentId, ev.text, ev.origin, ev.runId ?? null, ev.createdAt);
    this.lastPending.set(ev.sessionKey, { id: ev.id, text: ev.text });
  }

  private lastPendingOf(sessionKey: string): { id: string; text: string } | null {
    let last = this.lastPending.get(sessionKey);
    if (last === undefined) {
      const row = this.stmt.lastPending.get(sessionKey) as Row | undefined;
      last = row ? { id: row.id as string, text: row.text as string } : null;
      if (this.lastPending.size > 10_000) this.lastPending.clear(); // bounded: session keys of events are few in practice
      this.lastPending.set(sessionKey, last);
    }
    return last;
  }

  private insertDelivery(d: NewDelivery): void {
    this.stmt.insertDelivery.run(
      d.id, d.runId, d.heartbeatId, d.sessionKey, d.agentId, d.hookName, d.channel, d.to, d.text, d.explicitRoute ? 1 : 0,
      d.createdAt, d.createdAt, d.createdAt,
    );
  }

  private insertMessage(m: SessionMessage): void {
    this.stmt.insertMessage.run(m.sessionKey, m.agentId, m.role, m.content, m.runId, m.createdAt);
  }

  private accept(cmd: AcceptCommand): AcceptResult {
    const now = cmd.received.at;
    const idem = cmd.idempotency;
    if (idem) {
      const row = this.stmt.getIdem.get(idem.scope, idem.keyHash) as Row | undefined;
      if (row && (row.expires_at as number) > now) {
        if (row.fingerprint !== idem.fingerprint) {
          this.insertReceived({ ...cmd.received, status: 409, code: 'idempotency_conflict' });
          return { kind: 'conflict' };
        }
        const replay = JSON.parse(row.body as string) as Replay;
        this.insertReceived({ ...cmd.received, status: row.status as number, code: 'duplicate', eventIds: replay.outcome.events.map((e) => e.eventId) });
        return { kind: 'duplicate', replay, status: row.status as number };
      }
      if (row) this.stmt.deleteIdem.run(idem.scope, idem.keyHash);
    }

    const outcome: AcceptOutcome = { events: [] };
    for (const ev of cmd.events) {
      const last = this.lastPendingOf(ev.sessionKey);
      if (last && last.text === ev.text) {
        outcome.events.push({ eventId: last.id, outcome: 'coalesced' });
        continue;
      }
      this.insertEvent(ev);
      outcome.events.push({ eventId: ev.id, outcome: 'queued' });
    }
    for (const run of cmd.runs) this.insertRun(run);
    if (idem) {
      const replay: Replay = { spec: cmd.answerSpec, outcome };
      this.stmt.insertIdem.run(idem.scope, idem.keyHash, idem.fingerprint, cmd.received.status, JSON.stringify(replay), now, idem.expiresAt);
    }
    this.insertReceived({ ...cmd.received, eventIds: outcome.events.map((e) => e.eventId), runIds: cmd.runs.map((r) => r.id) });
    return { kind: 'accepted', outcome };
  }

  private insertRun(r: NewRun): void {
    this.stmt.insertRun.run(
      r.id, r.agentId, r.sessionKey, r.sessionMode, r.name, r.message, r.wakeMode, r.deliver ? 1 : 0, r.channel, r.to,
      r.model, r.thinking, r.timeoutSeconds, r.allowUnsafeExternalContent ? 1 : 0, r.contentSource, r.hookPath, r.mappingId,
      r.createdAt, r.createdAt,
    );
  }

  private insertReceived(rec: ReceivedHook): void {
    this.receivedRows.push(receivedToTuple(rec));
  }

  /** Store the transaction's received records as one block, stamped with the newest record's time. */
  private flushReceived(): void {
    const rows = this.receivedRows;
    if (rows.length === 0) return;
    this.receivedRows = [];
    let at = rows[0]![0];
    for (const r of rows) if (r[0] > at) at = r[0];
    this.stmt.insertReceivedBlock.run(at, JSON.stringify(rows));
  }
}
