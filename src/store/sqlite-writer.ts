import type Database from 'better-sqlite3';
import { commitIsolated, type WriteResult } from './group-commit.js';
import { type ReceivedTuple, receivedToTuple, type Row } from './record-encoding.js';
import type { PendingTail } from './sqlite-accept.js';
import { prepareWriteStatements, type WriteStatements } from './sqlite-statements.js';
import { executeWrite, type WriteOp } from './sqlite-write-ops.js';
import type { NewDelivery, NewRun, NewSystemEvent, ReceivedHook, SessionMessage } from './types.js';

export type { WriteOp } from './sqlite-write-ops.js';

export type { WriteResult } from './group-commit.js';

/**
 * The writing connection of the SQLite store, synchronous: its statements, what it caches between writes, and the
 * row inserts several ops share. The ops themselves are in sqlite-write-ops.ts. `runBatch` commits a whole batch in
 * one transaction, each op isolated if the batch fails (see group-commit.ts).
 */
export class SqliteWriter {
  readonly stmt: WriteStatements;
  private readonly batchTxn: (ops: WriteOp[]) => unknown[];
  private readonly oneTxn: (op: WriteOp) => unknown;
  /**
   * The last pending event of each session (for coalescing), so accepting a wake needs no lookup. Valid because
   * this writer is the only one: every insert and every consume goes through it; a rolled-back batch clears it.
   */
  private readonly lastPending = new Map<string, PendingTail | null>();
  /** Received-hook records of the current transaction, stored together at its end as one `received_log` block. */
  private receivedRows: ReceivedTuple[] = [];
  /** Idempotency keys stored per sender, for the per-sender cap (sqlite-write-ops.ts); counted once per sender. */
  readonly idemSenders = new Map<string, number>();
  private readonly rolledBack = () => {
    this.lastPending.clear();
    this.idemSenders.clear();
    this.receivedRows = [];
  };

  constructor(readonly db: Database.Database) {
    this.stmt = prepareWriteStatements(db);
    this.batchTxn = db.transaction((ops: WriteOp[]) => {
      const values = ops.map((op) => executeWrite(this, op));
      this.flushReceived();
      return values;
    });
    this.oneTxn = db.transaction((op: WriteOp) => {
      const value = executeWrite(this, op);
      this.flushReceived();
      return value;
    });
  }

  runBatch(ops: WriteOp[]): WriteResult[] {
    return commitIsolated(ops, this.batchTxn, this.oneTxn, this.rolledBack);
  }

  insertEvent(ev: NewSystemEvent): void {
    const untrusted = ev.untrusted === true;
    const source = ev.source ?? null;
    this.stmt.insertEvent.run(
      ev.id,
      ev.sessionKey,
      ev.agentId,
      ev.text,
      ev.origin,
      ev.runId ?? null,
      ev.createdAt,
      untrusted ? 1 : 0,
      source,
    );
    this.lastPending.set(ev.sessionKey, { id: ev.id, text: ev.text, untrusted, source });
  }

  lastPendingOf(sessionKey: string): PendingTail | null {
    let last = this.lastPending.get(sessionKey);
    if (last === undefined) {
      const row = this.stmt.lastPending.get(sessionKey) as Row | undefined;
      last = row
        ? {
            id: row.id as string,
            text: row.text as string,
            untrusted: Number(row.untrusted) === 1,
            source: (row.source as string | null) ?? null,
          }
        : null;
      if (this.lastPending.size > 10_000) this.lastPending.clear(); // bounded: session keys of events are few in practice
      this.lastPending.set(sessionKey, last);
    }
    return last;
  }

  /** Events of the session were consumed: its last pending one is looked up again when next needed. */
  forgetPending(sessionKey: string): void {
    this.lastPending.delete(sessionKey);
  }

  insertDelivery(d: NewDelivery): void {
    this.stmt.insertDelivery.run(
      d.id,
      d.runId,
      d.heartbeatId,
      d.sessionKey,
      d.agentId,
      d.hookName,
      d.channel,
      d.to,
      d.accountId,
      d.text,
      d.explicitRoute ? 1 : 0,
      d.createdAt,
      d.createdAt,
      d.createdAt,
    );
  }

  insertMessage(m: SessionMessage): void {
    this.stmt.insertMessage.run(m.sessionKey, m.agentId, m.role, m.content, m.runId, m.createdAt);
  }

  insertRun(r: NewRun): void {
    this.stmt.insertRun.run(
      r.id,
      r.agentId,
      r.sessionKey,
      r.sessionMode,
      r.name,
      r.message,
      r.wakeMode,
      r.deliver ? 1 : 0,
      r.channel,
      r.to,
      r.accountId,
      r.model,
      r.thinking,
      r.timeoutSeconds,
      r.allowUnsafeExternalContent ? 1 : 0,
      r.contentSource,
      r.hookPath,
      r.mappingId,
      r.createdAt,
      r.createdAt,
    );
  }

  /** `eventIds` and `runIds`, when given, stand for the record's own (the accept's outcome, without a copy of it). */
  insertReceived(rec: ReceivedHook, eventIds?: string[], runIds?: string[]): void {
    const t = receivedToTuple(rec);
    if (eventIds) t[6] = eventIds;
    if (runIds) t[7] = runIds;
    this.receivedRows.push(t);
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
