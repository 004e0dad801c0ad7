/** The audit role of the PostgreSQL store (`AuditStore`, audit-types.ts): the same statements as SQLite's (sqlite-audit.ts). */
import type { AuditEntry, AuditPageQuery, AuditStore } from './audit-types.js';
import type { Page } from './pages.js';
import { seqPage } from './pages-cursor.js';
import type { PgDb } from './postgres-db.js';
import { auditWhere, rowToAudit } from './sqlite-audit.js';

export class PgAudit implements AuditStore {
  constructor(private readonly db: PgDb) {}

  async appendAudit(entries: AuditEntry[]): Promise<void> {
    if (!entries.length) return;
    // One statement for the batch: the rows as JSON arrays, unpacked server-side.
    await this.db.query(
      `INSERT INTO audit_log (id, at, kind, actor, node, detail)
       SELECT e->>0, (e->>1)::bigint, e->>2, e->>3, e->>4, e->>5 FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n)
       ORDER BY n
       ON CONFLICT (id) DO NOTHING`,
      [JSON.stringify(entries.map((e) => [e.id, e.at, e.kind, e.actor, e.node, JSON.stringify(e.detail)]))],
    );
  }

  async pageAudit(q: AuditPageQuery): Promise<Page<AuditEntry>> {
    const w = auditWhere(q, (n) => `$${n}`);
    const { rows } = await this.db.query(
      `SELECT * FROM audit_log WHERE ${w.sql} ORDER BY seq DESC LIMIT ${q.limit + 1}`,
      w.params,
    );
    return seqPage(
      'audit',
      rows.map((r) => ({ seq: Number(r.seq), item: rowToAudit(r) })),
      q.limit,
    );
  }

  async pruneAudit(before: number): Promise<number> {
    return (await this.db.query('DELETE FROM audit_log WHERE at < $1', [before])).rowCount ?? 0;
  }
}
