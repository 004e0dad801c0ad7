/**
 * The audit role of the store (`AuditStore`, part of `Store`): the audit trail of src/audit.ts (config reloads, token
 * rotations, admin repairs, lockouts), listed by `hookgate audit` and `GET /api/v1/audit`. The store keeps what it is
 * given: masking secrets is the recorder's job (src/audit.ts), never the driver's.
 */
import type { Page, PageQuery } from './pages.js';

/** One audit record. `detail` is plain JSON data, secrets already masked. */
export interface AuditEntry {
  /** Unique: appending an id already stored changes nothing (a recorder may retry a batch it is unsure of). */
  id: string;
  at: number;
  /** What happened (`config.reload`, `token.rotated`, `admin.retry`, `lockout`, ...: see src/audit.ts). */
  kind: string;
  /** Who did it: "config" (a reload), "admin", "cli", or a client's address bucket (a lockout). */
  actor: string;
  /** The process that wrote it (the node id on a shared store); null from the CLI. */
  node: string | null;
  detail: Record<string, unknown>;
}

export interface AuditPageQuery extends PageQuery {
  /** Only records of this kind. */
  kind?: string;
  /** Only records at or after this time (epoch ms). */
  since?: number;
}

export interface AuditStore {
  /** Append records (one transaction); ids already stored are skipped. */
  appendAudit(entries: AuditEntry[]): Promise<void>;
  /** Newest first, cursor-paged like the admin lists (pages.ts); a cursor of another list is `invalid_query`. */
  pageAudit(q: AuditPageQuery): Promise<Page<AuditEntry>>;
  /** Delete records older than `before`; how many. */
  pruneAudit(before: number): Promise<number>;
}
