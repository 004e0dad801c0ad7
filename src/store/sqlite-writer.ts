import type Database from 'better-sqlite3';
import type { AcceptCommand, AcceptOutcome, AcceptResult, NewRun, ReceivedHook, Replay } from './types.js';

/** A write the SQLite writer performs. Plain data: it crosses to the writer thread by structured clone. */
export type WriteOp =
  | { op: 'accept'; cmd: AcceptCommand }
  | { op: 'received'; rec: ReceivedHook }
  | { op: 'requeue'; id: string; now: number }
  | { op: 'prune'; now: number; receivedBefore: number };

export type WriteResult = { ok: true; value: unknown } | { ok: false; error: string };

type Row = Record<string, unknown>;

/**
 * Every write of the SQLite store, synchronous, on one connection. `runBatch` commits a whole batch in one
 * transaction; if one op throws, the batch is rolled back and each op retried alone, so one bad op can neither
 * take the others down nor leave half of itself behind.
 */
export class SqliteWriter {
  private readonly stmt;
  private readonly batchTxn: (ops: WriteOp[]) => unknown[];

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
      insertReceived: db.prepare(
        `INSERT INTO received_hooks (at, method, path, client_ip, status, code, event_ids, run_ids, mapping_id, duration_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      requeue: db.prepare(
        `UPDATE runs SET state = 'queued', updated_at = ?, finished_at = NULL, lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND state IN ('failed', 'timed_out', 'succeeded')`,
      ),
      pruneIdem: db.prepare('DELETE FROM idempotency WHERE expires_at <= ?'),
      pruneReceived: db.prepare('DELETE FROM received_hooks WHERE at < ?'),
    };
    this.batchTxn = db.transaction((ops: WriteOp[]) => ops.map((op) => this.execute(op)));
  }

  runBatch(ops: WriteOp[]): WriteResult[] {
    try {
      return this.batchTxn(ops).map((value) => ({ ok: true, value }));
    } catch {
      // Isolate the failing op: each one alone, in its own transaction.
      return ops.map((op) => {
        try {
          return { ok: true, value: this.db.transaction(() => this.execute(op))() };
        } catch (err) {
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
          received: this.stmt.pruneReceived.run(op.receivedBefore).changes,
        };
    }
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
      const last = this.stmt.lastPending.get(ev.sessionKey) as Row | undefined;
      if (last && last.text === ev.text) {
        outcome.events.push({ eventId: last.id as string, outcome: 'coalesced' });
        continue;
      }
      this.stmt.insertEvent.run(ev.id, ev.sessionKey, ev.agentId, ev.text, ev.origin, ev.runId ?? null, ev.createdAt);
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
    this.stmt.insertReceived.run(
      rec.at, rec.method, rec.path, rec.clientIp, rec.status, rec.code,
      rec.eventIds.length ? JSON.stringify(rec.eventIds) : null,
      rec.runIds.length ? JSON.stringify(rec.runIds) : null,
      rec.mappingId, rec.durationMs,
    );
  }
}
