/**
 * The audit role of the SQLite store (`AuditStore`, audit-types.ts): its writes, spread into WRITE_OPS (they commit
 * through the one writer like every write), and its page, on the store's own connection.
 */
import type Database from 'better-sqlite3';
import { prepared } from './sqlite-prepared.js';
import type { AuditEntry, AuditPageQuery } from './audit-types.js';
import type { Page } from './pages.js';
import { seqFromCursor, seqPage } from './pages-cursor.js';
import type { Row } from './record-encoding.js';
import type { SqliteWriter } from './sqlite-writer.js';

export const AUDIT_WRITE_OPS = {
  appendAudit(w: SqliteWriter, entries: AuditEntry[]): void {
    const insert = prepared(
      w.db,
      'INSERT INTO audit_log (id, at, kind, actor, node, detail) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
    );
    for (const e of entries) insert.run(e.id, e.at, e.kind, e.actor, e.node, JSON.stringify(e.detail));
  },

  pruneAudit(w: SqliteWriter, before: number): number {
    return prepared(w.db, 'DELETE FROM audit_log WHERE at < ?').run(before).changes;
  },
};

/** A row of audit_log (either driver: the columns are the same). */
export function rowToAudit(r: Row): AuditEntry {
  return {
    id: r.id as string,
    at: Number(r.at),
    kind: r.kind as string,
    actor: r.actor as string,
    node: (r.node as string | null) ?? null,
    detail: JSON.parse(r.detail as string) as Record<string, unknown>,
  };
}

/** The `WHERE` of an audit page, with the driver's placeholder for the n-th parameter (1-based). */
export function auditWhere(q: AuditPageQuery, param: (n: number) => string): { sql: string; params: unknown[] } {
  const conds: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, v: unknown) => (params.push(v), conds.push(sql.replace('?', param(params.length))));
  if (q.kind !== undefined) add('kind = ?', q.kind);
  if (q.since !== undefined) add('at >= ?', q.since);
  add('seq < ?', seqFromCursor('audit', q.cursor));
  return { sql: conds.join(' AND '), params };
}

export async function pageAuditSqlite(db: Database.Database, q: AuditPageQuery): Promise<Page<AuditEntry>> {
  const w = auditWhere(q, () => '?');
  const rows = prepared(db, `SELECT * FROM audit_log WHERE ${w.sql} ORDER BY seq DESC LIMIT ?`).all(
    ...w.params,
    q.limit + 1,
  ) as Row[];
  return seqPage(
    'audit',
    rows.map((r) => ({ seq: r.seq as number, item: rowToAudit(r) })),
    q.limit,
  );
}
